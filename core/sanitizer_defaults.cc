// Default sanitizer options, compiled into every executable of a lane so a binary behaves the same under
// ctest, the CLI, or a shell: findings are fatal, stack-use-after-return is detected, dedup tokens match
// the crash-state convention. An ASAN_OPTIONS (etc.) in the environment still overrides these.
// The option strings come from cmake/LifelineLane.cmake.
//
// The runtimes call these while they initialize, before any thread state exists, so the functions must not
// be instrumented themselves. Under -fsanitize=thread plus libFuzzer's coverage (the tsan fuzz build) clang 14
// instruments SanitizerCoverage's edge-counter increment like any store: the function then calls
// __tsan_func_entry from inside __tsan::Initialize, which dereferences the not yet created trace and crashes
// (SIGSEGV in __tsan::TraceSwitchPart, before main). Replay builds have no counter, hence no store, hence no
// entry hook, which is why only the libFuzzer TSan build crashed.
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
#define LIFELINE_SANITIZER_CALLBACK __attribute__((used, no_sanitize("address", "thread", "coverage")))
#endif
#endif
#ifndef LIFELINE_SANITIZER_CALLBACK
#define LIFELINE_SANITIZER_CALLBACK __attribute__((used))
#endif

extern "C" {
LIFELINE_SANITIZER_CALLBACK const char* __asan_default_options() { return LIFELINE_ASAN_OPTIONS; }
LIFELINE_SANITIZER_CALLBACK const char* __ubsan_default_options() { return LIFELINE_UBSAN_OPTIONS; }
LIFELINE_SANITIZER_CALLBACK const char* __tsan_default_options() { return LIFELINE_TSAN_OPTIONS; }
LIFELINE_SANITIZER_CALLBACK const char* __lsan_default_options() { return LIFELINE_LSAN_OPTIONS; }

// LeakSanitizer suppressions, one library per line, same rule: never project code. A leak is dropped
// when a frame of the library is in its allocation stack; project allocations never pass through these.
LIFELINE_SANITIZER_CALLBACK const char* __lsan_default_suppressions() {
  return
      // Mesa's lavapipe ICD keeps per-device state (4 blocks, 192 B, allocated on the first submit) that
      // libFuzzer's per-input leak check reports although the device lives for the whole process.
      "leak:libvulkan_lvp.so\n"
      // The Khronos validation layer 1.3.239 with synchronization validation on: at exit, a cycle of its own
      // objects (only indirect leaks, every allocation inside the layer; 134,788 B in 316 allocations after
      // the encoder target's corpus) is never freed.
      "leak:libVkLayer_khronos_validation.so\n";
}

// TSan suppressions, one library per line. Only libraries we do not build: TSan sees none of their
// atomics, so their internal synchronization (reader-writer locks built on atomics, worker threads) looks
// like races between their own threads and ours. A report is dropped when a frame of that library is in
// it; none of these libraries is project code. The last line is one function of a library's header instead
// (its comment says why).
LIFELINE_SANITIZER_CALLBACK const char* __tsan_default_suppressions() {
  return
      // The Khronos validation layer: its object-tracking maps use lock-free reader-writer locks.
      "race:libVkLayer_khronos_validation.so\n"
      // ... and its own mutexes, taken in different orders by its internal thread and at device teardown.
      "deadlock:libVkLayer_khronos_validation.so\n"
      // Mesa's lavapipe (llvmpipe) ICD: its rasterizer/compute thread pool and fence signalling.
      "race:libvulkan_lvp.so\n"
      // And one function of libstdc++ that is compiled into our binaries from its header: ctype<char>::narrow
      // fills its facet's cache on first use without synchronization, so two threads narrowing a character
      // for the first time write the same byte at once (GCC PR libstdc++/77704, known and left as is; the
      // workaround upstreams use is to fill the cache before starting threads). std::regex narrows every
      // character of its pattern: whisper.cpp's tokenize builds one per call, and two whisper_full_with_state
      // threads of whisper_string_handoff raced there (fresh clone F61, 2026-11-28, tsan lane's smoke). Only
      // reports with this frame are dropped; lane.tsan.libstdcxx-narrow-cache makes that race on purpose and
      // must stay quiet, lane.tsan.data-race must still report.
      "race:std::ctype<char>::narrow\n";
}
}
