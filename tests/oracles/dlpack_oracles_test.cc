// The DLPack accounting oracle (harness/oracles/dlpack_oracles.h) on hand-made observations: a leak and a
// premature release are told apart and named; the detail of a message is built only when it fails.
#include "harness/oracles/dlpack_oracles.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/testing/status_matchers.h"

namespace lifeline::oracles {
namespace {

using testing_util::IsOk;

testing::AssertionResult FailsWith(const Status& verdict, const std::string& needle) {
  if (verdict.ok()) return testing::AssertionFailure() << "the oracle passed";
  if (verdict.message().find(needle) == std::string::npos)
    return testing::AssertionFailure() << "'" << verdict.message() << "' does not say '" << needle << "'";
  return testing::AssertionSuccess();
}

TEST(DlpackAccountingOracle, HeldExactlyTellsALeakFromAPrematureRelease) {
  int details = 0;
  auto who = [&] {
    ++details;
    return std::string(" (held by a dict)");
  };
  EXPECT_TRUE(IsOk(CheckHeldExactly("storage #1 (64 B)", true, true, who)));
  EXPECT_TRUE(IsOk(CheckHeldExactly("storage #1 (64 B)", false, false, who)));
  EXPECT_EQ(details, 0) << "the detail is built only for a failure";
  EXPECT_TRUE(FailsWith(CheckHeldExactly("NumPy array #2", false, true, who),
                        "producer bytes still held after every user is gone: NumPy array #2 is alive (held by a dict)"));
  EXPECT_TRUE(FailsWith(CheckHeldExactly("storage #3 (8 B)", true, false, who),
                        "storage #3 (8 B) was freed while the program still holds a user of it"));
}

TEST(DlpackAccountingOracle, ProducerTotalsEqualTheModels) {
  EXPECT_TRUE(IsOk(CheckProducerTotals(2, 96, 2, 96, [] { return std::string("never built"); })));
  EXPECT_TRUE(FailsWith(CheckProducerTotals(2, 96, 1, 64, [] { return std::string("storage #2 (32 B)"); }),
                        "the producer holds 2 storages / 96 B, the model 1 / 64 B (live: storage #2 (32 B))"));
}

TEST(DlpackAccountingOracle, ConsumerTotalsTellALeakFromAPrematureRelease) {
  EXPECT_TRUE(IsOk(CheckConsumerTotals(1, 2, 1, 2)));
  EXPECT_TRUE(FailsWith(CheckConsumerTotals(2, 2, 1, 2), "consumer buffers still held after every user is gone"));
  EXPECT_TRUE(FailsWith(CheckConsumerTotals(1, 1, 1, 2), "freed while the program still holds them"));
}

TEST(DlpackAccountingOracle, EveryExportIsReleasedAtTheEnd) {
  EXPECT_TRUE(IsOk(CheckExportsReleased(0)));
  EXPECT_TRUE(FailsWith(CheckExportsReleased(3), "3 exports were never released"));
}

}  // namespace
}  // namespace lifeline::oracles
