// What both of whisper_string_handoff's bindings pass whisper.cpp for a program's job, and where they find
// the models: one rule for the audio, the thread count and the model files, so that the whisper.wasm binding
// (whisper_wasm_binding.cc) and the C-API binding (whisper_capi_binding.cc) give whisper the same work.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace lifeline::handoff {

inline constexpr size_t kSamplesPerProgramSample = 400;
inline constexpr size_t kShortClipSamples = 100;

// The model file of either kind: LIFELINE_WHISPER_MODELS (a folder with tiny-multilingual.bin and tiny-en.bin,
// scripts/make-whisper-model.py), else the folder the build generated them in.
std::string WhisperModelPath(bool multilingual);

// The folder the lane's build generated the models in (whisper_model_dir.cc, the one file of the bindings whose
// compile command names the lane, so the others come from the compiler cache in every lane after the first).
const char* BuiltWhisperModelDir();

// Silences whisper.cpp's and ggml's log (set per binding: whisper_log_set).
void QuietWhisperLog();

// whisper.wasm's thread rule (emscripten.cpp's mpow2 and min): the count a worker is given for `requested`.
// The C-API binding sizes its threads the same way, to the machine, as a native binding does.
int WhisperThreadsFor(int requested);

// What a caller passes for a program's audio: one sample stands for a clip of kShortClipSamples, shorter than
// the 201 samples whisper's reflective padding reads; more are each held for kSamplesPerProgramSample samples,
// so that five or more pass whisper_full's 100 ms minimum and reach the decoder. Guard
// whisper-mel-short-audio-overread pads a clip under 201 samples with silence to 201.
std::vector<float> CallerSamples(const std::vector<float>& audio);

// The value oracle's checksum of a program's samples (the stand-in's "transcription").
float ProgramChecksum(const std::vector<float>& audio);

}  // namespace lifeline::handoff
