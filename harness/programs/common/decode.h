// What every op-program decoder does alike: draw an index, draw a value from a set, choose the next op
// among the kinds legal now, and run the decode loop to its bound. FuzzedDataProvider (compiler-rt's
// header) takes integers from the back of the input, one byte for every range below 256.
//
// These helpers are part of every decoder's file format: how many bytes a choice consumes and how a byte
// maps to a choice must never change (the decoders' golden tests pin the result).
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "core/check.h"

namespace lifeline::programs {

// An index in [0, `n`). `n` must be positive (the decoder's model offers only non-empty sets).
inline size_t Pick(FuzzedDataProvider& fdp, size_t n) {
  LIFELINE_PRECONDITION(n > 0, "decoder picked from an empty set");
  return fdp.ConsumeIntegralInRange<size_t>(0, n - 1);
}

// One element of `from`.
template <typename T>
T PickFrom(FuzzedDataProvider& fdp, const std::vector<T>& from) {
  return from[Pick(fdp, from.size())];
}

// The next op's kind: the kinds of `Kind` (an enum with a contiguous range up to `Kind::kMaxValue`) for
// which `legal(kind)` holds, in enum order, and one of them picked. Empty when none is legal.
template <typename Kind, typename Legal>
std::optional<Kind> PickLegal(FuzzedDataProvider& fdp, Legal&& legal) {
  // On the stack: this runs once per op, and a heap vector here was the decoder's most frequent allocation
  // (under ASan every allocation records its stack trace; perf of the fuzz lane, issue 15).
  constexpr int kKinds = static_cast<int>(Kind::kMaxValue) + 1;
  Kind kinds[kKinds];
  size_t n = 0;
  for (int k = 0; k < kKinds; ++k) {
    if (legal(static_cast<Kind>(k))) kinds[n++] = static_cast<Kind>(k);
  }
  if (n == 0) return std::nullopt;
  return kinds[Pick(fdp, n)];
}

// The decode loop of every family: op after op while fewer than `max_ops` are decoded and bytes remain,
// each op's kind picked among the kinds `model.Legal(kind)` allows now (PickLegal), then `decode(op)`
// decodes its operands and has the model predict and record it. Stops early when no kind is legal.
template <typename Op, typename Model, typename DecodeOperands>
std::vector<Op> DecodeOps(FuzzedDataProvider& fdp, size_t max_ops, const Model& model, DecodeOperands&& decode) {
  using Kind = decltype(Op{}.kind);
  std::vector<Op> ops;
  while (ops.size() < max_ops && fdp.remaining_bytes() > 0) {
    std::optional<Kind> kind = PickLegal<Kind>(fdp, [&](Kind k) { return model.Legal(k); });
    if (!kind) break;
    Op op;
    op.kind = *kind;
    decode(op);
    ops.push_back(std::move(op));
  }
  return ops;
}

}  // namespace lifeline::programs
