// The string-handoff programs' model of the job API: which slots are bound and how, which jobs are in
// flight and whether each was started or cancelled. The decoder (format.cc) asks it what is legal and
// hands it each op; the model predicts the op's status, the slot Init returns, the job id a submit gets,
// and what each worker must read.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/programs/handoff/format.h"

namespace lifeline::handoff {

struct ModelJob {
  uint32_t id;
  uint8_t slot;
  bool started = false;  // its gate was opened (Start); Cancel is then too late
  bool cancelled = false;
};

struct Model {
  bool bound[kSlots] = {};
  bool multilingual[kSlots] = {};
  std::vector<ModelJob> jobs;
  uint32_t next_job = 1;

  int LowestFreeSlot() const;
  std::vector<uint8_t> BoundSlots() const;
  bool Legal(OpKind kind) const;

  // Each fills the op's predictions (operands already decoded) and its `state`, the state of what it acts on
  // before it acts, as `lifeline coverage --states` counts them (states.txt beside this file), and updates the
  // model. A slot is unbound, idle (bound, no job in flight), queued (its jobs in flight have not started) or
  // running (one has); a bind finds a free slot or none (full); a submit finds a full queue before anything
  // else of a bound slot; a job is queued, started or cancelled (cancelled first, then started: still
  // cancelled).
  void Bind(Op& op);
  void Rebind(Op& op);
  void Submit(Op& op);
  // Start, Cancel or Join of in-flight job number `k` (in submission order).
  void JobOp(size_t k, Op& op);

 private:
  const char* SlotState(uint8_t slot) const;
};

}  // namespace lifeline::handoff
