// The graph programs' decoder: how bytes become steps. Every choice goes through the model (model.h),
// which says what is legal now and predicts each step's status. This is the decode loop (allocators, options,
// then step after step) and what a decoded step's spec means; each step's own bytes are decoded in
// format_steps.cc, programs encoded in format_encode.cc and described in format_describe.cc.
#include "harness/programs/graph/format.h"

#include <algorithm>
#include <vector>

#include "harness/programs/common/decode.h"
#include "harness/programs/graph/format_internal.h"
#include "harness/programs/graph/model.h"

namespace lifeline::graphs {
namespace {

using alloc::DType;
using programs::PickFrom;
using programs::Source;
using programs::Unencodable;

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

}  // namespace

namespace internal {

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

}  // namespace internal

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
  return internal::Run(src, rules, nullptr);
}

}  // namespace lifeline::graphs
