// The runtime oracles (harness/oracles/runtime_oracles.h) on hand-made observations: each passes on what
// it must accept and names the violation on what it must not. No device: these are pure functions of
// counts, messages and values.
#include "harness/oracles/runtime_oracles.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/status_matchers.h"

namespace lifeline::oracles {
namespace {

using runtime::Kernel;
using runtime::ObjectCounts;
using testing_util::HasStatus;
using testing_util::IsOk;

TEST(ReferenceKernel, ComputesTheFirstNElementsAndLeavesTheRest) {
  const std::vector<float> a = {1, 2, 3}, b = {10, 20, 30}, out = {-1, -1, -1};
  EXPECT_EQ(ReferenceKernel(Kernel::kFill, 2, 7.0f, a, b, out), (std::vector<float>{7, 7, -1}));
  EXPECT_EQ(ReferenceKernel(Kernel::kAdd, 3, 0.0f, a, b, out), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(ReferenceKernel(Kernel::kScale, 1, -2.0f, a, b, out), (std::vector<float>{-2, -1, -1}));
  EXPECT_EQ(ReferenceKernel(Kernel::kCopy, 0, 0.0f, a, b, out), out);
}

TEST(RuntimeValueOracle, NamesTheFirstElementThatDiffers) {
  const std::vector<float> want = {1, 2, 3};
  const float same[] = {1, 2, 3}, off[] = {1, 2.5f, 9};
  EXPECT_TRUE(IsOk(CheckValues(same, want, "b0")));
  EXPECT_TRUE(HasStatus(CheckValues(off, want, "b0"), StatusCode::kInternal,
                        "b0 element 1 is 2.500000, the CPU reference 2.000000"));
}

TEST(ValidationOracle, AnyMessageFails) {
  EXPECT_TRUE(IsOk(CheckValidationSilent({})));
  EXPECT_TRUE(HasStatus(CheckValidationSilent({"VUID-a", "VUID-b"}), StatusCode::kInternal,
                        "validation layer: 2 message(s):\n    VUID-a"));
}

TEST(ObjectBaselineOracle, AnythingLeftBeyondTheBaselineFails) {
  ObjectCounts base{2, 2, 64, 1, 1, 0};
  EXPECT_TRUE(IsOk(CheckObjectsAtBaseline(base, base)));
  ObjectCounts left = base;
  left.fences += 1;
  EXPECT_TRUE(HasStatus(CheckObjectsAtBaseline(left, base), StatusCode::kInternal, "objects left"));
}

TEST(ObjectBaselineOracle, PoolsEqualThoseOfTheLiveContextsAndNoFenceOutlivesAFrame) {
  ObjectCounts base{3, 3, 3072, 0, 0, 0};
  ObjectCounts now = base;
  now.command_pools = now.descriptor_pools = 5;
  EXPECT_TRUE(IsOk(CheckPoolsOfLiveContexts(now, base, 5)));
  EXPECT_TRUE(HasStatus(CheckPoolsOfLiveContexts(now, base, 4), StatusCode::kInternal,
                        "the live contexts account for 4"));
  now.fences = 1;
  EXPECT_TRUE(HasStatus(CheckPoolsOfLiveContexts(now, base, 5), StatusCode::kInternal, "no fence beyond"));
}

TEST(AccountingOracle, BytesAreCheckedBeforeObjects) {
  // igl-capture-retains-buffers: a destroyed wrapper whose backing stays (bytes and objects), and the
  // purge workaround (bytes freed, objects kept).
  ObjectCounts base{};
  ObjectCounts now{1, 1, 64, 0, 0, 0};
  EXPECT_TRUE(IsOk(CheckBackingMatchesWrappers(now, base, 1, 64)));
  EXPECT_TRUE(HasStatus(CheckBackingMatchesWrappers(now, base, 0, 0), StatusCode::kInternal,
                        "accounting oracle (bytes)"));
  ObjectCounts purged{1, 0, 0, 0, 0, 0};
  EXPECT_TRUE(HasStatus(CheckBackingMatchesWrappers(purged, base, 0, 0), StatusCode::kInternal,
                        "accounting oracle (objects)"));
}

}  // namespace
}  // namespace lifeline::oracles
