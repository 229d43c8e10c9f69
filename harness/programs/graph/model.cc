#include "harness/programs/graph/model.h"

#include <algorithm>

namespace lifeline::graphs {

using alloc::Op;

std::vector<bool> ModelGraph::Reachable() const {
  std::vector<bool> r(t.size(), false);
  std::vector<int> stack;
  stack.reserve(t.size());  // a tensor is pushed once, when first reached: one allocation (issue 15)
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].spec.output) {
      r[i] = true;
      stack.push_back(static_cast<int>(i));
    }
  }
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    for (int s : t[i].spec.src) {
      if (s >= 0 && !r[s]) {
        r[s] = true;
        stack.push_back(s);
      }
    }
  }
  return r;
}

bool ModelGraph::DependsOn(int from, int target) const {
  std::vector<bool> seen(t.size(), false);
  std::vector<int> stack{from};
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    if (i == target) return true;
    if (seen[i]) continue;
    seen[i] = true;
    for (int s : t[i].spec.src) {
      if (s >= 0) stack.push_back(s);
    }
  }
  return false;
}

int ModelGraph::RootOf(int idx) const {
  while (t[idx].spec.src[0] >= 0 &&
         (t[idx].spec.inplace || t[idx].spec.op == Op::kView || t[idx].spec.op == Op::kReshape)) {
    idx = t[idx].spec.src[0];
  }
  return idx;
}

std::vector<int> ModelGraph::ExternalSources() const {
  std::vector<bool> r = Reachable();
  std::vector<int> out;
  for (size_t i = 0; i < t.size(); ++i) {
    int h = t[i].spec.external_graph;
    if (r[i] && h >= 0 && std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  }
  return out;
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

std::pair<int, int> Model::MemoryOf(int gi, int idx) const {
  for (;;) {
    idx = g[gi].RootOf(idx);
    const TensorSpec& s = g[gi].t[idx].spec;
    if (s.external_graph < 0) return {gi, idx};
    gi = s.external_graph;  // always an earlier graph: no cycle
    idx = s.external_tensor;
  }
}

bool Model::FromOutside(int gi, int idx) const {
  const auto [h, r] = MemoryOf(gi, idx);
  return g[h].t[r].spec.op == Op::kNone && g[h].t[r].spec.preallocated;
}

std::vector<int> Model::sealed() const {
  std::vector<int> out;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i].sealed) out.push_back(static_cast<int>(i));
  }
  return out;
}

bool Model::Legal(StepKind k) const {
  // Called for every kind before every step: no allocation here.
  const int o = open();
  const bool room = o >= 0 && g[o].t.size() < static_cast<size_t>(kMaxTensorsPerGraph);
  const bool has_tensor = o >= 0 && !g[o].t.empty();
  auto any_sealed = [&](auto&& tensor_pred) {
    for (const ModelGraph& mg : g) {
      if (!mg.sealed) continue;
      for (const ModelTensor& t : mg.t)
        if (tensor_pred(t)) return true;
    }
    return false;
  };
  switch (k) {
    case StepKind::kLeaf: return room;
    case StepKind::kUnary:
    case StepKind::kBinary:
    case StepKind::kCopy:
    case StepKind::kConcat:
    case StepKind::kView: return room && has_tensor;
    case StepKind::kViewExternal: return room && any_sealed([](const ModelTensor& t) { return t.spec.output; });
    case StepKind::kRowOp:
    case StepKind::kMatMul:
      if (!room || !(k == StepKind::kRowOp ? row_ops : mul_mats)) return false;
      for (const ModelTensor& t : g[o].t)
        if (t.spec.type == alloc::DType::kF32) return true;
      return false;
    case StepKind::kTranspose: return room && has_tensor && layout_ops;
    case StepKind::kGetRows: return room && has_tensor && get_rows;
    case StepKind::kRope:
      if (!room || !rope) return false;
      for (const ModelTensor& t : g[o].t)
        if (t.ne0 >= 2) return true;
      return false;
    case StepKind::kSetRows:
      if (!room || !set_rows) return false;
      for (const ModelTensor& t : g[o].t)
        if (t.spec.type == alloc::DType::kF32 && t.ne1 <= alloc::kMaxRows) return true;
      return false;
    case StepKind::kConvDw: return room && has_tensor && conv && rules.draws_conv;
    case StepKind::kMarkOutput: return has_tensor;
    case StepKind::kSeal:
      if (o < 0) return false;
      for (const ModelTensor& t : g[o].t)
        if (t.spec.op != Op::kNone) return true;
      return false;
    case StepKind::kReserve:
    case StepKind::kAlloc:
    case StepKind::kRewire:
    case StepKind::kGrow:
    case StepKind::kTogglePrealloc:
    case StepKind::kMeasure:
      if (k == StepKind::kMeasure && !measures) return false;
      for (const ModelGraph& mg : g)
        if (mg.sealed) return true;
      return false;
  }
  return false;
}

