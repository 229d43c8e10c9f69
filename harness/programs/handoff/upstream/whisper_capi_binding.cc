#include "harness/programs/handoff/upstream/whisper_capi_binding.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/guards.h"
#include "harness/programs/handoff/format.h"
#include "harness/programs/handoff/upstream/whisper_caller.h"
#include "whisper.h"

namespace lifeline::handoff {
namespace {

// A regex that matches exactly `bytes` up to their first NUL (what whisper reads of a C string): each byte as
// \xHH, so that no byte of the program is a metacharacter.
std::string LiteralRegex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c == '\0') break;
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += hex;
  }
  return out;
}

// Where a finished whisper_full left its result: a job's own state, or (state == nullptr) the context's
// default state, where whisper_full_parallel merges its chunks.
struct ResultOf {
  whisper_context* ctx;
  whisper_state* state;

  int Segments() const { return state ? whisper_full_n_segments_from_state(state) : whisper_full_n_segments(ctx); }
  const char* SegmentText(int i) const {
    return state ? whisper_full_get_segment_text_from_state(state, i) : whisper_full_get_segment_text(ctx, i);
  }
  int Tokens(int i) const { return state ? whisper_full_n_tokens_from_state(state, i) : whisper_full_n_tokens(ctx, i); }
  whisper_token TokenId(int i, int j) const {
    return state ? whisper_full_get_token_id_from_state(state, i, j) : whisper_full_get_token_id(ctx, i, j);
  }
  const char* TokenText(int i, int j) const {
    return state ? whisper_full_get_token_text_from_state(ctx, state, i, j) : whisper_full_get_token_text(ctx, i, j);
  }
  int LangId() const { return state ? whisper_full_lang_id_from_state(state) : whisper_full_lang_id(ctx); }
  int MelFrames() const { return state ? whisper_n_len_from_state(state) : whisper_n_len(ctx); }
};

}  // namespace

// Reads every text the result hands out while it is valid, and checks each segment against its tokens.
static Status CheckTexts(const ResultOf& result) {
  const whisper_token eot = whisper_token_eot(result.ctx);
  for (int i = 0, n = result.Segments(); i < n; ++i) {
    const char* text = result.SegmentText(i);
    if (text == nullptr) return Internal("segment " + std::to_string(i) + " has no text");
    std::string from_tokens;
    for (int j = 0, m = result.Tokens(i); j < m; ++j) {
      const char* token = result.TokenText(i, j);
      if (token == nullptr) return Internal("token " + std::to_string(j) + " of segment " + std::to_string(i) + " has no text");
      if (result.TokenId(i, j) < eot) from_tokens += token;
    }
    if (from_tokens != text) {
      return Internal("segment " + std::to_string(i) + "'s text \"" + text + "\" is not its tokens' \"" + from_tokens + "\"");
    }
  }
  return Status::Ok();
}

Status CheckWhisperTexts(whisper_context* ctx, whisper_state* state) { return CheckTexts(ResultOf{ctx, state}); }

namespace {

struct Slot {
  whisper_context* ctx = nullptr;
  bool has_mel = false;  // the context's default state computed a spectrogram (or the guard gave it one)
};

struct Job {
  size_t slot = 0;
  std::vector<float> audio;    // the program's samples
  std::vector<float> samples;  // what the caller passes for them (CallerSamples)
  // What whisper_full_params points at, owned by the job until it is joined.
  std::string language, prompt, regex;
  int n_threads = 1;
  bool translate = false;
  bool started = false;
  bool cancelled = false;
  whisper_state* state = nullptr;  // from Start (the job was launched) until its Join
  std::thread worker;
  // Written by the worker, read after it was joined.
  int returned = 0;
  std::string language_seen;
};

class WhisperCApiBinding final : public JobBinding {
 public:
  WhisperCApiBinding() { QuietWhisperLog(); }
  ~WhisperCApiBinding() override {
    // Nothing of an iteration outlives it: every worker is joined, every state and context freed.
    for (auto& [id, job] : jobs_.all()) Finish(job);
    for (Slot& slot : slots_) {
      if (slot.ctx != nullptr) whisper_free(slot.ctx);
    }
  }

  StatusOr<size_t> Init(bool multilingual) override {
    auto free_slot = std::find_if(std::begin(slots_), std::end(slots_), [](const Slot& s) { return s.ctx == nullptr; });
    if (free_slot == std::end(slots_)) return ResourceExhausted("every context slot is bound");
    whisper_context_params params = whisper_context_default_params();
    params.use_gpu = false;
    whisper_context* ctx = whisper_init_from_file_with_params(WhisperModelPath(multilingual).c_str(), params);
    if (ctx == nullptr) {
      return Internal("whisper_init_from_file_with_params could not load " + WhisperModelPath(multilingual) +
                      " (see LIFELINE_WHISPER_MODELS)");
    }
    *free_slot = Slot{ctx, false};
    return static_cast<size_t>(free_slot - std::begin(slots_));
  }

