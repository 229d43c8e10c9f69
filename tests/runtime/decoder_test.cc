// The runtime op programs are file formats: these golden tests pin fixed bytes (the reproducers'
// inputs) to their decoded programs. If one fails after a deliberate decoder change, every file in
// corpus/runtime_*/ and repro/{metal-*,igl-*}/ now means something else: regenerate them in the same
// change. Decoding needs no device; the executors are exercised by the corpus and reproducer tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "harness/programs/runtime/format.h"

namespace lifeline::rtprog {
namespace {

TEST(RuntimeDecoderGolden, EncoderBytesDecodeToThePinnedProgram) {
  // repro/metal-encode-async-block/stored-stack-callback as it was before its reduction
  const std::vector<uint8_t> bytes = {0x01, 0x05, 0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x02, 0x05,
                                      0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x04, 0x01, 0x02};
  EXPECT_EQ(Describe(DecodeEncoder(bytes.data(), bytes.size())),
            "#0 push-pool\n"
            "#1 create-context n_cb=2 -> ctx0\n"
            "#2 compute ctx0 [fill b0 <- n=64 value=5; scale b1 <- b0 n=64 value=2]\n"
            "#3 destroy-context ctx0\n"
            "#4 drain-pool\n");
}

TEST(RuntimeDecoderGolden, ReclaimBytesDecodeToThePinnedProgram) {
  // repro/igl-capture-retains-buffers/purge-workaround as it was before its reduction
  const std::vector<uint8_t> bytes = {0x01, 0x04, 0x03, 0x01, 0x0f, 0x00, 0x00, 0x01};
  EXPECT_EQ(Describe(DecodeReclaim(bytes.data(), bytes.size())),
            "#0 capture-on\n"
            "#1 create 16 floats -> s0\n"
            "#2 write s0 seed=3\n"
            "#3 destroy s0 then purge\n");
}

TEST(RuntimeDecoder, InvalidThreadCountIsPredictedAsInvalidArgument) {
  // push-pool, create-context n_cb=1, set-threads ctx0 n_cb=0 (bytes consumed from the end).
  const std::vector<uint8_t> bytes = {0x00, 0x03, 0x00, 0x02};
  EncoderProgram p = DecodeEncoder(bytes.data(), bytes.size());
  ASSERT_EQ(p.size(), 3u) << Describe(p);
  EXPECT_EQ(p[2].kind, EncoderOpKind::kSetThreads);
  EXPECT_EQ(p[2].expect, StatusCode::kInvalidArgument);
}

TEST(RuntimeDecoder, OneCreateInSixtyFourAsksForAnInvalidSize) {
  // From the back: create; its size from the next two bytes, 0xfc00 (>= 63 * 1024: the invalid request);
  // create; size 0x0010 -> 1 + 16 floats. The size of a valid create reads only the low ten bits, so
  // inputs decoded before the invalid request existed keep their programs.
  const std::vector<uint8_t> bytes = {0x10, 0x00, 0x00, 0xfc, 0x00};
  ReclaimProgram p = DecodeReclaim(bytes.data(), bytes.size());
  EXPECT_EQ(Describe(p),
            "#0 create 0 floats -> s0 -> INVALID_ARGUMENT\n"
            "#1 create 17 floats -> s0\n");
}

TEST(RuntimeDecoder, ProgramsAreBoundedByMaxOps) {
  for (uint8_t fill : {0x00, 0x5a, 0xff}) {
    SCOPED_TRACE(static_cast<int>(fill));
    const std::vector<uint8_t> bytes(4096, fill);
    EXPECT_LE(DecodeEncoder(bytes.data(), bytes.size()).size(), kMaxOps);
    EXPECT_LE(DecodeReclaim(bytes.data(), bytes.size()).size(), kMaxOps);
  }
  EXPECT_TRUE(DecodeEncoder(nullptr, 0).empty());
  EXPECT_TRUE(DecodeReclaim(nullptr, 0).empty());
}

}  // namespace
}  // namespace lifeline::rtprog
