#include "harness/programs/graph_program.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdlib>

#include "core/check.h"
#include "harness/programs/op_trace.h"

namespace lifeline::graphs {
namespace {

using alloc::DType;
using alloc::Op;

constexpr float kParams[] = {0.5f, 2.0f, -1.0f, 0.25f};
constexpr int64_t kMaxDim1Concat = 64;

// The decoder's model: the graphs as specs, which allocator each is bound to, and what is placed where.
struct ModelTensor {
  TensorSpec spec;
  int64_t ne0 = 1, ne1 = 1;  // logical shape [ne0, ne1]
  bool owned_root = true;    // its bytes (through views) belong to the graph's allocator
  bool has_memory = false;   // pre-allocated, or reachable when its graph was last placed
};
struct ModelGraph {
  std::vector<ModelTensor> t;
  bool sealed = false;
  int allocator = -1;          // bound at the first Reserve/Alloc
  int version = 0;             // bumped by every mutation
  bool placed = false;         // AllocAndCompute succeeded at least once
  uint64_t placed_epoch = 0;   // allocator epoch right after its last placement
  std::vector<std::pair<int, uint64_t>> bound;  // external graph -> its placed_epoch when first bound
  bool frozen = false;         // another graph views its outputs: no more mutations
};
struct Model {
  std::vector<ModelGraph> g;
  uint64_t epoch[kAllocators] = {};
  int buffers[kAllocators] = {};
  int reserved_graph[kAllocators] = {-1, -1};
  int reserved_version[kAllocators] = {};

  int open() const { return !g.empty() && !g.back().sealed ? static_cast<int>(g.size()) - 1 : -1; }
  std::vector<int> sealed() const {
    std::vector<int> out;
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i].sealed) out.push_back(static_cast<int>(i));
    }
    return out;
  }
};

// Tensors reachable from the outputs of `mg` over sources (as BuildGraph walks them).
std::vector<bool> Reachable(const ModelGraph& mg) {
  std::vector<bool> r(mg.t.size(), false);
  std::vector<int> stack;
  for (size_t i = 0; i < mg.t.size(); ++i) {
    if (mg.t[i].spec.output) stack.push_back(static_cast<int>(i));
  }
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    if (r[i]) continue;
    r[i] = true;
    for (int s : mg.t[i].spec.src) {
      if (s >= 0) stack.push_back(s);
    }
  }
  return r;
}

bool DependsOn(const ModelGraph& mg, int from, int target) {
  std::vector<bool> seen(mg.t.size(), false);
  std::vector<int> stack{from};
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    if (i == target) return true;
    if (seen[i]) continue;
    seen[i] = true;
    for (int s : mg.t[i].spec.src) {
      if (s >= 0) stack.push_back(s);
    }
  }
  return false;
}

// The tensor whose bytes tensor `idx` uses (through views, reshapes and in-place results).
int RootOf(const ModelGraph& mg, int idx) {
  while (mg.t[idx].spec.src[0] >= 0 &&
         (mg.t[idx].spec.inplace || mg.t[idx].spec.op == Op::kView || mg.t[idx].spec.op == Op::kReshape)) {
    idx = mg.t[idx].spec.src[0];
  }
  return idx;
}

