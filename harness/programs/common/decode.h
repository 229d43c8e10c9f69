// What every op-program decoder does alike: draw an index, draw a value from a set, choose the next op
// among the kinds legal now, and run the decode loop to its bound, from a Source (source.h): an input's
// bytes when decoding, a target program when encoding. FuzzedDataProvider's rules hold both ways: integers
// come from the back of the input, one byte for every range below 256.
//
// These helpers are part of every decoder's file format: how many bytes a choice consumes and how a byte
// maps to a choice must never change (the decoders' golden and round-trip tests pin the result).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "harness/programs/common/source.h"

namespace lifeline::programs {

// An index in [0, `n`). `n` must be positive (the decoder's model offers only non-empty sets). Encoding:
// `want()` is the index.
template <typename Want>
size_t Pick(Source& src, size_t n, Want&& want) {
  LIFELINE_PRECONDITION(n > 0, "decoder picked from an empty set");
  return src.Index(n, want);
}

// One element of `from`. Encoding: `want()` is the element, which must be one of `from`.
template <typename T, typename Want>
T PickFrom(Source& src, const std::vector<T>& from, Want&& want) {
  return from[Pick(src, from.size(), [&] {
    const T w = want();
    for (size_t i = 0; i < from.size(); ++i)
      if (from[i] == w) return i;
    throw Unencodable("not one of the " + std::to_string(from.size()) + " operands legal here");
  })];
}

// The next op's kind: the kinds of `Kind` (an enum with a contiguous range up to `Kind::kMaxValue`) for
// which `legal(kind)` holds, in enum order, and one of them picked. Empty when none is legal. Encoding:
// `want()` is the kind.
template <typename Kind, typename Legal, typename Want>
std::optional<Kind> PickLegal(Source& src, Legal&& legal, Want&& want) {
  // On the stack: this runs once per op, and a heap vector here was the decoder's most frequent allocation
  // (under ASan every allocation records its stack trace; perf of the fuzz lane, issue 15).
  constexpr int kKinds = static_cast<int>(Kind::kMaxValue) + 1;
  Kind kinds[kKinds];
  size_t n = 0;
  for (int k = 0; k < kKinds; ++k) {
    if (legal(static_cast<Kind>(k))) kinds[n++] = static_cast<Kind>(k);
  }
  if (n == 0) {
    if (src.encoding()) throw Unencodable("no op is legal here");
    return std::nullopt;
  }
  return kinds[Pick(src, n, [&] {
    const Kind w = want();
    for (size_t i = 0; i < n; ++i)
      if (kinds[i] == w) return i;
    throw Unencodable("this kind of op is not legal here");
  })];
}

// The decode loop of every family: op after op while fewer than `max_ops` are decoded and bytes remain,
// each op's kind picked among the kinds `model.Legal(kind)` allows now (PickLegal), then
// `decode(op, want, i)` decodes op `i`'s operands and has the model predict and record it. Stops early
// when no kind is legal.
//
// Encoding, `target` holds the ops to write, and `want` is the target's op at this position: the operand
// draws of `decode` read what they must choose from it (decoding, `want` is a default op, never read). An op that cannot be written here throws
// Unencodable with the op's position in the message.
template <typename Op, typename Model, typename DecodeOperands>
std::vector<Op> DecodeOps(Source& src, size_t max_ops, const Model& model, DecodeOperands&& decode,
                          const std::vector<Op>* target = nullptr) {
  using Kind = decltype(Op{}.kind);
  static const Op kNoTarget{};
  if (src.encoding()) {
    LIFELINE_PRECONDITION(target != nullptr, "encoding needs a target program");
    if (target->size() > max_ops) {
      throw Unencodable(std::to_string(target->size()) + " ops, more than the format's " +
                        std::to_string(max_ops));
    }
    src.SetTargetOps(target->size());
  }
  std::vector<Op> ops;
  while (ops.size() < max_ops && src.More(ops.size())) {
    const Op& want = src.encoding() ? (*target)[ops.size()] : kNoTarget;
    try {
      std::optional<Kind> kind =
          PickLegal<Kind>(src, [&](Kind k) { return model.Legal(k); }, [&] { return want.kind; });
      if (!kind) break;
      Op op;
      op.kind = *kind;
      decode(op, want, ops.size());
      ops.push_back(std::move(op));
    } catch (const Unencodable& e) {
      throw Unencodable("op #" + std::to_string(ops.size()) + ": " + e.what());
    }
  }
  return ops;
}

// The objects of a family that keeps them in numbered slots (the lowest free one for each new object), by
// the op that made them: what a program's id form names (the families' ToIds), and where that object is
// now (encoding, where slots are handed out afresh and an op's target names objects by maker).
class SlotBook {
 public:
  // Op `op` made the object now in `slot`.
  void Made(size_t op, int slot) { maker_[slot] = op; }
  // The object in `slot` is gone; the slot is free.
  void Freed(int slot) { maker_.erase(slot); }
  // The op that made the object in `slot`.
  size_t Maker(int slot) const {
    auto it = maker_.find(slot);
    LIFELINE_PRECONDITION(it != maker_.end(), "a slot the program names holds no object");
    return it->second;
  }
  // Encoding: the slot of the object op `op` made, which must still be alive.
  int SlotOf(size_t op) const {
    for (const auto& [slot, maker] : maker_)
      if (maker == op) return slot;
    throw Unencodable("names the object of op #" + std::to_string(op) + ", which made none that is alive here");
  }

 private:
  std::map<int, size_t> maker_;
};

// Encoding's last check: `back`, what the written bytes decode to (in id form), is `target`, op by op, as
// `same(a, b)` compares them. The decoder may have made another op than the one the encoder chose (a
// fallback, a guard, an operand the model overrides): what the bytes decode to is the answer.
template <typename Op, typename Same>
void CheckRoundTrip(const std::vector<Op>& back, const std::vector<Op>& target, Same&& same) {
  for (size_t i = 0; i < target.size() || i < back.size(); ++i) {
    if (i < back.size() && i < target.size() && same(back[i], target[i])) continue;
    throw Unencodable("op #" + std::to_string(i) + ": decodes as `" +
                      (i < back.size() ? Describe(back[i]) : std::string("nothing")) + "`, not as the target's `" +
                      (i < target.size() ? Describe(target[i]) : std::string("nothing")) + "`");
  }
}

// A family's Encode: `run(src)` decodes into an encoding source (the family's decoder with its target),
// `decode_ids(bytes)` decodes the recorded bytes again into id form, and CheckRoundTrip holds them to `target`.
template <typename Run, typename DecodeIds, typename Same, typename Op>
std::vector<uint8_t> EncodeChecked(const std::vector<Op>& target, Run&& run, DecodeIds&& decode_ids, Same&& same) {
  Source src = Source::Encoder();
  run(src);
  std::vector<uint8_t> bytes = src.Bytes();
  CheckRoundTrip(decode_ids(bytes), target, same);
  return bytes;
}

}  // namespace lifeline::programs
