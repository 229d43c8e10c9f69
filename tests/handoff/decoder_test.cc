// The handoff op decoder is a file format: these tests pin how bytes become ops. If one fails after a
// deliberate decoder change, every file in corpus/interop_string_handoff/ and repro/wasm-lang-dangling/
// now means something else: regenerate them and update bug.json's "program" lines in the same change.
#include "harness/programs/handoff/format.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "tests/handoff/pinned_program.h"

namespace lifeline::handoff {
namespace {

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
  // The reduced reproducers (lifeline reduce): the empty string is the shortest inline one, and 16 bytes the
  // shortest that libstdc++ keeps on the heap; the program's end joins the job.
  std::vector<uint8_t> s = ReadRepro("short-inline-string");
  EXPECT_EQ(Describe(Decode(s.data(), s.size())),
            "#0 bind multilingual -> slot 0\n"
            "#1 submit-async slot=0 lang=\"\" (0 B, inline) audio=0 threads=1 -> sees \"\" as job 1\n");
  std::vector<uint8_t> l = ReadRepro("long-heap-string");
  EXPECT_EQ(Describe(Decode(l.data(), l.size())),
            "#0 bind multilingual -> slot 0\n"
            "#1 submit-async slot=0 lang=\"ukrainian-and-mo\" (16 B, heap) audio=0 threads=1 -> sees "
            "\"ukrainian-and-mo\" as job 1\n");
}

TEST(HandoffDecoder, EmptyInputDecodesToEmptyProgram) { EXPECT_TRUE(Decode(nullptr, 0).empty()); }

TEST(HandoffDecoder, ProgramIsBoundedByMaxOps) {
  std::vector<uint8_t> bytes(100000, 0x5a);
  EXPECT_LE(Decode(bytes.data(), bytes.size()).size(), kMaxOps);
}

}  // namespace
}  // namespace lifeline::handoff