// External graphs that `mg`'s reachable leaf views read.
std::vector<int> ExternalSources(const ModelGraph& mg) {
  std::vector<bool> r = Reachable(mg);
  std::vector<int> out;
  for (size_t i = 0; i < mg.t.size(); ++i) {
    int h = mg.t[i].spec.external_graph;
    if (r[i] && h >= 0 && std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  }
  return out;
}

int Pick(FuzzedDataProvider& fdp, size_t n) {
  LIFELINE_PRECONDITION(n > 0, "decoder picked from an empty set");
  return fdp.ConsumeIntegralInRange<int>(0, static_cast<int>(n) - 1);
}

// A step that cannot act on the chosen graph plans it instead (always legal).
void FallBackToReserve(Model& m, int gi, Step& step) {
  ModelGraph& mg = m.g[gi];
  int k = mg.allocator >= 0 ? mg.allocator : 0;
  step = Step{};
  step.kind = StepKind::kReserve;
  step.graph = gi;
  step.allocator = k;
  mg.allocator = k;
  m.epoch[k] += 1;
  m.reserved_graph[k] = gi;
  m.reserved_version[k] = mg.version;
}

template <typename F>
std::vector<int> Where(const ModelGraph& mg, F pred) {
  std::vector<int> out;
  for (size_t i = 0; i < mg.t.size(); ++i) {
    if (pred(mg.t[i], static_cast<int>(i))) out.push_back(static_cast<int>(i));
  }
  return out;
}

void AddTensor(Model& m, int gi, Step& step, ModelTensor mt) {
  step.graph = gi;
  step.tensor = mt.spec;
  step.tensor_index = static_cast<int>(m.g[gi].t.size());
  m.g[gi].t.push_back(mt);
}

ModelTensor Derived(const ModelTensor& a, Op op, int src0) {
  ModelTensor mt;
  mt.spec.op = op;
  mt.spec.type = a.spec.type;
  mt.spec.src[0] = src0;
  mt.ne0 = a.ne0;
  mt.ne1 = a.ne1;
  mt.spec.ne[0] = a.ne0;
  mt.spec.ne[1] = a.ne1;
  return mt;
}

// A sealed graph to mutate, or -1 when the pick is frozen (other graphs view it; it stays as it is) and
// the step became a Reserve of it instead.
int PickMutable(FuzzedDataProvider& fdp, Model& m, const std::vector<int>& sealed, Step& step) {
  int gi = sealed[Pick(fdp, sealed.size())];
  if (!m.g[gi].frozen) return gi;
  FallBackToReserve(m, gi, step);
  return -1;
}

// Whether an Alloc of graph gi by allocator k is legal, and the status it must return.
bool AllocLegal(const Model& m, int gi, int k, StatusCode* expect) {
  const ModelGraph& mg = m.g[gi];
  *expect = StatusCode::kOk;
  for (int h : ExternalSources(mg)) {
    const ModelGraph& src = m.g[h];
    if (src.allocator == k) return false;  // the same allocator would overwrite what the view reads
    if (src.placed && m.epoch[src.allocator] != src.placed_epoch) return false;  // stale
    for (const auto& [bh, e] : mg.bound) {
      if (bh == h && e != src.placed_epoch) return false;  // the view still holds the old address
    }
  }
  // A view of a tensor that has no memory yet: its graph was never placed, and it is not a leaf with
  // memory of its own (views and results get theirs when their graph is placed).
  std::vector<bool> r = Reachable(mg);
  for (size_t i = 0; i < mg.t.size(); ++i) {
    const TensorSpec& v = mg.t[i].spec;
    if (!r[i] || v.external_graph < 0) continue;
    const ModelGraph& src = m.g[v.external_graph];
    if (!src.t[v.external_tensor].has_memory) *expect = StatusCode::kFailedPrecondition;
  }
  // With several buffers AllocGraph does not re-plan by itself: the program reserves first. (Whether a
  // mutated graph still fits the old plan depends on the allocator's notion of "same graph", which the
  // model does not copy; tests/alloc_test.cc covers that refusal.)
  bool plan_matches = m.reserved_graph[k] == gi && m.reserved_version[k] == mg.version;
  return plan_matches || m.buffers[k] == 1;
}

}  // namespace

