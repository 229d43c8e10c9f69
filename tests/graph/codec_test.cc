// The graph programs' codec (harness/programs/graph/codec.h): a program as JSON, both ways. Encoding is the
// decoder run with a target (harness/programs/common/source.h), so these tests pin both directions: a
// written program encodes to fixed bytes that decode back to it, every input the project keeps round-trips,
// and what the format cannot express is refused with the op and the reason.
#include "harness/programs/graph/codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/programs/graph/upstream/ggml_rules.h"
#include "tests/testing/codec_roundtrip.h"

namespace lifeline::graphs {
namespace {

// whisper's conv -> encoder shape (gallocr-view-leaf-offset): graph g0 computes a scale of a leaf, graph g1
// views g0's output as a leaf and adds it to an input.
constexpr char kConvToEncoder[] = R"({"format": "graph", "allocators": [{"buffers": [32], "threads": 1}, {"buffers": [32], "threads": 1}],
 "ops": [
  {"id": 0, "op": "leaf", "type": "f32", "ne": [4, 2], "input": true, "preallocated": false},
  {"id": 1, "op": "unary", "fn": "scale", "src": "#0", "param": 2.0, "inplace": false, "cpu": false},
  {"id": 2, "op": "seal"},
  {"id": 3, "op": "alloc+compute", "graph": "#2", "allocator": 0},
  {"id": 4, "op": "view-external", "of": "#1"},
  {"id": 5, "op": "leaf", "type": "f32", "ne": [4, 2], "input": true, "preallocated": false},
  {"id": 6, "op": "binary", "fn": "add", "src": ["#4", "#5"], "inplace": false, "cpu": false},
  {"id": 7, "op": "seal"},
  {"id": 8, "op": "alloc+compute", "graph": "#7", "allocator": 1}
 ]})";

const std::vector<uint8_t> kConvToEncoderBytes = {
    // Pinned: the encoder's output for kConvToEncoder (FuzzedDataProvider reads it from the back).
    0x01, 0x01, 0x03, 0x08, 0x00, 0x01, 0x01, 0x00, 0x02, 0x01, 0x01, 0x03, 0x00, 0x00, 0x01, 0x00, 0x03, 0x07, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01, 0x03, 0x00, 0x05, 0x00, 0x05, 0x00};

TEST(GraphCodecGolden, AWrittenProgramEncodesToPinnedBytes) {
  auto codec = MakeCodec(AllocatorRules{});
  EXPECT_EQ(codec->Encode(kConvToEncoder), kConvToEncoderBytes);
}

TEST(GraphCodecGolden, ThePinnedBytesDecodeToTheWrittenProgram) {
  auto codec = MakeCodec(AllocatorRules{});
  EXPECT_EQ(Describe(Decode(kConvToEncoderBytes.data(), kConvToEncoderBytes.size())),
            "allocator 0: buffer(align 32)\n"
            "allocator 1: buffer(align 32)\n"
            "#0 leaf g0.t0 = none f32 [4,2] input\n"
            "#1 unary g0.t1 = scale f32 [4,2] src0=t0 x2.000\n"
            "#2 seal g0 (t1 becomes the output)\n"
            "#3 alloc+compute g0 with allocator 0\n"
            "#4 view-external g1.t0 = none f32 [4,2] view of g0.t1\n"
            "#5 leaf g1.t1 = none f32 [4,2] input\n"
            "#6 binary g1.t2 = add f32 [4,2] src0=t0 src1=t1\n"
            "#7 seal g1 (t2 becomes the output)\n"
            "#8 alloc+compute g1 with allocator 1\n");
}

