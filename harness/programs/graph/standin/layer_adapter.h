// The graph programs on layers/alloc's GraphAllocator, the stand-in for ggml's gallocr where the
// documented allocator bug (gallocr-view-leaf-offset) is modelled: every placement is checked with the
// allocation oracles, and at teardown every buffer byte must be back.
#pragma once

#include <memory>

#include "harness/programs/graph/allocator.h"

namespace lifeline::graphs {

std::unique_ptr<AllocatorAdapter> MakeLayerAdapter();

}  // namespace lifeline::graphs
