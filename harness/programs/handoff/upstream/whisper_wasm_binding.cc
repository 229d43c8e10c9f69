#include "harness/programs/handoff/upstream/whisper_wasm_binding.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/guards.h"
#include "harness/programs/handoff/format.h"
#include "harness/programs/handoff/upstream/embind/emscripten/bind.h"
#include "harness/programs/handoff/upstream/whisper_caller.h"
#include "harness/programs/handoff/upstream/whisper_full_observer.h"
#include "whisper.h"

// examples/whisper.wasm/emscripten.cpp's globals: its one worker and its four context slots.
extern std::thread g_worker;
extern std::vector<struct whisper_context*> g_contexts;

namespace lifeline::handoff {
namespace {

using emscripten::internal::Lookup;

// The JavaScript calls. Each builds embind's C++ arguments in its own frame (a std::string from the JS
// string's bytes, a val for the Float32Array), calls, and destroys them when it returns: a string's inline
// buffer is then a dead stack frame, a longer one's heap block is freed.
__attribute__((noinline)) StatusOr<size_t> JsInit(const std::string& js_path) {
  try {
    const std::string path_model(js_path);
    return Lookup<size_t(const std::string&)>("init")(path_model);
  } catch (const emscripten::JsError& e) {
    return Internal(std::string("init threw ") + e.what());
  }
}

__attribute__((noinline)) Status JsFree(size_t index) {
  try {
    Lookup<void(size_t)>("free")(index);
    return Status::Ok();
  } catch (const emscripten::JsError& e) {
    return Internal(std::string("free threw ") + e.what());
  }
}

using FullDefault = int(size_t, const emscripten::val&, const std::string&, int, bool);

__attribute__((noinline)) StatusOr<int> JsFullDefault(size_t index, const std::vector<float>& samples,
                                                       const std::string& js_lang, int nthreads, bool translate) {
  try {
    const emscripten::val audio = emscripten::val::Float32Array(samples);
    const std::string lang(js_lang);
    return Lookup<FullDefault>("full_default")(index, audio, lang, nthreads, translate);
  } catch (const emscripten::JsError& e) {
    return Internal(std::string("full_default threw ") + e.what());
  }
}

struct Job {
  size_t slot = 0;
  std::vector<float> audio;    // the program's samples
  std::vector<float> samples;  // what the page passes for them (CallerSamples)
  std::string language;
  int n_threads = 1;
  bool translate = false;
  bool started = false;    // Start was called (as the model counts it: also for a cancelled job)
  bool launched = false;   // full_default was called for it
  bool cancelled = false;
  StatusOr<WorkerReport> report = WorkerReport{};  // once its worker was joined (or full_default refused it)
};

class WhisperWasmBinding final : public JobBinding {
 public:
  WhisperWasmBinding() {
    QuietWhisperLog();
    ClearFullCalls();
  }
  ~WhisperWasmBinding() override {
    // Nothing of an iteration outlives it: the worker is joined and every context freed.
    JoinRunning();
    for (size_t i = 0; i < g_contexts.size(); ++i) {
      if (g_contexts[i] != nullptr) (void)JsFree(i + 1);
    }
    ClearFullCalls();
  }

  StatusOr<size_t> Init(bool multilingual) override {
    JoinRunning();
    StatusOr<size_t> index = JsInit(WhisperModelPath(multilingual));
    if (!index.ok()) return index.status();
    if (index.value() == 0) {
      if (std::none_of(g_contexts.begin(), g_contexts.end(), [](whisper_context* c) { return c == nullptr; })) {
        return ResourceExhausted("init: every context slot is bound");
      }
      return Internal("init could not load " + WhisperModelPath(multilingual) + " (see LIFELINE_WHISPER_MODELS)");
    }
    has_mel_[index.value() - 1] = false;
    return index.value() - 1;
  }

