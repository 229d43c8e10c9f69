// The graph programs' decoder: how bytes become steps. Every choice goes through the model (model.h),
// which says what is legal now and predicts each step's status.
#include "harness/programs/graph/format.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "harness/programs/common/decode.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/graph/model.h"

namespace lifeline::graphs {
namespace {

using alloc::DType;
using alloc::Op;
using programs::Pick;
using programs::PickFrom;
using programs::Source;
using programs::Unencodable;

constexpr float kParams[] = {0.5f, 2.0f, -1.0f, 0.25f};
constexpr int64_t kMaxDim1Concat = 64;

// Encoding: where the objects the target names by step (its id form, format.h) are now. Decoding: unused.
struct Refs {
  std::map<int, std::pair<int, int>> tensor;  // step that added it -> (graph, index)
  std::map<int, int> graph;                   // step that sealed it -> graph

  std::pair<int, int> Tensor(int step) const {
    auto it = tensor.find(step);
    if (it == tensor.end()) throw Unencodable("names tensor of step #" + std::to_string(step) + ", which adds none before it");
    return it->second;
  }
  // The index of the tensor added by `step` in graph `gi`.
  int TensorIn(int gi, int step) const {
    auto [g, t] = Tensor(step);
    if (g != gi) throw Unencodable("tensor of step #" + std::to_string(step) + " is in another graph");
    return t;
  }
  int Graph(int step) const {
    auto it = graph.find(step);
    if (it == graph.end()) throw Unencodable("names the graph sealed by step #" + std::to_string(step) + ", which seals none before it");
    return it->second;
  }
};

int PickInt(Source& src, size_t n, int want_index) {
  return static_cast<int>(Pick(src, n, [&] { return static_cast<size_t>(want_index); }));
}

// A byte whose bit 0 is a choice (exactly as FuzzedDataProvider::ConsumeBool reads it) and whose bits 1 and 2,
// both set, mark the op for the CPU backend (TensorSpec::cpu; one op in four, in-place ops excepted: they
// compute where their source's memory is). Before the mark existed these bits were read and ignored, so every
// corpus file and reproducer keeps its meaning and gains the marks its bytes already held.
template <typename Want>
bool ConsumeChoice(Source& src, bool* cpu, Want&& want_choice, bool want_cpu) {
  const uint8_t b = src.Full<uint8_t>([&] { return static_cast<uint8_t>((want_choice() ? 1 : 0) | (want_cpu ? 6 : 0)); });
  *cpu = (b & 6) == 6;
  return (b & 1) != 0;
}

// A sealed graph to mutate (the step's graph from now on), or -1 when the pick is frozen (other graphs
// view it; it stays as it is) and the step became a Reserve of it instead.
int PickMutable(Source& src, Model& m, Step& step, const Step& want, const Refs& refs) {
  int gi = PickFrom(src, m.sealed(), [&] { return refs.Graph(want.graph); });
  step.state = m.StateOf(gi);
  if (m.g[gi].frozen) {
    m.FallBackToReserve(gi, step);
    return -1;
  }
  step.graph = gi;
  return gi;
}

ModelTensor DecodeLeaf(Source& src, const Step& want) {
  const TensorSpec& w = want.tensor;
  ModelTensor mt;
  mt.spec.type = src.Bool([&] { return w.type == DType::kF16; }) ? DType::kF16 : DType::kF32;
  mt.ne0 = mt.spec.ne[0] = src.Int<int64_t>(1, kMaxDim0, [&] { return w.ne[0]; });
  mt.ne1 = mt.spec.ne[1] = src.Int<int64_t>(1, kMaxDim1, [&] { return w.ne[1]; });
  uint8_t flags = src.Full<uint8_t>([&] { return static_cast<uint8_t>((w.input ? 1 : 0) | (w.preallocated ? 6 : 0)); });
  mt.spec.input = flags & 1;
  mt.spec.preallocated = (flags & 6) == 6;  // one leaf in four brings its own memory
  mt.owned_root = !mt.spec.preallocated;
  mt.has_memory = mt.spec.preallocated;
  return mt;
}

// Rows of a float32 tensor of the open graph written into another one of the open graph (Model::Legal: there is a
// float32 one of at most alloc::kMaxRows rows): ggml_set_rows, whose result is a view of its destination, as llama.cpp
// writes its KV cache. The rows are picked first, then the destination among the tensors they fit (same ne0, at least
// as many rows) whose bytes the rows do not share and are the graph's own or a pre-allocated leaf's, in this graph or,
// through a leaf view, an earlier one's (a KV cache that every graph writes: Model::FromOutside); where none fits, the
// step copies the rows instead, so that it still adds a tensor. Row j goes to row (first + j * step) % ne1, the step
// coprime with ne1.
void DecodeSetRows(Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs) {
  const ModelGraph& og = m.g[open];
  const TensorSpec& w = want.tensor;
  const int b = PickFrom(src, og.Where([](const ModelTensor& t, int) {
    return t.spec.type == DType::kF32 && t.ne1 <= alloc::kMaxRows;
  }), [&] { return refs.TensorIn(open, w.src[1]); });
  const std::pair<int, int> b_memory = m.MemoryOf(open, b);
  const std::vector<int> fit = og.Where([&](const ModelTensor& t, int i) {
    return (t.owned_root || m.FromOutside(open, i)) && t.ne0 == og.t[b].ne0 && t.ne1 >= og.t[b].ne1 &&
           m.MemoryOf(open, i) != b_memory;
  });
  if (fit.empty()) {
    step.kind = StepKind::kCopy;
    return m.AddTensor(open, step, Derived(og.t[b], Op::kCopy, b));
  }
  const int a = PickFrom(src, fit, [&] { return refs.TensorIn(open, w.src[0]); });
  const int rows = static_cast<int>(og.t[a].ne1);
  std::vector<int> steps;
  for (int k = 0; k < rows; ++k) {
    if (std::gcd(k, rows) == 1) steps.push_back(k);  // 0 only for a single row
  }
  ModelTensor mt = Derived(og.t[a], Op::kSetRows, a);
  mt.spec.src[1] = b;
  mt.spec.inplace = true;  // it writes into its destination's bytes: RootOf, rewires and toggles treat it so
  mt.owned_root = og.t[a].owned_root;
  mt.spec.rows_first = src.Int<int>(0, rows - 1, [&] { return w.rows_first; });
  mt.spec.rows_step = PickFrom(src, steps, [&] { return w.rows_step; });
  m.AddTensor(open, step, mt);
}

// A depthwise convolution (ggml_conv_2d_dw_direct, one channel) of a tensor of the open graph by a small kernel of
// it: the input first, then the padding (0 or 1), then the kernel among the tensors of at most kMaxConvKernel
// elements that fit in the padded input, then the stride (1 or 2); where no kernel fits, the step copies the
// input instead, so that it still adds a tensor. The result has the input's type, as ggml's.
void DecodeConvDw(Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs) {
  const ModelGraph& og = m.g[open];
  const TensorSpec& w = want.tensor;
  const int b = PickInt(src, og.t.size(), src.encoding() ? refs.TensorIn(open, w.src[1]) : 0);
  const int pad = src.Int<int>(0, 1, [&] { return w.conv.pad; });
  const ModelTensor input = og.t[b];
  const std::vector<int> fit = og.Where([&](const ModelTensor& t, int) {
    return t.ne0 * t.ne1 <= kMaxConvKernel && t.ne0 <= input.ne0 + 2 * pad && t.ne1 <= input.ne1 + 2 * pad;
  });
  if (fit.empty()) {
    step.kind = StepKind::kCopy;
    return m.AddTensor(open, step, Derived(input, Op::kCopy, b));
  }
  const int a = PickFrom(src, fit, [&] { return refs.TensorIn(open, w.src[0]); });
  ModelTensor mt = Derived(input, Op::kConvDw, a);
  mt.spec.src[1] = b;
  mt.spec.conv.pad = pad;
  mt.spec.conv.stride = src.Int<int>(1, 2, [&] { return w.conv.stride; });
  mt.ne0 = mt.spec.ne[0] = (input.ne0 + 2 * pad - og.t[a].ne0) / mt.spec.conv.stride + 1;
  mt.ne1 = mt.spec.ne[1] = (input.ne1 + 2 * pad - og.t[a].ne1) / mt.spec.conv.stride + 1;
  m.AddTensor(open, step, mt);
}

// A row op of a float32 tensor of the open graph (Model::Legal: there is one): rms_norm or soft_max.
void DecodeRowOp(Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs) {
  const ModelGraph& og = m.g[open];
  const std::vector<int> f32 = og.Where([](const ModelTensor& t, int) { return t.spec.type == DType::kF32; });
  const int a = PickFrom(src, f32, [&] { return refs.TensorIn(open, want.tensor.src[0]); });
  const bool norm = src.Bool([&] { return want.tensor.op == Op::kRmsNorm; });
  m.AddTensor(open, step, Derived(og.t[a], norm ? Op::kRmsNorm : Op::kSoftMax, a));
}

// mul_mat of tensors of the open graph with the same ne0, the second float32 (Model::Legal: there is a float32 one,
// which may be both): the second picked first, then the first among those its rows fit, float32 or, where the program
// allows it (Program::f16_mul_mat), float16.
void DecodeMatMul(Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs) {
  const ModelGraph& og = m.g[open];
  auto f32 = [](const ModelTensor& t, int) { return t.spec.type == DType::kF32; };
  const int b = PickFrom(src, og.Where(f32), [&] { return refs.TensorIn(open, want.tensor.src[1]); });
  const int64_t k = og.t[b].ne0;
  const int a = PickFrom(src, og.Where([&](const ModelTensor& t, int i) {
    return (f32(t, i) || m.f16_mul_mat) && t.ne0 == k;
  }), [&] { return refs.TensorIn(open, want.tensor.src[0]); });
  ModelTensor mt = Derived(og.t[a], Op::kMulMat, a);
  mt.spec.type = DType::kF32;
  mt.spec.src[1] = b;
  mt.ne0 = mt.spec.ne[0] = og.t[a].ne1;
  mt.ne1 = mt.spec.ne[1] = og.t[b].ne1;
  m.AddTensor(open, step, mt);
}

// The transpose of a tensor of the open graph (Model::Legal: there is one), and how ggml is to build it.
void DecodeTranspose(Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs) {
  const ModelGraph& og = m.g[open];
  const int a = PickInt(src, og.t.size(), src.encoding() ? refs.TensorIn(open, want.tensor.src[0]) : 0);
  ModelTensor mt = Derived(og.t[a], Op::kTranspose, a);
  mt.spec.permute = src.Bool([&] { return want.tensor.permute; });
  mt.ne0 = mt.spec.ne[0] = og.t[a].ne1;
  mt.ne1 = mt.spec.ne[1] = og.t[a].ne0;
  m.AddTensor(open, step, mt);
}

// n rows of a tensor of the open graph (Model::Legal: there is one), as a float32 tensor: the first row and the
// step between rows, each below the source's ne1.
void DecodeGetRows(Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs) {
  const ModelGraph& og = m.g[open];
  const TensorSpec& w = want.tensor;
  const int a = PickInt(src, og.t.size(), src.encoding() ? refs.TensorIn(open, w.src[0]) : 0);
  const int64_t rows = og.t[a].ne1;
  ModelTensor mt = Derived(og.t[a], Op::kGetRows, a);
  mt.spec.type = DType::kF32;
  mt.ne1 = mt.spec.ne[1] = src.Int<int64_t>(1, alloc::kMaxRows, [&] { return w.ne[1]; });
  mt.spec.rows_first = src.Int<int>(0, static_cast<int>(rows) - 1, [&] { return w.rows_first; });
  mt.spec.rows_step = src.Int<int>(0, static_cast<int>(rows) - 1, [&] { return w.rows_step; });
  m.AddTensor(open, step, mt);
}

// The rope of a tensor of the open graph with at least two elements a row (Model::Legal: there is one): how many
// elements of each row it turns (an even count, at most ne0), the mode, the heads per token (a divisor of the rows:
// ggml sees the tensor as [ne0, heads, tokens]) and the tokens' positions.
void DecodeRope(Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs) {
  const ModelGraph& og = m.g[open];
  const alloc::RopeParams& w = want.tensor.rope;
  const int a = PickFrom(src, og.Where([](const ModelTensor& t, int) { return t.ne0 >= 2; }),
                         [&] { return refs.TensorIn(open, want.tensor.src[0]); });
  ModelTensor mt = Derived(og.t[a], Op::kRope, a);
  alloc::RopeParams& r = mt.spec.rope;
  r.n_dims = 2 * src.Int<int>(1, static_cast<int>(og.t[a].ne0 / 2), [&] { return w.n_dims / 2; });
  r.mode = src.Bool([&] { return w.mode == alloc::kRopeNeox; }) ? alloc::kRopeNeox : alloc::kRopeNormal;
  std::vector<int> divisors;
  for (int d = 1; d <= og.t[a].ne1; ++d) {
    if (og.t[a].ne1 % d == 0) divisors.push_back(d);
  }
  r.heads = PickFrom(src, divisors, [&] { return w.heads; });
  r.pos_first = src.Int<int>(0, kMaxRopePosition, [&] { return w.pos_first; });
  r.pos_step = src.Int<int>(0, kMaxRopeStep, [&] { return w.pos_step; });
  m.AddTensor(open, step, mt);
}

// A tensor of the open graph computed from earlier ones: unary, binary, copy, concat or view.
void DecodeDerived(Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs) {
  const ModelGraph& og = m.g[open];
  const TensorSpec& w = want.tensor;
  const int a = PickInt(src, og.t.size(), src.encoding() ? refs.TensorIn(open, w.src[0]) : 0);
  const ModelTensor source = og.t[a];
  switch (step.kind) {
    case StepKind::kCopy: {
      ModelTensor mt = Derived(source, Op::kCopy, a);
      mt.spec.type = ConsumeChoice(src, &mt.spec.cpu, [&] { return w.type == DType::kF16; }, w.cpu) ? DType::kF16 : DType::kF32;
      return m.AddTensor(open, step, mt);
    }
    case StepKind::kUnary: {
      bool cpu = false;
      ModelTensor mt = Derived(source, ConsumeChoice(src, &cpu, [&] { return w.op == Op::kScale; }, w.cpu) ? Op::kScale : Op::kNeg, a);
      mt.spec.cpu = cpu;
      mt.spec.param = kParams[Pick(src, 4, [&]() -> size_t {
        if (w.op != Op::kScale) return 0;  // drawn for neg too, and never read
        for (size_t i = 0; i < 4; ++i)
          if (kParams[i] == w.param) return i;
        throw Unencodable("scale factor " + std::to_string(w.param) + " is not one of the format's");
      })];
      // In place only into memory the graph owns: writing into an external tensor is the caller's bug.
      mt.spec.inplace = src.Bool([&] { return w.inplace; }) && source.owned_root;
      mt.spec.cpu = mt.spec.cpu && !mt.spec.inplace;  // an in-place op computes where its memory is
      mt.owned_root = true;
      return m.AddTensor(open, step, mt);
    }
    case StepKind::kBinary: {
      std::vector<int> same = og.Where([&](const ModelTensor& t, int) {
        return t.ne0 == source.ne0 && t.ne1 == source.ne1 && t.spec.type == source.spec.type;
      });
      bool cpu = false;
      ModelTensor mt = Derived(source, ConsumeChoice(src, &cpu, [&] { return w.op == Op::kAdd; }, w.cpu) ? Op::kAdd : Op::kMul, a);
      mt.spec.cpu = cpu;
      mt.spec.src[1] = PickFrom(src, same, [&] { return refs.TensorIn(open, w.src[1]); });
      mt.spec.inplace = src.Bool([&] { return w.inplace; }) && source.owned_root;
      mt.spec.cpu = mt.spec.cpu && !mt.spec.inplace;  // an in-place op computes where its memory is
      return m.AddTensor(open, step, mt);
    }
    case StepKind::kConcat: {
      std::vector<int> fit = og.Where([&](const ModelTensor& t, int) {
        return t.ne0 == source.ne0 && t.spec.type == source.spec.type && t.ne1 + source.ne1 <= kMaxDim1Concat;
      });
      if (fit.empty()) {  // nothing fits: a copy instead, so the step still adds a tensor
        step.kind = StepKind::kCopy;
        return m.AddTensor(open, step, Derived(source, Op::kCopy, a));
      }
      ModelTensor mt = Derived(source, Op::kConcat, a);
      mt.spec.src[1] = PickFrom(src, fit, [&] { return refs.TensorIn(open, w.src[1]); });
      mt.ne1 = mt.spec.ne[1] = source.ne1 + og.t[mt.spec.src[1]].ne1;
      return m.AddTensor(open, step, mt);
    }
    default: {  // kView
      int64_t n = source.ne0 * source.ne1;
      ModelTensor mt = Derived(source, Op::kReshape, a);
      mt.owned_root = source.owned_root;
      if (src.Bool([&] { return w.op == Op::kReshape; })) {
        mt.ne0 = mt.spec.ne[0] = n;  // reshape to one dimension
        mt.ne1 = mt.spec.ne[1] = 1;
      } else {
        mt.spec.op = Op::kView;
        int64_t k = src.Int<int64_t>(1, n, [&] { return w.ne[0]; });
        mt.spec.view_offset = src.Int<int64_t>(0, n - k, [&] { return w.view_offset; });
        mt.ne0 = mt.spec.ne[0] = k;
        mt.ne1 = mt.spec.ne[1] = 1;
      }
      return m.AddTensor(open, step, mt);
    }
  }
}

// A leaf view of an output of a sealed graph (whisper's view of the conv result).
void DecodeViewExternal(Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs) {
  std::vector<std::pair<int, int>> outs;
  for (int h : m.sealed()) {
    for (int t : m.g[h].Where([](const ModelTensor& x, int) { return x.spec.output; })) outs.emplace_back(h, t);
  }
  auto [h, t] = PickFrom(src, outs, [&] { return refs.Tensor(want.tensor.external_tensor); });
  m.Freeze(h);
  const ModelTensor& source = m.g[h].t[t];
  ModelTensor mt;
  mt.spec.type = source.spec.type;
  mt.ne0 = mt.spec.ne[0] = source.ne0;
  mt.ne1 = mt.spec.ne[1] = source.ne1;
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
void DecodeRewire(Source& src, Model& m, int gi, Step& step, const Step& want, const Refs& refs) {
  ModelGraph& mg = m.g[gi];
  std::vector<int> nodes = mg.Where([](const ModelTensor& t, int) {
    return t.spec.src[0] >= 0 && t.spec.op != Op::kView && t.spec.op != Op::kReshape;
  });
  if (nodes.empty()) return m.FallBackToReserve(gi, step);  // only views: nothing to rewire
  step.tensor_index = PickFrom(src, nodes, [&] { return refs.TensorIn(gi, want.tensor_index); });
  ModelTensor& node = mg.t[step.tensor_index];
  step.slot = node.spec.src[1] >= 0 ? PickInt(src, 2, want.slot) : 0;
  const ModelTensor& old = mg.t[node.spec.src[step.slot]];
  // set_rows' rows never come from its destination's bytes (its rows would be read while written).
  const bool rows_of_set = node.spec.op == Op::kSetRows && step.slot == 1;
  const std::pair<int, int> written = rows_of_set ? m.MemoryOf(gi, node.spec.src[0]) : std::pair<int, int>(-1, -1);
  std::vector<int> same = mg.Where([&](const ModelTensor& t, int idx) {
    return idx != step.tensor_index && t.ne0 == old.ne0 && t.ne1 == old.ne1 && t.spec.type == old.spec.type &&
           (!rows_of_set || m.MemoryOf(gi, idx) != written);
  });
  step.new_src = PickFrom(src, same, [&] { return refs.TensorIn(gi, want.new_src); });
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
void DecodeGrow(Source& src, Model& m, int gi, Step& step, const Step& want, const Refs& refs) {
  ModelGraph& mg = m.g[gi];
  if (mg.t.size() >= static_cast<size_t>(kMaxTensorsPerGraph)) return m.FallBackToReserve(gi, step);  // full
  int a = PickFrom(src, mg.Where([](const ModelTensor& t, int) { return t.spec.output; }),
                   [&] { return refs.TensorIn(gi, want.tensor.src[0]); });
  ModelTensor mt = Derived(mg.t[a], Op::kNeg, a);
  mt.spec.output = true;
  m.AddTensor(gi, step, mt);
  m.Mutated(gi);
}

// A plain leaf of sealed graph `gi` gains or loses memory from outside.
void DecodeTogglePrealloc(Source& src, Model& m, int gi, Step& step, const Step& want, const Refs& refs) {
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
  m.TogglePreallocated(gi, PickFrom(src, leafs, [&] { return refs.TensorIn(gi, want.tensor_index); }), step);
}

int Log2(size_t v) {
  int k = 0;
  while ((size_t{1} << k) < v) ++k;
  return k;
}

// Whether a program to encode has a step of kind `kind` (its allocator and options bytes say which kinds it draws).
bool Uses(const Program& p, StepKind kind) {
  return std::any_of(p.steps.begin(), p.steps.end(), [&](const Step& s) { return s.kind == kind; });
}

// Whether a program to encode multiplies a float16 first source (Program::f16_mul_mat). Its steps in id form name
// their sources by the steps that made them; a tensor's type is its maker's, or its source's for the ops that keep
// their source's type.
bool F16MulMat(const Program& p) {
  auto type_of = [&](auto&& self, int id) -> DType {
    if (id < 0 || static_cast<size_t>(id) >= p.steps.size()) return DType::kF32;
    const Step& s = p.steps[id];
    switch (s.kind) {
      case StepKind::kLeaf:
      case StepKind::kCopy: return s.tensor.type;
      case StepKind::kViewExternal: return self(self, s.tensor.external_tensor);
      case StepKind::kRowOp:
      case StepKind::kMatMul:
      case StepKind::kGetRows: return DType::kF32;
      default: return self(self, s.tensor.src[0]);
    }
  };
  return std::any_of(p.steps.begin(), p.steps.end(), [&](const Step& s) {
    return s.kind == StepKind::kMatMul && type_of(type_of, s.tensor.src[0]) == DType::kF16;
  });
}

// Both directions: decoding when `target` is null, else encoding it (its id form) into `src`.
Program Run(Source& src, const AllocatorRules& rules, const Program* target) {
  Program p;
  Model m;
  m.rules = rules;
  Refs refs;
  for (int k = 0; k < kAllocators; ++k) {
    const AllocatorSpec* want = target ? &target->allocators[k] : nullptr;
    // One byte: bit 0 the buffer count (1 or 2), bits 1 and 2 the CPU threads (1 to 4). It reads the same byte
    // ConsumeIntegralInRange<int>(1, 2) read, and the same nothing once the bytes run out.
    // Allocator 0's bits 3, 4 and 5: whether the program may measure, use row ops and mul_mat (Program::measures,
    // row_ops, mul_mats; set when encoding one that does); bit 6: Program::weights; bit 7: an options byte follows
    // (read only then, so every input without the bit keeps its bytes' meaning): its bit 0 is Program::shared_pool,
    // bit 1 Program::reuse, bit 2 Program::chunked, bit 3 Program::layout_ops, bit 4 Program::get_rows, bit 5
    // Program::rope, bit 6 Program::set_rows, bit 7 a second options byte follows (its bit 0 Program::f16_mul_mat, bit 1
    // Program::unplanned_allocs, bit 2 Program::scheduled, bit 3 Program::conv; the others for options to come, written
    // 0, read and ignored).
    const uint8_t head = src.Full<uint8_t>([&] {
      if (want->buffers.empty() || want->buffers.size() > 2) throw Unencodable("an allocator has 1 or 2 buffers");
      if (want->cpu_threads < 1 || want->cpu_threads > kMaxCpuThreads) throw Unencodable("an allocator has 1 to 4 CPU threads");
      auto uses = [&](StepKind kind) { return k == 0 && Uses(*target, kind); };
      return static_cast<uint8_t>((want->buffers.size() - 1) | ((want->cpu_threads - 1) << 1) |
                                  (uses(StepKind::kMeasure) ? 8 : 0) | (uses(StepKind::kRowOp) ? 16 : 0) |
                                  (uses(StepKind::kMatMul) ? 32 : 0) | (k == 0 && target->weights ? 64 : 0) |
                                  (k == 0 && (target->shared_pool || target->reuse || target->chunked ||
                                              uses(StepKind::kTranspose) || uses(StepKind::kGetRows) ||
                                              uses(StepKind::kRope) || uses(StepKind::kSetRows) ||
                                              F16MulMat(*target) || target->unplanned_allocs || target->scheduled ||
                                              uses(StepKind::kConvDw))
                                                 ? 128
                                                 : 0));
    });
    const uint8_t options = k == 0 && (head & 128) != 0 ? src.Full<uint8_t>([&] {
      auto uses = [&](StepKind kind) { return Uses(*target, kind); };
      return static_cast<uint8_t>((target->shared_pool ? 1 : 0) | (target->reuse ? 2 : 0) | (target->chunked ? 4 : 0) |
                                  (uses(StepKind::kTranspose) ? 8 : 0) | (uses(StepKind::kGetRows) ? 16 : 0) |
                                  (uses(StepKind::kRope) ? 32 : 0) | (uses(StepKind::kSetRows) ? 64 : 0) |
                                  (F16MulMat(*target) || target->unplanned_allocs || target->scheduled ||
                                   uses(StepKind::kConvDw) ? 128 : 0));
    }) : 0;
    const uint8_t options2 = (options & 128) != 0 ? src.Full<uint8_t>([&] {
      return static_cast<uint8_t>((F16MulMat(*target) ? 1 : 0) | (target->unplanned_allocs ? 2 : 0) |
                                  (target->scheduled ? 4 : 0) | (Uses(*target, StepKind::kConvDw) ? 8 : 0));
    }) : 0;
    const int n = 1 + (head & 1);
    p.allocators[k].cpu_threads = 1 + ((head >> 1) & 3);
    if (k == 0) {
      p.measures = m.measures = (head & 8) != 0;
      p.row_ops = m.row_ops = (head & 16) != 0;
      p.mul_mats = m.mul_mats = (head & 32) != 0;
      p.weights = (head & 64) != 0;
      p.shared_pool = (options & 1) != 0;
      p.reuse = (options & 2) != 0;
      p.chunked = (options & 4) != 0;
      p.layout_ops = m.layout_ops = (options & 8) != 0;
      p.get_rows = m.get_rows = (options & 16) != 0;
      p.rope = m.rope = (options & 32) != 0;
      p.set_rows = m.set_rows = (options & 64) != 0;
      p.f16_mul_mat = m.f16_mul_mat = (options2 & 1) != 0;
      p.unplanned_allocs = m.unplanned_allocs = (options2 & 2) != 0;
      p.scheduled = m.scheduled = (options2 & 4) != 0;
      p.conv = m.conv = (options2 & 8) != 0;
    }
    for (int b = 0; b < n; ++b) {
      alloc::BufferSpec spec;
      spec.alignment = size_t{1} << src.Int<int>(0, kMaxAlignLog2, [&] { return Log2(want->buffers[b].alignment); });
      spec.max_size = size_t{1} << 22;  // never exhausted by a program (exhaustion: see tests/alloc/)
      p.allocators[k].buffers.push_back(spec);
    }
    m.buffers[k] = n;
  }
  m.g.emplace_back();

  // Encoding: the kinds to draw. A mark of a sealed graph's tensor is what a toggle of a graph without a
  // leaf to toggle becomes (DecodeTogglePrealloc), so it is drawn as that toggle.
  std::vector<Step> draws;
  if (target != nullptr) {
    draws = target->steps;
    for (size_t i = 0; i < draws.size(); ++i) {
      Step& d = draws[i];
      if (d.kind == StepKind::kMarkOutput && d.graph >= 0 && static_cast<size_t>(d.graph) < i)
        d.kind = StepKind::kTogglePrealloc;
    }
  }
  p.steps = programs::DecodeOps<Step>(src, kMaxSteps, m, [&](Step& step, const Step& want, size_t i) {
    const int open = m.open();
    if (open >= 0) step.state = "open";  // the steps acting on a sealed graph say its state below
    switch (step.kind) {
      case StepKind::kLeaf: m.AddTensor(open, step, DecodeLeaf(src, want)); break;
      case StepKind::kUnary:
      case StepKind::kBinary:
      case StepKind::kCopy:
      case StepKind::kConcat:
      case StepKind::kView: DecodeDerived(src, m, open, step, want, refs); break;
      case StepKind::kViewExternal: DecodeViewExternal(src, m, open, step, want, refs); break;
      case StepKind::kRowOp: DecodeRowOp(src, m, open, step, want, refs); break;
      case StepKind::kMatMul: DecodeMatMul(src, m, open, step, want, refs); break;
      case StepKind::kTranspose: DecodeTranspose(src, m, open, step, want, refs); break;
      case StepKind::kGetRows: DecodeGetRows(src, m, open, step, want, refs); break;
      case StepKind::kRope: DecodeRope(src, m, open, step, want, refs); break;
      case StepKind::kSetRows: DecodeSetRows(src, m, open, step, want, refs); break;
      case StepKind::kConvDw: DecodeConvDw(src, m, open, step, want, refs); break;
      case StepKind::kMarkOutput:
        step.graph = open;
        step.tensor_index = PickInt(src, m.g[open].t.size(), src.encoding() ? refs.TensorIn(open, want.tensor_index) : 0);
        m.g[open].t[step.tensor_index].spec.output = true;
        break;
      case StepKind::kSeal: DecodeSeal(m, open, step); break;
      case StepKind::kReserve:
      case StepKind::kAlloc:
      case StepKind::kMeasure: {
        int gi = PickFrom(src, m.sealed(), [&] { return refs.Graph(want.graph); });
        int k = m.g[gi].allocator >= 0 ? m.g[gi].allocator : PickInt(src, kAllocators, want.allocator);
        step.state = m.StateOf(gi);
        m.ReserveOrAlloc(gi, k, step);
        break;
      }
      case StepKind::kRewire:
      case StepKind::kGrow:
      case StepKind::kTogglePrealloc: {
        const int gi = PickMutable(src, m, step, want, refs);
        if (gi < 0) break;
        if (step.kind == StepKind::kRewire) {
          DecodeRewire(src, m, gi, step, want, refs);
        } else if (step.kind == StepKind::kGrow) {
          DecodeGrow(src, m, gi, step, want, refs);
        } else {
          DecodeTogglePrealloc(src, m, gi, step, want, refs);
        }
        break;
      }
    }
    if (!src.encoding()) return;
    const int id = static_cast<int>(i);
    if (AddsTensor(step.kind)) refs.tensor[id] = {step.graph, step.tensor_index};
    if (step.kind == StepKind::kSeal) refs.graph[id] = step.graph;
  }, target ? &draws : nullptr);
  return p;
}

}  // namespace

bool AddsTensor(StepKind k) {
  return k == StepKind::kGrow || k == StepKind::kRowOp || k == StepKind::kMatMul || k == StepKind::kTranspose ||
         k == StepKind::kGetRows || k == StepKind::kRope || k == StepKind::kSetRows || k == StepKind::kConvDw ||
         (k >= StepKind::kLeaf && k <= StepKind::kViewExternal);
}

void RowsOf(const TensorSpec& spec, int64_t source_rows, int32_t* rows) {
  for (int64_t j = 0; j < spec.ne[1] && j < alloc::kMaxRows; ++j) {
    rows[j] = static_cast<int32_t>((spec.rows_first + j * spec.rows_step) % source_rows);
  }
}

void SetRowsOf(const TensorSpec& spec, int64_t source_rows, int64_t destination_rows, int32_t* rows) {
  for (int64_t j = 0; j < source_rows && j < alloc::kMaxRows; ++j) {
    rows[j] = static_cast<int32_t>((spec.rows_first + j * spec.rows_step) % destination_rows);
  }
}

std::vector<int32_t> PositionsOf(const TensorSpec& spec) {
  std::vector<int32_t> positions(static_cast<size_t>(spec.ne[1] / spec.rope.heads));
  for (size_t j = 0; j < positions.size(); ++j) {
    positions[j] = spec.rope.pos_first + static_cast<int32_t>(j) * spec.rope.pos_step;
  }
  return positions;
}

Program Decode(const uint8_t* data, size_t size, const AllocatorRules& rules) {
  Source src(data, size);
  return Run(src, rules, nullptr);
}

namespace {

bool SameAllocators(const Program& a, const Program& b) {
  if (a.weights != b.weights || a.shared_pool != b.shared_pool || a.reuse != b.reuse ||
      a.chunked != b.chunked || a.unplanned_allocs != b.unplanned_allocs || a.scheduled != b.scheduled)
    return false;
  for (int k = 0; k < kAllocators; ++k) {
    const AllocatorSpec& x = a.allocators[k];
    const AllocatorSpec& y = b.allocators[k];
    if (x.cpu_threads != y.cpu_threads || x.buffers.size() != y.buffers.size()) return false;
    for (size_t i = 0; i < x.buffers.size(); ++i)
      if (x.buffers[i].alignment != y.buffers[i].alignment) return false;
  }
  return true;
}

}  // namespace

Program ToIds(const Program& p) {
  Program out = p;
  std::map<std::pair<int, int>, int> adder;  // (graph, tensor) -> step
  std::map<int, int> seal;                   // graph -> step
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].kind == StepKind::kSeal) seal[p.steps[i].graph] = static_cast<int>(i);
  auto graph_id = [&](int g) { return seal.count(g) ? seal[g] : -1; };
  auto tensor_id = [&](int g, int t) { return t < 0 ? -1 : adder.at({g, t}); };
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    Step& o = out.steps[i];
    const int id = static_cast<int>(i);
    o.graph = graph_id(s.graph);
    switch (s.kind) {
      case StepKind::kMarkOutput:
      case StepKind::kTogglePrealloc: o.tensor_index = tensor_id(s.graph, s.tensor_index); break;
      case StepKind::kSeal: o.tensor_index = tensor_id(s.graph, s.tensor_index); break;
      case StepKind::kRewire:
        o.tensor_index = tensor_id(s.graph, s.tensor_index);
        o.new_src = tensor_id(s.graph, s.new_src);
        break;
      default: break;
    }
    if (AddsTensor(s.kind)) {
      for (int j = 0; j < 2; ++j) o.tensor.src[j] = tensor_id(s.graph, s.tensor.src[j]);
      if (s.tensor.external_graph >= 0) {
        o.tensor.external_tensor = tensor_id(s.tensor.external_graph, s.tensor.external_tensor);
        o.tensor.external_graph = graph_id(s.tensor.external_graph);
      }
      o.tensor_index = id;
      adder[{s.graph, s.tensor_index}] = id;
    }
  }
  return out;
}

