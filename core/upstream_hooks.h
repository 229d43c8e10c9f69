// How upstream C and C++ code fails inside a lifeline binary: with a stack and the op trace of the program
// that was running, in a shape cli/lifeline/crash.py parses as crash type `assert`.
//
// Upstream code reports a broken invariant in two ways, and both end here:
//   - its own abort hook (ggml: `ggml_set_abort_callback(&UpstreamAbort)`), which prints
//     "==lifeline== upstream abort: <message>" before upstream aborts; where the upstream has no hook, the
//     SIGABRT its abort() raises (ReportAbortSignals);
//   - plain `assert()`, compiled in because no lane defines NDEBUG: linking core/upstream_hooks.cc defines
//     `__assert_fail`, which prints glibc's own wording ("<file>:<line>: <function>: Assertion `<expr>'
//     failed.") and then aborts, as glibc does.
// Either way the report goes on with the current op trace (core/check.h's OpTraceScope) and a stack.
//
// Link this (the `lifeline_upstream_hooks` library) only into executables that run upstream code: its
// `__assert_fail` replaces glibc's for the whole executable.
#pragma once

namespace lifeline::internal {

// Prints "==lifeline== upstream abort: `message`" and the context below; the caller aborts.
void UpstreamAbort(const char* message);

// What follows upstream's own failure line: the op trace of the innermost OpTraceScope and the stack.
void UpstreamContext();

// For upstream code without an abort hook (ggml before ggml_set_abort_callback, 2025): a SIGABRT handler that prints
// "==lifeline== upstream abort signal" and the context above after upstream's own line ("<file>:<line>: <text>"),
// then dies of the signal as before. Installed once; a handler already installed (libFuzzer's) is left alone.
void ReportAbortSignals();

}  // namespace lifeline::internal