  Status Free(size_t slot) override {
    JoinRunning();
    return JsFree(slot + 1);
  }

  StatusOr<uint32_t> SubmitAsync(size_t slot, const std::vector<float>& audio, const std::string& language,
                                 int n_threads, bool translate) override {
    if (Status s = Admit(slot, n_threads); !s.ok()) return s;
    return jobs_.Add(MakeJob(slot, audio, language, n_threads, translate));
  }

  StatusOr<WorkerReport> SubmitSync(size_t slot, const std::vector<float>& audio, const std::string& language,
                                    int n_threads, bool translate) override {
    if (Status s = Admit(slot, n_threads); !s.ok()) return s;
    JoinRunning();
    const Job job = MakeJob(slot, audio, language, n_threads, translate);
    GuardEmptyAudio(slot, audio);
    // A C++ caller: its string lives until the worker is joined.
    const std::string lang(language);
    int rc = 0;
    try {
      rc = Lookup<FullDefault>("full_default")(slot + 1, emscripten::val::Float32Array(job.samples), lang,
                                               n_threads, translate);
    } catch (const emscripten::JsError& e) {
      return Internal(std::string("full_default threw ") + e.what());
    }
    if (rc != 0) return Internal("full_default returned " + std::to_string(rc) + " for a bound slot");
    if (Status s = JsFree(0); !s.ok()) return s;
    return Collect(job);
  }

  Status Start(uint32_t id) override {
    StatusOr<Job*> job = jobs_.Start(id);
    if (!job.ok()) return job.status();
    if (job.value() != nullptr && !job.value()->launched) Launch(id, *job.value());
    return Status::Ok();
  }

  Status Cancel(uint32_t id) override { return jobs_.Cancel(id); }

  StatusOr<WorkerReport> Join(uint32_t id) override {
    if (std::optional<WorkerReport> r = jobs_.JoinCancelled(id)) return *r;
    StatusOr<Job*> found = jobs_.Find(id);
    if (!found.ok()) return found.status();
    Job& job = *found.value();
    if (!job.launched) Launch(id, job);
    if (running_ == id) JoinRunning();
    StatusOr<WorkerReport> report = std::move(job.report);
    jobs_.Erase(id);
    return report;
  }

  size_t JobsInFlight() const override { return jobs_.size(); }
  // emscripten.cpp strdup()s the language for its worker and frees it there: not countable from outside.
  std::optional<int64_t> LiveLanguageCopies() const override { return std::nullopt; }
  int LangId(std::string_view language) const override { return whisper_lang_id(std::string(language).c_str()); }

 private:
  static Job MakeJob(size_t slot, const std::vector<float>& audio, const std::string& language, int n_threads,
                     bool translate) {
    Job job;
    job.slot = slot;
    job.audio = audio;
    job.samples = CallerSamples(audio);
    job.language = language;
    job.n_threads = n_threads;
    job.translate = translate;
    return job;
  }

  // What full_default answers before it starts a worker (-2: no context in the slot), and the page's own
  // check of the thread count (the binding passes any count on to whisper_full).
  Status Admit(size_t slot, int n_threads) const {
    if (slot >= g_contexts.size() || g_contexts[slot] == nullptr) {
      return NotFound("slot " + std::to_string(slot) + " is not bound (full_default would return -2)");
    }
    if (n_threads < 1) return InvalidArgument("n_threads " + std::to_string(n_threads) + " (the page asks for 1 or more)");
    return Status::Ok();
  }

