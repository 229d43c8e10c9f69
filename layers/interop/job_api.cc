#include "layers/interop/job_api.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "core/bugs.h"
#include "core/check.h"

namespace lifeline::interop {
namespace {

// The head of whisper.cpp's g_lang table: {code, {id, name}}, ids in upstream order.
struct Language {
  const char* code;
  const char* name;
};
constexpr Language kLanguages[] = {
    {"en", "english"},   {"zh", "chinese"},   {"de", "german"},     {"es", "spanish"},
    {"ru", "russian"},   {"ko", "korean"},    {"fr", "french"},     {"ja", "japanese"},
    {"pt", "portuguese"}, {"tr", "turkish"},  {"pl", "polish"},     {"ca", "catalan"},
    {"nl", "dutch"},     {"ar", "arabic"},    {"sv", "swedish"},    {"it", "italian"},
    {"id", "indonesian"}, {"hi", "hindi"},    {"fi", "finnish"},    {"vi", "vietnamese"},
    {"he", "hebrew"},    {"uk", "ukrainian"}, {"el", "greek"},      {"ms", "malay"},
};
constexpr int kLanguageCount = sizeof(kLanguages) / sizeof(kLanguages[0]);

// Language copies made by the fixed FullDefault and not yet freed by their worker.
std::atomic<int64_t> g_live_language_copies{0};

// The scheduling gate (see the header): relaxed atomics and a raw futex syscall, which TSan does not
// treat as synchronisation. Only the *time* order is enforced.
void GateWait(std::atomic<uint32_t>* word) {
  while (word->load(std::memory_order_relaxed) == 0) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
  }
}
void GateOpen(std::atomic<uint32_t>* word) {
  word->store(1, std::memory_order_relaxed);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// Reads a C string byte by byte: the one place the language pointer is dereferenced, so a report
// names project code rather than a libc interceptor.
__attribute__((noinline)) std::string ReadCString(const char* s) {
  std::string out;
  for (const char* p = s; *p != '\0'; ++p) out.push_back(*p);
  return out;
}

// whisper_full's use of the params, reduced: resolve the language, "transcribe" the audio.
__attribute__((noinline)) JobResult Transcribe(const FullParams& params, const std::vector<float>& audio) {
  JobResult result;
  result.language_seen = ReadCString(params.language);
  result.lang_id = LangId(result.language_seen);
  result.n_threads = params.n_threads;
  result.translate = params.translate;
  for (float sample : audio) result.checksum += sample;
  return result;
}

Status CheckThreads(int n_threads) {
  if (n_threads < 1 || n_threads > 64) {
    return InvalidArgument("n_threads must be in [1, 64], got " + std::to_string(n_threads));
  }
  return Status::Ok();
}

}  // namespace

int LangId(std::string_view language) {
  for (int i = 0; i < kLanguageCount; ++i) {
    if (language == kLanguages[i].code || language == kLanguages[i].name) return i;
  }
  return -1;
}

std::string_view LangCode(int id) { return id >= 0 && id < kLanguageCount ? kLanguages[id].code : ""; }
int LangCount() { return kLanguageCount; }

struct JobApi::Job {
  JobId id = 0;
  size_t slot = 0;
  std::atomic<uint32_t> gate{0};     // opened by Start/Join: the scheduler picks the worker up
  std::atomic<uint32_t> done{0};     // the worker finished its work (release) -> Start may return
  std::atomic<bool> cancel{false};   // set by Cancel before the gate opens
  bool gate_opened = false;          // caller-thread view of `gate`
  JobResult result;                  // written by the worker before `done`, read after done or join
  std::thread thread;
};

namespace {
// The worker body. `params` is the by-value copy of the binding's struct: for the buggy path its
// `language` points into the caller's (now dead) std::string.
__attribute__((noinline)) void RunJobWorker(FullParams params, std::vector<float> audio,
                                            std::atomic<uint32_t>* gate, std::atomic<uint32_t>* done,
                                            std::atomic<bool>* cancel, JobResult* result) {
  GateWait(gate);
  if (cancel->load(std::memory_order_acquire)) {
    result->cancelled = true;
  } else {
    *result = Transcribe(params, audio);
  }
  if (params.owns_language) {
    std::free(const_cast<char*>(params.language));
    g_live_language_copies.fetch_sub(1, std::memory_order_relaxed);
  }
  done->store(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(done), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}
}  // namespace

JobApi::JobApi() = default;

JobApi::~JobApi() {
  for (auto& job : jobs_) {
    if (!job->gate_opened) GateOpen(&job->gate);
    job->thread.join();
  }
}

Status JobApi::CheckSlot(size_t slot) const {
  if (slot >= kSlots) {
    return NotFound("context slot " + std::to_string(slot) + " is out of range [0, " +
                    std::to_string(kSlots) + ")");
  }
  if (!slots_[slot].bound) return NotFound("context slot " + std::to_string(slot) + " is not bound");
  return Status::Ok();
}

StatusOr<size_t> JobApi::Init(bool multilingual) {
  for (size_t i = 0; i < kSlots; ++i) {
    if (!slots_[i].bound) {
      slots_[i] = Slot{true, multilingual};
      return i;
    }
  }
  return ResourceExhausted("all " + std::to_string(kSlots) + " context slots are bound");
}

Status JobApi::Free(size_t slot) {
  LIFELINE_RETURN_IF_ERROR(CheckSlot(slot));
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if ((*it)->slot != slot) {
      ++it;
      continue;
    }
    if (!(*it)->gate_opened) GateOpen(&(*it)->gate);
    (*it)->thread.join();
    it = jobs_.erase(it);
  }
  slots_[slot] = Slot{};
  return Status::Ok();
}

StatusOr<JobId> JobApi::FullDefault(size_t slot, std::vector<float> audio, const std::string& lang,
                                    int n_threads, bool translate) {
  LIFELINE_RETURN_IF_ERROR(CheckSlot(slot));
  LIFELINE_RETURN_IF_ERROR(CheckThreads(n_threads));
  if (jobs_.size() >= kMaxJobs) {
    return ResourceExhausted(std::to_string(kMaxJobs) + " jobs are already in flight");
  }

  FullParams params;
  params.n_threads = n_threads;
  params.translate = translate;
  if (slots_[slot].multilingual) {
    if (Reintroduced(Bug::kWasmLangDangling)) {
      // BUG(wasm-lang-dangling): whisper.cpp #2998. `params.language = lang.c_str()` borrows the
      // argument's buffer; the worker reads it after this call returned and the string died (inline
      // SSO buffer on the caller's stack for short codes, a freed heap block for long strings).
      params.language = lang.c_str();
    } else {
      // Fixed as in whisper.cpp #3000: the worker gets its own copy and frees it when done.
      params.language = strdup(lang.c_str());
      LIFELINE_CHECK(params.language != nullptr, "strdup of the language failed");
      params.owns_language = true;
      g_live_language_copies.fetch_add(1, std::memory_order_relaxed);
    }
  }

  auto job = std::make_unique<Job>();
  job->id = next_job_++;
  job->slot = slot;
  Job* j = job.get();
  j->thread = std::thread(RunJobWorker, params, std::move(audio), &j->gate, &j->done, &j->cancel,
                          &j->result);
  jobs_.push_back(std::move(job));
  return j->id;
}

StatusOr<JobResult> JobApi::FullSync(size_t slot, const std::vector<float>& audio,
                                     const std::string& lang, int n_threads, bool translate) {
  LIFELINE_RETURN_IF_ERROR(CheckSlot(slot));
  LIFELINE_RETURN_IF_ERROR(CheckThreads(n_threads));
  FullParams params;
  params.n_threads = n_threads;
  params.translate = translate;
  if (slots_[slot].multilingual) params.language = lang.c_str();  // used before we return: fine
  return Transcribe(params, audio);
}

JobApi::Job* JobApi::FindJob(JobId id) {
  for (auto& job : jobs_) {
    if (job->id == id) return job.get();
  }
  return nullptr;
}

Status JobApi::Start(JobId id) {
  Job* job = FindJob(id);
  if (job == nullptr) return NotFound("job " + std::to_string(id) + " is not in flight");
  if (!job->gate_opened) {
    job->gate_opened = true;
    GateOpen(&job->gate);
  }
  while (job->done.load(std::memory_order_acquire) == 0) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&job->done), FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
  }
  return Status::Ok();
}

