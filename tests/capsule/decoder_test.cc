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