  Status Free(size_t slot) override {
    if (slot >= kSlots || slots_[slot].ctx == nullptr) return NotFound("slot " + std::to_string(slot) + " is not bound");
    // Its jobs end with it (the executor joins them first; a state must not outlive its context).
    std::vector<uint32_t> ended;
    for (auto& [id, job] : jobs_.all()) {
      if (job.slot == slot) {
        Finish(job);
        ended.push_back(id);
      }
    }
    for (uint32_t id : ended) jobs_.Erase(id);
    whisper_free(slots_[slot].ctx);
    slots_[slot] = Slot{};
    return Status::Ok();
  }

  StatusOr<uint32_t> SubmitAsync(size_t slot, const std::vector<float>& audio, const std::string& language,
                                 int n_threads, bool translate) override {
    if (Status s = Admit(slot, n_threads); !s.ok()) return s;
    return jobs_.Add(MakeJob(slot, audio, language, n_threads, translate));
  }

  StatusOr<WorkerReport> SubmitSync(size_t slot, const std::vector<float>& audio, const std::string& language,
                                    int n_threads, bool translate) override {
    if (Status s = Admit(slot, n_threads); !s.ok()) return s;
    JoinWorkersOf(slot);
    Job job = MakeJob(slot, audio, language, n_threads, translate);
    Slot& s = slots_[slot];
    const int n = static_cast<int>(job.samples.size());
    int processors = WhisperThreadsFor(n_threads);
    if (processors > 1 && n < 201 * processors &&
        GuardHolds(Guard::kWhisperMelShortAudioOverread, [&] {
          return "whisper_full_parallel of " + std::to_string(n) + " samples on " + std::to_string(processors) +
                 " processors: chunks under 201 samples";
        })) {
      processors = std::max(1, n / 201);
    }
    if (n == 0 && processors > 1 && GuardHolds(Guard::kWhisperFullEmptyAudioUninitMel, [&] {
          return std::string("whisper_full_parallel without samples: its fresh states have no spectrogram");
        })) {
      processors = 1;
    }
    if (n == 0 && processors == 1) GuardEmptyAudio(s.ctx, nullptr, s.has_mel, job);
    s.has_mel = true;
    whisper_full_params params = Params(job, 1);
    job.returned = whisper_full_parallel(s.ctx, params, job.samples.data(), n, processors);
    job.language_seen = params.language;
    return Collect(job, ResultOf{s.ctx, nullptr});
  }

  Status Start(uint32_t id) override {
    StatusOr<Job*> job = jobs_.Start(id);
    if (!job.ok()) return job.status();
    if (job.value() != nullptr && job.value()->state == nullptr) return Launch(*job.value());
    return Status::Ok();
  }

  Status Cancel(uint32_t id) override { return jobs_.Cancel(id); }

  StatusOr<WorkerReport> Join(uint32_t id) override {
    if (std::optional<WorkerReport> r = jobs_.JoinCancelled(id)) return *r;
    StatusOr<Job*> found = jobs_.Find(id);
    if (!found.ok()) return found.status();
    Job& job = *found.value();
    if (job.state == nullptr) {
      if (Status s = Launch(job); !s.ok()) {
        jobs_.Erase(id);
        return s;
      }
    }
    if (job.worker.joinable()) job.worker.join();  // SubmitSync or Free may have joined it already
    StatusOr<WorkerReport> report = Collect(job, ResultOf{slots_[job.slot].ctx, job.state});
    Finish(job);
    jobs_.Erase(id);
    return report;
  }

  size_t JobsInFlight() const override { return jobs_.size(); }
  // The job's strings are the copies handed to its worker: live from its launch until its Join.
  std::optional<int64_t> LiveLanguageCopies() const override {
    return std::count_if(jobs_.all().begin(), jobs_.all().end(), [](const auto& kv) { return kv.second.state != nullptr; });
  }
  int LangId(std::string_view language) const override { return whisper_lang_id(std::string(language).c_str()); }

 private:
  Job MakeJob(size_t slot, const std::vector<float>& audio, const std::string& language, int n_threads,
              bool translate) const {
    Job job;
    job.slot = slot;
    job.audio = audio;
    job.samples = CallerSamples(audio);
    job.language = whisper_is_multilingual(slots_[slot].ctx) ? language : "en";
    job.prompt = language;
    job.regex = LiteralRegex(language);
    job.n_threads = n_threads;
    job.translate = translate;
    return job;
  }

