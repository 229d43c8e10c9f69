// Oracles for graph allocation, computed from the graph's structure and the placed addresses only, never
// from the allocator's own bookkeeping. Shared by the graph programs' adapters
// (harness/programs/graph/) and the allocator tests. Each check returns OK when its property holds, else
// an INTERNAL status whose message names the oracle and the tensors involved.
#pragma once

#include <functional>
#include <string>

#include "core/status.h"
#include <utility>
#include <vector>

#include "layers/alloc/tensor.h"

namespace lifeline::oracles {

// No two tensors placed by `allocator` whose lifetimes overlap share a byte. A tensor lives from its
// definition (leafs and inputs: from the start) to its last reader, direct or through views; outputs to
// the end. One exception, in-place reuse: an elementwise node may occupy exactly the bytes of a source
// whose last reader it is.
//
// `read_at`, where given: the position in `graph.nodes` at which node i reads the bytes of its source s (at most
// i). A scheduler that runs node i on another backend than s's memory reads s through a copy made when node i's
// split starts, and may reuse s's bytes after that copy (ggml_backend_sched: the split's inputs).
using ReadAt = std::function<int(int node, const alloc::Tensor* src)>;
Status CheckNoLiveOverlap(const alloc::Graph& graph, const void* allocator, const ReadAt& read_at = nullptr);

// Every view's bytes lie inside the bytes of the tensor its view chain ends in.
Status CheckViewsInsideSources(const alloc::Graph& graph);

// Every tensor placed by the allocator lies inside one of its buffers, at an offset aligned as the buffer
// requires. `buffers`: (base, size, alignment) per buffer.
struct BufferExtent {
  const uint8_t* base;
  size_t size;
  size_t alignment;
};
Status CheckPlacedInsideBuffers(const alloc::Graph& graph, const void* allocator,
                                     const std::vector<BufferExtent>& buffers);

// The external tensors (memory `allocator` did not place) that a node of `graph` may write: the roots of its set_rows'
// destinations, each once. A set_rows into a pre-allocated leaf is how a KV cache is written
// (harness/programs/graph/format_steps.cc). An in-place result is not one: it never writes external memory (the model
// forbids it, and the canary fails where it happens).
std::vector<const alloc::Tensor*> WrittenExternal(const alloc::Graph& graph, const void* allocator);

// Canary: the bytes of tensors the graph must not write (external memory: pre-allocated tensors and
// views into other graphs, less those WrittenExternal names, which the differential compares whole),
// snapshot before and compared after.
class Canary {
 public:
  Canary(const alloc::Graph& graph, const void* allocator);
  Status Check() const;

 private:
  std::vector<std::pair<const alloc::Tensor*, std::vector<uint8_t>>> saved_;
};

// Differential execution: runs `graph` once on separately allocated memory (leafs copied from their
// current bytes) and keeps the outputs, so they can be compared with a run on the placed memory. The external
// tensors the graph writes (WrittenExternal) are copied too, and compared whole after the placed run, as outputs are.
// How an output element is compared with the reference. kBits: the same float bits, NaN payloads and the
// sign of zero included. kZeroSignFree: the same, except that +0.0 and -0.0 are equal; for a backend that
// computes scale(x, s) as x * s + 0 (ggml-vulkan's scale shader), which turns -0.0 into +0.0 where ggml's
// CPU backend and the reference keep x * s.
// kClose: within 1% of the reference (absolute below 1); where the reference is NaN, anything (the reference writes
// NaN where the math is undefined or ill-conditioned: layers/alloc/tensor.h, kSoftMaxConditioned). For graphs
// holding a row op or mul_mat, whose kernels in ggml (SIMD exp, other summation orders) and in the reference
// differ in the last bits, and whose results a float16 copy may round either way. A placement that lets two live
// tensors share bytes gives other values, not rounding.
enum class Equality { kBits, kZeroSignFree, kClose };
bool SameElement(float got, float want, Equality eq);

class Differential {
 public:
  // Snapshot leafs and run the reference. Call after the leafs are filled, before the placed run.
  Differential(const alloc::Graph& graph, const void* allocator, const std::vector<alloc::Tensor*>& outputs);
  // Compares each output's placed bytes with the reference bytes.
  Status Check(Equality eq = Equality::kBits) const;
  // Whether the reference run itself succeeded (Check() reports it too).
  const Status& error() const { return error_; }
  // Whether the reference fed a row op what ggml's kernel asserts against (alloc::Evaluate).
  bool nonfinite_row_input() const { return nonfinite_row_input_; }

 private:
  std::vector<std::pair<const alloc::Tensor*, std::vector<uint8_t>>> expected_;  // the outputs, then WrittenExternal
  size_t outputs_ = 0;
  Status error_;
  bool nonfinite_row_input_ = false;
};

}  // namespace lifeline::oracles