namespace {
Program DecodeImpl(const uint8_t* data, size_t size, std::vector<std::pair<size_t, size_t>>* spans) {
  FuzzedDataProvider fdp(data, size);
  auto mark = [&](size_t before) {
    if (spans != nullptr) spans->emplace_back(fdp.remaining_bytes(), before);
  };
  Program p;
  Model m;
  for (int k = 0; k < kAllocators; ++k) {
    int n = fdp.ConsumeIntegralInRange<int>(1, 2);
    for (int b = 0; b < n; ++b) {
      alloc::BufferSpec spec;
      spec.alignment = size_t{1} << fdp.ConsumeIntegralInRange<int>(0, kMaxAlignLog2);
      spec.max_size = size_t{1} << 22;  // never exhausted by a program (exhaustion: see alloc_test)
      p.allocators[k].buffers.push_back(spec);
    }
    m.buffers[k] = n;
  }
  mark(size);
  m.g.emplace_back();

  for (size_t i = 0; i < kMaxSteps && fdp.remaining_bytes() > 0; ++i) {
    const size_t before = fdp.remaining_bytes();
    const int open = m.open();
    const bool room = open >= 0 && m.g[open].t.size() < static_cast<size_t>(kMaxTensorsPerGraph);
    const bool has_tensor = open >= 0 && !m.g[open].t.empty();
    std::vector<int> sealed = m.sealed();
    bool any_output = false;
    for (int h : sealed) any_output |= !Where(m.g[h], [](const ModelTensor& t, int) { return t.spec.output; }).empty();
    bool open_has_node = has_tensor && !Where(m.g[open], [](const ModelTensor& t, int) { return t.spec.op != Op::kNone; }).empty();

    std::vector<StepKind> legal;
    if (room) legal.push_back(StepKind::kLeaf);
    if (room && has_tensor) {
      for (StepKind k : {StepKind::kUnary, StepKind::kBinary, StepKind::kCopy, StepKind::kConcat, StepKind::kView}) legal.push_back(k);
    }
    if (room && any_output) legal.push_back(StepKind::kViewExternal);
    if (has_tensor) legal.push_back(StepKind::kMarkOutput);
    if (open_has_node) legal.push_back(StepKind::kSeal);
    if (!sealed.empty()) {
      for (StepKind k : {StepKind::kReserve, StepKind::kAlloc, StepKind::kRewire, StepKind::kGrow, StepKind::kTogglePrealloc}) legal.push_back(k);
    }
    if (legal.empty()) break;
    Step step;
    step.kind = legal[Pick(fdp, legal.size())];

    switch (step.kind) {
      case StepKind::kLeaf: {
        ModelTensor mt;
        mt.spec.type = fdp.ConsumeBool() ? DType::kF16 : DType::kF32;
        mt.ne0 = mt.spec.ne[0] = fdp.ConsumeIntegralInRange<int64_t>(1, kMaxDim0);
        mt.ne1 = mt.spec.ne[1] = fdp.ConsumeIntegralInRange<int64_t>(1, kMaxDim1);
        uint8_t flags = fdp.ConsumeIntegral<uint8_t>();
        mt.spec.input = flags & 1;
        mt.spec.preallocated = (flags & 6) == 6;  // one leaf in four brings its own memory
        mt.owned_root = !mt.spec.preallocated;
        mt.has_memory = mt.spec.preallocated;
        AddTensor(m, open, step, mt);
        break;
      }
      case StepKind::kUnary:
      case StepKind::kCopy: {
        int a = Pick(fdp, m.g[open].t.size());
        const ModelTensor& src = m.g[open].t[a];
        if (step.kind == StepKind::kCopy) {
          ModelTensor mt = Derived(src, Op::kCopy, a);
          mt.spec.type = fdp.ConsumeBool() ? DType::kF16 : DType::kF32;
          AddTensor(m, open, step, mt);
          break;
        }
        ModelTensor mt = Derived(src, fdp.ConsumeBool() ? Op::kScale : Op::kNeg, a);
        mt.spec.param = kParams[Pick(fdp, 4)];
        // In place only into memory the graph owns: writing into an external tensor is the caller's bug.
        mt.spec.inplace = fdp.ConsumeBool() && src.owned_root;
        mt.owned_root = true;
        AddTensor(m, open, step, mt);
        break;
      }
      case StepKind::kBinary: {
        int a = Pick(fdp, m.g[open].t.size());
        const ModelTensor src = m.g[open].t[a];
        std::vector<int> same = Where(m.g[open], [&](const ModelTensor& t, int) {
          return t.ne0 == src.ne0 && t.ne1 == src.ne1 && t.spec.type == src.spec.type;
        });
        ModelTensor mt = Derived(src, fdp.ConsumeBool() ? Op::kAdd : Op::kMul, a);
        mt.spec.src[1] = same[Pick(fdp, same.size())];
        mt.spec.inplace = fdp.ConsumeBool() && src.owned_root;
        AddTensor(m, open, step, mt);
        break;
      }
      case StepKind::kConcat: {
        int a = Pick(fdp, m.g[open].t.size());
        const ModelTensor src = m.g[open].t[a];
        std::vector<int> fit = Where(m.g[open], [&](const ModelTensor& t, int) {
          return t.ne0 == src.ne0 && t.spec.type == src.spec.type && t.ne1 + src.ne1 <= kMaxDim1Concat;
        });
        if (fit.empty()) {  // nothing fits: a copy instead, so the step still adds a tensor
          step.kind = StepKind::kCopy;
          AddTensor(m, open, step, Derived(src, Op::kCopy, a));
          break;
        }
        ModelTensor mt = Derived(src, Op::kConcat, a);
        mt.spec.src[1] = fit[Pick(fdp, fit.size())];
        mt.ne1 = mt.spec.ne[1] = src.ne1 + m.g[open].t[mt.spec.src[1]].ne1;
        AddTensor(m, open, step, mt);
        break;
      }
      case StepKind::kView: {
        int a = Pick(fdp, m.g[open].t.size());
        const ModelTensor src = m.g[open].t[a];
        int64_t n = src.ne0 * src.ne1;
        ModelTensor mt = Derived(src, Op::kReshape, a);
        mt.owned_root = src.owned_root;
        if (fdp.ConsumeBool()) {
          mt.ne0 = mt.spec.ne[0] = n;  // reshape to one dimension
          mt.ne1 = mt.spec.ne[1] = 1;
        } else {
          mt.spec.op = Op::kView;
          int64_t k = fdp.ConsumeIntegralInRange<int64_t>(1, n);
          mt.spec.view_offset = fdp.ConsumeIntegralInRange<int64_t>(0, n - k);
          mt.ne0 = mt.spec.ne[0] = k;
          mt.ne1 = mt.spec.ne[1] = 1;
        }
        AddTensor(m, open, step, mt);
        break;
      }
      case StepKind::kViewExternal: {
        std::vector<std::pair<int, int>> outs;
        for (int h : sealed) {
          for (int t : Where(m.g[h], [](const ModelTensor& x, int) { return x.spec.output; })) outs.emplace_back(h, t);
        }
        auto [h, t] = outs[Pick(fdp, outs.size())];
        m.g[h].frozen = true;
        const ModelTensor& src = m.g[h].t[t];
        ModelTensor mt;
        mt.spec.type = src.spec.type;
        mt.ne0 = mt.spec.ne[0] = src.ne0;
        mt.ne1 = mt.spec.ne[1] = src.ne1;
        mt.spec.external_graph = h;
        mt.spec.external_tensor = t;
        mt.owned_root = false;
        AddTensor(m, open, step, mt);
        break;
      }
      case StepKind::kMarkOutput:
        step.graph = open;
        step.tensor_index = Pick(fdp, m.g[open].t.size());
        m.g[open].t[step.tensor_index].spec.output = true;
        break;
      case StepKind::kSeal: {
        step.graph = open;
        ModelGraph& mg = m.g[open];
        if (Where(mg, [](const ModelTensor& t, int) { return t.spec.output; }).empty()) {
          step.tensor_index = static_cast<int>(mg.t.size()) - 1;  // no output marked: the last tensor is
          mg.t.back().spec.output = true;
        }
        mg.sealed = true;
        if (m.g.size() < static_cast<size_t>(kMaxGraphs)) m.g.emplace_back();
        break;
      }
      case StepKind::kReserve:
      case StepKind::kAlloc: {
        int gi = sealed[Pick(fdp, sealed.size())];
        ModelGraph& mg = m.g[gi];
        int k = mg.allocator >= 0 ? mg.allocator : Pick(fdp, kAllocators);
        step.graph = gi;
        step.allocator = k;
        if (step.kind == StepKind::kAlloc) {
          StatusCode expect;
          if (!AllocLegal(m, gi, k, &expect)) {
            step.kind = StepKind::kReserve;  // illegal now: plan it instead (always legal)
          } else {
            step.expect = expect;
          }
        }
        mg.allocator = k;
        m.epoch[k] += 1;
        if (step.kind == StepKind::kReserve) {
          m.reserved_graph[k] = gi;
          m.reserved_version[k] = mg.version;
          break;
        }
        if (step.expect == StatusCode::kOk) {
          if (m.buffers[k] == 1) {  // AllocGraph re-plans when the plan is stale
            m.reserved_graph[k] = gi;
            m.reserved_version[k] = mg.version;
          }
          mg.placed = true;
          mg.placed_epoch = m.epoch[k];
          std::vector<bool> r = Reachable(mg);
          for (size_t j = 0; j < mg.t.size(); ++j) mg.t[j].has_memory = mg.t[j].has_memory || r[j];
          if (mg.bound.empty()) {
            for (int h : ExternalSources(mg)) mg.bound.emplace_back(h, m.g[h].placed_epoch);
          }
        }
        break;
      }
      case StepKind::kRewire: {
        int gi = PickMutable(fdp, m, sealed, step);
        if (gi < 0) break;
        ModelGraph& mg = m.g[gi];
        std::vector<int> nodes = Where(mg, [](const ModelTensor& t, int) {
          return t.spec.src[0] >= 0 && t.spec.op != Op::kView && t.spec.op != Op::kReshape;
        });
        step.graph = gi;
        if (nodes.empty()) {  // only views: nothing to rewire
          FallBackToReserve(m, gi, step);
          break;
        }
        step.tensor_index = nodes[Pick(fdp, nodes.size())];
        ModelTensor& node = mg.t[step.tensor_index];
        step.slot = node.spec.src[1] >= 0 ? Pick(fdp, 2) : 0;
        const ModelTensor& old = mg.t[node.spec.src[step.slot]];
        std::vector<int> same = Where(mg, [&](const ModelTensor& t, int idx) {
          return idx != step.tensor_index && t.ne0 == old.ne0 && t.ne1 == old.ne1 && t.spec.type == old.spec.type;
        });
        step.new_src = same[Pick(fdp, same.size())];
        if (node.spec.inplace && step.slot == 0) {
          step.expect = StatusCode::kInvalidArgument;  // an in-place result's first source is fixed
        } else if (DependsOn(mg, step.new_src, step.tensor_index)) {
          // Would close a cycle. BuildGraph sees it only when the node is reachable from an output;
          // a latent cycle elsewhere would surface at some later step, so that rewire is not made.
          if (Reachable(mg)[step.tensor_index]) {
            step.expect = StatusCode::kInvalidArgument;
          } else {
            FallBackToReserve(m, gi, step);
          }
        } else if (node.spec.src[step.slot] != step.new_src) {
          node.spec.src[step.slot] = step.new_src;
          mg.version += 1;
        }
        break;
      }
      case StepKind::kGrow: {
        int gi = PickMutable(fdp, m, sealed, step);
        if (gi < 0) break;
        ModelGraph& mg = m.g[gi];
        step.graph = gi;
        if (mg.t.size() >= static_cast<size_t>(kMaxTensorsPerGraph)) {  // full
          FallBackToReserve(m, gi, step);
          break;
        }
        std::vector<int> outs = Where(mg, [](const ModelTensor& t, int) { return t.spec.output; });
        int a = outs[Pick(fdp, outs.size())];
        ModelTensor mt = Derived(mg.t[a], Op::kNeg, a);
        mt.spec.output = true;
        AddTensor(m, gi, step, mt);
        mg.version += 1;
        break;
      }
      case StepKind::kTogglePrealloc: {
        int gi = PickMutable(fdp, m, sealed, step);
        if (gi < 0) break;
        ModelGraph& mg = m.g[gi];
        step.graph = gi;
        // Plain leafs that no in-place op writes into, directly or through views.
        std::vector<int> leafs = Where(mg, [&](const ModelTensor& t, int idx) {
          if (t.spec.op != Op::kNone || t.spec.external_graph >= 0) return false;
          for (const ModelTensor& u : mg.t) {
            if (u.spec.inplace && RootOf(mg, u.spec.src[0]) == idx) return false;
          }
          return true;
        });
        if (leafs.empty()) {
          step.kind = StepKind::kMarkOutput;  // nothing to toggle: mark the last tensor an output
          step.tensor_index = static_cast<int>(mg.t.size()) - 1;
          if (!mg.t.back().spec.output) mg.version += 1;
          mg.t.back().spec.output = true;
          break;
        }
        step.tensor_index = leafs[Pick(fdp, leafs.size())];
        ModelTensor& leaf = mg.t[step.tensor_index];
        leaf.spec.preallocated = !leaf.spec.preallocated;
        leaf.owned_root = !leaf.spec.preallocated;
        leaf.has_memory = leaf.spec.preallocated;
        // Views of the leaf lose their address with it until the graph is placed again.
        for (size_t j = 0; j < mg.t.size(); ++j) {
          if (static_cast<int>(j) != step.tensor_index && RootOf(mg, static_cast<int>(j)) == step.tensor_index) {
            mg.t[j].has_memory = false;
          }
        }
        step.tensor.preallocated = leaf.spec.preallocated;
        mg.version += 1;
        break;
      }
    }
    p.steps.push_back(step);
    mark(before);
  }
  return p;
}
}  // namespace

