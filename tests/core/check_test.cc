// LIFELINE_CHECK: always on, and its report carries the op index and decoded trace of the program that
// was running.
#include "core/check.h"

#include <gtest/gtest.h>

namespace lifeline {
namespace {

void RenderTwoOps(const void*, size_t current, std::FILE* out) {
  std::fprintf(out, "    #0 first-op%s\n    #1 second-op%s\n", current == 0 ? " <=" : "", current == 1 ? " <=" : "");
}

TEST(CheckDeathTest, FailurePrintsFileConditionAndMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int x = 1;
  EXPECT_DEATH(LIFELINE_CHECK(x == 2, "x must be two"),
               "LIFELINE_CHECK failed at .*check_test.cc:[0-9]+\n  condition: x == 2\n  message: x must be two");
}

TEST(CheckDeathTest, FailureInsideProgramPrintsOpIndexAndTrace) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int program = 0;
  EXPECT_DEATH(
      {
        OpTraceScope trace(&program, 2, RenderTwoOps);
        trace.set_op(1);
        LIFELINE_CHECK(false, "oracle name: what broke");
      },
      "op: #1 of 2\n  trace:\n    #0 first-op\n    #1 second-op <=");
}

TEST(CheckDeathTest, PreconditionIsReportedAsMisuse) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(LIFELINE_PRECONDITION(false, "caller passed a bad op"), "LIFELINE_PRECONDITION failed");
}

TEST(Check, PassingCheckDoesNotEvaluateMessage) {
  int evaluated = 0;
  auto message = [&] {
    ++evaluated;
    return std::string("never built");
  };
  LIFELINE_CHECK(true, message());
  EXPECT_EQ(evaluated, 0);
}

TEST(CheckDeathTest, OuterTraceIsPrintedAgainAfterANestedScopeEnds) {
  // A test that runs a program inside another program's scope (a nested executor): once the inner scope
  // ends, a failure reports the outer program, not the inner one nor freed state.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        int outer_program = 0;
        int inner_program = 0;
        OpTraceScope outer(&outer_program, 2, RenderTwoOps);
        outer.set_op(0);
        {
          OpTraceScope inner(&inner_program, 7, RenderTwoOps);
          inner.set_op(5);
        }
        LIFELINE_CHECK(false, "after the inner program");
      },
      "op: #0 of 2\n  trace:\n    #0 first-op <=");
}

}  // namespace
}  // namespace lifeline
