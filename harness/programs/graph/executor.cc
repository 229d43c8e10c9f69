#include "harness/programs/graph/executor.h"

#include "core/check.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/common/oracle.h"

namespace lifeline::graphs {
namespace {

Status Run(const Step& s, AllocatorAdapter& adapter) {
  switch (s.kind) {
    case StepKind::kLeaf:
    case StepKind::kUnary:
    case StepKind::kBinary:
    case StepKind::kCopy:
    case StepKind::kConcat:
    case StepKind::kView:
    case StepKind::kViewExternal:
    case StepKind::kRowOp:
    case StepKind::kMatMul:
    case StepKind::kTranspose:
    case StepKind::kGetRows:
    case StepKind::kRope:
    case StepKind::kSetRows:
    case StepKind::kConvDw:
      return adapter.AddTensor(s.graph, s.tensor);
    case StepKind::kGrow:
      LIFELINE_RETURN_IF_ERROR(adapter.AddTensor(s.graph, s.tensor));
      return adapter.SetOutput(s.graph, s.tensor_index);
    case StepKind::kMarkOutput:
      return adapter.SetOutput(s.graph, s.tensor_index);
    case StepKind::kSeal:
      return s.tensor_index >= 0 ? adapter.SetOutput(s.graph, s.tensor_index) : Status::Ok();
    case StepKind::kReserve:
      return adapter.Reserve(s.allocator, s.graph);
    case StepKind::kAlloc:
      return adapter.AllocAndCompute(s.allocator, s.graph);
    case StepKind::kRewire:
      return adapter.Rewire(s.graph, s.tensor_index, s.slot, s.new_src);
    case StepKind::kTogglePrealloc:
      return adapter.SetPreallocated(s.graph, s.tensor_index, s.tensor.preallocated);
    case StepKind::kMeasure:
      return adapter.Measure(s.allocator, s.graph);
  }
  return Status::Ok();
}

}  // namespace

void Execute(const Program& program, AllocatorAdapter& adapter) {
  programs::MaybePrintProgram(program.steps, DescribeAllocators(program));
  OpTraceScope trace(&program.steps, program.steps.size(), &programs::RenderOps<std::vector<Step>>);
  adapter.Configure(program);
  for (int k = 0; k < kAllocators; ++k) {
    Status s = adapter.CreateAllocator(k, program.allocators[k]);
    LIFELINE_CHECK(s.ok(), "creating allocator " + std::to_string(k) + " failed: " + s.ToString());
  }
  for (size_t i = 0; i < program.steps.size(); ++i) {
    trace.set_op(i);
    const Step& s = program.steps[i];
    programs::CheckStatus(s, Run(s, adapter), s.expect);
  }
  trace.set_op(program.steps.size());
  adapter.Teardown();
}

}  // namespace lifeline::graphs
