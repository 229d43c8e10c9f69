// interop_string_handoff: a string handed to a worker thread is read by that worker exactly as the caller
// submitted it, however the worker is scheduled relative to the caller's return.
//
// Property: for every job submitted through the whisper.wasm-shaped binding (layers/interop/job_api.h),
// the worker reads the submitted bytes (up to the C string's NUL) and resolves the language id they name;
// synchronous calls (the negative control) do the same; statuses match the decoder's model; every thread
// is joined and every language copy freed before the iteration ends.
// Program: harness/programs/handoff/ (format.h, model.h, executor.h); implementation: layers/interop's
// JobApi through harness/programs/handoff/standin/job_api_binding.h.
// Oracle: the value oracle and status/ledger checks of the handoff executor, plus
// ASan/TSan/valgrind on the read itself (wasm-lang-dangling: stack-use-after-return for inline strings,
// heap-use-after-free for long ones).
// Out of scope: the model's contents (audio is summed, not transcribed); contexts freed under a running
// worker (the API joins first).
// Replay: build/<lane>/targets/interop_string_handoff FILE|DIR   (LIFELINE_REINTRODUCE=wasm-lang-dangling
// switches the bug back on).
#include <cstddef>
#include <cstdint>

#include "harness/programs/handoff/codec.h"
#include "harness/programs/handoff/executor.h"
#include "harness/programs/handoff/standin/job_api_binding.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<lifeline::handoff::JobBinding> api = lifeline::handoff::MakeJobApiBinding();
  lifeline::handoff::Execute(lifeline::handoff::Decode(data, size), *api);
  return 0;
}

// `--program decode|encode` (harness/replay_main.cc): this target's decoder both ways, for `lifeline reduce`.
LIFELINE_TARGET_CODEC(lifeline::handoff::MakeCodec())
