// The encoder-lifetime executor (executor.h).
#include <vector>

#include "core/check.h"
#include "harness/oracles/runtime_oracles.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/common/oracle.h"
#include "harness/programs/runtime/executor.h"

namespace lifeline::rtprog {

void Execute(const EncoderProgram& program, ComputeRuntime& rt) {
  programs::MaybePrintProgram(program);
  LIFELINE_CHECK_OK(programs::At("before the program: ", oracles::CheckValidationSilent(rt.TakeValidationMessages())));
  const runtime::ObjectCounts base = rt.Objects();
  const int64_t base_descriptors = rt.LivePassDescriptors();
  OpTraceScope trace(&program, program.size(), &programs::RenderOps<EncoderProgram>);

  std::vector<std::vector<float>> model(kEncoderBuffers, std::vector<float>(kEncoderFloats, 0.0f));
  for (int b = 0; b < kEncoderBuffers; ++b) {
    Status s = rt.CreateBuffer(b, kEncoderFloats);
    LIFELINE_CHECK(s.ok(), "creating the frame buffers: " + s.ToString());
  }
  int pools = 0;
  int n_cb[kMaxContexts] = {};

  for (size_t i = 0; i < program.size(); ++i) {
    trace.set_op(i);
    const EncoderOp& op = program[i];
    Status status;
    switch (op.kind) {
      case EncoderOpKind::kPushPool: rt.PushPool(); ++pools; break;
      case EncoderOpKind::kDrainPool: rt.DrainPool(); --pools; break;
      case EncoderOpKind::kCreateContext:
        status = rt.CreateContext(op.context, op.n_cb);
        if (status.ok()) n_cb[op.context] = op.n_cb;
        break;
      case EncoderOpKind::kSetThreads:
        status = rt.SetEncodeThreads(op.context, op.n_cb);
        if (status.ok()) n_cb[op.context] = op.n_cb;
        break;
      case EncoderOpKind::kCompute:
        status = rt.Compute(op.context, op.frame);
        if (!status.ok()) break;
        for (const Dispatch& d : op.frame) {
          model[d.out] = oracles::ReferenceKernel(d.kernel, d.n, d.value, model[d.a], model[d.b], model[d.out]);
        }
        for (int b = 0; b < kEncoderBuffers; ++b) {
          LIFELINE_CHECK_OK(programs::At(i, op, oracles::CheckValues(rt.Data(b), model[b],
                                                                     "value oracle: b" + std::to_string(b))));
        }
        break;
      case EncoderOpKind::kDestroyContext:
        rt.DestroyContext(op.context);
        n_cb[op.context] = 0;
        break;
    }
    programs::CheckStatus(op, status, op.expect);
    LIFELINE_CHECK_OK(programs::At(i, op, oracles::CheckValidationSilent(rt.TakeValidationMessages())));
    int64_t pools_expected = 0;
    for (int c = 0; c < kMaxContexts; ++c) pools_expected += n_cb[c];
    LIFELINE_CHECK_OK(programs::At(i, op, oracles::CheckPoolsOfLiveContexts(rt.Objects(), base, pools_expected)));
  }
  trace.set_op(program.size());
  for (int c = 0; c < kMaxContexts; ++c) rt.DestroyContext(c);
  for (; pools > 0; --pools) rt.DrainPool();
  for (int b = 0; b < kEncoderBuffers; ++b) rt.DestroyBuffer(b, false);
  LIFELINE_CHECK_OK(programs::At("teardown: ", oracles::CheckValidationSilent(rt.TakeValidationMessages())));
  LIFELINE_CHECK_OK(programs::At("teardown: ", oracles::CheckObjectsAtBaseline(rt.Objects(), base)));
  LIFELINE_CHECK(rt.LivePassDescriptors() == base_descriptors,
                 "teardown: " + std::to_string(rt.LivePassDescriptors() - base_descriptors) +
                     " pass descriptors left with every pool drained and every context destroyed");
}

}  // namespace lifeline::rtprog
