// LayerAdapter: runs graph programs on layers/alloc's GraphAllocator and checks every allocation oracle
// after each placement (harness/oracles/alloc_oracles.h).
#include <cstring>
#include <memory>
#include <vector>

#include "harness/check.h"
#include "harness/oracles/alloc_oracles.h"
#include "harness/programs/graph_program.h"
#include "layers/alloc/eval.h"

namespace lifeline::graphs {
namespace {

using alloc::Tensor;

// Deterministic leaf contents: small multiples of 1/4, exact in float16.
float LeafValue(int graph, int tensor, int64_t i) {
  return static_cast<float>(((graph * 31 + tensor * 7 + i * 3) % 17) - 8) / 4.0f;
}

void Fill(Tensor* t, int graph, int index) {
  for (int64_t i = 0; i < t->nelements(); ++i) alloc::StoreElement(t->type, t->data, i, LeafValue(graph, index, i));
}

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

  Status AddTensor(int g, const TensorSpec& spec) override {
    if (graphs_.size() <= static_cast<size_t>(g)) graphs_.resize(g + 1);
    Graph& gr = graphs_[g];
    auto src = [&](int j) { return spec.src[j] >= 0 ? gr.t[spec.src[j]] : nullptr; };
    int64_t ne[alloc::kMaxDims] = {spec.ne[0], 1, 1, spec.ne[1]};
    StatusOr<Tensor*> t = InvalidArgument("unknown op");
    switch (spec.op) {
      case alloc::Op::kNone:
        t = spec.external_graph >= 0 ? ctx_.ViewTensor(graphs_[spec.external_graph].t[spec.external_tensor])
                                     : ctx_.NewTensor(spec.type, ne, alloc::kMaxDims);
        break;
      case alloc::Op::kScale:
      case alloc::Op::kNeg:
        t = ctx_.Unary(spec.op, src(0), spec.param, spec.inplace);
        break;
      case alloc::Op::kAdd:
      case alloc::Op::kMul:
        t = ctx_.Binary(spec.op, src(0), src(1), spec.inplace);
        break;
      case alloc::Op::kCopy:
        t = ctx_.Copy(src(0), spec.type);
        break;
      case alloc::Op::kConcat:
        t = ctx_.Concat(src(0), src(1));
        break;
      case alloc::Op::kView:
        t = ctx_.View(src(0), ne, 1, static_cast<size_t>(spec.view_offset) * alloc::DTypeSize(src(0)->type));
        break;
      case alloc::Op::kReshape:
        t = ctx_.Reshape(src(0), ne, 1);
        break;
    }
    if (!t.ok()) return t.status();
    Tensor* tensor = t.value();
    tensor->name = "g" + std::to_string(g) + ".t" + std::to_string(gr.t.size());
    tensor->input = spec.input;
    tensor->output = spec.output;
    gr.t.push_back(tensor);
    gr.external.emplace_back();
    if (spec.preallocated) return SetPreallocated(g, static_cast<int>(gr.t.size()) - 1, true);
    return Status::Ok();
  }

  Status SetOutput(int g, int t) override {
    graphs_[g].t[t]->output = true;
    return Status::Ok();
  }

  Status Rewire(int g, int node, int slot, int new_src) override {
    Graph& gr = graphs_[g];
    Tensor* n = gr.t[node];
    Tensor* old = n->src[slot];
    if (Status s = ctx_.SetSource(n, slot, gr.t[new_src]); !s.ok()) return s;
    StatusOr<alloc::Graph> built = alloc::BuildGraph(Outputs(g));
    if (!built.ok()) {
      n->src[slot] = old;  // leave the graph as it was
      return built.status();
    }
    return Status::Ok();
  }

  Status SetPreallocated(int g, int t, bool on) override {
    Graph& gr = graphs_[g];
    Tensor* tensor = gr.t[t];
    std::unique_ptr<uint8_t[]> block = on ? std::make_unique<uint8_t[]>(tensor->nbytes()) : nullptr;
    if (Status s = ctx_.SetExternalData(tensor, block.get()); !s.ok()) return s;
    gr.external[t] = std::move(block);  // the old block goes only now that nothing points at it
    if (on) Fill(tensor, g, t);
    return Status::Ok();
  }