bool SameStep(const Step& a, const Step& b) {
  if (a.kind != b.kind || a.graph != b.graph) return false;
  const TensorSpec& x = a.tensor;
  const TensorSpec& y = b.tensor;
  switch (a.kind) {
    case StepKind::kLeaf:
      return x.type == y.type && x.ne[0] == y.ne[0] && x.ne[1] == y.ne[1] && x.input == y.input &&
             x.preallocated == y.preallocated;
    case StepKind::kUnary:
      return x.op == y.op && x.src[0] == y.src[0] && (x.op != Op::kScale || x.param == y.param) &&
             x.inplace == y.inplace && x.cpu == y.cpu;
    case StepKind::kBinary:
      return x.op == y.op && x.src[0] == y.src[0] && x.src[1] == y.src[1] && x.inplace == y.inplace && x.cpu == y.cpu;
    case StepKind::kCopy: return x.src[0] == y.src[0] && x.type == y.type && x.cpu == y.cpu;
    case StepKind::kConcat: return x.src[0] == y.src[0] && x.src[1] == y.src[1];
    case StepKind::kView:
      return x.src[0] == y.src[0] && x.op == y.op &&
             (x.op != Op::kView || (x.ne[0] == y.ne[0] && x.view_offset == y.view_offset));
    case StepKind::kViewExternal: return x.external_tensor == y.external_tensor;
    case StepKind::kGrow: return x.src[0] == y.src[0];
    case StepKind::kRowOp: return x.src[0] == y.src[0] && x.op == y.op;
    case StepKind::kMatMul: return x.src[0] == y.src[0] && x.src[1] == y.src[1];
    case StepKind::kTranspose: return x.src[0] == y.src[0] && x.permute == y.permute;
    case StepKind::kGetRows:
      return x.src[0] == y.src[0] && x.ne[1] == y.ne[1] && x.rows_first == y.rows_first && x.rows_step == y.rows_step;
    case StepKind::kRope:
      return x.src[0] == y.src[0] && x.rope.n_dims == y.rope.n_dims && x.rope.mode == y.rope.mode &&
             x.rope.heads == y.rope.heads && x.rope.pos_first == y.rope.pos_first && x.rope.pos_step == y.rope.pos_step;
    case StepKind::kSetRows:
      return x.src[0] == y.src[0] && x.src[1] == y.src[1] && x.rows_first == y.rows_first && x.rows_step == y.rows_step;
    case StepKind::kConvDw:
      return x.src[0] == y.src[0] && x.src[1] == y.src[1] && x.conv.stride == y.conv.stride && x.conv.pad == y.conv.pad;
    case StepKind::kMarkOutput:
    case StepKind::kTogglePrealloc: return a.tensor_index == b.tensor_index;
    case StepKind::kSeal: return true;
    case StepKind::kReserve:
    case StepKind::kAlloc:
    case StepKind::kMeasure: return a.allocator == b.allocator;
    case StepKind::kRewire: return a.tensor_index == b.tensor_index && a.slot == b.slot && a.new_src == b.new_src;
  }
  return false;
}

