// The capsule programs' subject: this layer's DLPack producer (`_lifeline_interop.Tensor`, its storage
// ledger) and IREE-shaped consumer (`import_capsule`, the Python-side `import_from`, views and buffer
// handles, the consumer's counters), in the embedded interpreter (layers/interop/python_runtime.h).
#pragma once

#include <memory>

#include "harness/programs/capsule/party.h"

namespace lifeline::capsule {

// Starts the interpreter on first use.
std::unique_ptr<Subject> MakeLifelineSubject();

}  // namespace lifeline::capsule
