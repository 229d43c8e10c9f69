// A graph allocator modelled on ggml's gallocr (ggml-alloc.c): plan a graph once for its worst case
// (`Reserve`), size one buffer per buffer id, then place each graph (`AllocGraph`) at the planned offsets,
// re-planning when a graph no longer matches the plan.
//
// Planning places inputs and leafs first (the caller fills them before the graph runs), then walks the
// nodes in order, allocating each result from its buffer's free list (best fit,
// aligned) and freeing each source after its last consumer. A result may take its source's memory (in-place
// reuse) when the op is elementwise, the source has exactly one consumer and no views, is owned by this
// allocator and is neither an input nor an output. Views take no memory: their bytes are their source's.
// Graph outputs are never freed, nor is the memory an output view reads. Leafs that are views or already hold data are not this allocator's:
// their plan record is "not owned" (buffer -1, offset kNotOwned, size 0).
//
// The documented bug gallocr-view-leaf-offset (whisper.cpp #1959; fixed by 906c73b2) lives in Reserve:
// re-introduced, every leaf's record copies its planning entry, so a leaf view of a tensor from another
// graph is recorded as owned at offset 0, and AllocGraph's consistency check fails when it places it.
//
// Free bytes of every buffer are poisoned for ASan and no-access for valgrind; placing a tensor makes its
// bytes addressable. Buffers are plain heap blocks owned by the allocator; destroying it or growing a
// buffer frees the old block, and tensors placed there must not be used afterwards (as in ggml).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "layers/alloc/tensor.h"

namespace lifeline::alloc {

inline constexpr size_t kNotOwned = SIZE_MAX;

struct BufferSpec {
  size_t alignment = 32;              // a power of two
  size_t max_size = size_t{1} << 26;  // the most bytes one buffer may plan
};

// Where the plan puts one tensor.
struct TensorPlacement {
  int buffer_id = -1;
  size_t offset = kNotOwned;
  size_t size_max = 0;
};

class GraphAllocator {
 public:
  // Fails on no buffers, an alignment that is not a power of two, or a zero max_size.
  static StatusOr<std::unique_ptr<GraphAllocator>> Create(std::vector<BufferSpec> buffers);
  ~GraphAllocator();
  GraphAllocator(const GraphAllocator&) = delete;
  GraphAllocator& operator=(const GraphAllocator&) = delete;

  // Plans `graph` and sizes the buffers for it. `node_buffer_ids` / `leaf_buffer_ids` give each node /
  // leaf's buffer (empty: buffer 0). Buffers only grow; growing one frees its old block.
  Status Reserve(const Graph& graph, const std::vector<int>& node_buffer_ids = {},
                 const std::vector<int>& leaf_buffer_ids = {});
  // Places every tensor of `graph` this allocator owns at its planned offset. If the graph differs from
  // the reserved one (its structure, sizes, or which leafs hold data), it is re-planned first with every
  // tensor in buffer 0 when there is one buffer; with several buffers that is an error. A view whose
  // source has no memory is refused (FailedPrecondition); a refused AllocGraph leaves every tensor's
  // data and owner as they were (as ggml's alloc_graph, which fails only before placing anything).
  Status AllocGraph(const Graph& graph);

  size_t buffer_count() const { return buffers_.size(); }
  size_t buffer_size(int id) const { return buffers_[id].size; }
  const uint8_t* buffer_base(int id) const { return buffers_[id].block.get(); }
  int replans() const { return replans_; }
  const TensorPlacement* placement_of(const Tensor* t) const;

  // Bytes held in buffers by all live allocators (for the teardown check).
  static int64_t live_buffer_bytes();

 private:
  struct Buffer {
    BufferSpec spec;
    std::unique_ptr<uint8_t[]> block;
    size_t size = 0;
  };
  struct Plan;
  explicit GraphAllocator(std::vector<BufferSpec> specs);
  Status PlanGraph(const Graph& graph, const std::vector<int>& node_ids, const std::vector<int>& leaf_ids,
                   std::unique_ptr<Plan>* out);
  Status InitTensor(Tensor* t, const TensorPlacement& p, const char* kind);

  std::vector<Buffer> buffers_;
  std::unique_ptr<Plan> plan_;
  int replans_ = 0;
};

}  // namespace lifeline::alloc
