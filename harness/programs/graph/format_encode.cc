// The graph programs' encoder: a program in id form (format.h ToIds) back to the bytes that decode to it, by
// running the decode loop (format.cc) on the program, and the id form and step comparison it is checked with.
#include <map>
#include <utility>
#include <vector>

#include "harness/programs/common/decode.h"
#include "harness/programs/graph/format.h"
#include "harness/programs/graph/format_internal.h"

namespace lifeline::graphs {
namespace {

using alloc::Op;
using programs::Source;
using programs::Unencodable;

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
      target.steps, [&](Source& src) { internal::Run(src, rules, &target); },
      [&](const std::vector<uint8_t>& b) {
        back = ToIds(Decode(b.data(), b.size(), rules));
        return back.steps;
      },
      SameStep);
  if (!SameAllocators(back, target)) throw Unencodable("the allocators decode otherwise");
  return bytes;
}

}  // namespace lifeline::graphs