Status JobApi::Cancel(JobId id) {
  Job* job = FindJob(id);
  if (job == nullptr) return NotFound("job " + std::to_string(id) + " is not in flight");
  if (job->gate_opened) {
    return FailedPrecondition("job " + std::to_string(id) + " already ran; it cannot be cancelled");
  }
  job->cancel.store(true, std::memory_order_release);
  return Status::Ok();
}

StatusOr<JobResult> JobApi::Join(JobId id) {
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
    if ((*it)->id != id) continue;
    Job& job = **it;
    if (!job.gate_opened) {
      job.gate_opened = true;
      GateOpen(&job.gate);
    }
    job.thread.join();
    JobResult result = std::move(job.result);
    jobs_.erase(it);
    return result;
  }
  return NotFound("job " + std::to_string(id) + " is not in flight");
}

size_t JobApi::jobs_in_flight() const { return jobs_.size(); }

int64_t JobApi::live_language_copies() {
  return g_live_language_copies.load(std::memory_order_relaxed);
}

__attribute__((noinline)) StatusOr<JobId> CallFullDefaultFromJs(JobApi& api, size_t slot,
                                                                std::vector<float> audio,
                                                                const uint8_t* lang_bytes,
                                                                size_t lang_size, int n_threads,
                                                                bool translate) {
  // The JS string argument, converted into a local std::string as embind does: it dies on return.
  const std::string lang(reinterpret_cast<const char*>(lang_bytes), lang_size);
  return api.FullDefault(slot, std::move(audio), lang, n_threads, translate);
}

__attribute__((noinline)) StatusOr<JobResult> CallFullSyncFromJs(JobApi& api, size_t slot,
                                                                 const std::vector<float>& audio,
                                                                 const uint8_t* lang_bytes,
                                                                 size_t lang_size, int n_threads,
                                                                 bool translate) {
  const std::string lang(reinterpret_cast<const char*>(lang_bytes), lang_size);
  return api.FullSync(slot, audio, lang, n_threads, translate);
}

}  // namespace lifeline::interop
