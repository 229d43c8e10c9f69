// PyTorch (Debian's python3-torch, 1.13) as a capsule-program peer, beside NumPy: tensors made by torch in
// the producer's layouts that torch has (PeerRules::layouts) and four flavors (plain, lazily conjugated,
// lazily negated, requiring grad), exported with `Tensor.__dlpack__()` or `torch.utils.dlpack.to_dlpack`,
// and `torch.from_dlpack` of any party's objects and of bare capsules. Target torch_capsule_lifecycle.
//
// torch is imported once per process (2.5-3.5 s under ASan) inside the interpreter's LeakSanitizer ignore
// scope (python_runtime.h, RunLongLived), with one CPU thread (OMP_NUM_THREADS=1, set_num_threads(1),
// set_num_interop_threads(1)) so a run is the same on any machine.
#pragma once

#include <memory>

#include "harness/programs/capsule/party.h"

namespace lifeline::capsule {

// What PyTorch 1.13 refuses, all with RuntimeError: exporting bool ("Bool type is not supported by
// dlpack"); __dlpack__ of a tensor that requires grad or has the conjugate bit set (to_dlpack checks
// neither); importing DLPack's bool code 6 ("Unsupported code 6") or a consumed capsule ("from_dlpack
// received an invalid capsule"). It makes no read-only tensors; its imports are writable.
const PeerRules& TorchRules();

// Starts the interpreter and imports torch on first use; without torch, exits with status 2 naming the
// package (scripts/install-deps.sh installs python3-torch).
std::unique_ptr<Peer> MakeTorchPeer();

}  // namespace lifeline::capsule
