#include "harness/programs/handoff_program.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "core/check.h"
#include "harness/programs/op_trace.h"
#include "layers/interop/job_api.h"

namespace lifeline::handoff {
namespace {

using interop::JobApi;

// The decoder's model of the API: which slots are bound and how, which jobs are in flight.
struct ModelJob {
  uint32_t id;
  uint8_t slot;
  bool started = false;  // its gate was opened (Start); Cancel is then too late
  bool cancelled = false;
};
struct Model {
  bool bound[JobApi::kSlots] = {};
  bool multilingual[JobApi::kSlots] = {};
  std::vector<ModelJob> jobs;
  uint32_t next_job = 1;

  int LowestFreeSlot() const {
    for (size_t i = 0; i < JobApi::kSlots; ++i) {
      if (!bound[i]) return static_cast<int>(i);
    }
    return -1;
  }
};

std::string DecodeLanguage(FuzzedDataProvider& fdp) {
  // Mostly raw bytes (empty, short, long, non-ASCII, embedded NUL all come from here); sometimes a
  // language the model knows, so valid ids are common without a dictionary.
  switch (fdp.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return std::string(interop::LangCode(fdp.ConsumeIntegralInRange<int>(0, interop::LangCount() - 1)));
    default: {
      size_t n = fdp.ConsumeIntegralInRange<size_t>(0, kMaxLangBytes);
      return fdp.ConsumeBytesAsString(n);
    }
  }
}

void DecodeSubmit(FuzzedDataProvider& fdp, Model& m, Op& op) {
  op.slot = fdp.ConsumeIntegralInRange<uint8_t>(0, JobApi::kSlots - 1);
  op.language = DecodeLanguage(fdp);
  size_t samples = fdp.ConsumeIntegralInRange<size_t>(0, kMaxAudioSamples);
  for (size_t i = 0; i < samples; ++i) op.audio.push_back(fdp.ConsumeIntegral<int8_t>() / 8.0f);
  op.n_threads = fdp.ConsumeIntegralInRange<int>(0, kMaxThreads);
  op.translate = fdp.ConsumeBool();

  if (!m.bound[op.slot]) {
    op.expect = StatusCode::kNotFound;
  } else if (op.n_threads < 1) {
    op.expect = StatusCode::kInvalidArgument;
  } else if (op.kind == OpKind::kSubmitAsync && m.jobs.size() >= JobApi::kMaxJobs) {
    op.expect = StatusCode::kResourceExhausted;
  }
  if (op.expect != StatusCode::kOk) return;
  // A C string ends at its first NUL: that prefix is what any reader of params.language sees.
  op.expect_language = m.multilingual[op.slot] ? op.language.substr(0, op.language.find('\0')) : "en";
  if (op.kind == OpKind::kSubmitAsync) {
    op.job = m.next_job++;
    m.jobs.push_back(ModelJob{op.job, op.slot});
  }
}

}  // namespace

Program Decode(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  Model m;
  Program program;
  for (size_t i = 0; i < kMaxOps && fdp.remaining_bytes() > 0; ++i) {
    // Only ops that are legal now: job ops need a job in flight, rebind needs a bound slot.
    OpKind legal[static_cast<int>(OpKind::kMaxValue) + 1];
    int n_legal = 0;
    bool any_bound = std::any_of(std::begin(m.bound), std::end(m.bound), [](bool b) { return b; });
    legal[n_legal++] = OpKind::kBind;
    if (any_bound) legal[n_legal++] = OpKind::kRebind;
    legal[n_legal++] = OpKind::kSubmitAsync;
    legal[n_legal++] = OpKind::kSubmitSync;
    if (!m.jobs.empty()) {
      legal[n_legal++] = OpKind::kStart;
      legal[n_legal++] = OpKind::kCancel;
      legal[n_legal++] = OpKind::kJoin;
    }
    Op op;
    op.kind = legal[fdp.ConsumeIntegralInRange<int>(0, n_legal - 1)];

    switch (op.kind) {
      case OpKind::kBind: {
        op.multilingual = fdp.ConsumeBool();
        int slot = m.LowestFreeSlot();
        if (slot < 0) {
          op.expect = StatusCode::kResourceExhausted;
        } else {
          op.expect_slot = static_cast<uint8_t>(slot);
          m.bound[slot] = true;
          m.multilingual[slot] = op.multilingual;
        }
        break;
      }
      case OpKind::kRebind: {
        std::vector<uint8_t> bound;
        for (uint8_t s = 0; s < JobApi::kSlots; ++s) {
          if (m.bound[s]) bound.push_back(s);
        }
        op.slot = bound[fdp.ConsumeIntegralInRange<size_t>(0, bound.size() - 1)];
        op.multilingual = fdp.ConsumeBool();
        // The executor joins the slot's jobs (checking each) before Free.
        m.jobs.erase(std::remove_if(m.jobs.begin(), m.jobs.end(),
                                    [&](const ModelJob& j) { return j.slot == op.slot; }),
                     m.jobs.end());
        m.bound[op.slot] = false;
        int slot = m.LowestFreeSlot();
        op.expect_slot = static_cast<uint8_t>(slot);
        m.bound[slot] = true;
        m.multilingual[slot] = op.multilingual;
        break;
      }
      case OpKind::kSubmitAsync:
      case OpKind::kSubmitSync:
        DecodeSubmit(fdp, m, op);
        break;
      case OpKind::kStart:
      case OpKind::kCancel:
      case OpKind::kJoin: {
        size_t k = fdp.ConsumeIntegralInRange<size_t>(0, m.jobs.size() - 1);
        ModelJob& job = m.jobs[k];
        op.job = job.id;
        if (op.kind == OpKind::kStart) {
          job.started = true;
        } else if (op.kind == OpKind::kCancel) {
          if (job.started) {
            op.expect = StatusCode::kFailedPrecondition;
          } else {
            job.cancelled = true;
          }
        } else {
          op.expect_cancelled = job.cancelled;
          m.jobs.erase(m.jobs.begin() + static_cast<std::ptrdiff_t>(k));
        }
        break;
      }
    }
    program.push_back(std::move(op));
  }
  return program;
}

namespace {

std::string Quote(const std::string& s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out + "\"";
}

const char* KindName(OpKind kind) {
  switch (kind) {
    case OpKind::kBind: return "bind";
    case OpKind::kRebind: return "rebind";
    case OpKind::kSubmitAsync: return "submit-async";
    case OpKind::kSubmitSync: return "submit-sync";
    case OpKind::kStart: return "start";
    case OpKind::kCancel: return "cancel";
    case OpKind::kJoin: return "join";
  }
  return "?";
}

}  // namespace

std::string Describe(const Op& op) {
  std::string out = KindName(op.kind);
  switch (op.kind) {
    case OpKind::kBind:
    case OpKind::kRebind:
      if (op.kind == OpKind::kRebind) out += " slot=" + std::to_string(op.slot);
      out += op.multilingual ? " multilingual" : " english-only";
      if (op.expect == StatusCode::kOk) out += " -> slot " + std::to_string(op.expect_slot);
      break;
    case OpKind::kSubmitAsync:
    case OpKind::kSubmitSync:
      out += " slot=" + std::to_string(op.slot) + " lang=" + Quote(op.language) + " (" +
             std::to_string(op.language.size()) + " B, " +
             (op.language.size() <= 15 ? "inline" : "heap") + ") audio=" +
             std::to_string(op.audio.size()) + " threads=" + std::to_string(op.n_threads) +
             (op.translate ? " translate" : "");
      if (op.expect == StatusCode::kOk) {
        out += " -> sees " + Quote(op.expect_language);
        if (op.kind == OpKind::kSubmitAsync) out += " as job " + std::to_string(op.job);
      }
      break;
    case OpKind::kStart:
    case OpKind::kCancel:
    case OpKind::kJoin:
      out += " job " + std::to_string(op.job);
      if (op.kind == OpKind::kJoin && op.expect_cancelled) out += " (cancelled)";
      break;
  }
  if (op.expect != StatusCode::kOk) out += " -> " + std::string(StatusCodeName(op.expect));
  return out;
}

std::string Describe(const Program& program) {
  std::string out;
  for (size_t i = 0; i < program.size(); ++i) {
    out += "#" + std::to_string(i) + " " + Describe(program[i]) + "\n";
  }
  return out;
}

namespace {

struct Expected {
  uint8_t slot;
  std::string language;
  int n_threads;
  bool translate;
  float checksum;
};

float Checksum(const std::vector<float>& audio) {
  float sum = 0.0f;
  for (float s : audio) sum += s;
  return sum;
}

void CheckStatus(const Status& status, const Op& op) {
  LIFELINE_CHECK(status.code() == op.expect,
                 "status oracle: " + Describe(op) + " returned " + status.ToString() + ", model predicted " +
                     std::string(StatusCodeName(op.expect)));
}

// The value oracle: the worker saw exactly the bytes the caller submitted (up to the C string's NUL)
// and resolved them to the id they name.
void CheckResult(const interop::JobResult& r, const Expected& e, bool cancelled, const std::string& who) {
  LIFELINE_CHECK(r.cancelled == cancelled, "cancel oracle: " + who + (cancelled ? " was" : " was not") +
                                               " cancelled before it ran, but the worker says otherwise");
  if (cancelled) return;
  LIFELINE_CHECK(r.language_seen == e.language, "value oracle: " + who + " submitted language " +
                                                    Quote(e.language) + " but the worker read " +
                                                    Quote(r.language_seen));
  LIFELINE_CHECK(r.lang_id == interop::LangId(e.language),
                 "value oracle: " + who + " resolved language id " + std::to_string(r.lang_id) +
                     ", expected " + std::to_string(interop::LangId(e.language)));
  LIFELINE_CHECK(r.n_threads == e.n_threads && r.translate == e.translate,
                 "value oracle: " + who + " saw different n_threads/translate than submitted");
  LIFELINE_CHECK(r.checksum == e.checksum, "value oracle: " + who + " summed the audio to " +
                                               std::to_string(r.checksum) + ", expected " +
                                               std::to_string(e.checksum));
}

}  // namespace

void Execute(const Program& program) {
  // LIFELINE_TRACE=1 prints the decoded program before it runs: how a minimized input is read.
  if (TraceRequested()) {
    std::fprintf(stderr, "lifeline: program of %zu ops\n", program.size());
    RenderOps<Program>(&program, program.size(), stderr);
  }
  OpTraceScope trace(&program, program.size(), &RenderOps<Program>);
  std::map<uint32_t, Expected> in_flight;  // job id -> what its worker must report
  std::map<uint32_t, bool> cancelled;
  {
    JobApi api;
    auto join_and_check = [&](uint32_t id) {
      StatusOr<interop::JobResult> r = api.Join(id);
      LIFELINE_CHECK(r.ok(), "join of job " + std::to_string(id) + " failed: " + r.status().ToString());
      CheckResult(r.value(), in_flight.at(id), cancelled[id], "job " + std::to_string(id));
      in_flight.erase(id);
      cancelled.erase(id);
    };

    for (size_t i = 0; i < program.size(); ++i) {
      trace.set_op(i);
      const Op& op = program[i];
      switch (op.kind) {
        case OpKind::kBind: {
          StatusOr<size_t> slot = api.Init(op.multilingual);
          CheckStatus(slot.status(), op);
          if (slot.ok()) {
            LIFELINE_CHECK(slot.value() == op.expect_slot,
                           "Init returned slot " + std::to_string(slot.value()) + ", model predicted " +
                               std::to_string(op.expect_slot));
          }
          break;
        }
        case OpKind::kRebind: {
          std::vector<uint32_t> ids;
          for (const auto& [id, e] : in_flight) {
            if (e.slot == op.slot) ids.push_back(id);
          }
          for (uint32_t id : ids) join_and_check(id);
          CheckStatus(api.Free(op.slot), op);
          StatusOr<size_t> slot = api.Init(op.multilingual);
          CheckStatus(slot.status(), op);
          LIFELINE_CHECK(slot.value() == op.expect_slot, "rebind landed in slot " + std::to_string(slot.value()) +
                                                             ", model predicted " + std::to_string(op.expect_slot));
          break;
        }
        case OpKind::kSubmitAsync: {
          // The expectation is recorded before the call: an allocation between the caller's string dying
          // and the worker reading it could reuse the freed block (TSan has no quarantine) and turn a
          // heap-use-after-free into a plain data race in the report.
          if (op.expect == StatusCode::kOk) {
            in_flight[op.job] = Expected{op.slot, op.expect_language, op.n_threads, op.translate, Checksum(op.audio)};
            cancelled[op.job] = false;
          }
          StatusOr<interop::JobId> id = interop::CallFullDefaultFromJs(
              api, op.slot, op.audio, reinterpret_cast<const uint8_t*>(op.language.data()),
              op.language.size(), op.n_threads, op.translate);
          CheckStatus(id.status(), op);
          if (id.ok()) {
            LIFELINE_CHECK(id.value() == op.job, "submit returned job " + std::to_string(id.value()) +
                                                     ", model predicted " + std::to_string(op.job));
          }
          break;
        }
        case OpKind::kSubmitSync: {
          StatusOr<interop::JobResult> r = interop::CallFullSyncFromJs(
              api, op.slot, op.audio, reinterpret_cast<const uint8_t*>(op.language.data()),
              op.language.size(), op.n_threads, op.translate);
          CheckStatus(r.status(), op);
          if (r.ok()) {
            CheckResult(r.value(), Expected{op.slot, op.expect_language, op.n_threads, op.translate, Checksum(op.audio)},
                        false, "synchronous call");
          }
          break;
        }
        case OpKind::kStart:
          CheckStatus(api.Start(op.job), op);
          break;
        case OpKind::kCancel: {
          Status s = api.Cancel(op.job);
          CheckStatus(s, op);
          if (s.ok()) cancelled[op.job] = true;
          break;
        }
        case OpKind::kJoin:
          LIFELINE_CHECK(cancelled[op.job] == op.expect_cancelled, "model and executor disagree on cancel");
          join_and_check(op.job);
          break;
      }
    }
    trace.set_op(program.size());
    // Teardown: every worker joined and checked inside the iteration.
    std::vector<uint32_t> rest;
    for (const auto& entry : in_flight) rest.push_back(entry.first);
    for (uint32_t id : rest) join_and_check(id);
    LIFELINE_CHECK(api.jobs_in_flight() == 0, "jobs still in flight after every job was joined");
  }
  LIFELINE_CHECK(JobApi::live_language_copies() == 0,
                 "ledger: " + std::to_string(JobApi::live_language_copies()) +
                     " language copies handed to workers were never freed");
}

}  // namespace lifeline::handoff