void Model::AddTensor(int gi, Step& step, ModelTensor mt) {
  step.graph = gi;
  step.tensor = mt.spec;
  step.tensor_index = static_cast<int>(g[gi].t.size());
  g[gi].t.push_back(mt);
}

void Model::FallBackToReserve(int gi, Step& step) {
  ModelGraph& mg = g[gi];
  int k = mg.allocator >= 0 ? mg.allocator : 0;
  const char* state = step.state;  // the graph's, before the step
  step = Step{};
  step.state = state;
  step.kind = StepKind::kReserve;
  step.graph = gi;
  step.allocator = k;
  mg.allocator = k;
  epoch[k] += 1;
  if (!Split(gi)) {  // a scheduler's reserve leaves the gallocr's plan as it was
    reserved_graph[k] = gi;
    reserved_version[k] = mg.version;
  }
}

std::vector<int> Model::ViewedGraphs(int gi) const {
  std::vector<int> out;
  std::vector<int> stack = g[gi].ExternalSources();
  while (!stack.empty()) {
    const int h = stack.back();
    stack.pop_back();
    if (std::find(out.begin(), out.end(), h) != out.end()) continue;
    out.push_back(h);
    for (int x : g[h].ExternalSources()) stack.push_back(x);
  }
  return out;
}

bool Model::Split(int gi) const {
  if (!rules.splits_cpu_marks) return false;
  if (scheduled) return true;
  const ModelGraph& mg = g[gi];
  std::vector<bool> r = mg.Reachable();
  for (size_t i = 0; i < mg.t.size(); ++i) {
    if (r[i] && mg.t[i].spec.cpu) return true;
  }
  for (int h : ViewedGraphs(gi)) {
    if (g[h].placed_split) return true;
  }
  return false;
}

const char* Model::StateOf(int gi) const {
  const ModelGraph& mg = g[gi];
  if (!mg.sealed) return "open";
  const int a = mg.allocator;
  if (a < 0) return "unbound";
  const bool placed_last = mg.placed && epoch[a] == mg.placed_epoch;
  if (reserved_graph[a] == gi) {
    if (reserved_version[a] != mg.version) return "mutated";
    return placed_last ? "placed" : "planned";
  }
  if (placed_last) return "placed-unplanned";
  return mg.placed ? "evicted" : "displaced";
}

int64_t Model::ByteOffset(int gi, int idx) const {
  int64_t bytes = 0;
  for (;;) {
    const TensorSpec& s = g[gi].t[idx].spec;
    if (s.op == Op::kView) bytes += s.view_offset * static_cast<int64_t>(alloc::DTypeSize(s.type));
    if (s.src[0] >= 0 && (s.inplace || s.op == Op::kView || s.op == Op::kReshape)) {
      idx = s.src[0];
    } else if (s.op == Op::kNone && s.external_graph >= 0) {
      idx = s.external_tensor;
      gi = s.external_graph;
    } else {
      return bytes;
    }
  }
}

