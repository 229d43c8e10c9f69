// The capsule program (harness/programs/capsule_program.h), moved verbatim from the DLPack tests: the
// decoder's golden tests and the pinned programs run on the fixed code under DlpackTest
// (tests/testing/python_fixture.h).
//
// The capsule-program decoder is a file format: the golden tests below pin how bytes become ops. If one
// fails after a deliberate decoder change, every file in corpus/interop_capsule_lifecycle/ now means
// something else: regenerate them in the same change.
#include <Python.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/programs/capsule_program.h"
#include "layers/interop/dlpack_consumer.h"
#include "layers/interop/dlpack_producer.h"
#include "layers/interop/python_runtime.h"
#include "tests/testing/python_fixture.h"

namespace lifeline {
namespace {

using testing_util::DlpackTest;

// ---- the capsule program ----------------------------------------------------------------------------

// FuzzedDataProvider takes integers from the back of the input; these pin one program each.
constexpr uint8_t kProgramA[] = {
    0x07, 0x04, 0x01, 0x04, 0x02, 0x02, 0x0f, 0x09, 0x0c, 0x03, 0x0a, 0x0b,
    0x05, 0x02, 0x0f, 0x08, 0x0c, 0x0b, 0x0a, 0x08, 0x08, 0x07, 0x0d, 0x06,
};
constexpr uint8_t kProgramB[] = {
    0x0e, 0x0f, 0x03, 0x09, 0x0a, 0x03, 0x06, 0x07, 0x0d, 0x02, 0x02, 0x0e,
    0x06, 0x09, 0x0f, 0x05, 0x08, 0x0a, 0x02, 0x0c, 0x0a, 0x0c, 0x03, 0x02,
    0x04, 0x07, 0x08, 0x01, 0x0e, 0x05, 0x01, 0x0c, 0x09, 0x08, 0x01, 0x06,
    0x00, 0x05, 0x0a, 0x09,
};
constexpr uint8_t kProgramC[] = {0x03, 0x00, 0x0e, 0x02, 0x04, 0x01, 0x00, 0x0c, 0x01, 0x03, 0x02, 0x02,
                                 0x00, 0x01, 0x07, 0x03, 0x04, 0x05, 0x02, 0x00, 0x09, 0x01, 0x00, 0x00};

constexpr char kProgramAText[] =
    "0: create-tensor float16[3,3] strided seed=11 -> t0\n"
    "1: malformed too-many-dims of t0 -> v0  (raises BufferError)\n"
    "2: export-tensor t0 -> c0\n"
    "3: numpy-from-tensor t0 -> a0\n"
    "4: collect\n"
    "5: drop t0\n"
    "6: import-capsule c0 -> v0\n"
    "7: make-cycle v0\n"
    "8: read a0\n"
    "9: export-array a0 -> c1  (raises BufferError)\n"
    "10: export-array a0 -> c1  (raises BufferError)\n"
    "11: import-from-array a0 -> v0  (raises BufferError)\n"
    "12: create-array float32[0,0] contiguous seed=0 -> a1\n";
constexpr char kProgramBText[] =
    "0: create-tensor int8[] contiguous seed=6 readonly -> t0\n"
    "1: malformed dtype of t0 -> v0  (raises BufferError)\n"
    "2: import-from-tensor t0 contiguous -> v0\n"
    "3: view-buffer v0 -> b0\n"
    "4: import-from-tensor t0 contiguous -> v1\n"
    "5: make-cycle v1\n"
    "6: numpy-from-tensor t0 -> a0\n"
    "7: export-tensor t0 -> c0\n"
    "8: export-array a0 -> c1  (raises BufferError)\n"
    "9: make-cycle v0\n"
    "10: drop t0\n"
    "11: export-array a0 -> c1  (raises BufferError)\n"
    "12: create-array float32[] offset seed=9 -> a1\n"
    "13: numpy-from-capsule c0 -> a2\n"
    "14: export-array a2 -> c1  (raises BufferError)\n"
    "15: import-from-array a1 -> v0\n"
    "16: view-buffer v0 -> b1\n"
    "17: import-capsule c0 -> v1  (raises BufferError)\n"
    "18: collect\n"
    "19: make-cycle v0\n"
    "20: import-capsule c0 -> v0  (raises BufferError)\n"
    "21: read a2\n";
constexpr char kProgramCText[] =
    "0: create-tensor float32[4] contiguous seed=2 readonly -> t0\n"
    "1: numpy-from-tensor t0 -> a0\n"
    "2: export-array a0 -> c0  (raises BufferError)\n"
    "3: read a0\n"
    "4: create-tensor int8[3,1] contiguous seed=0 readonly -> t1\n"
    "5: import-from-tensor t0 -> v0\n"
    "6: create-tensor bool[] contiguous seed=0 -> t2\n";

TEST(CapsuleDecoderGolden, FixedInputsDecodeToThePinnedPrograms) {
  using capsule::Decode;
  using capsule::Describe;
  EXPECT_EQ(Describe(Decode(kProgramA, sizeof(kProgramA))), kProgramAText);
  EXPECT_EQ(Describe(Decode(kProgramB, sizeof(kProgramB))), kProgramBText);
  EXPECT_EQ(Describe(Decode(kProgramC, sizeof(kProgramC))), kProgramCText);
}

TEST(CapsuleDecoder, EmptyInputDecodesToEmptyProgram) { EXPECT_TRUE(capsule::Decode(nullptr, 0).empty()); }

TEST(CapsuleDecoder, ProgramIsBoundedByMaxOps) {
  for (uint8_t fill : {0x00, 0x5a, 0xff}) {
    SCOPED_TRACE(static_cast<int>(fill));
    std::vector<uint8_t> bytes(100000, fill);
    capsule::Program p = capsule::Decode(bytes.data(), bytes.size());
    EXPECT_LE(p.size(), capsule::kMaxOps);
    EXPECT_FALSE(p.empty());
  }
}

TEST(CapsuleDecoder, SameBytesSameProgram) {
  EXPECT_EQ(capsule::Describe(capsule::Decode(kProgramB, sizeof(kProgramB))),
            capsule::Describe(capsule::Decode(kProgramB, sizeof(kProgramB))));
}

// The executor agrees with every prediction of the pinned programs on the fixed code: raised exceptions,
// liveness after every op, values on every read, and nothing left at the end.
TEST_F(DlpackTest, PinnedCapsuleProgramsRunCleanOnFixedCode) {
  for (auto [bytes, size] : {std::pair{kProgramA, sizeof(kProgramA)}, std::pair{kProgramB, sizeof(kProgramB)},
                             std::pair{kProgramC, sizeof(kProgramC)}}) {
    capsule::Program p = capsule::Decode(bytes, size);
    SCOPED_TRACE(capsule::Describe(p));
    capsule::Execute(p);
  }
}

}  // namespace
}  // namespace lifeline
