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

// The first op of a create-array by `peer` (0 NumPy, 1 torch) of a float32[2]-shaped array, with the dtype and
// layout bytes given. Read from the back: kind, peer, dtype, ndim, extent, layout, seed, readonly, flavor (NumPy
// reads no flavor byte: its last byte starts another op).
Op MadeArray(uint8_t peer, uint8_t dtype, uint8_t layout) {
  const uint8_t bytes[] = {0x00, 0x00, 0x00, layout, 0x02, 0x01, dtype, peer, 0x01};
  Program p = Decode(bytes, sizeof bytes, NumpyAndTorch());
  EXPECT_FALSE(p.empty());
  return p.empty() ? Op{} : p[0];
}

// torch makes the layouts it has: a reversed, NULL-strides or reversed-all request (layout byte 0x84, 0x86, 0x87)
// makes a contiguous tensor, a broadcast or unit-strides one (0x85, 0x88) what was asked; NumPy makes reversed,
// reversed-all and unit-strides arrays. And torch's import of a NumPy array with a
// negative stride is handed to NumPy while the guard torch-from-dlpack-negative-strides-abort holds.
TEST(TorchCapsuleDecoder, EachPeerMakesTheLayoutsItHas) {
  struct Case {
    uint8_t peer, layout;
    const char* made;
  };
  for (const Case& c : {Case{1, 0x03, "offset"}, Case{1, 0x84, "contiguous"}, Case{1, 0x85, "broadcast"},
                        Case{1, 0x86, "contiguous"}, Case{0, 0x84, "reversed"}, Case{0, 0x85, "broadcast"},
                        Case{0, 0x86, "contiguous"}, Case{1, 0x87, "contiguous"}, Case{1, 0x88, "unit-strides"},
                        Case{0, 0x87, "reversed-all"}, Case{0, 0x88, "unit-strides"}}) {
    SCOPED_TRACE(static_cast<int>(c.layout));
    EXPECT_EQ(interop::LayoutName(MadeArray(c.peer, 0x00, c.layout).layout), c.made) << "peer " << int{c.peer};
  }
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
  struct Case {
    uint8_t peer, dtype;
    const char* made;
  };
  for (const Case& c : {Case{0, 0x03, "bool"}, Case{0, 0x07, "bool"}, Case{0, 0x85, "complex64"},
                        Case{0, 0x8b, "uint64"}, Case{0, 0x8d, "complex128"}, Case{0, 0x8e, "float32"},
                        Case{1, 0x06, "complex64"}, Case{1, 0x0d, "complex64"}, Case{1, 0x87, "int16"},
                        Case{1, 0x8a, "float64"}, Case{1, 0x8b, "complex128"}, Case{1, 0x8c, "float32"}}) {
    SCOPED_TRACE(static_cast<int>(c.dtype));
    EXPECT_EQ(interop::DTypeName(MadeArray(c.peer, c.dtype, 0x00).dtype), c.made) << "peer " << int{c.peer};
  }
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
