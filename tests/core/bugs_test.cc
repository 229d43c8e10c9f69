// The bug-switch registry: LIFELINE_REINTRODUCE parsing, and the refusal of unknown ids.
#include "core/bugs.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace lifeline {
namespace {

TEST(BugRegistry, EveryIdRoundTrips) {
  for (int i = 0; i < kBugCount; ++i) {
    Bug bug = static_cast<Bug>(i);
    SCOPED_TRACE(std::string(BugId(bug)));
    ASSERT_TRUE(BugFromId(BugId(bug)).has_value());
    EXPECT_EQ(*BugFromId(BugId(bug)), bug);
  }
}

TEST(BugRegistry, ParsesCommaSeparatedListWithBlanks) {
  BugSet set;
  std::string error;
  ASSERT_TRUE(ParseBugList(" wasm-lang-dangling ,, gallocr-view-leaf-offset", &set, &error)) << error;
  EXPECT_TRUE(set.Has(Bug::kWasmLangDangling));
  EXPECT_TRUE(set.Has(Bug::kGallocrViewLeafOffset));
  EXPECT_FALSE(set.Has(Bug::kMetalEdescAutorelease));
}

TEST(BugRegistry, EmptyValueSwitchesNothingOn) {
  BugSet set;
  std::string error;
  ASSERT_TRUE(ParseBugList("", &set, &error));
  EXPECT_TRUE(set.empty());
}

TEST(BugRegistry, UnknownIdIsAnErrorListingKnownIds) {
  BugSet set;
  std::string error;
  EXPECT_FALSE(ParseBugList("wasm-lang-dangling,wasm-lang-danglin", &set, &error));
  EXPECT_NE(error.find("unknown bug id 'wasm-lang-danglin'"), std::string::npos) << error;
  EXPECT_NE(error.find("turbine-capsule-rename-back"), std::string::npos) << error;
}

TEST(BugRegistry, IdsAreCaseSensitive) {
  BugSet set;
  std::string error;
  EXPECT_FALSE(ParseBugList("WASM-LANG-DANGLING", &set, &error));
}

TEST(BugRegistryDeathTest, UnknownIdInEnvironmentExitsWithStatus2) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("LIFELINE_REINTRODUCE", "no-such-bug", 1);
        (void)Reintroduced(Bug::kWasmLangDangling);
      },
      testing::ExitedWithCode(2), "lifeline: unknown bug id 'no-such-bug'");
}

}  // namespace
}  // namespace lifeline
