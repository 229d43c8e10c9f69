// The string-handoff programs on layers/interop's JobApi, the stand-in for whisper.wasm's binding where
// wasm-lang-dangling is modelled. Calls go through the layer's embind-shaped wrappers
// (CallFullDefaultFromJs), so the JS string dies with the call's frame as it does upstream.
#pragma once

#include <memory>

#include "harness/programs/handoff/binding.h"

namespace lifeline::handoff {

std::unique_ptr<JobBinding> MakeJobApiBinding();

}  // namespace lifeline::handoff