  // Guard whisper-full-empty-audio-uninit-mel: whisper_full without samples on a context that has computed no
  // spectrogram yet reads the state's uninitialized mel length (repro/whisper-full-empty-audio-uninit-mel/).
  // With the guard on, such a context is first given a spectrogram of one silent frame (whisper_set_mel; with 0
  // frames it would memcpy from a null pointer), so whisper_full finds its input too short and returns, as it
  // does for any input under 100 ms. Called with no worker running.
  void GuardEmptyAudio(size_t slot, const std::vector<float>& audio) {
    if (audio.empty() && !has_mel_[slot] && GuardHolds(Guard::kWhisperFullEmptyAudioUninitMel, [&] {
          return "empty audio for slot " + std::to_string(slot) + ", whose context has no spectrogram yet";
        })) {
      const std::vector<float> frame(static_cast<size_t>(whisper_model_n_mels(g_contexts[slot])), 0.0f);
      whisper_set_mel(g_contexts[slot], frame.data(), 1, static_cast<int>(frame.size()));
    }
    has_mel_[slot] = true;  // every whisper_full with samples computes one
  }

  void Launch(uint32_t id, Job& job) {
    JoinRunning();
    GuardEmptyAudio(job.slot, job.audio);
    job.launched = true;
    HoldWorkers();
    StatusOr<int> rc = JsFullDefault(job.slot + 1, job.samples, job.language, job.n_threads, job.translate);
    ReleaseWorkers();
    if (!rc.ok() || rc.value() != 0) {
      job.report = rc.ok() ? Internal("full_default returned " + std::to_string(rc.value()) + " for a bound slot")
                           : rc.status();
      return;
    }
    running_ = id;
  }

  // Joins the binding's worker (free(0): it joins, then finds no context at index 0) and records what the
  // running job's worker did.
  void JoinRunning() {
    if (running_ == 0) return;
    const uint32_t id = running_;
    running_ = 0;
    Status s = JsFree(0);
    Job& job = *jobs_.Find(id).value();
    job.report = s.ok() ? Collect(job) : StatusOr<WorkerReport>(s);
  }

  // The value oracle's inputs, from the worker's whisper_full call, after checking what the binding itself
  // must have passed on: the context of the slot, every sample, the thread count its rule gives.
  StatusOr<WorkerReport> Collect(const Job& job) {
    std::optional<FullCall> call = TakeFullCall();
    if (!call) return Internal("the worker never called whisper_full");
    if (call->ctx != g_contexts[job.slot]) return Internal("the worker ran whisper_full on another context than the slot's");
    if (call->samples != job.samples) {
      return Internal("value oracle: the worker was given " + std::to_string(call->samples.size()) +
                      " samples that differ from the " + std::to_string(job.samples.size()) + " the caller passed");
    }
    if (call->n_threads != WhisperThreadsFor(job.n_threads)) {
      return Internal("the worker ran with n_threads " + std::to_string(call->n_threads) + ", the binding's rule gives " +
                      std::to_string(WhisperThreadsFor(job.n_threads)));
    }
    WorkerReport r;
    r.language_seen = call->language_null ? std::string("(null)") : call->language;
    r.lang_id = whisper_lang_id(r.language_seen.c_str());
    // Where whisper_full reached its decoder on a multilingual model (100 ms of audio or more, a named
    // language), the id it put in the prompt is the one the bytes name.
    const bool named = !r.language_seen.empty() && r.language_seen != "auto";
    if (whisper_is_multilingual(call->ctx) && named && call->returned == 0 && call->n_len >= 10 &&
        call->state_lang_id != r.lang_id) {
      return Internal("value oracle: whisper_full prompted language id " + std::to_string(call->state_lang_id) +
                      " for " + r.language_seen);
    }
    r.n_threads = job.n_threads;
    r.translate = call->translate;
    r.checksum = ProgramChecksum(job.audio);
    return r;
  }

  JobQueue<Job> jobs_;
  uint32_t running_ = 0;  // the job whose worker the binding may be running (0: none)
  bool has_mel_[kSlots] = {};  // the slot's context has computed a spectrogram (or been given one by the guard)
};

}  // namespace

std::unique_ptr<JobBinding> MakeWhisperWasmBinding() { return std::make_unique<WhisperWasmBinding>(); }

}  // namespace lifeline::handoff