Program Decode(const uint8_t* data, size_t size) { return DecodeImpl(data, size, nullptr); }

std::vector<std::pair<size_t, size_t>> StepSpans(const uint8_t* data, size_t size) {
  std::vector<std::pair<size_t, size_t>> spans;
  DecodeImpl(data, size, &spans);
  return spans;
}

namespace {

const char* KindName(StepKind k) {
  switch (k) {
    case StepKind::kLeaf: return "leaf";
    case StepKind::kUnary: return "unary";
    case StepKind::kBinary: return "binary";
    case StepKind::kCopy: return "copy";
    case StepKind::kConcat: return "concat";
    case StepKind::kView: return "view";
    case StepKind::kViewExternal: return "view-external";
    case StepKind::kMarkOutput: return "mark-output";
    case StepKind::kSeal: return "seal";
    case StepKind::kReserve: return "reserve";
    case StepKind::kAlloc: return "alloc+compute";
    case StepKind::kRewire: return "rewire";
    case StepKind::kGrow: return "grow";
    case StepKind::kTogglePrealloc: return "toggle-prealloc";
  }
  return "?";
}

std::string TensorText(const TensorSpec& t) {
  std::string s = std::string(alloc::OpName(t.op)) + (t.type == DType::kF16 ? " f16" : " f32") + " [" +
                  std::to_string(t.ne[0]) + "," + std::to_string(t.ne[1]) + "]";
  for (int j = 0; j < 2; ++j) {
    if (t.src[j] >= 0) s += " src" + std::to_string(j) + "=t" + std::to_string(t.src[j]);
  }
  if (t.op == Op::kScale) s += " x" + std::to_string(t.param).substr(0, 5);
  if (t.op == Op::kView) s += " offset=" + std::to_string(t.view_offset);
  if (t.inplace) s += " inplace";
  if (t.input) s += " input";
  if (t.preallocated) s += " preallocated";
  if (t.external_graph >= 0) s += " view of g" + std::to_string(t.external_graph) + ".t" + std::to_string(t.external_tensor);
  return s;
}

}  // namespace