  static whisper_full_params Params(const Job& job, int n_threads) {
    whisper_full_params params = whisper_full_default_params(WHISPER_SAMPLING_GREEDY);
    params.n_threads = n_threads;
    params.translate = job.translate;
    params.language = job.language.c_str();
    params.initial_prompt = job.prompt.c_str();
    params.suppress_regex = job.regex.empty() ? nullptr : job.regex.c_str();
    params.print_progress = false;
    params.print_realtime = false;
    params.print_timestamps = false;
    return params;
  }

  Status Admit(size_t slot, int n_threads) const {
    if (slot >= kSlots || slots_[slot].ctx == nullptr) return NotFound("slot " + std::to_string(slot) + " is not bound");
    if (n_threads < 1) return InvalidArgument("n_threads " + std::to_string(n_threads) + " (1 or more)");
    return Status::Ok();
  }

  // Guard whisper-full-empty-audio-uninit-mel: a whisper_full without samples on a state (or the context's
  // default state) that computed no spectrogram reads its uninitialized mel length
  // (repro/whisper-full-empty-audio-uninit-mel/); with the guard on, it is first given one silent frame.
  void GuardEmptyAudio(whisper_context* ctx, whisper_state* state, bool has_mel, const Job& job) {
    if (!job.samples.empty() || has_mel || !GuardHolds(Guard::kWhisperFullEmptyAudioUninitMel, [&] {
          return std::string("empty audio on a ") + (state ? "fresh state" : "context") + " with no spectrogram yet";
        })) {
      return;
    }
    const std::vector<float> frame(static_cast<size_t>(whisper_model_n_mels(ctx)), 0.0f);
    if (state != nullptr) {
      whisper_set_mel_with_state(ctx, state, frame.data(), 1, static_cast<int>(frame.size()));
    } else {
      whisper_set_mel(ctx, frame.data(), 1, static_cast<int>(frame.size()));
    }
  }

  // A state of its own for the job, and a worker that runs whisper_full_with_state on the slot's context while
  // the caller goes on (other workers of the same context may be running).
  Status Launch(Job& job) {
    whisper_context* ctx = slots_[job.slot].ctx;
    job.state = whisper_init_state(ctx);
    if (job.state == nullptr) return Internal("whisper_init_state failed");
    GuardEmptyAudio(ctx, job.state, false, job);
    job.worker = std::thread([ctx, &job] {
      const whisper_full_params params = Params(job, WhisperThreadsFor(job.n_threads));
      job.returned = whisper_full_with_state(ctx, job.state, params, job.samples.data(),
                                             static_cast<int>(job.samples.size()));
      job.language_seen = params.language;
    });
    return Status::Ok();
  }

  void Finish(Job& job) {
    if (job.worker.joinable()) job.worker.join();
    if (job.state != nullptr) whisper_free_state(job.state);
    job.state = nullptr;
  }

  // Joins the launched workers of a slot (their results stay in their states until their Join).
  void JoinWorkersOf(size_t slot) {
    for (auto& [id, job] : jobs_.all()) {
      if (job.slot == slot && job.worker.joinable()) job.worker.join();
    }
  }

  // The value oracle's inputs, with what whisper returned and handed out checked first.
  StatusOr<WorkerReport> Collect(const Job& job, const ResultOf& result) {
    if (job.returned != 0) return Internal("whisper_full returned " + std::to_string(job.returned));
    if (Status s = CheckTexts(result); !s.ok()) return s;
    WorkerReport r;
    r.language_seen = job.language_seen;
    r.lang_id = whisper_lang_id(r.language_seen.c_str());
    const bool named = !r.language_seen.empty() && r.language_seen != "auto";
    if (whisper_is_multilingual(result.ctx) && named && result.MelFrames() >= 10 && result.LangId() != r.lang_id) {
      return Internal("value oracle: whisper_full prompted language id " + std::to_string(result.LangId()) + " for " +
                      r.language_seen);
    }
    // The name whisper gives the language it used (named or detected): a static string that names it back.
    if (const int used = result.LangId(); used >= 0) {
      const char* name = whisper_lang_str(used);
      if (name == nullptr || whisper_lang_id(name) != used) {
        return Internal("whisper_lang_str(" + std::to_string(used) + ") does not name language " + std::to_string(used));
      }
    }
    r.n_threads = job.n_threads;
    r.translate = job.translate;
    r.checksum = ProgramChecksum(job.audio);
    return r;
  }

  Slot slots_[kSlots];
  JobQueue<Job> jobs_;
};

}  // namespace

std::unique_ptr<JobBinding> MakeWhisperCApiBinding() { return std::make_unique<WhisperCApiBinding>(); }

}  // namespace lifeline::handoff