bool Model::AllocLegal(int gi, int k, StatusCode* expect) const {
  const ModelGraph& mg = g[gi];
  *expect = StatusCode::kOk;
  for (int h : mg.ExternalSources()) {
    for (const auto& [bh, e] : mg.bound) {
      if (bh == h && e != g[h].placed_epoch) return false;  // the view still holds the old address
    }
  }
  // Every graph whose bytes a view reads, also through a view of a view (whose bytes are those of the graph
  // it views): placed by another allocator, and not stale.
  for (int h : ViewedGraphs(gi)) {
    const ModelGraph& src = g[h];
    if (src.allocator == k) return false;  // the same allocator would overwrite what the view reads
    if (src.placed && epoch[src.allocator] != src.placed_epoch) return false;  // stale
  }
  // A view of a tensor that has no memory yet: its graph was never placed, and it is not a leaf with
  // memory of its own (views and results get theirs when their graph is placed).
  std::vector<bool> r = mg.Reachable();
  for (size_t i = 0; i < mg.t.size(); ++i) {
    const TensorSpec& v = mg.t[i].spec;
    if (!r[i] || v.external_graph < 0) continue;
    const ModelGraph& src = g[v.external_graph];
    if (!src.t[v.external_tensor].has_memory) *expect = StatusCode::kFailedPrecondition;
  }
  // Refused up front by the allocator's rules (checked after the precondition above, as the adapter does).
  if (*expect == StatusCode::kOk && (rules.refuses_f16_scale || rules.refuses_odd_rope || rules.refuses_f16_rope ||
                                    rules.refuses_misaligned_sources > 0 || rules.refuses_set_rows ||
                                    rules.refuses_f16_set_rows || rules.backend_refuses != nullptr ||
                                    rules.refuses_f16_conv)) {
    auto misaligned = [&](int src) {
      return src >= 0 && ByteOffset(gi, src) % rules.refuses_misaligned_sources != 0;
    };
    for (size_t i = 0; i < mg.t.size(); ++i) {
      const TensorSpec& s = mg.t[i].spec;
      const bool f16_scale = s.op == Op::kScale && s.type == alloc::DType::kF16;
      const bool odd_rope = s.op == Op::kRope && mg.t[i].ne0 % 2 != 0;
      const bool f16_rope = s.op == Op::kRope && s.type == alloc::DType::kF16;
      const bool misaligned_src = rules.refuses_misaligned_sources > 0 &&
                                  (s.op == Op::kMulMat || s.op == Op::kSoftMax ||
                                   (rules.misaligned_unary_too && s.op == Op::kNeg)) &&
                                  (misaligned(s.src[0]) || misaligned(s.src[1]));
      const bool set_rows = s.op == Op::kSetRows;
      const bool f16_conv = s.op == Op::kConvDw && s.type == alloc::DType::kF16;  // the input's type
      const bool f16_set_rows = set_rows && s.src[1] >= 0 && mg.t[s.src[1]].spec.type == alloc::DType::kF16;
      auto type_of = [&](int src) { return src >= 0 ? mg.t[src].spec.type : s.type; };
      const bool backend_refuses = rules.backend_refuses != nullptr && s.op != Op::kNone &&
                                   rules.backend_refuses(s.op, s.type, type_of(s.src[0]),
                                                         s.src[1] >= 0 ? type_of(s.src[1]) : type_of(s.src[0]));
      if (r[i] && ((rules.refuses_f16_scale && f16_scale) || (rules.refuses_odd_rope && odd_rope) ||
                   (rules.refuses_f16_rope && f16_rope) || misaligned_src || (rules.refuses_set_rows && set_rows) ||
                   (rules.refuses_f16_set_rows && f16_set_rows) || (rules.refuses_f16_conv && f16_conv) ||
                   backend_refuses)) {
        *expect = StatusCode::kUnimplemented;
      }
    }
  }
  // With several buffers AllocGraph does not re-plan by itself: the program reserves first. (Whether a
  // mutated graph still fits the old plan depends on the allocator's notion of "same graph", which the
  // model does not copy; tests/alloc/ covers that refusal.)
  // A scheduler plans whatever it is given.
  bool plan_matches = reserved_graph[k] == gi && reserved_version[k] == mg.version;
  if (plan_matches || buffers[k] == 1 || Split(gi)) return true;
  // Program::unplanned_allocs: an allocator that has planned nothing refuses whatever it is given (ggml_gallocr's
  // needs_realloc holds for any graph against no plan), after what the adapters check before placing (above).
  if (unplanned_allocs && reserved_graph[k] < 0) {
    if (*expect == StatusCode::kOk) *expect = StatusCode::kFailedPrecondition;
    return true;
  }
  return false;
}

void Model::ReserveOrAlloc(int gi, int k, Step& step) {
  ModelGraph& mg = g[gi];
  step.graph = gi;
  step.allocator = k;
  if (step.kind == StepKind::kAlloc) {
    StatusCode expect;
    if (!AllocLegal(gi, k, &expect)) {
      step.kind = StepKind::kReserve;  // illegal now: plan it instead (always legal)
    } else {
      step.expect = expect;
    }
  }
  const bool split = Split(gi);  // before the placement below changes what it reads
  mg.allocator = k;
  epoch[k] += 1;
  if (step.kind == StepKind::kReserve || step.kind == StepKind::kMeasure) {
    if (!split) {  // a scheduler's reserve leaves the gallocr's plan as it was
      reserved_graph[k] = gi;
      reserved_version[k] = mg.version;
    }
    return;
  }
  if (step.expect != StatusCode::kOk) return;
  if (buffers[k] == 1 && !split) {  // AllocGraph re-plans when the plan is stale
    reserved_graph[k] = gi;
    reserved_version[k] = mg.version;
  }
  mg.placed_split = split;
  mg.placed = true;
  mg.placed_epoch = epoch[k];
  std::vector<bool> r = mg.Reachable();
  for (size_t j = 0; j < mg.t.size(); ++j) mg.t[j].has_memory = mg.t[j].has_memory || r[j];
  if (mg.bound.empty()) {
    for (int h : mg.ExternalSources()) mg.bound.emplace_back(h, g[h].placed_epoch);
  }
}

void Model::TogglePreallocated(int gi, int t, Step& step) {
  ModelGraph& mg = g[gi];
  step.tensor_index = t;
  ModelTensor& leaf = mg.t[t];
  leaf.spec.preallocated = !leaf.spec.preallocated;
  leaf.owned_root = !leaf.spec.preallocated;
  leaf.has_memory = leaf.spec.preallocated;
  // Views of the leaf lose their address with it until the graph is placed again.
  for (size_t j = 0; j < mg.t.size(); ++j) {
    if (static_cast<int>(j) != t && mg.RootOf(static_cast<int>(j)) == t) mg.t[j].has_memory = false;
  }
  step.tensor.preallocated = leaf.spec.preallocated;
  Mutated(gi);
}

}  // namespace lifeline::graphs
