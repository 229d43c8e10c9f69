// whisper_string_handoff: the string-handoff programs on whisper.cpp's own whisper.wasm binding: a language
// handed to the binding's worker thread is read by that worker exactly as the caller submitted it, however the
// worker is scheduled relative to the caller's return.
//
// Property: for every job the page submits through examples/whisper.wasm/emscripten.cpp (whisper.cpp 1.9.1,
// unmodified, on the embind stand-in), the worker's whisper_full is given the submitted language bytes (up to
// the C string's NUL; "en" for an English-only model), every sample the page passed, the thread count the
// binding's rule gives, and, where it decodes, prompts with the id those bytes name; the synchronous control
// (a caller that keeps its string alive) does the same; statuses match the program's model; the worker is
// joined and every context freed before the iteration ends.
// Program: harness/programs/handoff/ (the same programs as interop_string_handoff); implementation:
// harness/programs/handoff/upstream/whisper_wasm_binding.h.
// Oracle: the handoff executor's value oracle and status checks, with what whisper_full was given
// (whisper_full_observer.h), plus ASan/TSan/valgrind on upstream's own reads of the language (the upstream
// variant of wasm-lang-dangling: stack-use-after-return for inline strings, heap-use-after-free for long ones).
// Out of scope: what the tiny generated model transcribes (its weights are random); the copy's leak accounting
// (made and freed inside upstream's code: LeakSanitizer's and valgrind's).
// Replay: build/<lane>/targets/whisper_string_handoff FILE|DIR
#include <cstddef>
#include <cstdint>

#include "core/guards.h"
#include "harness/programs/handoff/codec.h"
#include "harness/programs/handoff/executor.h"
#include "harness/programs/handoff/upstream/whisper_wasm_binding.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lifeline::BeginGuardedInput();
  std::unique_ptr<lifeline::handoff::JobBinding> api = lifeline::handoff::MakeWhisperWasmBinding();
  lifeline::handoff::Execute(lifeline::handoff::Decode(data, size), *api);
  return 0;
}

// `--program decode|encode` (harness/replay_main.cc): this target's decoder both ways, for `lifeline reduce`.
LIFELINE_TARGET_CODEC(lifeline::handoff::MakeCodec())