std::string Describe(const Step& s) {
  std::string out = KindName(s.kind);
  switch (s.kind) {
    case StepKind::kReserve:
    case StepKind::kAlloc:
      out += " g" + std::to_string(s.graph) + " with allocator " + std::to_string(s.allocator);
      break;
    case StepKind::kMarkOutput:
      out += " g" + std::to_string(s.graph) + ".t" + std::to_string(s.tensor_index);
      break;
    case StepKind::kSeal:
      out += " g" + std::to_string(s.graph);
      if (s.tensor_index >= 0) out += " (t" + std::to_string(s.tensor_index) + " becomes the output)";
      break;
    case StepKind::kRewire:
      out += " g" + std::to_string(s.graph) + ".t" + std::to_string(s.tensor_index) + " src" + std::to_string(s.slot) +
             " -> t" + std::to_string(s.new_src);
      break;
    case StepKind::kTogglePrealloc:
      out += " g" + std::to_string(s.graph) + ".t" + std::to_string(s.tensor_index) +
             (s.tensor.preallocated ? " -> preallocated" : " -> allocator-owned");
      break;
    default:
      out += " g" + std::to_string(s.graph) + ".t" + std::to_string(s.tensor_index) + " = " + TensorText(s.tensor);
      if (s.kind == StepKind::kGrow) out += " (output)";
  }
  if (s.expect != StatusCode::kOk) out += " -> " + std::string(StatusCodeName(s.expect));
  return out;
}

