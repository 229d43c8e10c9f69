#include "harness/programs/handoff/upstream/whisper_caller.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "core/guards.h"
#include "whisper.h"

namespace lifeline::handoff {

std::string WhisperModelPath(bool multilingual) {
  const char* env = std::getenv("LIFELINE_WHISPER_MODELS");
  const std::string dir = env != nullptr && *env != '\0' ? env : BuiltWhisperModelDir();
  return dir + (multilingual ? "/tiny-multilingual.bin" : "/tiny-en.bin");
}

static void Quiet(enum ggml_log_level, const char*, void*) {}

void QuietWhisperLog() { whisper_log_set(&Quiet, nullptr); }

int WhisperThreadsFor(int requested) {
  int hw = static_cast<int>(std::thread::hardware_concurrency()), p = 1;
  while (p <= hw) p *= 2;
  return std::min(requested, std::min(16, p / 2));
}

// whisper.cpp's log_mel_spectrogram reads 200 samples after the first for its reflective padding, however few it
// was given (repro/whisper-mel-short-audio-overread/); with the guard on, the caller pads a clip shorter than
// that with silence to 201 samples, as upstream's fix rejects such clips.
std::vector<float> CallerSamples(const std::vector<float>& audio) {
  constexpr size_t kReflectivePadReads = 201;
  std::vector<float> out;
  if (audio.size() == 1) {
    out.assign(kShortClipSamples, audio[0]);
  } else {
    out.reserve(audio.size() * kSamplesPerProgramSample);
    for (float s : audio) out.insert(out.end(), kSamplesPerProgramSample, s);
  }
  if (!out.empty() && out.size() < kReflectivePadReads &&
      GuardHolds(Guard::kWhisperMelShortAudioOverread,
                 [&] { return "a clip of " + std::to_string(out.size()) + " samples, padded to 201"; })) {
    out.resize(kReflectivePadReads, 0.0f);
  }
  return out;
}

float ProgramChecksum(const std::vector<float>& audio) {
  float sum = 0.0f;
  for (float s : audio) sum += s;
  return sum;
}

}  // namespace lifeline::handoff
