// Where a decoder's choices come from, in both directions of a program's byte format.
//
// Decoding: an input's bytes, read exactly as FuzzedDataProvider (compiler-rt's header) reads them:
// integers from the back, one byte per 8 bits of their range, strings from the front.
//
// Encoding: a target program. The decoder runs as usual, and at every draw it says, through `want`, which
// value the target needs there; the source records that draw. The recorded draws, written out by Bytes(),
// are an input that decodes to the same draws, so the same decoder code, in the same model states, yields
// the target program: one code path is the format both ways, and a reduced program becomes an ordinary
// input. `want` is called only while encoding; it throws Unencodable when the target cannot be expressed
// at this point (an op the model does not allow now, an operand it does not offer).
//
// Part of every decoder's file format: how many bytes a draw takes and which bytes give which value must
// never change (the decoders' golden tests pin the result; the round-trip tests pin both directions).
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace lifeline::programs {

// The target program cannot be written at this point of the encoding; the message says which op and why.
class Unencodable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Source {
 public:
  // Decoding `data`.
  Source(const uint8_t* data, size_t size) : fdp_(std::in_place, data, size) {}
  // Encoding: every draw asks its `want`.
  static Source Encoder() { return Source(); }

  bool encoding() const { return !fdp_.has_value(); }

  // Whether the decode loop goes on: bytes remain (decoding), or the target has ops left (encoding: the
  // loop's own count against SetTargetOps).
  bool More(size_t decoded_ops) {
    return fdp_ ? fdp_->remaining_bytes() > 0 : decoded_ops < target_ops_;
  }
  void SetTargetOps(size_t n) { target_ops_ = n; }

  // An integer in [min, max] (FuzzedDataProvider::ConsumeIntegralInRange).
  template <typename T, typename Want>
  T Int(T min, T max, Want&& want) {
    static_assert(std::is_integral_v<T>, "integers only");
    if (fdp_) return fdp_->ConsumeIntegralInRange<T>(min, max);
    const T v = static_cast<T>(want());
    if (v < min || v > max) {
      throw Unencodable("value " + std::to_string(v) + " outside [" + std::to_string(min) + ", " +
                        std::to_string(max) + "]");
    }
    Record(static_cast<uint64_t>(v) - static_cast<uint64_t>(min),
           static_cast<uint64_t>(max) - static_cast<uint64_t>(min), sizeof(T));
    return v;
  }
  // Any value of T (FuzzedDataProvider::ConsumeIntegral).
  template <typename T, typename Want>
  T Full(Want&& want) {
    return Int<T>(std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), want);
  }
  // Bit 0 of a byte (FuzzedDataProvider::ConsumeBool).
  template <typename Want>
  bool Bool(Want&& want) {
    return (Full<uint8_t>([&] { return static_cast<uint8_t>(want() ? 1 : 0); }) & 1) != 0;
  }
  // An index in [0, n); `n` must be positive.
  template <typename Want>
  size_t Index(size_t n, Want&& want) {
    return Int<size_t>(0, n - 1, want);
  }
  // `n` bytes from the front (FuzzedDataProvider::ConsumeBytesAsString: fewer when fewer remain).
  template <typename Want>
  std::string String(size_t n, Want&& want) {
    if (fdp_) return fdp_->ConsumeBytesAsString(n);
    std::string s = want();
    if (s.size() != n) {
      throw Unencodable("a string of " + std::to_string(s.size()) + " bytes where the length drawn is " +
                        std::to_string(n));
    }
    front_ += s;
    return s;
  }

  // Encoding: the input whose draws are the ones recorded so far.
  std::vector<uint8_t> Bytes() const {
    std::vector<uint8_t> out(front_.begin(), front_.end());
    out.insert(out.end(), back_.rbegin(), back_.rend());
    return out;
  }

 private:
  Source() = default;

  // FuzzedDataProvider reads an integer of range `range` as big-endian bytes from the back, one byte while
  // bits of the range remain (at most `width` bytes), then takes the result modulo range + 1. `offset` <=
  // range, so its own big-endian bytes read back as itself.
  void Record(uint64_t offset, uint64_t range, size_t width) {
    size_t n = 0;
    while (n < width && (range >> (8 * n)) > 0) ++n;
    for (size_t i = n; i-- > 0;) back_.push_back(static_cast<uint8_t>(offset >> (8 * i)));
  }

  std::optional<FuzzedDataProvider> fdp_;
  size_t target_ops_ = 0;
  std::string front_;
  std::vector<uint8_t> back_;  // in the order they are read: back_[0] is the input's last byte
};

}  // namespace lifeline::programs