std::string Describe(const Program& p) {
  std::string out;
  for (int k = 0; k < kAllocators; ++k) {
    out += "allocator " + std::to_string(k) + ":";
    for (const alloc::BufferSpec& b : p.allocators[k].buffers) out += " buffer(align " + std::to_string(b.alignment) + ")";
    out += "\n";
  }
  for (size_t i = 0; i < p.steps.size(); ++i) out += "#" + std::to_string(i) + " " + Describe(p.steps[i]) + "\n";
  return out;
}

void Execute(const Program& program, AllocatorAdapter& adapter) {
  if (TraceRequested()) {
    std::fprintf(stderr, "lifeline: program of %zu steps\n%s", program.steps.size(), Describe(program).c_str());
  }
  OpTraceScope trace(&program.steps, program.steps.size(), &RenderOps<std::vector<Step>>);
  for (int k = 0; k < kAllocators; ++k) {
    Status s = adapter.CreateAllocator(k, program.allocators[k]);
    LIFELINE_CHECK(s.ok(), "creating allocator " + std::to_string(k) + " failed: " + s.ToString());
  }
  for (size_t i = 0; i < program.steps.size(); ++i) {
    trace.set_op(i);
    const Step& s = program.steps[i];
    Status status;
    switch (s.kind) {
      case StepKind::kLeaf:
      case StepKind::kUnary:
      case StepKind::kBinary:
      case StepKind::kCopy:
      case StepKind::kConcat:
      case StepKind::kView:
      case StepKind::kViewExternal:
      case StepKind::kGrow:
        status = adapter.AddTensor(s.graph, s.tensor);
        if (status.ok() && s.kind == StepKind::kGrow) status = adapter.SetOutput(s.graph, s.tensor_index);
        break;
      case StepKind::kMarkOutput:
        status = adapter.SetOutput(s.graph, s.tensor_index);
        break;
      case StepKind::kSeal:
        if (s.tensor_index >= 0) status = adapter.SetOutput(s.graph, s.tensor_index);
        break;
      case StepKind::kReserve:
        status = adapter.Reserve(s.allocator, s.graph);
        break;
      case StepKind::kAlloc:
        status = adapter.AllocAndCompute(s.allocator, s.graph);
        break;
      case StepKind::kRewire:
        status = adapter.Rewire(s.graph, s.tensor_index, s.slot, s.new_src);
        break;
      case StepKind::kTogglePrealloc:
        status = adapter.SetPreallocated(s.graph, s.tensor_index, s.tensor.preallocated);
        break;
    }
    LIFELINE_CHECK(status.code() == s.expect, "status oracle: " + Describe(s) + " returned " + status.ToString() +
                                                  ", model predicted " + std::string(StatusCodeName(s.expect)));
  }
  trace.set_op(program.steps.size());
  adapter.Teardown();
}

}  // namespace lifeline::graphs
