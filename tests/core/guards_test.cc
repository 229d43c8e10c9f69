// The guard registry (core/guards.h): LIFELINE_UNGUARD parsing and its refusal of unknown ids, counting once
// per input, and the shared counter file that `lifeline fuzz` reads (its documented layout).
#include "core/guards.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace lifeline {
namespace {

class GuardsDeathTest : public ::testing::Test {
 protected:
  // Each death test runs in a fresh process, so LIFELINE_UNGUARD and LIFELINE_GUARD_COUNTS are read anew.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST(GuardRegistry, EveryIdRoundTripsAndIsABugIdOfAnUpstreamFinding) {
  for (int i = 0; i < kGuardCount; ++i) {
    Guard g = static_cast<Guard>(i);
    SCOPED_TRACE(std::string(GuardId(g)));
    ASSERT_TRUE(GuardFromId(GuardId(g)).has_value());
    EXPECT_EQ(*GuardFromId(GuardId(g)), g);
    // A finding's id is led by its upstream component: ggml, llama (llama.cpp's src/), torch or whisper.
    const std::string_view id = GuardId(g);
    EXPECT_TRUE(id.substr(0, 5) == "ggml-" || id.substr(0, 6) == "llama-" || id.substr(0, 6) == "torch-" ||
                id.substr(0, 8) == "whisper-")
        << id;
    EXPECT_LT(GuardId(g).size(), 56u) << "the counter file keeps 55 characters of an id";
  }
}

TEST(GuardRegistry, ParsesCommaSeparatedListWithBlanks) {
  GuardSet set;
  std::string error;
  ASSERT_TRUE(ParseGuardList(" ggml-gallocr-leaf-records-unchecked ,, ggml-cpu-scale-f16-unsupported", &set, &error))
      << error;
  EXPECT_TRUE(set.Has(Guard::kGgmlGallocrLeafRecordsUnchecked));
  EXPECT_TRUE(set.Has(Guard::kGgmlCpuScaleF16Unsupported));
  EXPECT_FALSE(set.Has(Guard::kGgmlGallocrStalePlanRewiredEdges));
  ASSERT_TRUE(ParseGuardList("", &set, &error));
  EXPECT_TRUE(set.empty());
}

TEST(GuardRegistry, UnknownIdIsAnErrorListingKnownIds) {
  GuardSet set;
  std::string error;
  EXPECT_FALSE(ParseGuardList("ggml-gallocr-leaf-records-unchecked,gallocr-view-leaf-offset", &set, &error));
  EXPECT_NE(error.find("unknown guard 'gallocr-view-leaf-offset' in LIFELINE_UNGUARD"), std::string::npos) << error;
  EXPECT_NE(error.find("known guards: " + KnownGuardIds()), std::string::npos) << error;
}

TEST(GuardCounting, AGuardCountsOncePerInputInWhichItHolds) {
  const GuardCounts before = ProcessGuardCounts();
  const int g = static_cast<int>(Guard::kGgmlGallocrStalePlanRewiredEdges);
  int built = 0;
  auto why = [&] { ++built; return std::string("reason"); };
  BeginGuardedInput();
  EXPECT_TRUE(GuardHolds(Guard::kGgmlGallocrStalePlanRewiredEdges, why));
  EXPECT_TRUE(GuardHolds(Guard::kGgmlGallocrStalePlanRewiredEdges, why));
  BeginGuardedInput();
  BeginGuardedInput();
  EXPECT_TRUE(GuardHolds(Guard::kGgmlGallocrStalePlanRewiredEdges, why));
  EXPECT_EQ(ProcessGuardCounts().inputs - before.inputs, 3u);
  EXPECT_EQ(ProcessGuardCounts().fired[g] - before.fired[g], 2u);
  EXPECT_EQ(built, 0) << "the reason is built only for LIFELINE_TRACE";
}

TEST_F(GuardsDeathTest, AnUnknownUnguardIdExits2NamingIt) {
  EXPECT_EXIT(
      {
        setenv("LIFELINE_UNGUARD", "ggml-gallocr-leaf-records-uncheked", 1);
        BeginGuardedInput();
        std::exit(0);
      },
      ::testing::ExitedWithCode(2), "unknown guard 'ggml-gallocr-leaf-records-uncheked'.*known guards: ggml-");
}

TEST_F(GuardsDeathTest, AnUnguardedGuardNeverHoldsAndIsNotCounted) {
  EXPECT_EXIT(
      {
        setenv("LIFELINE_UNGUARD", "ggml-cpu-scale-f16-unsupported", 1);
        BeginGuardedInput();
        const bool off = !GuardHolds(Guard::kGgmlCpuScaleF16Unsupported, [] { return std::string(); });
        const bool others_on = GuardHolds(Guard::kGgmlGallocrLeafRecordsUnchecked, [] { return std::string(); });
        const int g = static_cast<int>(Guard::kGgmlCpuScaleF16Unsupported);
        std::exit(off && others_on && ProcessGuardCounts().fired[g] == 0 ? 7 : 1);
      },
      ::testing::ExitedWithCode(7), "");
}

struct Entry {
  std::string id;
  uint64_t count;
};

uint64_t U64At(const std::string& bytes, size_t offset) {
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(GuardsDeathTest, TheCounterFileAddsUpEveryProcessInItsDocumentedLayout) {
  // A threadsafe death test re-runs this body in its child up to the death statement: the parent names the
  // file (and starts it afresh) once, the children find the name in their environment.
  const char* given = std::getenv("LIFELINE_GUARDS_TEST_FILE");
  const std::string path = given ? given : ::testing::TempDir() + "lifeline-guard-counts-" + std::to_string(getpid());
  if (given == nullptr) {
    std::remove(path.c_str());
    setenv("LIFELINE_GUARDS_TEST_FILE", path.c_str(), 1);
  }
  auto child = [&] {
    setenv("LIFELINE_GUARD_COUNTS", path.c_str(), 1);
    for (int i = 0; i < 3; ++i) {
      BeginGuardedInput();
      if (i > 0) GuardHolds(Guard::kGgmlGallocrViewNodeOwnedRecord, [] { return std::string(); });
    }
    std::exit(0);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");  // a second process adds to the same file
  const std::string bytes = ReadAll(path);
  ASSERT_EQ(bytes.size(), 24u + 64u * kGuardCount);
  EXPECT_EQ(bytes.substr(0, 8), "LLGUARD1");
  EXPECT_EQ(U64At(bytes, 8), 6u);
  ASSERT_EQ(U64At(bytes, 16), static_cast<uint64_t>(kGuardCount));
  for (int i = 0; i < kGuardCount; ++i) {
    const std::string id(bytes.c_str() + 24 + 64 * i);
    EXPECT_EQ(id, GuardId(static_cast<Guard>(i)));
    EXPECT_EQ(U64At(bytes, 24 + 64 * i + 56), static_cast<Guard>(i) == Guard::kGgmlGallocrViewNodeOwnedRecord ? 4u : 0u)
        << id;
  }
  std::remove(path.c_str());
  unsetenv("LIFELINE_GUARDS_TEST_FILE");
}

TEST_F(GuardsDeathTest, AFileThatIsNotACounterFileIsRefusedNotOverwritten) {
  const std::string path = ::testing::TempDir() + "lifeline-not-counts-" + std::to_string(getpid());
  std::ofstream(path) << "a user's file";
  EXPECT_EXIT(
      {
        setenv("LIFELINE_GUARD_COUNTS", path.c_str(), 1);
        BeginGuardedInput();
        std::exit(0);
      },
      ::testing::ExitedWithCode(2), "is not this build's guard counter file");
  EXPECT_EQ(ReadAll(path), "a user's file");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace lifeline
