// runtime_encoder_lifetime: however transient pools, contexts and encode-thread counts are interleaved,
// a frame encoded in n_cb shares on the encode threads computes exactly what the CPU computes, and nothing
// it used outlives its owner.
//
// Property: every frame's result equals the CPU reference in all three buffers; the live command and
// descriptor pools are those of the live contexts; no fence outlives its frame; the validation layer is
// silent; the iteration ends with no Vulkan object and no pass descriptor left and every share finished.
// Program: harness/programs/runtime/ (format.h: DecodeEncoder; executor.h); implementation: layers/runtime
// through harness/programs/runtime/standin/lifeline_runtime.h; oracles: harness/oracles/runtime_oracles.h,
// plus ASan on the encode path
// (metal-edesc-autorelease: heap-use-after-free of a descriptor its pool freed; metal-encode-async-block:
// stack-use-after-return in a worker calling a dead stack callback).
// Out of scope: device loss, out-of-memory, buffers shared between threads of different contexts.
// libFuzzer settings: targets/runtime_encoder_lifetime.options (detect_leaks = 0: lavapipe's and the
// validation layer's threads free a frame's allocations during the next input; LeakSanitizer checks the
// whole run at exit instead).
// Replay: build/<lane>/targets/runtime_encoder_lifetime FILE|DIR   (LIFELINE_TRACE=1 prints the program;
// LIFELINE_REINTRODUCE=metal-edesc-autorelease or metal-encode-async-block switches a bug on).
#include <cstddef>
#include <cstdint>

#include "harness/programs/runtime/codec.h"
#include "harness/programs/runtime/executor.h"
#include "harness/programs/runtime/standin/lifeline_runtime.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<lifeline::rtprog::ComputeRuntime> runtime = lifeline::rtprog::MakeLifelineRuntime();
  lifeline::rtprog::Execute(lifeline::rtprog::DecodeEncoder(data, size), *runtime);
  return 0;
}

// `--program decode|encode` (harness/replay_main.cc): this target's decoder both ways, for `lifeline reduce`.
LIFELINE_TARGET_CODEC(lifeline::rtprog::MakeEncoderCodec())
