// Upstream code's failures inside a lifeline binary: an assert() and an abort hook both print their line,
// then the op trace of the running program and a stack (core/upstream_hooks.h). The CLI's crash parser
// reads these as crash type `assert` (tests/cli).
#include "core/upstream_hooks.h"

#include <gtest/gtest.h>

#include <cassert>
#include <cstdio>
#include <cstdlib>

#include "core/check.h"

namespace lifeline {
namespace {

void RenderOneOp(const void*, size_t current, std::FILE* out) {
  std::fprintf(out, "  %s #0 upstream-op\n", current == 0 ? "=>" : "  ");
}

TEST(UpstreamHooksDeathTest, AssertUsesGlibcWordingThenTraceAndStack) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int program = 0;
  OpTraceScope trace(&program, 1, RenderOneOp);  // the child re-runs the test up to the death: it has it too
  const int offset = 1;
  EXPECT_DEATH(assert(offset == 0),  // NOLINT: the hook under test replaces glibc's __assert_fail
      "upstream_hooks_test.cc:[0-9]+: .*: Assertion `offset == 0' failed.\n  op: #0 of 1\n  trace:\n  => #0 "
      "upstream-op\nstack:\n");
}

TEST(UpstreamHooksDeathTest, AbortHookPrintsTheMessageThenTheStack) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        internal::UpstreamAbort("ggml.c:12: GGML_ASSERT(x) failed");
        std::abort();  // as upstream does after its hook returns
      },
      "==lifeline== upstream abort: ggml.c:12: GGML_ASSERT\\(x\\) failed\nstack:\n");
}

}  // namespace
}  // namespace lifeline
