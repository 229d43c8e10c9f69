// The graph programs' executor: runs a decoded program (format.h) against an AllocatorAdapter
// (allocator.h), checking every step's status against the model's prediction; the adapter checks each
// placement with the allocation oracles and proves at teardown that nothing is left.
#pragma once

#include "harness/programs/graph/allocator.h"
#include "harness/programs/graph/format.h"

namespace lifeline::graphs {

// LIFELINE_TRACE=1 prints the program first; a violation is a LIFELINE_CHECK failure with the step index
// and the trace.
void Execute(const Program& program, AllocatorAdapter& adapter);

}  // namespace lifeline::graphs
