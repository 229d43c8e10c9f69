// The string-handoff programs' executor: runs a decoded program (format.h) against a JobBinding
// (binding.h), checking every status, slot and job id against the model's predictions and every joined
// job with the value oracle (the worker read exactly the bytes the caller submitted, up to the C
// string's NUL, and resolved the id they name); joins all workers and checks the copy ledger before
// returning.
#pragma once

#include "harness/programs/handoff/binding.h"
#include "harness/programs/handoff/format.h"

namespace lifeline::handoff {

// LIFELINE_TRACE=1 prints the program first; a violation is a LIFELINE_CHECK failure with the op index and
// the trace.
void Execute(const Program& program, JobBinding& api);

}  // namespace lifeline::handoff
