#include "harness/programs/handoff/executor.h"

#include <map>

#include "core/check.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/common/oracle.h"

namespace lifeline::handoff {
namespace {

using programs::Quote;

// What a job's worker must report.
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

Expected ExpectedOf(const Op& op) {
  return Expected{op.slot, op.expect_language, op.n_threads, op.translate, Checksum(op.audio)};
}

// The value oracle: the worker saw exactly the bytes the caller submitted (up to the C string's NUL)
// and resolved them to the id they name; a cancelled job did nothing.
Status CheckWorker(const WorkerReport& r, const Expected& e, bool cancelled, int lang_id, const std::string& who) {
  if (r.cancelled != cancelled) {
    return Internal("cancel oracle: " + who + (cancelled ? " was" : " was not") +
                    " cancelled before it ran, but the worker says otherwise");
  }
  if (cancelled) return Status::Ok();
  if (r.language_seen != e.language) {
    return Internal("value oracle: " + who + " submitted language " + Quote(e.language) + " but the worker read " +
                    Quote(r.language_seen));
  }
  if (r.lang_id != lang_id) {
    return Internal("value oracle: " + who + " resolved language id " + std::to_string(r.lang_id) + ", expected " +
                    std::to_string(lang_id));
  }
  if (r.n_threads != e.n_threads || r.translate != e.translate) {
    return Internal("value oracle: " + who + " saw different n_threads/translate than submitted");
  }
  if (r.checksum != e.checksum) {
    return Internal("value oracle: " + who + " summed the audio to " + std::to_string(r.checksum) + ", expected " +
                    std::to_string(e.checksum));
  }
  return Status::Ok();
}

class Executor {
 public:
  Executor(const Program& program, JobBinding& api) : program_(program), api_(api) {}
  void Run();

 private:
  void Step(const Op& op);
  void JoinAndCheck(uint32_t id);

  const Program& program_;
  JobBinding& api_;
  std::map<uint32_t, Expected> in_flight_;  // job id -> what its worker must report
  std::map<uint32_t, bool> cancelled_;
};

void Executor::JoinAndCheck(uint32_t id) {
  StatusOr<WorkerReport> r = api_.Join(id);
  LIFELINE_CHECK(r.ok(), "join of job " + std::to_string(id) + " failed: " + r.status().ToString());
  const Expected& e = in_flight_.at(id);
  LIFELINE_CHECK_OK(CheckWorker(r.value(), e, cancelled_[id], api_.LangId(e.language), "job " + std::to_string(id)));
  in_flight_.erase(id);
  cancelled_.erase(id);
}

void Executor::Step(const Op& op) {
  switch (op.kind) {
    case OpKind::kBind:
      programs::CheckReturned(op, api_.Init(op.multilingual), op.expect, "Init returned slot", op.expect_slot);
      break;
    case OpKind::kRebind: {
      std::vector<uint32_t> ids;
      for (const auto& [id, e] : in_flight_) {
        if (e.slot == op.slot) ids.push_back(id);
      }
      for (uint32_t id : ids) JoinAndCheck(id);
      programs::CheckStatus(op, api_.Free(op.slot), op.expect);
      programs::CheckReturned(op, api_.Init(op.multilingual), op.expect, "rebind landed in slot", op.expect_slot);
      break;
    }
    case OpKind::kSubmitAsync: {
      // The expectation is recorded before the call: an allocation between the caller's string dying and
      // the worker reading it could reuse the freed block (TSan has no quarantine) and turn a
      // heap-use-after-free into a plain data race in the report.
      if (op.expect == StatusCode::kOk) {
        in_flight_[op.job] = ExpectedOf(op);
        cancelled_[op.job] = false;
      }
      programs::CheckReturned(op, api_.SubmitAsync(op.slot, op.audio, op.language, op.n_threads, op.translate),
                              op.expect, "submit returned job", op.job);
      break;
    }
    case OpKind::kSubmitSync: {
      StatusOr<WorkerReport> r = api_.SubmitSync(op.slot, op.audio, op.language, op.n_threads, op.translate);
      programs::CheckStatus(op, r.status(), op.expect);
      if (r.ok()) {
        LIFELINE_CHECK_OK(CheckWorker(r.value(), ExpectedOf(op), false, api_.LangId(op.expect_language),
                                      "synchronous call"));
      }
      break;
    }
    case OpKind::kStart:
      programs::CheckStatus(op, api_.Start(op.job), op.expect);
      break;
    case OpKind::kCancel: {
      Status s = api_.Cancel(op.job);
      programs::CheckStatus(op, s, op.expect);
      if (s.ok()) cancelled_[op.job] = true;
      break;
    }
    case OpKind::kJoin:
      LIFELINE_CHECK(cancelled_[op.job] == op.expect_cancelled, "model and executor disagree on cancel");
      JoinAndCheck(op.job);
      break;
  }
}

void Executor::Run() {
  programs::MaybePrintProgram(program_);
  OpTraceScope trace(&program_, program_.size(), &programs::RenderOps<Program>);
  for (size_t i = 0; i < program_.size(); ++i) {
    trace.set_op(i);
    Step(program_[i]);
  }
  trace.set_op(program_.size());
  // Teardown: every worker joined and checked inside the iteration.
  std::vector<uint32_t> rest;
  for (const auto& entry : in_flight_) rest.push_back(entry.first);
  for (uint32_t id : rest) JoinAndCheck(id);
  LIFELINE_CHECK(api_.JobsInFlight() == 0, "jobs still in flight after every job was joined");
  const std::optional<int64_t> live = api_.LiveLanguageCopies();
  LIFELINE_CHECK(!live || *live == 0,
                 "ledger: " + std::to_string(live.value_or(0)) + " language copies handed to workers were never freed");
}

}  // namespace

void Execute(const Program& program, JobBinding& api) { Executor(program, api).Run(); }

}  // namespace lifeline::handoff
