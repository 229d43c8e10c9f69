// The graph programs' per-step decoders: how the bytes of one step become that step, each choice offered by the
// model (model.h) and applied to it; the decode loop that calls them is format.cc's (format_internal.h).
#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "harness/programs/common/decode.h"
#include "harness/programs/graph/format.h"
#include "harness/programs/graph/format_internal.h"
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

}  // namespace

namespace internal {

int PickInt(Source& src, size_t n, int want_index) {
  return static_cast<int>(Pick(src, n, [&] { return static_cast<size_t>(want_index); }));
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

}  // namespace internal
}  // namespace lifeline::graphs
