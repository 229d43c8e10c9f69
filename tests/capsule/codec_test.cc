// The capsule programs' codec (harness/programs/capsule/codec.h): a program as JSON, both ways, for one
// peer (interop_capsule_lifecycle) and for NumPy and PyTorch (torch_capsule_lifecycle). A written program
// encodes to pinned bytes and back; every input of both targets round-trips; what the format cannot
// express is refused by op. Objects are named by the op that made them, so a program keeps its meaning
// when ops before it go and slots move.
#include "harness/programs/capsule/codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/programs/capsule/upstream/numpy_peer.h"
#include "harness/programs/capsule/upstream/torch_peer.h"
#include "tests/testing/codec_roundtrip.h"

namespace lifeline::capsule {
namespace {

const Peers kNumpy = {&NumpyRules()};
const Peers kNumpyTorch = {&NumpyRules(), &TorchRules()};

// A torch tensor exported with torch.utils.dlpack.to_dlpack, imported and read by NumPy.
constexpr char kTorchToNumpy[] = R"({"format": "capsule", "peers": ["numpy", "torch"], "ops": [
  {"id": 0, "op": "create-array", "peer": "torch", "dtype": "float32", "shape": [2, 3], "layout": "strided", "seed": 5, "readonly": false, "flavor": "requires-grad"},
  {"id": 1, "op": "export-array", "src": "#0", "via": "to_dlpack"},
  {"id": 2, "op": "peer-from-capsule", "src": "#1", "peer": "numpy"},
  {"id": 3, "op": "read", "src": "#2"}
 ]})";

const std::vector<uint8_t> kTorchToNumpyBytes = {0x01, 0x06, 0x00, 0x05, 0x01, 0x02, 0x03, 0x00, 0x05, 0x02, 0x03, 0x02, 0x02, 0x00, 0x01, 0x01};

TEST(CapsuleCodecGolden, AWrittenProgramEncodesToPinnedBytes) {
  EXPECT_EQ(MakeCodec(kNumpyTorch)->Encode(kTorchToNumpy), kTorchToNumpyBytes);
}

TEST(CapsuleCodecGolden, ThePinnedBytesDecodeToTheWrittenProgram) {
  EXPECT_EQ(Describe(Decode(kTorchToNumpyBytes.data(), kTorchToNumpyBytes.size(), kNumpyTorch)),
            "#0 create-array (torch) float32[2,3] strided seed=5 requires-grad -> a0\n"
            "#1 export-array a0 via to_dlpack -> c0\n"
            "#2 numpy-from-capsule c0 -> a1\n"
            "#3 read a1\n");
}

// Dropping the first of two arrays moves the second into slot a0: the program still names it by its op.
TEST(CapsuleCodec, ObjectsAreNamedByTheOpThatMadeThem) {
  auto codec = MakeCodec(kNumpy);
  const std::string text = R"({"format": "capsule", "peers": ["numpy"], "ops": [
  {"id": 0, "op": "create-array", "dtype": "int8", "shape": [3], "layout": "contiguous", "seed": 1, "readonly": false},
  {"id": 1, "op": "create-array", "dtype": "float32", "shape": [2, 2], "layout": "transposed", "seed": 2, "readonly": false},
  {"id": 2, "op": "drop", "src": "#0"},
  {"id": 3, "op": "export-array", "src": "#1", "via": "__dlpack__"},
  {"id": 4, "op": "create-tensor", "dtype": "bool", "shape": [], "layout": "contiguous", "seed": 0, "readonly": true},
  {"id": 5, "op": "import-capsule", "src": "#3"},
  {"id": 6, "op": "read", "src": "#5"}
 ]})";
  const std::vector<uint8_t> bytes = codec->Encode(text);
  EXPECT_EQ(Describe(Decode(bytes.data(), bytes.size(), kNumpy)),
            "#0 create-array int8[3] contiguous seed=1 -> a0\n"
            "#1 create-array float32[2,2] transposed seed=2 -> a1\n"
            "#2 drop a0\n"
            "#3 export-array a1 -> c0\n"
            "#4 create-tensor bool[] contiguous seed=0 readonly -> t0\n"
            "#5 import-capsule c0 -> v0\n"
            "#6 read v0\n");
  // Without op 0 (and the drop that names it) the second array is a0.
  std::string shorter = text;
  for (const char* line : {"  {\"id\": 0, ", "  {\"id\": 2, "}) {
    const size_t at = shorter.find(line);
    shorter.erase(at, shorter.find('\n', at) + 1 - at);
  }
  const std::vector<uint8_t> fewer = codec->Encode(shorter);
  EXPECT_EQ(Describe(Decode(fewer.data(), fewer.size(), kNumpy)),
            "#0 create-array float32[2,2] transposed seed=2 -> a0\n"
            "#1 export-array a0 -> c0\n"
            "#2 create-tensor bool[] contiguous seed=0 readonly -> t0\n"
            "#3 import-capsule c0 -> v0\n"
            "#4 read v0\n");
}

TEST(CapsuleCodec, ProgramsTheFormatCannotExpressAreRefusedByOp) {
  auto refusal = [&](const Peers& peers, const std::string& text) { return testing::RefusalOf(*MakeCodec(peers), text); };
  // NumPy makes no bfloat16 arrays; with one peer there is no torch to name.
  EXPECT_EQ(refusal(kNumpy, R"({"format": "capsule", "ops": [{"id": 0, "op": "create-array", "dtype": "bfloat16", "shape": [], "layout": "contiguous", "seed": 0}]})"),
            "op #0: a dtype this party does not make");
  EXPECT_EQ(refusal(kNumpyTorch, R"({"format": "capsule", "ops": [{"id": 0, "op": "create-array", "peer": "jax", "dtype": "int8", "shape": [], "layout": "contiguous", "seed": 0}]})"),
            "op #0 (create-array): 'peer' is \"jax\", not a peer of this target");
  // Reading a capsule: only tensors, arrays and views are read.
  EXPECT_EQ(refusal(kNumpy, R"({"format": "capsule", "ops": [
     {"id": 0, "op": "create-tensor", "dtype": "int8", "shape": [1], "layout": "contiguous", "seed": 0},
     {"id": 1, "op": "export-tensor", "src": "#0"},
     {"id": 2, "op": "read", "src": "#1"}]})"),
            "op #2: not one of the 1 operands legal here");
  EXPECT_EQ(refusal(kNumpy, R"({"format": "capsule", "ops": [{"id": 0, "op": "create-tensor", "dtype": "int8", "shape": [5], "layout": "contiguous", "seed": 0}]})"),
            "op #0: value 5 outside [0, 4]");
}

TEST(CapsuleCodecRoundTrip, EveryNumpyInput) {
  testing::ExpectEveryInputRoundTrips(*MakeCodec(kNumpy), LIFELINE_SOURCE_DIR, "interop_capsule_lifecycle", 40);
}

TEST(CapsuleCodecRoundTrip, EveryTorchInput) {
  testing::ExpectEveryInputRoundTrips(*MakeCodec(kNumpyTorch), LIFELINE_SOURCE_DIR, "torch_capsule_lifecycle", 30);
}

}  // namespace
}  // namespace lifeline::capsule
