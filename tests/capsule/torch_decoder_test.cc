// The capsule decoder with two peers (NumPy and PyTorch, torch_capsule_lifecycle): a pinned program, and
// what a second peer changes. Only the peers' rules are used: no interpreter, no torch. If the golden test
// fails after a deliberate decoder change, corpus/torch_capsule_lifecycle/ and the torch reproducers in
// repro/ now mean something else: regenerate them in the same change.
#include <gtest/gtest.h>

#include <string>

#include "harness/programs/capsule/format.h"
#include "harness/programs/capsule/upstream/numpy_peer.h"
#include "harness/programs/capsule/upstream/torch_peer.h"

namespace lifeline::capsule {
namespace {

// FuzzedDataProvider takes integers from the back of the input. The dtype byte (third from the back) was 0xf4
// until a dtype byte with bit 7 set drew the wider dtypes; 0x76 draws the same complex64 without it.
constexpr uint8_t kTorchProgram[] = {0xe8, 0xdd, 0xcb, 0x81, 0x69, 0xea, 0xe3, 0x0b, 0xbb,
                                     0xde, 0x8e, 0x69, 0xa3, 0xf7, 0xe8, 0x76, 0xd1, 0x3d};
constexpr char kTorchProgramText[] =
    "#0 create-array (torch) complex64[2,3] transposed seed=142 requires-grad -> a0\n"
    "#1 import-from-array a0 contiguous -> v0  (raises RuntimeError)\n"
    "#2 export-array a0 via to_dlpack -> c0\n"
    "#3 torch-from-array a0 -> a1  (raises RuntimeError)\n"
    "#4 create-array (numpy) float32[] contiguous seed=0 -> a1\n";

Peers NumpyAndTorch() { return {&NumpyRules(), &TorchRules()}; }

TEST(TorchCapsuleDecoderGolden, FixedInputDecodesToThePinnedProgram) {
  EXPECT_EQ(Describe(Decode(kTorchProgram, sizeof(kTorchProgram), NumpyAndTorch())), kTorchProgramText);
}

// torch makes the layouts it has: a reversed or NULL-strides request (layout byte 0x84, 0x86) makes a contiguous
// tensor, a broadcast (0x85) a broadcast; NumPy makes reversed arrays. And torch's import of a NumPy array with a
// negative stride is handed to NumPy while the guard torch-from-dlpack-negative-strides-abort holds.
TEST(TorchCapsuleDecoder, EachPeerMakesTheLayoutsItHas) {
  using interop::Layout;
  // create-array (torch) float32[2] <layout> seed=0, read from the back: kind, peer, dtype, ndim, extent, layout,
  // seed, readonly, flavor.
  auto made = [](uint8_t peer, uint8_t layout) {
    const uint8_t bytes[] = {0x00, 0x00, 0x00, layout, 0x02, 0x01, 0x00, peer, 0x01};
    Program p = Decode(bytes, sizeof bytes, NumpyAndTorch());
    return p.empty() ? Layout::kMaxValue : p[0].layout;  // NumPy reads no flavor byte: the last starts an op
  };
  EXPECT_EQ(made(1, 0x03), Layout::kOffset);
  EXPECT_EQ(made(1, 0x84), Layout::kContiguous);
  EXPECT_EQ(made(1, 0x85), Layout::kBroadcast);
  EXPECT_EQ(made(1, 0x86), Layout::kContiguous);
  EXPECT_EQ(made(0, 0x84), Layout::kReversed);
  EXPECT_EQ(made(0, 0x85), Layout::kBroadcast);
  EXPECT_EQ(made(0, 0x86), Layout::kContiguous);
  // The finding's reproducer: numpy float32[2] reversed, then torch.from_dlpack of it.
  const uint8_t reproducer[] = {0x01, 0x07, 0x00, 0x00, 0x84, 0x02, 0x01, 0x00, 0x00, 0x01};
  Program p = Decode(reproducer, sizeof reproducer, NumpyAndTorch());
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(Describe(p[0]), "create-array (numpy) float32[2] reversed seed=0 -> a0");
  EXPECT_EQ(Describe(p[1]), "numpy-from-array a0 -> a1");  // torch asked; the guard hands it to NumPy
}

// The dtype byte of a peer's array: without bit 7, one of the dtypes the programs always drew (the byte modulo
// their number: NumPy 4, torch 7); with bit 7, one of every dtype the peer has (NumPy 14, torch 12: no uint16-64).
TEST(TorchCapsuleDecoder, TheDtypeByteBit7DrawsTheWiderDtypes) {
  using interop::DType;
  auto made = [](uint8_t peer, uint8_t dtype) {
    const uint8_t bytes[] = {0x00, 0x00, 0x00, 0x00, 0x02, 0x01, dtype, peer, 0x01};
    Program p = Decode(bytes, sizeof bytes, NumpyAndTorch());
    return p.empty() ? std::string("none") : std::string(interop::DTypeName(p[0].dtype));
  };
  EXPECT_EQ(made(0, 0x03), "bool");
  EXPECT_EQ(made(0, 0x07), "bool");
  EXPECT_EQ(made(0, 0x85), "complex64");
  EXPECT_EQ(made(0, 0x8b), "uint64");
  EXPECT_EQ(made(0, 0x8d), "complex128");
  EXPECT_EQ(made(0, 0x8e), "float32");
  EXPECT_EQ(made(1, 0x06), "complex64");
  EXPECT_EQ(made(1, 0x0d), "complex64");
  EXPECT_EQ(made(1, 0x87), "int16");
  EXPECT_EQ(made(1, 0x8a), "float64");
  EXPECT_EQ(made(1, 0x8b), "complex128");
  EXPECT_EQ(made(1, 0x8c), "float32");
}

// The predictions above are torch's own rules: __dlpack__ (which import_from and from_dlpack call) refuses
// a tensor that requires grad, to_dlpack exports it. The copy .contiguous() makes still requires grad.
TEST(TorchCapsuleDecoder, RequiresGradIsRefusedByDunderDlpackOnly) {
  Program p = Decode(kTorchProgram, sizeof(kTorchProgram), NumpyAndTorch());
  ASSERT_GE(p.size(), 4u);
  EXPECT_EQ(p[1].expect_error, "RuntimeError");
  EXPECT_EQ(p[2].via, 1);
  EXPECT_EQ(p[2].expect_error, "");
  EXPECT_EQ(p[3].expect_error, "RuntimeError");
}

// With one peer the decoder reads no peer operand and names no party: the same bytes decode as they did
// before PyTorch was a peer (interop_capsule_lifecycle's corpus keeps its meaning).
TEST(TorchCapsuleDecoder, OnePeerProgramsNameNoParty) {
  for (const Op& op : Decode(kTorchProgram, sizeof(kTorchProgram), NumpyRules())) {
    SCOPED_TRACE(Describe(op));
    EXPECT_EQ(op.party, nullptr);
    EXPECT_EQ(op.peer, 0);
    EXPECT_EQ(op.flavor, Flavor::kPlain);
    EXPECT_EQ(op.via, 0);
    EXPECT_NE(op.kind, OpKind::kPeerFromArray);
  }
}

// Every op a peer performs in a two-peer program names that peer.
TEST(TorchCapsuleDecoder, TwoPeerProgramsNameTheActingPeer) {
  std::vector<uint8_t> bytes(4096);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + (i >> 3));
  int named = 0;
  for (const Op& op : Decode(bytes.data(), bytes.size(), NumpyAndTorch())) {
    const bool peer_op = op.kind == OpKind::kCreateArray || op.kind == OpKind::kPeerFromTensor ||
                         op.kind == OpKind::kPeerFromCapsule || op.kind == OpKind::kPeerFromArray;
    if (!peer_op) continue;
    SCOPED_TRACE(Describe(op));
    ASSERT_NE(op.party, nullptr);
    EXPECT_STREQ(op.party, NumpyAndTorch()[op.peer]->name);
    ++named;
  }
  EXPECT_GT(named, 0);
}

}  // namespace
}  // namespace lifeline::capsule
