// The program's graphs as layers/alloc tensors, shared by every AllocatorAdapter: the graph-editing half of
// the adapter interface (AddTensor, SetOutput, Rewire, SetPreallocated) acts on one alloc::Context, so the
// statuses of those steps are the same whichever allocator is under test, and each adapter only places and
// computes. The tensors double as the oracles' view of a placement: an adapter that places a graph in
// memory of its own (upstream ggml) records each tensor's address in `data` and `owner` and hands the
// book's graph to harness/oracles/alloc_oracles.h.
//
// Pre-allocated leafs hold memory from outside every allocator, owned here, filled with LeafValue.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/status.h"
#include "harness/oracles/alloc_oracles.h"
#include "harness/programs/graph/format.h"
#include "layers/alloc/tensor.h"

namespace lifeline::graphs {

// Deterministic leaf contents: small multiples of 1/4, exact in float16.
float LeafValue(int graph, int tensor, int64_t i);
// Writes LeafValue(graph, index, i) into every element of `t` (at t->data).
void FillLeaf(alloc::Tensor* t, int graph, int index);

// The oracles of one placement, shared by every adapter: no tensor outside `buffers`, views inside their
// sources, no live overlap; then `compute` runs the graph on the placed memory, and external memory must be
// unchanged and the outputs equal to the reference run on separate memory. Fails a LIFELINE_CHECK naming
// the violation. `owner`: what the placed tensors' `owner` is (the allocator); `eq`: how outputs compare;
// `check_overlap` false: the graph runs in an order other than `graph`'s, so liveness is not known here.
// `refuse_nonfinite_row_input`: when the reference fed a row op what ggml's CPU kernel asserts against
// (alloc::Evaluate), `compute` is not run, the outputs are not compared, and it returns false:
// - rms_norm: an element whose float square is not finite. The kernel squares in float
//   (`(ggml_float)(x[i00] * x[i00])`, ggml-cpu/ops.cpp), so such a row's sum is infinite and it asserts `scale > 0`
//   ("if you hit this, likely you got an inf somewhere earlier"): for non-finite input its documented answer; for
//   finite input above 1.8e19 an overflow the harness steps around and has not filed (2026-11-26: not yet searched
//   upstream);
// - soft_max: an element that is not finite (a chain of mul_mats overflows to inf). The kernel asserts
//   `!isnan(wp[i])`, and `sum > 0.0`, which an infinite element makes NaN (inf - inf): the softmax of a row holding
//   an infinity has no value, and the kernel's debug asserts say it must not be asked for one. Found by a TSan
//   campaign, 2026-11-26 (its input is in the regression corpus);
// - mul_mat of float16 weights: a dot product whose terms are not finite or whose magnitudes sum to half of float's
//   range (ggml_vec_dot_f16 asserts its float sum finite: "if you hit this, you are likely running outside the FP
//   range", ggml-cpu/vec.cpp). Found by the 30-minute ASan campaign of 2026-11-27: a KV-cache loop squaring a
//   float16 cache at each compute until it overflowed (its input is in the regression corpus).
bool ComputeUnderOracles(const alloc::Graph& graph, const void* owner, const std::vector<oracles::BufferExtent>& buffers,
                         const std::vector<alloc::Tensor*>& outputs, const std::function<void()>& compute,
                         oracles::Equality eq = oracles::Equality::kBits, bool check_overlap = true,
                         bool refuse_nonfinite_row_input = false);

class GraphBook {
 public:
  Status AddTensor(int g, const TensorSpec& spec);
  Status SetOutput(int g, int t);
  // Rewires source `slot` of `node`; a cycle reachable from the outputs is refused and the graph is left
  // as it was.
  Status Rewire(int g, int node, int slot, int new_src);
  Status SetPreallocated(int g, int t, bool on);

  alloc::Tensor* tensor(int g, int t) const { return graphs_[g].t[t]; }
  // The spec the tensor was added with (sources as rewired since).
  const TensorSpec& spec(int g, int t) const { return graphs_[g].spec[t]; }
  int size(int g) const { return g < static_cast<int>(graphs_.size()) ? static_cast<int>(graphs_[g].t.size()) : 0; }
  bool preallocated(int g, int t) const { return graphs_[g].external[t] != nullptr; }
  // The graph's outputs in tensor order (the order graphs are built from).
  std::vector<alloc::Tensor*> Outputs(int g) const;
  int IndexOf(int g, const alloc::Tensor* t) const;
  void Clear() { graphs_.clear(); }

 private:
  struct Graph {
    std::vector<alloc::Tensor*> t;
    std::vector<TensorSpec> spec;
    std::vector<std::unique_ptr<uint8_t[]>> external;  // pre-allocated leaf memory, per tensor
  };
  Graph& Get(int g);

  alloc::Context ctx_;
  std::vector<Graph> graphs_;
};

}  // namespace lifeline::graphs
