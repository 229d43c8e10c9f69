// The handoff op decoder is a file format: these tests pin how bytes become ops. If one fails after a
// deliberate decoder change, every file in corpus/interop_string_handoff/ and repro/wasm-lang-dangling/
// now means something else: regenerate them and update bug.json's "program" lines in the same change.
#include "harness/programs/handoff_program.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace lifeline::handoff {
namespace {

// FuzzedDataProvider takes integers from the back and strings from the front: the strings "xyz" and
// "fr\0ab" lead, the op choices follow in reverse order of consumption.
constexpr uint8_t kEveryOpKind[] = {
    0x78, 0x79, 0x7a, 0x66, 0x72, 0x00, 0x61, 0x62, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x02, 0x06, 0x01, 0x01, 0x01, 0x00, 0x05,
    0x00, 0x04, 0x01, 0x05, 0x00, 0x02, 0x00, 0x05, 0x02, 0x00, 0x03, 0x00, 0x01, 0x00, 0x03, 0x01, 0x01,
    0x02, 0x01, 0x03, 0x7c, 0x88, 0x02, 0x02, 0x00, 0x00, 0x02, 0x00, 0x00, 0x01, 0x00,
};

constexpr char kEveryOpKindProgram[] =
    "#0 bind multilingual -> slot 0\n"
    "#1 bind english-only -> slot 1\n"
    "#2 submit-async slot=0 lang=\"de\" (2 B, inline) audio=2 threads=3 translate -> sees \"de\" as job 1\n"
    "#3 submit-async slot=1 lang=\"xyz\" (3 B, inline) audio=0 threads=1 -> sees \"en\" as job 2\n"
    "#4 submit-sync slot=0 lang=\"fr\\x00ab\" (5 B, inline) audio=0 threads=2 -> sees \"fr\"\n"
    "#5 cancel job 2\n"
    "#6 start job 1\n"
    "#7 cancel job 1 -> FAILED_PRECONDITION\n"
    "#8 rebind slot=1 multilingual -> slot 1\n"
    "#9 join job 1\n"
    "#10 submit-async slot=3 lang=\"en\" (2 B, inline) audio=0 threads=1 -> NOT_FOUND\n"
    "#11 bind english-only -> slot 2\n"
    "#12 bind english-only -> slot 3\n"
    "#13 bind english-only -> RESOURCE_EXHAUSTED\n"
    "#14 submit-async slot=0 lang=\"\" (0 B, inline) audio=0 threads=0 -> INVALID_ARGUMENT\n";

TEST(HandoffDecoderGolden, EveryOpKindDecodesToThePinnedProgram) {
  Program p = Decode(kEveryOpKind, sizeof(kEveryOpKind));
  EXPECT_EQ(Describe(p), kEveryOpKindProgram);
  ASSERT_GE(p.size(), 3u);
  EXPECT_EQ(p[2].audio, (std::vector<float>{1.0f, -0.5f}));
}

std::vector<uint8_t> ReadRepro(const char* name) {
  std::ifstream in(std::string(LIFELINE_SOURCE_DIR "/repro/wasm-lang-dangling/") + name, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(HandoffDecoderGolden, ReproducerInputsDecodeToTheProgramsInBugJson) {
  std::vector<uint8_t> s = ReadRepro("short-inline-string");
  EXPECT_EQ(Describe(Decode(s.data(), s.size())),
            "#0 bind multilingual -> slot 0\n"
            "#1 submit-async slot=0 lang=\"de\" (2 B, inline) audio=0 threads=1 -> sees \"de\" as job 1\n"
            "#2 join job 1\n");
  std::vector<uint8_t> l = ReadRepro("long-heap-string");
  EXPECT_EQ(Describe(Decode(l.data(), l.size())),
            "#0 bind multilingual -> slot 0\n"
            "#1 submit-async slot=0 lang=\"ukrainian-and-more!!\" (20 B, heap) audio=0 threads=1 -> sees "
            "\"ukrainian-and-more!!\" as job 1\n"
            "#2 join job 1\n");
}

// The executor agrees with every prediction of the pinned program on the fixed code: statuses, slots,
// job ids, what each worker saw, and the ledger at the end.
TEST(HandoffExecutor, PinnedProgramRunsCleanOnFixedCode) {
  Execute(Decode(kEveryOpKind, sizeof(kEveryOpKind)));
}

TEST(HandoffExecutorDeathTest, ValueOracleNamesTheJobAndTheBytes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Program p = Decode(kEveryOpKind, sizeof(kEveryOpKind));
  p[2].expect_language = "da";  // a model that disagrees with what the worker will read
  EXPECT_DEATH(Execute(p), "value oracle: job 1 submitted language \"da\" but the worker read \"de\"");
}

TEST(HandoffExecutorDeathTest, StatusOracleNamesTheOpAndBothStatuses) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Program p = Decode(kEveryOpKind, sizeof(kEveryOpKind));
  p[7].expect = StatusCode::kOk;  // cancel after start is refused by the API
  EXPECT_DEATH(Execute(p), "status oracle: cancel job 1 returned FAILED_PRECONDITION(.|\n)*op: #7 of 15(.|\n)*=> #7 cancel job 1");
}

TEST(HandoffDecoder, EmptyInputDecodesToEmptyProgram) { EXPECT_TRUE(Decode(nullptr, 0).empty()); }

TEST(HandoffDecoder, ProgramIsBoundedByMaxOps) {
  std::vector<uint8_t> bytes(100000, 0x5a);
  EXPECT_LE(Decode(bytes.data(), bytes.size()).size(), kMaxOps);
}

TEST(HandoffDecoder, SameBytesSameProgram) {
  EXPECT_EQ(Describe(Decode(kEveryOpKind, sizeof(kEveryOpKind))),
            Describe(Decode(kEveryOpKind, sizeof(kEveryOpKind))));
}

}  // namespace
}  // namespace lifeline::handoff