// Ids name ops, not positions: an edited program with gaps in its ids (what a reducer leaves) encodes like
// the same program numbered densely.
TEST(GraphCodec, IdsAreNamesNotPositions) {
  auto codec = MakeCodec(AllocatorRules{});
  std::string gapped = kConvToEncoder;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"#0\"", "\"#10\""}, {"\"id\": 0,", "\"id\": 10,"}, {"\"#2\"", "\"#12\""}, {"\"id\": 2,", "\"id\": 12,"}}) {
    for (size_t at = gapped.find(from); at != std::string::npos; at = gapped.find(from, at + to.size()))
      gapped.replace(at, from.size(), to);
  }
  EXPECT_EQ(codec->Encode(gapped), kConvToEncoderBytes);
}

TEST(GraphCodec, DeletingAnOpAndWhatNamesItLeavesAProgram) {
  auto codec = MakeCodec(AllocatorRules{});
  // Without the first placement (op 3), g1 views a tensor that never had memory: its placement is predicted
  // FAILED_PRECONDITION, and the program still encodes.
  std::string text = kConvToEncoder;
  text.erase(text.find("  {\"id\": 3,"), text.find("  {\"id\": 4,") - text.find("  {\"id\": 3,"));
  const std::vector<uint8_t> bytes = codec->Encode(text);
  const std::string back = codec->Decode(bytes.data(), bytes.size());
  EXPECT_NE(back.find("\"expect\":\"FAILED_PRECONDITION\""), std::string::npos) << back;
}

// What the format cannot express names the op and why.
TEST(GraphCodec, ProgramsTheFormatCannotExpressAreRefusedByOp) {
  auto codec = MakeCodec(AllocatorRules{});
  auto refusal = [&](const std::string& text) { return testing::RefusalOf(*codec, text); };
  auto edit = [](std::string s, const std::string& from, const std::string& to) {
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  // An alloc before any graph is sealed: not legal there.
  EXPECT_EQ(refusal(edit(kConvToEncoder, R"({"id": 2, "op": "seal"})", R"({"id": 2, "op": "alloc+compute", "graph": "#0", "allocator": 0})")),
            "op #2: this kind of op is not legal here");
  // A scale factor the format has no byte for.
  EXPECT_EQ(refusal(edit(kConvToEncoder, "\"param\": 2.0", "\"param\": 3.0")),
            "op #1: scale factor 3.000000 is not one of the format's");
  // A reference to an op the program does not hold.
  EXPECT_EQ(refusal(edit(kConvToEncoder, R"("src": "#0")", R"("src": "#99")")),
            "op #1 (unary): names #99, which is not an op of the program");
  // Adding two tensors of different shapes: the second operand is not offered.
  EXPECT_EQ(refusal(edit(kConvToEncoder, R"("ne": [4, 2], "input": true, "preallocated": false},
  {"id": 6)", R"("ne": [4, 1], "input": true, "preallocated": false},
  {"id": 6)")),
            "op #6: not one of the 1 operands legal here");
  // Not a program.
  EXPECT_EQ(refusal("[1, 2]"), "a program is a JSON object");
  EXPECT_EQ(refusal(R"({"format": "capsule", "ops": []})"),
            "\"format\" is \"capsule\", this target's programs are \"graph\"");
  EXPECT_EQ(refusal(R"({"format": "graph", "allocators": [], "ops": [{"id": 0, "op": "fly"}]})"),
            "'allocators' lists two allocators");
}

TEST(GraphCodecRoundTrip, EveryAllocatorInput) {
  testing::ExpectEveryInputRoundTrips(*MakeCodec(AllocatorRules{}), LIFELINE_SOURCE_DIR, "alloc_graph_topology", 40);
}

TEST(GraphCodecRoundTrip, EveryGgmlInput) {
  testing::ExpectEveryInputRoundTrips(*MakeCodec(GgmlRules()), LIFELINE_SOURCE_DIR, "ggml_graph_topology", 40);
}

TEST(GraphCodecRoundTrip, EveryGgmlVulkanInput) {
  testing::ExpectEveryInputRoundTrips(*MakeCodec(GgmlVulkanRules()), LIFELINE_SOURCE_DIR, "ggml_vulkan_graph_topology",
                                      40);
}

}  // namespace
}  // namespace lifeline::graphs
