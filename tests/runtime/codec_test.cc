// The runtime programs' codecs (harness/programs/runtime/codec.h): a program as JSON, both ways, for the
// encoder-lifetime and the buffer-reclaim programs. Written programs encode to pinned bytes and back;
// every input of both targets round-trips; what the formats cannot express is refused by op.
#include "harness/programs/runtime/codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/programs/runtime/format.h"
#include "tests/testing/codec_roundtrip.h"

namespace lifeline::rtprog {
namespace {

// metal-edesc-autorelease's shape: a context created under a pool, the pool drained, then a frame computed.
constexpr char kContextOutlivesPool[] = R"({"format": "runtime-encoder", "ops": [
  {"id": 0, "op": "push-pool"},
  {"id": 1, "op": "create-context", "n_cb": 2},
  {"id": 2, "op": "drain-pool"},
  {"id": 3, "op": "compute", "context": "#1", "frame": [
    {"kernel": "fill", "out": 0, "n": 64, "value": 1.5},
    {"kernel": "add", "out": 2, "a": 0, "b": 1, "n": 64}]},
  {"id": 4, "op": "destroy-context", "context": "#1"}
 ]})";
const std::vector<uint8_t> kContextOutlivesPoolBytes = {0x03, 0x00, 0x40, 0x00, 0x01, 0x00, 0x02, 0x01, 0x53, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x01, 0x01, 0x02};

// igl-capture-retains-buffers's shape: capture on, a buffer created, written, read and destroyed.
constexpr char kCapturedBuffer[] = R"({"format": "runtime-reclaim", "ops": [
  {"id": 0, "op": "capture-on"},
  {"id": 1, "op": "create", "floats": 256},
  {"id": 2, "op": "write", "buffer": "#1", "seed": 9},
  {"id": 3, "op": "dispatch", "dispatch": {"kernel": "scale", "out": "#1", "a": "#1", "n": 16, "value": -1.0}},
  {"id": 4, "op": "read", "buffer": "#1"},
  {"id": 5, "op": "destroy", "buffer": "#1", "purge": true}
 ]})";
const std::vector<uint8_t> kCapturedBufferBytes = {0x01, 0x04, 0x03, 0x01, 0x10, 0x00, 0x02, 0x02, 0x09, 0x01, 0xff, 0x00, 0x00, 0x01};

TEST(RuntimeCodecGolden, WrittenProgramsEncodeToPinnedBytes) {
  EXPECT_EQ(MakeEncoderCodec()->Encode(kContextOutlivesPool), kContextOutlivesPoolBytes);
  EXPECT_EQ(MakeReclaimCodec()->Encode(kCapturedBuffer), kCapturedBufferBytes);
}

TEST(RuntimeCodecGolden, ThePinnedBytesDecodeToTheWrittenPrograms) {
  EXPECT_EQ(Describe(DecodeEncoder(kContextOutlivesPoolBytes.data(), kContextOutlivesPoolBytes.size())),
            "#0 push-pool\n"
            "#1 create-context n_cb=2 -> ctx0\n"
            "#2 drain-pool\n"
            "#3 compute ctx0 [fill b0 <- n=64 value=1.5; add b2 <- b0 b1 n=64]\n"
            "#4 destroy-context ctx0\n");
  EXPECT_EQ(Describe(DecodeReclaim(kCapturedBufferBytes.data(), kCapturedBufferBytes.size())),
            "#0 capture-on\n"
            "#1 create 256 floats -> s0\n"
            "#2 write s0 seed=9\n"
            "#3 dispatch scale s0 <- s0 n=16 value=-1\n"
            "#4 read s0\n"
            "#5 destroy s0 then purge\n");
}

TEST(RuntimeCodec, ProgramsTheFormatsCannotExpressAreRefusedByOp) {
  auto refusal = [&](const programs::Codec& codec, const std::string& text) { return testing::RefusalOf(codec, text); };
  // A context needs a pool on the stack; a fill value no pattern starts with; a buffer destroyed twice.
  EXPECT_EQ(refusal(*MakeEncoderCodec(), R"({"format": "runtime-encoder", "ops": [{"id": 0, "op": "create-context", "n_cb": 1}]})"),
            "op #0: this kind of op is not legal here");
  EXPECT_EQ(refusal(*MakeEncoderCodec(), R"({"format": "runtime-encoder", "ops": [{"id": 0, "op": "push-pool"},
     {"id": 1, "op": "create-context", "n_cb": 1},
     {"id": 2, "op": "compute", "context": "#1", "frame": [{"kernel": "fill", "out": 0, "n": 1, "value": 0.25}]}]})"),
            "op #2: a fill value no pattern starts with");
  EXPECT_EQ(refusal(*MakeReclaimCodec(), R"({"format": "runtime-reclaim", "ops": [{"id": 0, "op": "create", "floats": 4},
     {"id": 1, "op": "destroy", "buffer": "#0"}, {"id": 2, "op": "create", "floats": 4}, {"id": 3, "op": "read", "buffer": "#0"}]})"),
            "op #3: names the object of op #0, which made none that is alive here");
}

TEST(RuntimeCodecRoundTrip, EveryEncoderInput) {
  testing::ExpectEveryInputRoundTrips(*MakeEncoderCodec(), LIFELINE_SOURCE_DIR, "runtime_encoder_lifetime", 20);
}

TEST(RuntimeCodecRoundTrip, EveryReclaimInput) {
  testing::ExpectEveryInputRoundTrips(*MakeReclaimCodec(), LIFELINE_SOURCE_DIR, "runtime_buffer_reclaim", 20);
}

}  // namespace
}  // namespace lifeline::rtprog
