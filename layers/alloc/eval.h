// A tiny deterministic CPU evaluator: runs a graph's nodes in order on whatever memory `data_of` maps each
// tensor to, so the same graph can run on allocator-placed memory and on separately allocated memory
// (the differential oracle). Views read and write their source's bytes; in-place results write into
// their first source. Leafs are read, never written.
#pragma once

#include <cstdint>
#include <functional>

#include "core/half.h"
#include "core/status.h"
#include "layers/alloc/tensor.h"

namespace lifeline::alloc {

using DataOf = std::function<void*(const Tensor*)>;

// Runs every node of `graph`. Fails (without touching memory) when a node or source has no memory.
// `nonfinite_row_input`, when given, says whether a row op read what ggml's CPU kernel asserts against
// (harness/programs/graph/graph_book.h): an rms_norm an element whose square is not a finite float (infinite, NaN,
// or above 1.8e19 in magnitude: the kernel squares each element in float before it sums in double, and asserts
// `scale > 0` when that sum is infinite), a soft_max an element that is not finite (the kernel asserts
// `!isnan(wp[i])`, and `sum > 0.0`, which an infinite element makes NaN); a mul_mat of a float16 first source an
// element whose terms are not finite or whose magnitudes sum to half of float's range or more (ggml_vec_dot_f16
// sums in float and asserts `!isnan(sumf) && !isinf(sumf)`).
Status Evaluate(const Graph& graph, const DataOf& data_of, bool* nonfinite_row_input = nullptr);
// The identity mapping: each tensor's own `data`.
Status Evaluate(const Graph& graph);

// Element access in the tensor's type (float16 stored as IEEE binary16, round to nearest even).
float LoadElement(DType type, const void* base, int64_t i);
void StoreElement(DType type, void* base, int64_t i, float value);
using ::lifeline::FloatToHalf;  // harness/half.h
using ::lifeline::HalfToFloat;

}  // namespace lifeline::alloc