  Status Reserve(int k, int g) override {
    StatusOr<alloc::Graph> built = alloc::BuildGraph(Outputs(g));
    if (!built.ok()) return built.status();
    size_t nb = allocators_[k]->buffer_count();
    std::vector<int> node_ids(built->nodes.size()), leaf_ids(built->leafs.size());
    for (size_t i = 0; i < node_ids.size(); ++i) node_ids[i] = static_cast<int>(i % nb);
    for (size_t i = 0; i < leaf_ids.size(); ++i) leaf_ids[i] = static_cast<int>(i % nb);
    return allocators_[k]->Reserve(built.value(), node_ids, leaf_ids);
  }

  Status AllocAndCompute(int k, int g) override {
    std::vector<Tensor*> outputs = Outputs(g);
    StatusOr<alloc::Graph> built = alloc::BuildGraph(outputs);
    if (!built.ok()) return built.status();
    const alloc::Graph& graph = built.value();
    alloc::GraphAllocator& a = *allocators_[k];
    if (Status s = a.AllocGraph(graph); !s.ok()) return s;

    // The allocator's leafs get their contents now, as a caller sets inputs after alloc_graph.
    for (Tensor* leaf : graph.leafs) {
      if (!leaf->is_view() && leaf->owner == &a) Fill(leaf, g, IndexOf(g, leaf));
    }
    std::vector<oracles::BufferExtent> extents;
    for (size_t b = 0; b < a.buffer_count(); ++b) {
      extents.push_back({a.buffer_base(static_cast<int>(b)), a.buffer_size(static_cast<int>(b)), BufferAlignment(k, b)});
    }
    Expect(oracles::CheckPlacedInsideBuffers(graph, &a, extents));
    Expect(oracles::CheckViewsInsideSources(graph));
    Expect(oracles::CheckNoLiveOverlap(graph, &a));
    oracles::Canary canary(graph, &a);
    oracles::Differential differential(graph, &a, outputs);
    Status eval = alloc::Evaluate(graph);
    LIFELINE_CHECK(eval.ok(), "evaluating g" + std::to_string(g) + " on placed memory failed: " + eval.ToString());
    Expect(canary.Check());
    Expect(differential.Check());
    return Status::Ok();
  }

  void Teardown() override {
    for (auto& a : allocators_) a.reset();
    graphs_.clear();
    LIFELINE_CHECK(alloc::GraphAllocator::live_buffer_bytes() == baseline_,
                   "baseline oracle: " + std::to_string(alloc::GraphAllocator::live_buffer_bytes() - baseline_) +
                       " buffer bytes still held after every allocator was destroyed");
  }

 private:
  struct Graph {
    std::vector<Tensor*> t;
    std::vector<std::unique_ptr<uint8_t[]>> external;  // pre-allocated leaf memory, per tensor
  };

  static void Expect(const std::string& violation) { LIFELINE_CHECK(violation.empty(), violation); }

  std::vector<Tensor*> Outputs(int g) const {
    std::vector<Tensor*> out;
    for (Tensor* t : graphs_[g].t) {
      if (t->output) out.push_back(t);
    }
    return out;
  }

  int IndexOf(int g, const Tensor* t) const {
    const auto& v = graphs_[g].t;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] == t) return static_cast<int>(i);
    }
    return -1;
  }

  size_t BufferAlignment(int k, size_t b) const { return specs_[k].buffers[b].alignment; }

  int64_t baseline_;
  alloc::Context ctx_;
  std::unique_ptr<alloc::GraphAllocator> allocators_[kAllocators];
  AllocatorSpec specs_[kAllocators];
  std::vector<Graph> graphs_;
};

}  // namespace

std::unique_ptr<AllocatorAdapter> MakeLayerAdapter() { return std::make_unique<LayerAdapter>(); }

}  // namespace lifeline::graphs
