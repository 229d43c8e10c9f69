#include "core/upstream_hooks.h"

#include <signal.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "core/check.h"

namespace lifeline::internal {

void UpstreamContext() {
  PrintCurrentTrace(stderr);
  std::fprintf(stderr, "stack:\n");
  PrintStackTrace(stderr);
  std::fflush(stderr);
}

void UpstreamAbort(const char* message) {
  std::fprintf(stderr, "\n==lifeline== upstream abort: %s\n", message);
  UpstreamContext();
}

namespace {
void OnAbortSignal(int sig) {
  std::fprintf(stderr, "\n==lifeline== upstream abort signal\n");
  UpstreamContext();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
}  // namespace

void ReportAbortSignals() {
  struct sigaction old {};
  if (sigaction(SIGABRT, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) std::signal(SIGABRT, OnAbortSignal);
}

}  // namespace lifeline::internal

extern "C" [[noreturn]] void __assert_fail(const char* assertion, const char* file, unsigned int line,
                                           const char* function) noexcept {
  // glibc's wording, so the line reads the same as an assert from any other build.
  std::fprintf(stderr, "\n%s:%u: %s: Assertion `%s' failed.\n", file, line, function, assertion);
  lifeline::internal::UpstreamContext();
  std::abort();
}
