// runtime_buffer_reclaim: a buffer's backing Vulkan objects and bytes live exactly as long as its wrapper,
// whether or not the debug capture registry is recording.
//
// Property: after every op, live VkBuffer/VkDeviceMemory objects and their bytes (counted in the
// runtime's create and destroy paths) equal what the live Buffer wrappers account for — bytes checked
// first, then objects, so the purge workaround (free the bytes, keep the object) is told apart; values
// read back equal the CPU model; the validation layer is silent; the iteration ends with nothing left.
// Program: harness/programs/runtime/ (format.h: DecodeReclaim; executor.h); implementation: layers/runtime
// through harness/programs/runtime/standin/lifeline_runtime.h; oracles: harness/oracles/runtime_oracles.h.
// igl-capture-retains-buffers (facebook/igl #179) is invisible to ASan and LSan — everything stays
// reachable — so only this accounting sees it.
// Out of scope: memory types other than host-visible coherent; sizes above 4 KiB.
// libFuzzer settings: targets/runtime_buffer_reclaim.options (detect_leaks = 0: lavapipe's and the
// validation layer's threads free a frame's allocations during the next input; LeakSanitizer checks the
// whole run at exit instead).
// Replay: build/<lane>/targets/runtime_buffer_reclaim FILE|DIR   (LIFELINE_REINTRODUCE=
// igl-capture-retains-buffers switches the bug on).
#include <cstddef>
#include <cstdint>

#include "harness/programs/runtime/codec.h"
#include "harness/programs/runtime/executor.h"
#include "harness/programs/runtime/standin/lifeline_runtime.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<lifeline::rtprog::ComputeRuntime> runtime = lifeline::rtprog::MakeLifelineRuntime();
  lifeline::rtprog::Execute(lifeline::rtprog::DecodeReclaim(data, size), *runtime);
  return 0;
}

// `--program decode|encode` (harness/replay_main.cc): this target's decoder both ways, for `lifeline reduce`.
LIFELINE_TARGET_CODEC(lifeline::rtprog::MakeReclaimCodec())
