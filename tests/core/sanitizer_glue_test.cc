// The sanitizer glue: a region marked dead is seen as dead by the tool this lane runs with, and an access
// to it is a report. Tests exist only in lanes whose tool can observe them, so none is skipped-green.
#include "core/sanitizer.h"

#include <gtest/gtest.h>

#include <memory>

namespace lifeline::san {
namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GLUE_ASAN 1
#endif
#endif

#if defined(GLUE_ASAN)
TEST(SanitizerGlueAsan, DeadRegionIsPoisonedAndAliveRegionIsNot) {
  ASSERT_TRUE(AsanEnabled());
  auto block = std::make_unique<char[]>(64);
  MarkDead(block.get() + 16, 32);
  EXPECT_TRUE(IsDead(block.get() + 16));
  EXPECT_TRUE(IsDead(block.get() + 47));
  EXPECT_FALSE(IsDead(block.get() + 15));
  EXPECT_FALSE(IsDead(block.get() + 48));
  MarkAlive(block.get() + 16, 32, true);
  EXPECT_FALSE(IsDead(block.get() + 16));
}

TEST(SanitizerGlueAsanDeathTest, ReadOfDeadRegionIsUseAfterPoison) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto block = std::make_unique<char[]>(64);
  MarkDead(block.get(), 64);
  volatile char* p = block.get() + 8;
  EXPECT_DEATH((void)*p, "use-after-poison");
  MarkAlive(block.get(), 64, true);
}
#endif

#if defined(LIFELINE_VALGRIND)
TEST(SanitizerGlueValgrind, DeadRegionIsUnaddressableUnderMemcheck) {
  ASSERT_TRUE(ValgrindRequestsEnabled());
  ASSERT_TRUE(RunningOnValgrind()) << "the valgrind lane runs its tests under memcheck";
  auto block = std::make_unique<char[]>(64);
  MarkDead(block.get() + 16, 32);
  EXPECT_TRUE(IsDead(block.get() + 16));
  EXPECT_FALSE(IsDead(block.get() + 8));
  MarkAlive(block.get() + 16, 32, true);
  EXPECT_FALSE(IsDead(block.get() + 16));
}
#endif

TEST(SanitizerGlue, MarkingIsHarmlessWithoutAnObservingTool) {
  // In every lane: marking and un-marking leaves the memory usable once alive again.
  auto block = std::make_unique<char[]>(32);
  MarkDead(block.get(), 32);
  MarkAlive(block.get(), 32, true);
  block[0] = 'x';
  EXPECT_EQ(block[0], 'x');
  EXPECT_FALSE(IsDead(block.get()));
}

}  // namespace
}  // namespace lifeline::san
