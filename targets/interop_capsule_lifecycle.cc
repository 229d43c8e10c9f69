// interop_capsule_lifecycle: across any order of exports, imports (this layer's and NumPy's), drops,
// garbage cycles and collections, every DLPack export is released exactly once, by exactly one party,
// never while a user still reads its memory, and nothing outlives its last user.
//
// Property: after every op, the producer storages, NumPy arrays, imported buffers and views alive are
// exactly those the lifetime model says are reachable from what the program holds; every value read
// through any view or array equals what the producer wrote; a consumed capsule is refused when imported
// again and a malformed one is refused with a BufferError that names the problem, leaving nothing behind.
// Program: harness/programs/capsule/ (format.h; model.h: the lifetime model; executor.h: accounting after
// each op through harness/oracles/dlpack_oracles.h, value oracle). Parties: this layer's producer and
// consumer (capsule/standin/lifeline_subject.h) and NumPy (capsule/upstream/numpy_peer.h). Plus the
// producer ledger (layers/interop/dlpack_producer.h: a second deleter call is a check failure; released
// storage is freed, so a later read is an ASan heap-use-after-free).
// Out of scope: devices other than kDLCPU, DLPack >= 1.0 versioned capsules, threads (the GIL
// serializes all of this), the NumPy arrays' contents beyond their values.
// Replay: build/<lane>/targets/interop_capsule_lifecycle FILE|DIR   (LIFELINE_REINTRODUCE=
// iree-dlpack-import-leak or turbine-capsule-rename-back switches a bug back on; LIFELINE_TRACE=1 prints
// the decoded program).
#include <cstddef>
#include <cstdint>

#include "harness/programs/capsule/codec.h"
#include "harness/programs/capsule/detect_leaks_flag.h"
#include "harness/programs/capsule/executor.h"
#include "harness/programs/capsule/standin/lifeline_subject.h"
#include "harness/programs/capsule/upstream/numpy_peer.h"

// -detect_leaks=0 by default: harness/programs/capsule/detect_leaks_flag.h says why.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  lifeline::capsule::DefaultNoPerInputLeakCheck(argc, argv);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<lifeline::capsule::Subject> subject = lifeline::capsule::MakeLifelineSubject();
  static const std::unique_ptr<lifeline::capsule::Peer> numpy = lifeline::capsule::MakeNumpyPeer();
  lifeline::capsule::Execute(lifeline::capsule::Decode(data, size, numpy->rules()), *subject, *numpy);
  return 0;
}

// `--program decode|encode` (harness/replay_main.cc): this target's decoder both ways, for `lifeline reduce`.
LIFELINE_TARGET_CODEC(lifeline::capsule::MakeCodec({&lifeline::capsule::NumpyRules()}))
