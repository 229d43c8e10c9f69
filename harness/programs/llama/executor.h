// The llama-runtime programs' executor: runs a decoded program (format.h) against a Runtime (runtime.h),
// checking each return against the model's prediction (status oracle), seq_pos_min/max after every op, and
// every logit a decode returns against a fresh context that decoded the same sequence's history from an
// empty memory (the differential oracle), where the model says a fresh decode makes the same memory.
#pragma once

#include "harness/programs/llama/format.h"
#include "harness/programs/llama/runtime.h"

namespace lifeline::llama {

// The differential oracle's tolerance for a context's cache types: the largest |a - b| between the logits of
// the context and of the fresh one, relative to max(1, the fresh logits' largest magnitude).
float Tolerance(const ContextParams& params);

// LIFELINE_TRACE=1 prints the program first; a violation is a LIFELINE_CHECK failure with the op index and
// the trace. `corrupt_state` (the oracle's own test only) flips a byte of each saved state's data before it is
// restored.
struct ExecuteStats {
  int compared = 0;        // outputs the differential oracle compared
  int skipped = 0;         // outputs it could not (the model gave no reference: model.h Reference)
  float worst = 0.0f;      // the largest |diff| / max(1, |fresh|) seen
};
ExecuteStats Execute(const Program& program, Runtime& rt, bool corrupt_state = false);

}  // namespace lifeline::llama
