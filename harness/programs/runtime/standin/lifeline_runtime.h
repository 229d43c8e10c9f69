// The runtime programs on layers/runtime, the stand-in compute runtime (Vulkan, on whatever ICD the
// loader finds, always with the Khronos validation layer): buffers with the debug capture registry,
// transient pools, pass descriptors and contexts that encode a frame in n_cb shares on the encode threads.
// Every runtime shares the process's one device (Device::Get()); a missing device or validation layer is a
// LIFELINE_PRECONDITION failure, never a silent run without the oracle.
#pragma once

#include <memory>

#include "harness/programs/runtime/runtime.h"

namespace lifeline::rtprog {

std::unique_ptr<ComputeRuntime> MakeLifelineRuntime();

}  // namespace lifeline::rtprog
