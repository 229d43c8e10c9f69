// The runtime programs' executors: run a decoded program (format.h) against a ComputeRuntime
// (runtime.h) and check it with the runtime oracles (harness/oracles/runtime_oracles.h).
//
// Encoder lifetime: every buffer equals the kernel reference after each frame; each op's status is the
// model's; the live command and descriptor pools are those of the live contexts and no fence outlives a
// frame; the validation layer is silent; at the end no object and no pass descriptor is left.
// Buffer reclaim: after every op, live VkBuffer/VkDeviceMemory objects and bytes equal what the live
// buffer wrappers account for (bytes first, then objects); values equal the reference; the validation
// layer is silent; at the end nothing is left.
#pragma once

#include "harness/programs/runtime/format.h"
#include "harness/programs/runtime/runtime.h"

namespace lifeline::rtprog {

// LIFELINE_TRACE=1 prints the program first; a violation is a LIFELINE_CHECK failure with the op index
// and the trace.
void Execute(const EncoderProgram& program, ComputeRuntime& runtime);
void Execute(const ReclaimProgram& program, ComputeRuntime& runtime);

}  // namespace lifeline::rtprog
