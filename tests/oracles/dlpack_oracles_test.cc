// The DLPack accounting oracle (harness/oracles/dlpack_oracles.h) on hand-made observations: a leak and a
// premature release are told apart and named; the detail of a message is built only when it fails.
#include "harness/oracles/dlpack_oracles.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/testing/status_matchers.h"

namespace lifeline::oracles {
namespace {

using testing_util::HasStatus;
using testing_util::IsOk;

// A name for CheckHeldExactly, as the executor gives one: built on demand.
Detail Named(const char* name) {
  return [name] { return std::string(name); };
}

TEST(DlpackAccountingOracle, HeldExactlyTellsALeakFromAPrematureRelease) {
  int details = 0;
  auto who = [&] {
    ++details;
    return std::string(" (held by a dict)");
  };
  EXPECT_TRUE(IsOk(CheckHeldExactly(Named("storage #1 (64 B)"), true, true, who)));
  EXPECT_TRUE(IsOk(CheckHeldExactly(Named("storage #1 (64 B)"), false, false, who)));
  EXPECT_EQ(details, 0) << "the detail is built only for a failure";
  EXPECT_TRUE(HasStatus(CheckHeldExactly(Named("NumPy array #2"), false, true, who),
                        StatusCode::kInternal,
                        "producer bytes still held after every user is gone: NumPy array #2 is alive (held by a dict)"));
  EXPECT_TRUE(HasStatus(CheckHeldExactly(Named("storage #3 (8 B)"), true, false, who),
                        StatusCode::kInternal,
                        "storage #3 (8 B) was freed while the program still holds a user of it"));
}

TEST(DlpackAccountingOracle, ProducerTotalsEqualTheModels) {
  EXPECT_TRUE(IsOk(CheckProducerTotals(2, 96, 2, 96, [] { return std::string("never built"); })));
  EXPECT_TRUE(HasStatus(CheckProducerTotals(2, 96, 1, 64, [] { return std::string("storage #2 (32 B)"); }),
                        StatusCode::kInternal,
                        "the producer holds 2 storages / 96 B, the model 1 / 64 B (live: storage #2 (32 B))"));
}

TEST(DlpackAccountingOracle, ConsumerTotalsTellALeakFromAPrematureRelease) {
  EXPECT_TRUE(IsOk(CheckConsumerTotals(1, 2, 1, 2)));
  EXPECT_TRUE(HasStatus(CheckConsumerTotals(2, 2, 1, 2), StatusCode::kInternal,
                        "consumer buffers still held after every user is gone"));
  EXPECT_TRUE(HasStatus(CheckConsumerTotals(1, 1, 1, 2), StatusCode::kInternal,
                        "freed while the program still holds them"));
}

TEST(DlpackAccountingOracle, EveryExportIsReleasedAtTheEnd) {
  EXPECT_TRUE(IsOk(CheckExportsReleased(0)));
  EXPECT_TRUE(HasStatus(CheckExportsReleased(3), StatusCode::kInternal, "3 exports were never released"));
}

}  // namespace
}  // namespace lifeline::oracles
