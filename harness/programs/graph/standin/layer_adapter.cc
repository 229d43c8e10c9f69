// LayerAdapter (layer_adapter.h): graph programs on layers/alloc's GraphAllocator.
#include "harness/programs/graph/standin/layer_adapter.h"

#include <cstring>
#include <memory>
#include <vector>

#include "core/check.h"
#include "harness/oracles/alloc_oracles.h"
#include "harness/programs/graph/graph_book.h"
#include "layers/alloc/eval.h"

namespace lifeline::graphs {
namespace {

using alloc::Tensor;

class LayerAdapter final : public AllocatorAdapter {
 public:
  LayerAdapter() : baseline_(alloc::GraphAllocator::live_buffer_bytes()) {}

  Status CreateAllocator(int k, const AllocatorSpec& spec) override {
    StatusOr<std::unique_ptr<alloc::GraphAllocator>> a = alloc::GraphAllocator::Create(spec.buffers);
    if (!a.ok()) return a.status();
    allocators_[k] = std::move(a).value();
    specs_[k] = spec;
    return Status::Ok();
  }

  Status AddTensor(int g, const TensorSpec& spec) override { return book_.AddTensor(g, spec); }
  Status SetOutput(int g, int t) override { return book_.SetOutput(g, t); }
  Status Rewire(int g, int node, int slot, int new_src) override { return book_.Rewire(g, node, slot, new_src); }
  Status SetPreallocated(int g, int t, bool on) override { return book_.SetPreallocated(g, t, on); }

  Status Reserve(int k, int g) override {
    StatusOr<alloc::Graph> built = alloc::BuildGraph(book_.Outputs(g));
    if (!built.ok()) return built.status();
    size_t nb = allocators_[k]->buffer_count();
    std::vector<int> node_ids(built->nodes.size()), leaf_ids(built->leafs.size());
    for (size_t i = 0; i < node_ids.size(); ++i) node_ids[i] = static_cast<int>(i % nb);
    for (size_t i = 0; i < leaf_ids.size(); ++i) leaf_ids[i] = static_cast<int>(i % nb);
    return allocators_[k]->Reserve(built.value(), node_ids, leaf_ids);
  }

  Status AllocAndCompute(int k, int g) override {
    std::vector<Tensor*> outputs = book_.Outputs(g);
    StatusOr<alloc::Graph> built = alloc::BuildGraph(outputs);
    if (!built.ok()) return built.status();
    const alloc::Graph& graph = built.value();
    alloc::GraphAllocator& a = *allocators_[k];
    LIFELINE_RETURN_IF_ERROR(a.AllocGraph(graph));

    // The allocator's leafs get their contents now, as a caller sets inputs after alloc_graph.
    for (Tensor* leaf : graph.leafs) {
      if (!leaf->is_view() && leaf->owner == &a) FillLeaf(leaf, g, book_.IndexOf(g, leaf));
    }
    std::vector<oracles::BufferExtent> extents;
    for (size_t b = 0; b < a.buffer_count(); ++b) {
      extents.push_back({a.buffer_base(static_cast<int>(b)), a.buffer_size(static_cast<int>(b)), BufferAlignment(k, b)});
    }
    ComputeUnderOracles(graph, &a, extents, outputs, [&] {
      Status eval = alloc::Evaluate(graph);
      LIFELINE_CHECK(eval.ok(), "evaluating g" + std::to_string(g) + " on placed memory failed: " + eval.ToString());
    });
    return Status::Ok();
  }

  void Teardown() override {
    for (auto& a : allocators_) a.reset();
    book_.Clear();
    LIFELINE_CHECK(alloc::GraphAllocator::live_buffer_bytes() == baseline_,
                   "baseline oracle: " + std::to_string(alloc::GraphAllocator::live_buffer_bytes() - baseline_) +
                       " buffer bytes still held after every allocator was destroyed");
  }

 private:
  size_t BufferAlignment(int k, size_t b) const { return specs_[k].buffers[b].alignment; }

  int64_t baseline_;
  GraphBook book_;
  std::unique_ptr<alloc::GraphAllocator> allocators_[kAllocators];
  AllocatorSpec specs_[kAllocators];
};

}  // namespace

std::unique_ptr<AllocatorAdapter> MakeLayerAdapter() { return std::make_unique<LayerAdapter>(); }

}  // namespace lifeline::graphs
