// NumPy 1.24 (Debian's python3-numpy, in the embedded interpreter) as the capsule programs' peer:
// arrays made by NumPy in the producer's layouts NumPy has (all but null-strides), `ndarray.__dlpack__`,
// and `numpy.from_dlpack` (which takes objects with `__dlpack__`; a bare capsule goes through
// `_lifeline_interop.CapsuleHolder`).
#pragma once

#include <memory>

#include "harness/programs/capsule/party.h"

namespace lifeline::capsule {

// What NumPy 1.24 refuses: bool and read-only arrays do not export (BufferError), from_dlpack refuses
// bool and bfloat16 (RuntimeError "Unsupported dtype") and a consumed capsule (ValueError from
// PyCapsule_GetPointer), and the arrays it makes are read-only.
const PeerRules& NumpyRules();

// Starts the interpreter on first use.
std::unique_ptr<Peer> MakeNumpyPeer();

}  // namespace lifeline::capsule
