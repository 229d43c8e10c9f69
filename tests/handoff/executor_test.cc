// The handoff executor on the stand-in job API (layers/interop through the JobApi binding): the pinned
// program runs clean, and a model that disagrees with the API is named by the value and status oracles.
#include "harness/programs/handoff/executor.h"

#include <gtest/gtest.h>

#include "harness/programs/handoff/standin/job_api_binding.h"
#include "tests/handoff/pinned_program.h"

namespace lifeline::handoff {
namespace {

void RunOnJobApi(const Program& p) { Execute(p, *MakeJobApiBinding()); }

// The executor agrees with every prediction of the pinned program on the fixed code: statuses, slots,
// job ids, what each worker saw, and the ledger at the end.
TEST(HandoffExecutor, PinnedProgramRunsCleanOnFixedCode) {
  RunOnJobApi(Decode(kEveryOpKind, sizeof(kEveryOpKind)));
}

TEST(HandoffExecutorDeathTest, ValueOracleNamesTheJobAndTheBytes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Program p = Decode(kEveryOpKind, sizeof(kEveryOpKind));
  p[2].expect_language = "da";  // a model that disagrees with what the worker will read
  EXPECT_DEATH(RunOnJobApi(p), "value oracle: job 1 submitted language \"da\" but the worker read \"de\"");
}

TEST(HandoffExecutorDeathTest, StatusOracleNamesTheOpAndBothStatuses) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Program p = Decode(kEveryOpKind, sizeof(kEveryOpKind));
  p[7].expect = StatusCode::kOk;  // cancel after start is refused by the API
  EXPECT_DEATH(RunOnJobApi(p), "status oracle: cancel job 1 returned FAILED_PRECONDITION(.|\n)*op: #7 of 15(.|\n)*=> #7 cancel job 1");
}

}  // namespace
}  // namespace lifeline::handoff