std::vector<uint8_t> Encode(const Program& target, const AllocatorRules& rules) {
  Program back;
  std::vector<uint8_t> bytes = programs::EncodeChecked(
      target.steps, [&](Source& src) { Run(src, rules, &target); },
      [&](const std::vector<uint8_t>& b) {
        back = ToIds(Decode(b.data(), b.size(), rules));
        return back.steps;
      },
      SameStep);
  if (!SameAllocators(back, target)) throw Unencodable("the allocators decode otherwise");
  return bytes;
}

const char* const kStepNames[] = {"leaf",   "unary",         "binary",      "copy",     "concat",
                                      "view",   "view-external", "mark-output", "seal",     "reserve",
                                      "alloc+compute", "rewire", "grow",        "toggle-prealloc", "measure", "row", "mul_mat",
                                      "transpose", "get_rows", "rope", "set_rows", "conv_2d_dw"};

namespace {

std::string TensorText(const TensorSpec& t) {
  std::string s = std::string(alloc::OpName(t.op)) + (t.type == DType::kF16 ? " f16" : " f32") + " [" +
                  std::to_string(t.ne[0]) + "," + std::to_string(t.ne[1]) + "]";
  for (int j = 0; j < 2; ++j) {
    if (t.src[j] >= 0) s += " src" + std::to_string(j) + "=t" + std::to_string(t.src[j]);
  }
  if (t.op == Op::kScale) s += " x" + std::to_string(t.param).substr(0, 5);
  if (t.op == Op::kView) s += " offset=" + std::to_string(t.view_offset);
  if (t.inplace && t.op != Op::kSetRows) s += " inplace";  // a set_rows always is: "into rows"
  if (t.cpu) s += " on-cpu";
  if (t.op == Op::kTranspose) s += t.permute ? " via-permute" : " via-transpose";
  if (t.op == Op::kGetRows || t.op == Op::kSetRows) {
    s += std::string(t.op == Op::kGetRows ? " rows " : " into rows ") + std::to_string(t.rows_first) + "+" +
         std::to_string(t.rows_step) + "j";
  }
  if (t.op == Op::kRope) {
    s += std::string(t.rope.mode == alloc::kRopeNeox ? " neox" : " normal") + " n_dims=" + std::to_string(t.rope.n_dims) +
         " heads=" + std::to_string(t.rope.heads) + " positions " + std::to_string(t.rope.pos_first) + "+" +
         std::to_string(t.rope.pos_step) + "j";
  }
  if (t.op == Op::kConvDw) s += " stride=" + std::to_string(t.conv.stride) + " pad=" + std::to_string(t.conv.pad);
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
    case StepKind::kAlloc:
    case StepKind::kMeasure: out += g + " with allocator " + std::to_string(s.allocator); break;
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
    if (k == 0 && p.measures) out += " (the program may measure)";
    if (k == 0 && p.row_ops) out += " (the program may use row ops)";
    if (k == 0 && p.mul_mats) out += " (the program may use mul_mat)";
    if (k == 0 && p.weights) out += " (pre-allocated leafs placed as weights)";
    if (k == 0 && p.shared_pool) out += " (one CPU thread pool for every compute)";
    if (k == 0 && p.reuse) out += " (graphs reused while unchanged)";
    if (k == 0 && p.chunked) out += " (host buffers of at most " + std::to_string(kChunkedBufferBytes) + " bytes)";
    if (k == 0 && p.layout_ops) out += " (the program may transpose)";
    if (k == 0 && p.get_rows) out += " (the program may get rows)";
    if (k == 0 && p.rope) out += " (the program may rope)";
    if (k == 0 && p.set_rows) out += " (the program may set rows)";
    if (k == 0 && p.conv) out += " (the program may convolve)";
    if (k == 0 && p.f16_mul_mat) out += " (mul_mat may take float16 weights)";
    if (k == 0 && p.unplanned_allocs) out += " (an unplanned allocator of several buffers is asked to place)";
    if (k == 0 && p.scheduled) out += " (every graph through the scheduler)";
    out += "\n";
  }
  return out;
}

std::string Describe(const Program& p) { return DescribeAllocators(p) + programs::DescribeNumbered(p.steps); }

}  // namespace lifeline::graphs
