// The async job API under test, seen through the string-handoff programs' vocabulary: the one interface
// the handoff executor (executor.h) drives. Its shape is whisper.wasm's binding: contexts in slots, jobs
// whose worker threads read the caller's parameters (a C string among them) after the call returned.
// Implementations, each in its own file:
//   standin/job_api_binding.cc             layers/interop/job_api.h (where wasm-lang-dangling is modelled)
//   upstream/whisper_wasm_binding.cc       whisper.cpp's examples/whisper.wasm/emscripten.cpp, unmodified
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace lifeline::handoff {

// What a worker saw and did, as it reports it after Join.
struct WorkerReport {
  bool cancelled = false;     // the worker saw the cancel flag and did nothing
  std::string language_seen;  // the bytes the worker read through the language pointer, up to the NUL
  int lang_id = -1;           // what it resolved them to
  int n_threads = 0;
  bool translate = false;
  float checksum = 0.0f;      // the "transcription": the samples summed in order
};

class JobBinding {
 public:
  virtual ~JobBinding() = default;
  // Binds a context (multilingual or English-only) in the lowest free slot and returns the slot.
  virtual StatusOr<size_t> Init(bool multilingual) = 0;
  // Joins the slot's jobs, then unbinds it.
  virtual Status Free(size_t slot) = 0;
  // Submits a job from the JavaScript side: `language` holds the JS string's bytes, which the binding
  // turns into a string that lives only as long as the call; a worker reads it after the call returned.
  virtual StatusOr<uint32_t> SubmitAsync(size_t slot, const std::vector<float>& audio, const std::string& language,
                                         int n_threads, bool translate) = 0;
  // The same work on the calling thread, the language used before returning: the negative control.
  virtual StatusOr<WorkerReport> SubmitSync(size_t slot, const std::vector<float>& audio,
                                            const std::string& language, int n_threads, bool translate) = 0;
  // Lets the job's worker run to completion (not joined).
  virtual Status Start(uint32_t job) = 0;
  // Asks a job that has not started to do nothing.
  virtual Status Cancel(uint32_t job) = 0;
  // Lets the worker run if it has not, joins it and returns what it did.
  virtual StatusOr<WorkerReport> Join(uint32_t job) = 0;
  virtual size_t JobsInFlight() const = 0;
  // Copies of languages handed to workers and not yet freed (zero once every job is joined), where the
  // implementation can count them; nullopt where it cannot (the copies are made and freed inside upstream code:
  // a leaked copy is then LeakSanitizer's and valgrind's to report).
  virtual std::optional<int64_t> LiveLanguageCopies() const = 0;
  // The id the API's language table gives `language` (-1: unknown): what a worker must resolve.
  virtual int LangId(std::string_view language) const = 0;
};

}  // namespace lifeline::handoff
