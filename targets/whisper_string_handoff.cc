// whisper_string_handoff: the string-handoff programs on whisper.cpp, through both ways its users reach it:
// its own whisper.wasm binding, and its C API used across threads as native bindings use it. A string handed
// to a worker is read by that worker exactly as the caller submitted it, however the worker is scheduled
// relative to the caller's return; what whisper hands out is valid for as long as whisper.h says.
//
// Property: each input's program runs twice, on fresh bindings.
// 1. Through examples/whisper.wasm/emscripten.cpp (whisper.cpp 1.9.1, unmodified, on the embind stand-in): for
//    every job, the worker's whisper_full is given the submitted language bytes (up to the C string's NUL;
//    "en" for an English-only model), every sample the page passed, the thread count the binding's rule gives,
//    and, where it decodes, prompts with the id those bytes name.
// 2. Through whisper.h: a context per slot, a whisper_state per job, whisper_full_with_state on worker threads
//    (several on one context at once), whisper_full_parallel as the synchronous control; the job's language,
//    initial_prompt and suppress_regex owned by the job until its Join; each result's segment and token texts
//    read within their lifetime, a segment's text equal to its tokens', and the language id as in 1.
// In both, statuses match the program's model and every worker is joined and every context freed before the
// iteration ends.
// Program: harness/programs/handoff/ (the same programs as interop_string_handoff); implementations:
// harness/programs/handoff/upstream/whisper_wasm_binding.h, whisper_capi_binding.h.
// Oracle: the handoff executor's value oracle and status checks, with what whisper_full was given
// (whisper_full_observer.h) and what it handed out, plus ASan/TSan/valgrind on upstream's own reads of the
// language (the upstream variant of wasm-lang-dangling: stack-use-after-return for inline strings,
// heap-use-after-free for long ones) and on whisper.cpp's states run concurrently on one context.
// Out of scope: what the tiny generated model transcribes (its weights are random); the whisper.wasm copy's
// leak accounting (made and freed inside upstream's code: LeakSanitizer's and valgrind's).
// Replay: build/<lane>/targets/whisper_string_handoff FILE|DIR
#include <cstddef>
#include <cstdint>

#include "core/guards.h"
#include "harness/programs/handoff/codec.h"
#include "harness/programs/handoff/executor.h"
#include "harness/programs/handoff/upstream/whisper_capi_binding.h"
#include "harness/programs/handoff/upstream/whisper_wasm_binding.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lifeline::BeginGuardedInput();
  const lifeline::handoff::Program program = lifeline::handoff::Decode(data, size);
  lifeline::handoff::Execute(program, *lifeline::handoff::MakeWhisperWasmBinding());
  lifeline::handoff::Execute(program, *lifeline::handoff::MakeWhisperCApiBinding());
  return 0;
}

// `--program decode|encode` (harness/replay_main.cc): this target's decoder both ways, for `lifeline reduce`.
LIFELINE_TARGET_CODEC(lifeline::handoff::MakeCodec())
