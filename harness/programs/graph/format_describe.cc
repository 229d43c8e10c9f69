// The graph programs as text: each step's line, the allocators' preamble, and the step names that traces and a
// program's JSON (codec.h) use.
#include <string>

#include "harness/programs/common/describe.h"
#include "harness/programs/graph/format.h"

namespace lifeline::graphs {

const char* const kStepNames[] = {"leaf",   "unary",         "binary",      "copy",     "concat",
                                      "view",   "view-external", "mark-output", "seal",     "reserve",
                                      "alloc+compute", "rewire", "grow",        "toggle-prealloc", "measure", "row", "mul_mat",
                                      "transpose", "get_rows", "rope", "set_rows", "conv_2d_dw"};

namespace {

using alloc::DType;
using alloc::Op;

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
