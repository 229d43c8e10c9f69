// Status, StatusOr and the macros that pass a failure up.
#include "core/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace lifeline {
namespace {

TEST(Status, ToStringNamesTheCodeAndTheMessage) {
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  EXPECT_EQ(NotFound("context slot 2 is not bound").ToString(), "NOT_FOUND: context slot 2 is not bound");
  EXPECT_EQ(Internal("oracle broke").code(), StatusCode::kInternal);
}

Status Step(bool fail, int* reached) {
  ++*reached;
  return fail ? FailedPrecondition("step failed") : Status::Ok();
}

Status TwoSteps(bool fail_first, int* reached) {
  LIFELINE_RETURN_IF_ERROR(Step(fail_first, reached));
  LIFELINE_RETURN_IF_ERROR(Step(false, reached));
  return Status::Ok();
}

TEST(StatusMacros, ReturnIfErrorStopsAtTheFirstFailureAndPassesItUp) {
  int reached = 0;
  Status s = TwoSteps(true, &reached);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "step failed");
  EXPECT_EQ(reached, 1);
  reached = 0;
  EXPECT_TRUE(TwoSteps(false, &reached).ok());
  EXPECT_EQ(reached, 2);
}

StatusOr<std::unique_ptr<int>> MakeInt(int v) {
  if (v < 0) return InvalidArgument("negative: " + std::to_string(v));
  return std::make_unique<int>(v);
}

StatusOr<int> Sum(int a, int b) {
  LIFELINE_ASSIGN_OR_RETURN(std::unique_ptr<int> x, MakeInt(a));  // a move-only value
  LIFELINE_ASSIGN_OR_RETURN(auto y, MakeInt(b));
  return *x + *y;
}

TEST(StatusMacros, AssignOrReturnMovesTheValueOrPassesTheStatusUp) {
  StatusOr<int> ok = Sum(2, 3);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), 5);
  StatusOr<int> bad = Sum(2, -4);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "negative: -4");
}

}  // namespace
}  // namespace lifeline
