#include "harness/programs/handoff/model.h"

#include <algorithm>
#include <iterator>

namespace lifeline::handoff {

int Model::LowestFreeSlot() const {
  for (size_t i = 0; i < kSlots; ++i) {
    if (!bound[i]) return static_cast<int>(i);
  }
  return -1;
}

std::vector<uint8_t> Model::BoundSlots() const {
  std::vector<uint8_t> out;
  for (uint8_t s = 0; s < kSlots; ++s) {
    if (bound[s]) out.push_back(s);
  }
  return out;
}

bool Model::Legal(OpKind kind) const {
  // Job ops need a job in flight, rebind needs a bound slot; everything else is always legal (a submit
  // to an unbound slot is a predicted NOT_FOUND).
  switch (kind) {
    case OpKind::kRebind: return std::any_of(std::begin(bound), std::end(bound), [](bool b) { return b; });
    case OpKind::kStart:
    case OpKind::kCancel:
    case OpKind::kJoin: return !jobs.empty();
    default: return true;
  }
}

const char* Model::SlotState(uint8_t slot) const {
  if (!bound[slot]) return "unbound";
  const char* state = "idle";
  for (const ModelJob& j : jobs) {
    if (j.slot != slot) continue;
    if (j.started) return "running";
    state = "queued";
  }
  return state;
}

void Model::Bind(Op& op) {
  int slot = LowestFreeSlot();
  op.state = slot < 0 ? "full" : "free";
  if (slot < 0) {
    op.expect = StatusCode::kResourceExhausted;
    return;
  }
  op.expect_slot = static_cast<uint8_t>(slot);
  bound[slot] = true;
  multilingual[slot] = op.multilingual;
}

void Model::Rebind(Op& op) {
  op.state = SlotState(op.slot);
  // The executor joins the slot's jobs (checking each) before Free.
  jobs.erase(std::remove_if(jobs.begin(), jobs.end(), [&](const ModelJob& j) { return j.slot == op.slot; }),
             jobs.end());
  bound[op.slot] = false;
  int slot = LowestFreeSlot();
  op.expect_slot = static_cast<uint8_t>(slot);
  bound[slot] = true;
  multilingual[slot] = op.multilingual;
}

void Model::Submit(Op& op) {
  op.state = bound[op.slot] && op.kind == OpKind::kSubmitAsync && jobs.size() >= kMaxJobs ? "queue-full" : SlotState(op.slot);
  if (!bound[op.slot]) {
    op.expect = StatusCode::kNotFound;
  } else if (op.n_threads < 1) {
    op.expect = StatusCode::kInvalidArgument;
  } else if (op.kind == OpKind::kSubmitAsync && jobs.size() >= kMaxJobs) {
    op.expect = StatusCode::kResourceExhausted;
  }
  if (op.expect != StatusCode::kOk) return;
  // A C string ends at its first NUL: that prefix is what any reader of params.language sees.
  op.expect_language = multilingual[op.slot] ? op.language.substr(0, op.language.find('\0')) : "en";
  if (op.kind == OpKind::kSubmitAsync) {
    op.job = next_job++;
    jobs.push_back(ModelJob{op.job, op.slot});
  }
}

void Model::JobOp(size_t k, Op& op) {
  ModelJob& job = jobs[k];
  op.job = job.id;
  op.state = job.cancelled ? "cancelled" : job.started ? "started" : "queued";
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
    jobs.erase(jobs.begin() + static_cast<std::ptrdiff_t>(k));
  }
}

}  // namespace lifeline::handoff
