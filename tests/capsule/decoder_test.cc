// The capsule-program decoder is a file format: these tests pin how bytes become ops, predicted for
// NumPy as the peer. If one fails after a deliberate decoder change, every file in
// corpus/interop_capsule_lifecycle/ and the capsule reproducers in repro/ now means something else:
// regenerate them in the same change.
#include "harness/programs/capsule/format.h"

#include <gtest/gtest.h>

#include <vector>

#include "harness/programs/capsule/upstream/numpy_peer.h"
#include "tests/capsule/pinned_programs.h"

namespace lifeline::capsule {
namespace {

Program DecodeForNumpy(const uint8_t* data, size_t size) { return Decode(data, size, NumpyRules()); }

TEST(CapsuleDecoderGolden, FixedInputsDecodeToThePinnedPrograms) {
  EXPECT_EQ(Describe(DecodeForNumpy(kProgramA, sizeof(kProgramA))), kProgramAText);
  EXPECT_EQ(Describe(DecodeForNumpy(kProgramB, sizeof(kProgramB))), kProgramBText);
  EXPECT_EQ(Describe(DecodeForNumpy(kProgramC, sizeof(kProgramC))), kProgramCText);
}

TEST(CapsuleDecoder, EmptyInputDecodesToEmptyProgram) { EXPECT_TRUE(DecodeForNumpy(nullptr, 0).empty()); }

TEST(CapsuleDecoder, ProgramIsBoundedByMaxOps) {
  for (uint8_t fill : {0x00, 0x5a, 0xff}) {
    SCOPED_TRACE(static_cast<int>(fill));
    std::vector<uint8_t> bytes(100000, fill);
    Program p = DecodeForNumpy(bytes.data(), bytes.size());
    EXPECT_LE(p.size(), kMaxOps);
    EXPECT_FALSE(p.empty());
  }
}

// The layout byte: without bit 7, one of the four classic layouts (the byte modulo 4, as every older input
// reads) and exports without arguments; with bit 7, any of the nine layouts (its low four bits modulo 9) and the
// export arguments its bits 4-6 name.
TEST(CapsuleDecoderGolden, TheLayoutByteBit7DrawsEveryLayoutAndExportArguments) {
  for (int b = 0; b < 256; ++b) {
    SCOPED_TRACE(b);
    // create-tensor float32[2] <layout> seed=0, read from the back: kind, dtype, ndim, extent, layout, seed, flag.
    const uint8_t bytes[] = {0x00, 0x00, static_cast<uint8_t>(b), 0x02, 0x01, 0x00, 0x00};
    Program p = DecodeForNumpy(bytes, sizeof bytes);
    ASSERT_EQ(p.size(), 1u);
    const bool wide = (b & 0x80) != 0;
    EXPECT_EQ(static_cast<int>(p[0].layout), wide ? (b & 0x0f) % 9 : b % 4);
    EXPECT_EQ(static_cast<int>(p[0].export_args), wide ? (b >> 4) & 7 : 0);
  }
  // Encoded: a reversed tensor, a broadcast NumPy array, a NULL-strides tensor, and a classic layout after them.
  const uint8_t widened[] = {0x00, 0x01, 0x01, 0x02, 0x01, 0x02, 0x03, 0x00, 0x00, 0x09, 0x86,
                             0x02, 0x01, 0x01, 0x00, 0x00, 0x07, 0x85, 0x02, 0x03, 0x02, 0x02,
                             0x01, 0x00, 0x05, 0x84, 0x03, 0x02, 0x02, 0x00, 0x00};
  EXPECT_EQ(Describe(DecodeForNumpy(widened, sizeof widened)),
            "#0 create-tensor float32[2,3] reversed seed=5 -> t0\n"
            "#1 create-array int8[3,2] broadcast seed=7 -> a0\n"
            "#2 create-tensor float16[2] null-strides seed=9 -> t1\n"
            "#3 create-tensor bool[1,2] transposed seed=1 -> t2\n");
  // Encoded: every axis reversed, the strides of extent-1 axes, exports asked with a stream and with max_version
  // (NumPy 1.24 and this layer's producer take neither), and a vector dtype (lanes 2).
  const uint8_t versioned[] = {0x0b, 0x00, 0x0a, 0x01, 0x03, 0x00, 0x01, 0xd0, 0x02, 0x01, 0x00, 0x01, 0x01,
                               0x02, 0x00, 0x09, 0xb0, 0x02, 0x01, 0x01, 0x00, 0x00, 0x07, 0x88, 0x03, 0x01,
                               0x02, 0x02, 0x01, 0x00, 0x05, 0x87, 0x03, 0x02, 0x02, 0x00, 0x00};
  EXPECT_EQ(Describe(DecodeForNumpy(versioned, sizeof versioned)),
            "#0 create-tensor float32[2,3] reversed-all seed=5 -> t0\n"
            "#1 create-array int8[1,3] unit-strides seed=7 -> a0\n"
            "#2 create-tensor float16[2] contiguous seed=9 exports __dlpack__(stream=1) -> t1\n"
            "#3 export-tensor t1 __dlpack__(stream=1) -> c0  (raises BufferError)\n"
            "#4 create-array float32[2] contiguous seed=1 exports __dlpack__(max_version=(1, 0)) -> a1\n"
            "#5 export-array a1 __dlpack__(max_version=(1, 0)) -> c0  (raises TypeError)\n"
            "#6 malformed lanes of t0 -> v0  (raises BufferError)\n");
}

// The peer's rules decide the predictions: the same bytes decoded for a peer that exports read-only
// arrays and imports bool predict no refusal where NumPy's rules predict one.
TEST(CapsuleDecoder, PredictionsFollowThePeersRules) {
  PeerRules lenient = NumpyRules();
  lenient.exports |= DTypeBit(interop::DType::kBool);
  lenient.imports |= DTypeBit(interop::DType::kBool);
  lenient.exports_read_only = lenient.imports_read_only = true;
  Program numpy = DecodeForNumpy(kProgramA, sizeof(kProgramA));
  Program other = Decode(kProgramA, sizeof(kProgramA), lenient);
  ASSERT_EQ(numpy.size(), other.size());
  int refused_by_numpy_only = 0;
  for (size_t i = 0; i < numpy.size(); ++i) {
    SCOPED_TRACE(Describe(numpy[i]));
    const bool peer_exports = numpy[i].kind == OpKind::kExportArray || numpy[i].kind == OpKind::kImportFromArray;
    if (peer_exports && numpy[i].expect_error == "BufferError") {
      EXPECT_EQ(other[i].expect_error, "");
      ++refused_by_numpy_only;
    }
  }
  EXPECT_GT(refused_by_numpy_only, 0) << Describe(numpy);
}

}  // namespace
}  // namespace lifeline::capsule
