// What both of whisper_string_handoff's bindings pass whisper.cpp for a program's job, and where they find
// the models: one rule for the audio, the thread count and the model files, so that the whisper.wasm binding
// (whisper_wasm_binding.cc) and the C-API binding (whisper_capi_binding.cc) give whisper the same work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "harness/programs/handoff/binding.h"
#include "harness/programs/handoff/format.h"

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

// The queue of submitted jobs both bindings keep, as a page keeps it: ids from 1, at most kMaxJobs in flight, and a
// job cancelled before it started does nothing. `Job` has `bool started` (Start was called for it, as the model
// counts it: also for a cancelled job) and `bool cancelled`.
template <typename Job>
class JobQueue {
 public:
  StatusOr<uint32_t> Add(Job job) {
    if (jobs_.size() >= kMaxJobs) return ResourceExhausted("the queue holds " + std::to_string(kMaxJobs) + " jobs");
    jobs_.emplace(next_id_, std::move(job));
    return next_id_++;
  }
  StatusOr<Job*> Find(uint32_t id) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return NotFound("no job " + std::to_string(id));
    return &it->second;
  }
  // Marks the job started and returns it when it must now run (it was not cancelled).
  StatusOr<Job*> Start(uint32_t id) {
    StatusOr<Job*> job = Find(id);
    if (!job.ok()) return job;
    job.value()->started = true;
    return job.value()->cancelled ? nullptr : job.value();
  }
  Status Cancel(uint32_t id) {
    StatusOr<Job*> job = Find(id);
    if (!job.ok()) return job.status();
    if (job.value()->started) return FailedPrecondition("job " + std::to_string(id) + " has started");
    job.value()->cancelled = true;
    return Status::Ok();
  }
  // Join's answer for a cancelled job, which the queue then forgets; nullopt for a job that must run first.
  std::optional<WorkerReport> JoinCancelled(uint32_t id) {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || !it->second.cancelled) return std::nullopt;
    jobs_.erase(it);
    WorkerReport r;
    r.cancelled = true;
    return r;
  }
  void Erase(uint32_t id) { jobs_.erase(id); }
  size_t size() const { return jobs_.size(); }
  std::map<uint32_t, Job>& all() { return jobs_; }
  const std::map<uint32_t, Job>& all() const { return jobs_; }

 private:
  std::map<uint32_t, Job> jobs_;
  uint32_t next_id_ = 1;
};

}  // namespace lifeline::handoff
