// The capsule targets' LLVMFuzzerInitialize: -detect_leaks=0 unless the command line says otherwise.
//
// libFuzzer's per-input leak check (-detect_leaks=1) runs a full LeakSanitizer scan whenever an input
// ends with more mallocs than frees, which CPython's free lists and caches make the common case: measured
// at 83 exec/s with it (95% of the time in LSan's heap scan) against 3,000 without, on
// interop_capsule_lifecycle. The leaks that matter here are already checked after every op, precisely:
// producer storages and exports by the ledger, imported buffers and views by the consumer's counters,
// peer arrays and tensors by weak references. LeakSanitizer still checks whole runs at exit in the asan
// and lsan lanes (corpus replay, reproducers). The replay driver takes no libFuzzer flags and runs no
// per-input leak check: nothing to change there.
//
// Header-only on purpose: LIFELINE_LIBFUZZER is defined for the target's own translation unit.
#pragma once

#include <cstring>

namespace lifeline::capsule {

inline void DefaultNoPerInputLeakCheck(int* argc, char*** argv) {
#if defined(LIFELINE_LIBFUZZER)
  for (int i = 1; i < *argc; ++i)
    if (std::strncmp((*argv)[i], "-detect_leaks=", 14) == 0) return;
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
}

}  // namespace lifeline::capsule
