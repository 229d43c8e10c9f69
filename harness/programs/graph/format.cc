// The graph programs' decoder: how bytes become steps. Every choice goes through the model (model.h),
// which says what is legal now and predicts each step's status.
#include "harness/programs/graph/format.h"

#include <fuzzer/FuzzedDataProvider.h>

#include "harness/programs/common/decode.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/graph/model.h"

namespace lifeline::graphs {
namespace {

using alloc::DType;
using alloc::Op;
using programs::Pick;
using programs::PickFrom;

constexpr float kParams[] = {0.5f, 2.0f, -1.0f, 0.25f};
constexpr int64_t kMaxDim1Concat = 64;

int PickInt(FuzzedDataProvider& fdp, size_t n) { return static_cast<int>(Pick(fdp, n)); }

// A byte whose bit 0 is a choice (exactly as FuzzedDataProvider::ConsumeBool reads it) and whose bits 1 and 2,
// both set, mark the op for the CPU backend (TensorSpec::cpu; one op in four, in-place ops excepted: they
// compute where their source's memory is). Before the mark existed these bits were read and ignored, so every
// corpus file and reproducer keeps its meaning and gains the marks its bytes already held.
bool ConsumeChoice(FuzzedDataProvider& fdp, bool* cpu) {
  const uint8_t b = fdp.ConsumeIntegral<uint8_t>();
  *cpu = (b & 6) == 6;
  return (b & 1) != 0;
}

// A sealed graph to mutate (the step's graph from now on), or -1 when the pick is frozen (other graphs
// view it; it stays as it is) and the step became a Reserve of it instead.
int PickMutable(FuzzedDataProvider& fdp, Model& m, Step& step) {
  int gi = PickFrom(fdp, m.sealed());
  if (m.g[gi].frozen) {
    m.FallBackToReserve(gi, step);
    return -1;
  }
  step.graph = gi;
  return gi;
}

ModelTensor DecodeLeaf(FuzzedDataProvider& fdp) {
  ModelTensor mt;
  mt.spec.type = fdp.ConsumeBool() ? DType::kF16 : DType::kF32;
  mt.ne0 = mt.spec.ne[0] = fdp.ConsumeIntegralInRange<int64_t>(1, kMaxDim0);
  mt.ne1 = mt.spec.ne[1] = fdp.ConsumeIntegralInRange<int64_t>(1, kMaxDim1);
  uint8_t flags = fdp.ConsumeIntegral<uint8_t>();
  mt.spec.input = flags & 1;
  mt.spec.preallocated = (flags & 6) == 6;  // one leaf in four brings its own memory
  mt.owned_root = !mt.spec.preallocated;
  mt.has_memory = mt.spec.preallocated;
  return mt;
}

// A tensor of the open graph computed from earlier ones: unary, binary, copy, concat or view.
void DecodeDerived(FuzzedDataProvider& fdp, Model& m, int open, Step& step) {
  const ModelGraph& og = m.g[open];
  const int a = PickInt(fdp, og.t.size());
  const ModelTensor src = og.t[a];
  switch (step.kind) {
    case StepKind::kCopy: {
      ModelTensor mt = Derived(src, Op::kCopy, a);
      mt.spec.type = ConsumeChoice(fdp, &mt.spec.cpu) ? DType::kF16 : DType::kF32;
      return m.AddTensor(open, step, mt);
    }
    case StepKind::kUnary: {
      bool cpu = false;
      ModelTensor mt = Derived(src, ConsumeChoice(fdp, &cpu) ? Op::kScale : Op::kNeg, a);
      mt.spec.cpu = cpu;
      mt.spec.param = kParams[Pick(fdp, 4)];
      // In place only into memory the graph owns: writing into an external tensor is the caller's bug.
      mt.spec.inplace = fdp.ConsumeBool() && src.owned_root;
      mt.spec.cpu = mt.spec.cpu && !mt.spec.inplace;  // an in-place op computes where its memory is
      mt.owned_root = true;
      return m.AddTensor(open, step, mt);
    }
    case StepKind::kBinary: {
      std::vector<int> same = og.Where([&](const ModelTensor& t, int) {
        return t.ne0 == src.ne0 && t.ne1 == src.ne1 && t.spec.type == src.spec.type;
      });
      bool cpu = false;
      ModelTensor mt = Derived(src, ConsumeChoice(fdp, &cpu) ? Op::kAdd : Op::kMul, a);
      mt.spec.cpu = cpu;
      mt.spec.src[1] = PickFrom(fdp, same);
      mt.spec.inplace = fdp.ConsumeBool() && src.owned_root;
      mt.spec.cpu = mt.spec.cpu && !mt.spec.inplace;  // an in-place op computes where its memory is
      return m.AddTensor(open, step, mt);
    }
    case StepKind::kConcat: {
      std::vector<int> fit = og.Where([&](const ModelTensor& t, int) {
        return t.ne0 == src.ne0 && t.spec.type == src.spec.type && t.ne1 + src.ne1 <= kMaxDim1Concat;
      });
      if (fit.empty()) {  // nothing fits: a copy instead, so the step still adds a tensor
        step.kind = StepKind::kCopy;
        return m.AddTensor(open, step, Derived(src, Op::kCopy, a));
      }
      ModelTensor mt = Derived(src, Op::kConcat, a);
      mt.spec.src[1] = PickFrom(fdp, fit);
      mt.ne1 = mt.spec.ne[1] = src.ne1 + og.t[mt.spec.src[1]].ne1;
      return m.AddTensor(open, step, mt);
    }
    default: {  // kView
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
      return m.AddTensor(open, step, mt);
    }
  }
}

// A leaf view of an output of a sealed graph (whisper's view of the conv result).
void DecodeViewExternal(FuzzedDataProvider& fdp, Model& m, int open, Step& step) {
  std::vector<std::pair<int, int>> outs;
  for (int h : m.sealed()) {
    for (int t : m.g[h].Where([](const ModelTensor& x, int) { return x.spec.output; })) outs.emplace_back(h, t);
  }
  auto [h, t] = PickFrom(fdp, outs);
  m.Freeze(h);
  const ModelTensor& src = m.g[h].t[t];
  ModelTensor mt;
  mt.spec.type = src.spec.type;
  mt.ne0 = mt.spec.ne[0] = src.ne0;
  mt.ne1 = mt.spec.ne[1] = src.ne1;
  mt.spec.external_graph = h;
  mt.spec.external_tensor = t;
  mt.owned_root = false;
  m.AddTensor(open, step, mt);
}

void DecodeSeal(Model& m, int open, Step& step) {
  step.graph = open;
  ModelGraph& mg = m.g[open];
  if (mg.Where([](const ModelTensor& t, int) { return t.spec.output; }).empty()) {
    step.tensor_index = static_cast<int>(mg.t.size()) - 1;  // no output marked: the last tensor is
    mg.t.back().spec.output = true;
  }
  mg.sealed = true;
  if (m.g.size() < static_cast<size_t>(kMaxGraphs)) m.g.emplace_back();
}

// Same counts, different edges: a node of sealed graph `gi` takes another source of its shape.
void DecodeRewire(FuzzedDataProvider& fdp, Model& m, int gi, Step& step) {
  ModelGraph& mg = m.g[gi];
  std::vector<int> nodes = mg.Where([](const ModelTensor& t, int) {
    return t.spec.src[0] >= 0 && t.spec.op != Op::kView && t.spec.op != Op::kReshape;
  });
  if (nodes.empty()) return m.FallBackToReserve(gi, step);  // only views: nothing to rewire
  step.tensor_index = PickFrom(fdp, nodes);
  ModelTensor& node = mg.t[step.tensor_index];
  step.slot = node.spec.src[1] >= 0 ? PickInt(fdp, 2) : 0;
  const ModelTensor& old = mg.t[node.spec.src[step.slot]];
  std::vector<int> same = mg.Where([&](const ModelTensor& t, int idx) {
    return idx != step.tensor_index && t.ne0 == old.ne0 && t.ne1 == old.ne1 && t.spec.type == old.spec.type;
  });
  step.new_src = PickFrom(fdp, same);
  if (node.spec.inplace && step.slot == 0) {
    step.expect = StatusCode::kInvalidArgument;  // an in-place result's first source is fixed
  } else if (mg.DependsOn(step.new_src, step.tensor_index)) {
    // Would close a cycle. BuildGraph sees it only when the node is reachable from an output; a latent
    // cycle elsewhere would surface at some later step, so that rewire is not made.
    if (mg.Reachable()[step.tensor_index]) {
      step.expect = StatusCode::kInvalidArgument;
    } else {
      m.FallBackToReserve(gi, step);
    }
  } else if (node.spec.src[step.slot] != step.new_src) {
    node.spec.src[step.slot] = step.new_src;
    m.Mutated(gi);
  }
}

// Sealed graph `gi` gains a node (the negation of one of its outputs), itself an output.
void DecodeGrow(FuzzedDataProvider& fdp, Model& m, int gi, Step& step) {
  ModelGraph& mg = m.g[gi];
  if (mg.t.size() >= static_cast<size_t>(kMaxTensorsPerGraph)) return m.FallBackToReserve(gi, step);  // full
  int a = PickFrom(fdp, mg.Where([](const ModelTensor& t, int) { return t.spec.output; }));
  ModelTensor mt = Derived(mg.t[a], Op::kNeg, a);
  mt.spec.output = true;
  m.AddTensor(gi, step, mt);
  m.Mutated(gi);
}

// A plain leaf of sealed graph `gi` gains or loses memory from outside.
void DecodeTogglePrealloc(FuzzedDataProvider& fdp, Model& m, int gi, Step& step) {
  ModelGraph& mg = m.g[gi];
  // Plain leafs that no in-place op writes into, directly or through views.
  std::vector<int> leafs = mg.Where([&](const ModelTensor& t, int idx) {
    if (t.spec.op != Op::kNone || t.spec.external_graph >= 0) return false;
    for (const ModelTensor& u : mg.t) {
      if (u.spec.inplace && mg.RootOf(u.spec.src[0]) == idx) return false;
    }
    return true;
  });
  if (leafs.empty()) {
    step.kind = StepKind::kMarkOutput;  // nothing to toggle: mark the last tensor an output
    step.tensor_index = static_cast<int>(mg.t.size()) - 1;
    if (!mg.t.back().spec.output) m.Mutated(gi);
    mg.t.back().spec.output = true;
    return;
  }
  m.TogglePreallocated(gi, PickFrom(fdp, leafs), step);
}

}  // namespace

Program Decode(const uint8_t* data, size_t size, const AllocatorRules& rules) {
  FuzzedDataProvider fdp(data, size);
  Program p;
  Model m;
  m.rules = rules;
  for (int k = 0; k < kAllocators; ++k) {
    // One byte: bit 0 the buffer count (1 or 2), bits 1 and 2 the CPU threads (1 to 4). It reads the same byte
    // ConsumeIntegralInRange<int>(1, 2) read, and the same nothing once the bytes run out.
    const uint8_t head = fdp.ConsumeIntegral<uint8_t>();
    const int n = 1 + (head & 1);
    p.allocators[k].cpu_threads = 1 + ((head >> 1) & 3);
    for (int b = 0; b < n; ++b) {
      alloc::BufferSpec spec;
      spec.alignment = size_t{1} << fdp.ConsumeIntegralInRange<int>(0, kMaxAlignLog2);
      spec.max_size = size_t{1} << 22;  // never exhausted by a program (exhaustion: see tests/alloc/)
      p.allocators[k].buffers.push_back(spec);
    }
    m.buffers[k] = n;
  }
  m.g.emplace_back();

  p.steps = programs::DecodeOps<Step>(fdp, kMaxSteps, m, [&](Step& step) {
    const int open = m.open();
    switch (step.kind) {
      case StepKind::kLeaf: m.AddTensor(open, step, DecodeLeaf(fdp)); break;
      case StepKind::kUnary:
      case StepKind::kBinary:
      case StepKind::kCopy:
      case StepKind::kConcat:
      case StepKind::kView: DecodeDerived(fdp, m, open, step); break;
      case StepKind::kViewExternal: DecodeViewExternal(fdp, m, open, step); break;
      case StepKind::kMarkOutput:
        step.graph = open;
        step.tensor_index = PickInt(fdp, m.g[open].t.size());
        m.g[open].t[step.tensor_index].spec.output = true;
        break;
      case StepKind::kSeal: DecodeSeal(m, open, step); break;
      case StepKind::kReserve:
      case StepKind::kAlloc: {
        int gi = PickFrom(fdp, m.sealed());
        int k = m.g[gi].allocator >= 0 ? m.g[gi].allocator : PickInt(fdp, kAllocators);
        m.ReserveOrAlloc(gi, k, step);
        break;
      }
      case StepKind::kRewire:
      case StepKind::kGrow:
      case StepKind::kTogglePrealloc: {
        const int gi = PickMutable(fdp, m, step);
        if (gi < 0) break;
        if (step.kind == StepKind::kRewire) {
          DecodeRewire(fdp, m, gi, step);
        } else if (step.kind == StepKind::kGrow) {
          DecodeGrow(fdp, m, gi, step);
        } else {
          DecodeTogglePrealloc(fdp, m, gi, step);
        }
        break;
      }
    }
  });
  return p;
}

namespace {

constexpr const char* kStepNames[] = {"leaf",   "unary",         "binary",      "copy",     "concat",
                                      "view",   "view-external", "mark-output", "seal",     "reserve",
                                      "alloc+compute", "rewire", "grow",        "toggle-prealloc"};

std::string TensorText(const TensorSpec& t) {
  std::string s = std::string(alloc::OpName(t.op)) + (t.type == DType::kF16 ? " f16" : " f32") + " [" +
                  std::to_string(t.ne[0]) + "," + std::to_string(t.ne[1]) + "]";
  for (int j = 0; j < 2; ++j) {
    if (t.src[j] >= 0) s += " src" + std::to_string(j) + "=t" + std::to_string(t.src[j]);
  }
  if (t.op == Op::kScale) s += " x" + std::to_string(t.param).substr(0, 5);
  if (t.op == Op::kView) s += " offset=" + std::to_string(t.view_offset);
  if (t.inplace) s += " inplace";
  if (t.cpu) s += " on-cpu";
  if (t.input) s += " input";
  if (t.preallocated) s += " preallocated";
  if (t.external_graph >= 0) s += " view of g" + std::to_string(t.external_graph) + ".t" + std::to_string(t.external_tensor);
  return s;
}

}  // namespace

std::string Describe(const Step& s) {
  std::string out = programs::NameOf(kStepNames, s.kind);
  const std::string g = " g" + std::to_string(s.graph);
  const std::string t = g + ".t" + std::to_string(s.tensor_index);
  switch (s.kind) {
    case StepKind::kReserve:
    case StepKind::kAlloc: out += g + " with allocator " + std::to_string(s.allocator); break;
    case StepKind::kMarkOutput: out += t; break;
    case StepKind::kSeal:
      out += g;
      if (s.tensor_index >= 0) out += " (t" + std::to_string(s.tensor_index) + " becomes the output)";
      break;
    case StepKind::kRewire:
      out += t + " src" + std::to_string(s.slot) + " -> t" + std::to_string(s.new_src);
      break;
    case StepKind::kTogglePrealloc:
      out += t + (s.tensor.preallocated ? " -> preallocated" : " -> allocator-owned");
      break;
    default:
      out += t + " = " + TensorText(s.tensor);
      if (s.kind == StepKind::kGrow) out += " (output)";
  }
  if (s.expect != StatusCode::kOk) out += " -> " + std::string(StatusCodeName(s.expect));
  return out;
}

std::string DescribeAllocators(const Program& p) {
  std::string out;
  for (int k = 0; k < kAllocators; ++k) {
    out += "allocator " + std::to_string(k) + ":";
    for (const alloc::BufferSpec& b : p.allocators[k].buffers) out += " buffer(align " + std::to_string(b.alignment) + ")";
    if (p.allocators[k].cpu_threads > 1) out += ", " + std::to_string(p.allocators[k].cpu_threads) + " cpu threads";
    out += "\n";
  }
  return out;
}

std::string Describe(const Program& p) { return DescribeAllocators(p) + programs::DescribeNumbered(p.steps); }

}  // namespace lifeline::graphs
