// The allocator under test, seen through the graph programs' vocabulary: the one interface the graph
// executor (executor.h) drives. Implementations, each in its own file:
//   standin/layer_adapter.cc    layers/alloc's GraphAllocator (the stand-in, where bugs are modelled)
//   upstream/ggml_adapter.cc    upstream ggml's gallocr and CPU backend
//   upstream/ggml_vulkan_adapter.cc  upstream ggml's gallocr (and ggml_backend_sched) on ggml-vulkan
// All keep the program's graphs in a GraphBook (graph_book.h), so the graph-editing steps return the
// same statuses whichever allocator is under test, and all check a placement with the same oracles
// (harness/oracles/alloc_oracles.h, through ComputeUnderOracles in graph_book.h).
//
// Tensors are addressed as (graph, index in graph). Every method returns the status the allocator gave;
// an adapter that sees a broken invariant (an oracle's verdict) fails a LIFELINE_CHECK itself.
#pragma once

#include "core/status.h"
#include "harness/programs/graph/format.h"

namespace lifeline::graphs {

class AllocatorAdapter {
 public:
  virtual ~AllocatorAdapter() = default;
  virtual Status CreateAllocator(int k, const AllocatorSpec& spec) = 0;
  // Before the allocators are made: the program's options that draw no step (Program::weights, shared_pool).
  // Adapters without such a thing ignore them (the stand-in).
  virtual void Configure(const Program&) {}
  virtual Status AddTensor(int g, const TensorSpec& spec) = 0;
  virtual Status SetOutput(int g, int t) = 0;
  virtual Status Rewire(int g, int node, int slot, int new_src) = 0;
  virtual Status SetPreallocated(int g, int t, bool on) = 0;
  virtual Status Reserve(int k, int g) = 0;
  // Allocator k works out the buffer sizes a reserve of graph g would need, allocating nothing. The
  // stand-in has no such query (layers/alloc plans and sizes in one step): there it is a reserve, which
  // leaves the model in the state a measure does.
  virtual Status Measure(int k, int g) { return Reserve(k, g); }
  // Places graph g with allocator k, fills its leafs, computes it and checks every oracle.
  virtual Status AllocAndCompute(int k, int g) = 0;
  // Everything released: the adapter proves nothing is left (called once, at the end).
  virtual void Teardown() = 0;
};

}  // namespace lifeline::graphs
