// An async job API in the shape of whisper.cpp's WASM binding (examples/whisper.wasm/emscripten.cpp):
// contexts ("models") live in numbered slots; `FullDefault` takes the language as `const std::string&`,
// fills a plain params struct with a `const char*` to it, hands a copy of that struct to a worker thread
// and returns at once. The worker resolves the language id and "transcribes" the audio.
//
// The documented bug wasm-lang-dangling (whisper.cpp #2998, fixed by #3000) lives in `FullDefault`: the
// fixed code hands the worker its own copy of the string (strdup, freed by the worker); the re-introduced
// code hands it the binding argument's buffer, which dies when the caller's std::string does.
//
// Workers start only when told (`Start`, `Join`), which models a scheduler that runs them after the
// binding returned. That gate is deliberately invisible to TSan (a relaxed atomic plus a raw futex): it
// orders the worker after the caller in time without creating a happens-before edge, exactly like the
// OS scheduler upstream, so TSan judges the handoff on its own synchronisation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/status.h"

namespace lifeline::interop {

// whisper_lang_id: a language code ("de") or an English name ("german") -> id; -1 for "unknown
// language". The table is the head of whisper.cpp's g_lang, in its order.
int LangId(std::string_view language);
std::string_view LangCode(int id);
int LangCount();

// whisper_full_params, reduced to what the handoff needs: a plain struct, copied by value.
struct FullParams {
  const char* language = "en";
  int n_threads = 1;
  bool translate = false;
  bool owns_language = false;  // the worker frees `language` when done (the fix)
};

// What a worker saw and did; read by the submitter after Join.
struct JobResult {
  bool cancelled = false;     // the worker saw the cancel flag and did nothing
  std::string language_seen;  // the bytes the worker read through params.language, up to the NUL
  int lang_id = -1;           // LangId(language_seen)
  int n_threads = 0;
  bool translate = false;
  float checksum = 0.0f;      // the "transcription": the samples summed in order
};

using JobId = uint32_t;

class JobApi {
 public:
  static constexpr size_t kSlots = 4;
  static constexpr size_t kMaxJobs = 8;  // jobs submitted and not yet joined, over all slots

  JobApi();
  ~JobApi();  // lets every pending worker run and joins it
  JobApi(const JobApi&) = delete;
  JobApi& operator=(const JobApi&) = delete;

  // whisper.wasm `init`: binds a context in the lowest free slot and returns the slot.
  StatusOr<size_t> Init(bool multilingual);
  // whisper.wasm `free`: joins the slot's jobs (their results are dropped), then unbinds it.
  Status Free(size_t slot);

  // whisper.wasm `full_default`: queues a job whose worker reads `lang` after this call has returned.
  // Non-multilingual contexts ignore `lang` and use "en", as upstream does.
  StatusOr<JobId> FullDefault(size_t slot, std::vector<float> audio, const std::string& lang,
                              int n_threads, bool translate);
  // The negative control: the same work on the calling thread, using `lang` before returning. Borrowing
  // the caller's buffer is correct here, so this path is never flagged, switch or not.
  StatusOr<JobResult> FullSync(size_t slot, const std::vector<float>& audio, const std::string& lang,
                               int n_threads, bool translate);

  // Lets the job's worker run and waits until it has finished its work (not joined).
  Status Start(JobId job);
  // Asks a job that has not started to do nothing. A job that already ran cannot be cancelled.
  Status Cancel(JobId job);
  // Lets the worker run if it has not, joins it and returns what it did.
  StatusOr<JobResult> Join(JobId job);

  size_t jobs_in_flight() const;
  // Fixed-path ledger: language copies handed to workers and not yet freed. Zero once all are joined.
  static int64_t live_language_copies();

 private:
  struct Job;
  struct Slot {
    bool bound = false;
    bool multilingual = false;
  };
  Job* FindJob(JobId id);
  Status CheckSlot(size_t slot) const;

  Slot slots_[kSlots];
  std::vector<std::unique_ptr<Job>> jobs_;
  JobId next_job_ = 1;
};

// The embind wrapper's role: turn the JS string argument into a std::string that lives in this frame,
// call the binding, return. Never inlined, so the string dies with this frame as it does upstream.
StatusOr<JobId> CallFullDefaultFromJs(JobApi& api, size_t slot, std::vector<float> audio,
                                      const uint8_t* lang_bytes, size_t lang_size, int n_threads,
                                      bool translate);
StatusOr<JobResult> CallFullSyncFromJs(JobApi& api, size_t slot, const std::vector<float>& audio,
                                       const uint8_t* lang_bytes, size_t lang_size, int n_threads,
                                       bool translate);

}  // namespace lifeline::interop
