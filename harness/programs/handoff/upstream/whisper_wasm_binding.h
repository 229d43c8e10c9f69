// The string-handoff programs on whisper.cpp's own binding: examples/whisper.wasm/emscripten.cpp of the
// pinned whisper.cpp (scripts/fetch-whisper.sh), compiled unmodified against the embind stand-in
// (embind/emscripten/bind.h) and called as JavaScript calls it: `init(path)`, `full_default(index, audio,
// lang, nthreads, translate)` and `free(index)`, each argument built by "embind" in the calling frame and
// destroyed when the call returns.
//
// The JavaScript side queues jobs the way a page must (a call to full_default while a worker runs blocks the
// page until that worker ends): a submit queues, Start calls full_default (whose worker then reads the
// language after the call returned: the handoff), Cancel drops a queued job, Join joins the worker (through
// `free(0)`: the binding joins its worker before looking at the index, and index 0 names no context). The
// synchronous control is a C++ caller that keeps its string alive until it has joined the worker.
//
// What the worker did is seen by whisper_full_observer.h (a link-time wrapper of whisper_full): the
// language bytes, n_threads, translate and every sample it was given, and whisper's own language id after
// the call. The audio a page passes is the program's, stretched (CallerSamples, whisper_caller.h).
#pragma once

#include <cstddef>
#include <memory>

#include "harness/programs/handoff/binding.h"

namespace lifeline::handoff {

// Loads the models through WhisperModelPath (whisper_caller.h).
std::unique_ptr<JobBinding> MakeWhisperWasmBinding();

}  // namespace lifeline::handoff
