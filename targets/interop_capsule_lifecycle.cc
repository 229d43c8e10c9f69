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
#include <cstring>

#include "harness/programs/capsule/executor.h"
#include "harness/programs/capsule/standin/lifeline_subject.h"
#include "harness/programs/capsule/upstream/numpy_peer.h"

// libFuzzer's per-input leak check (-detect_leaks=1) runs a full LeakSanitizer scan whenever an input
// ends with more mallocs than frees, which CPython's free lists and caches make the common case: measured
// at 83 exec/s with it (95% of the time in LSan's heap scan) against 3,000 without. The leaks that matter
// here are already checked after every op, precisely: producer storages and exports by the ledger,
// imported buffers and views by the consumer's counters, NumPy arrays by weak references. So the target
// defaults to -detect_leaks=0 unless the command line says otherwise; LeakSanitizer still checks whole
// runs at exit in the asan and lsan lanes (corpus replay, reproducers). The replay driver takes no
// libFuzzer flags and runs no per-input leak check: nothing to change there.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
#if defined(LIFELINE_LIBFUZZER)
  for (int i = 1; i < *argc; ++i)
    if (std::strncmp((*argv)[i], "-detect_leaks=", 14) == 0) return 0;
  static char flag[] = "-detect_leaks=0";
  static char** args = new char*[*argc + 2];
  args[0] = (*argv)[0];
  args[1] = flag;
  for (int i = 1; i < *argc; ++i) args[i + 1] = (*argv)[i];
  args[*argc + 1] = nullptr;
  *argc += 1;
  *argv = args;
#else
  (void)argc;
  (void)argv;
#endif
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<lifeline::capsule::Subject> subject = lifeline::capsule::MakeLifelineSubject();
  static const std::unique_ptr<lifeline::capsule::Peer> numpy = lifeline::capsule::MakeNumpyPeer();
  lifeline::capsule::Execute(lifeline::capsule::Decode(data, size, numpy->rules()), *subject, *numpy);
  return 0;
}
