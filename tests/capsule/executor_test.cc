// The capsule executor with this layer's producer and consumer and NumPy as the peer, on the fixed code:
// the pinned programs run clean (raised exceptions, liveness after every op, values on every read, and
// nothing left at the end), and a model that disagrees with a party is named.
#include "harness/programs/capsule/executor.h"

#include <gtest/gtest.h>

#include <utility>

#include "harness/programs/capsule/standin/lifeline_subject.h"
#include "harness/programs/capsule/upstream/numpy_peer.h"
#include "tests/capsule/pinned_programs.h"

namespace lifeline::capsule {
namespace {

void RunWithNumpy(const Program& p) { Execute(p, *MakeLifelineSubject(), *MakeNumpyPeer()); }

TEST(CapsuleExecutor, PinnedProgramsRunCleanOnFixedCode) {
  for (auto [bytes, size] : {std::pair{kProgramA, sizeof(kProgramA)}, std::pair{kProgramB, sizeof(kProgramB)},
                             std::pair{kProgramC, sizeof(kProgramC)}}) {
    Program p = Decode(bytes, size, NumpyRules());
    SCOPED_TRACE(Describe(p));
    RunWithNumpy(p);
  }
}

TEST(CapsuleExecutorDeathTest, AWrongPredictionNamesTheOpAndWhatWasRaised) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Program p = Decode(kProgramA, sizeof(kProgramA), NumpyRules());
  ASSERT_EQ(p[9].kind, OpKind::kExportArray);
  p[9].expect_error.clear();  // NumPy refuses to export a read-only array; the model now says it will not
  EXPECT_DEATH(RunWithNumpy(p), "op 9 \\(export-array a0 -> c1\\): raised BufferError: .*; the model expects success");
}

}  // namespace
}  // namespace lifeline::capsule
