// The buffer-reclaim executor (executor.h).
#include <vector>

#include "core/check.h"
#include "harness/oracles/runtime_oracles.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/common/oracle.h"
#include "harness/programs/runtime/executor.h"

namespace lifeline::rtprog {

void Execute(const ReclaimProgram& program, ComputeRuntime& rt) {
  programs::MaybePrintProgram(program);
  LIFELINE_CHECK_OK(programs::At("before the program: ", oracles::CheckValidationSilent(rt.TakeValidationMessages())));
  LIFELINE_PRECONDITION(!rt.CaptureEnabled(), "capture was left on by an earlier iteration");
  const runtime::ObjectCounts base = rt.Objects();
  const ComputeRuntime::Wrappers base_wrappers = rt.LiveWrappers();
  constexpr int kContext = 0;  // the iteration's context, for dispatches
  Status context = rt.CreateContext(kContext, 1);
  LIFELINE_CHECK(context.ok(), "creating the iteration's context: " + context.ToString());
  OpTraceScope trace(&program, program.size(), &programs::RenderOps<ReclaimProgram>);

  std::vector<std::vector<float>> model(kReclaimSlots);
  for (size_t i = 0; i < program.size(); ++i) {
    trace.set_op(i);
    const ReclaimOp& op = program[i];
    switch (op.kind) {
      case ReclaimOpKind::kCreate: {
        Status s = rt.CreateBuffer(op.slot, op.floats);
        programs::CheckStatus(op, s, op.expect);
        if (s.ok()) model[op.slot].assign(op.floats, 0.0f);
        break;
      }
      case ReclaimOpKind::kWrite:
        for (uint32_t k = 0; k < model[op.slot].size(); ++k) {
          model[op.slot][k] = Pattern(op.seed, k);
          rt.Data(op.slot)[k] = model[op.slot][k];
        }
        break;
      case ReclaimOpKind::kDispatch: {
        const Dispatch& d = op.dispatch;
        Status s = rt.Compute(kContext, {d});
        LIFELINE_CHECK(s.ok(), programs::Where(i, op) + s.ToString());
        model[d.out] = oracles::ReferenceKernel(d.kernel, d.n, d.value, model[d.a], model[d.b], model[d.out]);
        LIFELINE_CHECK_OK(programs::At(i, op, oracles::CheckValues(rt.Data(d.out), model[d.out],
                                                                   "value oracle: s" + std::to_string(d.out))));
        break;
      }
      case ReclaimOpKind::kRead:
        LIFELINE_CHECK_OK(programs::At(i, op, oracles::CheckValues(rt.Data(op.slot), model[op.slot], "value oracle")));
        break;
      case ReclaimOpKind::kDestroy: rt.DestroyBuffer(op.slot, op.purge); break;
      case ReclaimOpKind::kCaptureOn: rt.SetCapture(true); break;
      case ReclaimOpKind::kCaptureOff: rt.SetCapture(false); break;
    }
    LIFELINE_CHECK_OK(programs::At(i, op, oracles::CheckValidationSilent(rt.TakeValidationMessages())));
    // The accounting oracle: live backing objects and bytes equal what live wrappers account for.
    const ComputeRuntime::Wrappers w = rt.LiveWrappers();
    LIFELINE_CHECK_OK(programs::At(i, op, oracles::CheckBackingMatchesWrappers(
                                              rt.Objects(), base, w.buffers - base_wrappers.buffers,
                                              w.bytes - base_wrappers.bytes)));
  }
  trace.set_op(program.size());
  for (int s = 0; s < kReclaimSlots; ++s) rt.DestroyBuffer(s, false);
  rt.SetCapture(false);
  rt.ClearCapture();
  rt.DestroyContext(kContext);
  LIFELINE_CHECK_OK(programs::At("teardown: ", oracles::CheckValidationSilent(rt.TakeValidationMessages())));
  LIFELINE_CHECK_OK(programs::At("teardown: ", oracles::CheckObjectsAtBaseline(rt.Objects(), base)));
}

}  // namespace lifeline::rtprog
