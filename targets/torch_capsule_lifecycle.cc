// torch_capsule_lifecycle: the capsule programs with PyTorch as a third party. Across any order of
// exports (Tensor.__dlpack__, torch.utils.dlpack.to_dlpack, NumPy's, this layer's), imports (torch's
// from_dlpack of every party's objects and of bare capsules, NumPy's, this layer's consumer of torch's
// capsules), drops, garbage cycles and collections, every DLPack export is released exactly once, by
// exactly one party, never while a user still reads its memory, and nothing outlives its last user.
//
// Property: interop_capsule_lifecycle's, with torch tensors in the array slots beside NumPy arrays: after
// every op, the producer storages, NumPy arrays, torch tensors (weak references), imported buffers and
// views alive are exactly those the lifetime model says are reachable; every value read through any
// view, array or tensor equals the producer's logical values (shape, strides, byte_offset, dtype and
// torch's lazy conjugate and negative bits included); every refusal is the predicted exception type.
// torch makes tensors in float32, float16, bfloat16, int8, uint8, bool and complex64, in the four
// layouts (contiguous, transposed, strided, storage offset; zero-size extents and 0-d from the shapes),
// plain, lazily conjugated, lazily negated or requiring grad.
// Program: harness/programs/capsule/ (format.h, model.h, executor.h). Parties: this layer's producer and
// consumer (capsule/standin/lifeline_subject.h), NumPy (capsule/upstream/numpy_peer.h) and PyTorch
// (capsule/upstream/torch_peer.h).
// Guards (core/guard_list.def; LIFELINE_UNGUARD turns one off): torch-dlpack-neg-bit-ignored,
// torch-to-dlpack-conj-bit-ignored (repro/<id>/bug.json).
// Out of scope: devices other than kDLCPU, DLPack >= 1.0 versioned capsules, threads (the GIL serializes
// all of this; torch runs one thread), autograd beyond requires_grad.
// Replay: build/<lane>/targets/torch_capsule_lifecycle FILE|DIR   (LIFELINE_REINTRODUCE=
// turbine-capsule-rename-back or iree-dlpack-import-leak switches a bug back on; LIFELINE_TRACE=1 prints
// the decoded program).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/guards.h"
#include "harness/programs/capsule/codec.h"
#include "harness/programs/capsule/detect_leaks_flag.h"
#include "harness/programs/capsule/executor.h"
#include "harness/programs/capsule/standin/lifeline_subject.h"
#include "harness/programs/capsule/upstream/numpy_peer.h"
#include "harness/programs/capsule/upstream/torch_peer.h"

namespace {

struct Parties {
  std::unique_ptr<lifeline::capsule::Subject> subject = lifeline::capsule::MakeLifelineSubject();
  std::unique_ptr<lifeline::capsule::Peer> numpy = lifeline::capsule::MakeNumpyPeer();
  std::unique_ptr<lifeline::capsule::Peer> torch = lifeline::capsule::MakeTorchPeer();
  std::vector<const lifeline::capsule::Peer*> peers{numpy.get(), torch.get()};
  lifeline::capsule::Peers rules = lifeline::capsule::RulesOf(peers);
};

const Parties& TheParties() {
  static const Parties parties;
  return parties;
}

}  // namespace

// -detect_leaks=0 by default: harness/programs/capsule/detect_leaks_flag.h says why. The parties are made
// here, not in the first input: importing torch takes seconds under ASan, and libFuzzer's -timeout counts
// the first input's time (a loaded 2-core machine took 11 s and reported a timeout on the empty input).
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  lifeline::capsule::DefaultNoPerInputLeakCheck(argc, argv);
  TheParties();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lifeline::capsule;
  const Parties& parties = TheParties();
  lifeline::BeginGuardedInput();
  Execute(Decode(data, size, parties.rules), *parties.subject, parties.peers);
  return 0;
}

// `--program decode|encode` (harness/replay_main.cc): this target's decoder both ways, for `lifeline reduce`.
LIFELINE_TARGET_CODEC(lifeline::capsule::MakeCodec({&lifeline::capsule::NumpyRules(), &lifeline::capsule::TorchRules()}))
