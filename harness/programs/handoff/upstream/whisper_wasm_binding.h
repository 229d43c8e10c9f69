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
// the call. The audio a page passes is the program's, stretched (PageSamples): one sample stands for a clip of
// kShortClipSamples, shorter than the 201 samples whisper's reflective padding reads; more are each held for
// kSamplesPerProgramSample samples, so that five or more pass whisper_full's 100 ms minimum and reach the decoder.
#pragma once

#include <cstddef>
#include <memory>

#include "harness/programs/handoff/binding.h"

namespace lifeline::handoff {

inline constexpr size_t kSamplesPerProgramSample = 400;
inline constexpr size_t kShortClipSamples = 100;

// Loads the models from LIFELINE_WHISPER_MODELS (a folder with tiny-multilingual.bin and tiny-en.bin,
// scripts/make-whisper-model.py), else the folder the build generated them in.
std::unique_ptr<JobBinding> MakeWhisperWasmBinding();

// The folder the lane's build generated the models in (whisper_model_dir.cc, the one file of the binding whose
// compile command names the lane, so the others come from the compiler cache in every lane after the first).
const char* BuiltWhisperModelDir();

}  // namespace lifeline::handoff
