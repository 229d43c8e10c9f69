// The string-handoff programs' codec (harness/programs/handoff/codec.h): a program as JSON, both ways. A
// written program encodes to pinned bytes and back; every input of interop_string_handoff round-trips;
// what the format cannot express is refused by op.
#include "harness/programs/handoff/codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/programs/handoff/format.h"
#include "tests/testing/codec_roundtrip.h"

namespace lifeline::handoff {
namespace {

// wasm-lang-dangling's shape: a multilingual context, an asynchronous submit with a long (heap) language
// string and one with a short (inline) one, then both joined.
constexpr char kTwoSubmits[] = R"({"format": "handoff", "ops": [
  {"id": 0, "op": "bind", "multilingual": true},
  {"id": 1, "op": "submit-async", "slot": 0, "language": "ukrainian-and-more!!", "audio": [0.125, -1.0], "threads": 2, "translate": false},
  {"id": 2, "op": "submit-async", "slot": 0, "language": "de", "audio": [], "threads": 1, "translate": true},
  {"id": 3, "op": "join", "job": "#2"},
  {"id": 4, "op": "join", "job": "#1"}
 ]})";

const std::vector<uint8_t> kTwoSubmitsBytes = {0x75, 0x6b, 0x72, 0x61, 0x69, 0x6e, 0x69, 0x61, 0x6e, 0x2d, 0x61, 0x6e, 0x64, 0x2d, 0x6d, 0x6f, 0x72, 0x65, 0x21, 0x21, 0x06, 0x01, 0x06, 0x01, 0x01, 0x00, 0x02, 0x00, 0x00, 0x02, 0x00, 0x02, 0x78, 0x81, 0x02, 0x14, 0x01, 0x00, 0x02, 0x01, 0x00};

TEST(HandoffCodecGolden, AWrittenProgramEncodesToPinnedBytes) {
  EXPECT_EQ(MakeCodec()->Encode(kTwoSubmits), kTwoSubmitsBytes);
}

TEST(HandoffCodecGolden, ThePinnedBytesDecodeToTheWrittenProgram) {
  EXPECT_EQ(Describe(Decode(kTwoSubmitsBytes.data(), kTwoSubmitsBytes.size())),
            "#0 bind multilingual -> slot 0\n"
            "#1 submit-async slot=0 lang=\"ukrainian-and-more!!\" (20 B, heap) audio=2 threads=2 -> sees "
            "\"ukrainian-and-more!!\" as job 1\n"
            "#2 submit-async slot=0 lang=\"de\" (2 B, inline) audio=0 threads=1 translate -> sees \"de\" as job 2\n"
            "#3 join job 2\n"
            "#4 join job 1\n");
}

// Bytes that are not UTF-8 travel as numbers.
TEST(HandoffCodec, NonUtf8LanguagesRoundTripAsBytes) {
  auto codec = MakeCodec();
  const std::string text = R"({"format": "handoff", "ops": [
  {"id": 0, "op": "bind", "multilingual": true},
  {"id": 1, "op": "submit-sync", "slot": 0, "language_bytes": [255, 0, 100], "threads": 1}]})";
  const std::vector<uint8_t> bytes = codec->Encode(text);
  const Program p = Decode(bytes.data(), bytes.size());
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].language, std::string("\xff\0d", 3));
  EXPECT_NE(codec->Decode(bytes.data(), bytes.size()).find("\"language_bytes\":[255,0,100]"), std::string::npos);
}

TEST(HandoffCodec, ProgramsTheFormatCannotExpressAreRefusedByOp) {
  auto codec = MakeCodec();
  auto refusal = [&](const std::string& text) { return testing::RefusalOf(*codec, text); };
  // A join before any job: join is not legal with no job in flight.
  EXPECT_EQ(refusal(R"({"format": "handoff", "ops": [{"id": 0, "op": "join", "job": "#0"}]})"),
            "op #0 (join): names #0, which comes after it");
  EXPECT_EQ(refusal(R"({"format": "handoff", "ops": [{"id": 0, "op": "bind", "multilingual": true},
     {"id": 1, "op": "submit-sync", "slot": 0, "language": "de", "threads": 1},
     {"id": 2, "op": "join", "job": "#1"}]})"),
            "op #2: this kind of op is not legal here");
  // A language longer than the format's 40 bytes, a slot past the four.
  EXPECT_EQ(refusal(R"({"format": "handoff", "ops": [{"id": 0, "op": "submit-sync", "slot": 0, "language": ")" +
                    std::string(41, 'x') + R"(", "threads": 1}]})"),
            "op #0: value 41 outside [0, 40]");
  EXPECT_EQ(refusal(R"({"format": "handoff", "ops": [{"id": 0, "op": "submit-sync", "slot": 4, "language": "", "threads": 1}]})"),
            "op #0: value 4 outside [0, 3]");
  EXPECT_EQ(refusal(R"({"format": "handoff", "ops": [{"id": 0, "op": "bind"}]})"), "op #0 (bind): missing 'multilingual'");
}

TEST(HandoffCodecRoundTrip, EveryInput) {
  testing::ExpectEveryInputRoundTrips(*MakeCodec(), LIFELINE_SOURCE_DIR, "interop_string_handoff", 20);
}

}  // namespace
}  // namespace lifeline::handoff
