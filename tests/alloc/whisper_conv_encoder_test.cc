// Scenario: whisper conv -> encoder, the shape of the documented bug gallocr-view-leaf-offset
// (repro/gallocr-view-leaf-offset/bug.json; docs/architecture.md "Bugs modelled so far"), on the fixed code: the
// encoder graph starts from a leaf view of the conv graph's output, which another allocator placed.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "harness/oracles/alloc_oracles.h"
#include "layers/alloc/eval.h"
#include "layers/alloc/gallocr.h"
#include "layers/alloc/tensor.h"
#include "tests/testing/graph_fixtures.h"

namespace lifeline::alloc {
namespace {

// The shared graph fixtures and status matchers of tests/testing/.
using namespace testing_util;

// Two allocators, as in whisper.cpp: allocator A runs the conv graph, whose result `conv` is marked
// output; allocator B runs the encoder graph, which starts from ggml_view_tensor(conv) — a leaf of B
// whose bytes belong to A. B's plan must record that leaf as not owned (buffer -1, offset kNotOwned,
// size 0), B must place it on conv's bytes, and the encoder must read the values the conv graph wrote.
struct ConvEncoder {
  Context ctx;
  Tensor *mel, *conv, *embd, *enc1, *enc;
  Graph conv_graph, encoder_graph;
  std::unique_ptr<GraphAllocator> alloc_a = MakeAllocator();
  std::unique_ptr<GraphAllocator> alloc_b = MakeAllocator();
  ConvEncoder() {
    mel = F32(ctx, {4, 3}, "mel");
    mel->input = true;
    conv = Named(Must(ctx.Unary(Op::kScale, mel, 0.5f, false)), "conv");
    conv->output = true;
    conv_graph = Must(BuildGraph({conv}));
    embd = Named(Must(ctx.ViewTensor(conv)), "embd");
    enc1 = Named(Must(ctx.Unary(Op::kNeg, embd, 0.0f, false)), "enc1");
    enc = Named(Must(ctx.Unary(Op::kScale, enc1, 3.0f, false)), "enc");
    enc->output = true;
    encoder_graph = Must(BuildGraph({enc}));
  }
  void ExpectViewLeafNotOwned() {
    const TensorPlacement* p = alloc_b->placement_of(embd);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->buffer_id, -1);
    EXPECT_EQ(p->offset, kNotOwned);
    EXPECT_EQ(p->size_max, 0u);
  }
  void RunAndCheck() {
    Fill(mel, 1.0f, 1.0f);
    ASSERT_TRUE(IsOk(Evaluate(conv_graph)));
    oracles::Canary canary(encoder_graph, alloc_b.get());
    oracles::Differential diff(encoder_graph, alloc_b.get(), {enc});
    ASSERT_TRUE(IsOk(Evaluate(encoder_graph)));
    std::vector<float> want_conv, want_enc;
    for (int i = 1; i <= 12; ++i) {
      want_conv.push_back(0.5f * static_cast<float>(i));
      want_enc.push_back(-1.5f * static_cast<float>(i));
    }
    EXPECT_EQ(Values(embd), want_conv);
    EXPECT_EQ(Values(enc), want_enc);
    EXPECT_EQ(Values(conv), want_conv);
    EXPECT_TRUE(IsOk(canary.Check()));
    EXPECT_TRUE(IsOk(diff.Check()));
    EXPECT_TRUE(IsOk(oracles::CheckNoLiveOverlap(encoder_graph, alloc_b.get())));
    EXPECT_TRUE(IsOk(oracles::CheckViewsInsideSources(encoder_graph)));
    EXPECT_TRUE(IsOk(oracles::CheckPlacedInsideBuffers(encoder_graph, alloc_b.get(), Extents(*alloc_b, {BufferSpec{}}))));
  }
};

TEST(WhisperConvToEncoder, ViewOfExternalLeafIsNotOwned) {
  // Scenario: whisper conv -> encoder. The conv graph is planned and placed first, then the encoder
  // graph is planned and placed; the encoder's leaf view of conv is not B's, and reads A's bytes.
  ConvEncoder s;
  ASSERT_TRUE(IsOk(s.alloc_a->Reserve(s.conv_graph)));
  ASSERT_TRUE(IsOk(s.alloc_a->AllocGraph(s.conv_graph)));
  ASSERT_TRUE(IsOk(s.alloc_b->Reserve(s.encoder_graph)));
  s.ExpectViewLeafNotOwned();
  ASSERT_TRUE(IsOk(s.alloc_b->AllocGraph(s.encoder_graph)));
  EXPECT_EQ(s.embd->data, s.conv->data);
  EXPECT_EQ(s.embd->owner, s.alloc_a.get());
  EXPECT_FALSE(InsideBuffer(*s.alloc_b, 0, s.embd));
  EXPECT_TRUE(InsideBuffer(*s.alloc_a, 0, s.conv));
  s.RunAndCheck();
}

TEST(WhisperConvToEncoder, EncoderReservedBeforeConvIsPlaced) {
  // Scenario: whisper conv -> encoder, in whisper_init's order: both graphs are reserved up front, while
  // conv has no memory yet; only then are they placed, conv first. The view leaf's record must still be
  // "not owned" although at reserve time it looked like any unplaced leaf.
  ConvEncoder s;
  ASSERT_TRUE(IsOk(s.alloc_a->Reserve(s.conv_graph)));
  ASSERT_TRUE(IsOk(s.alloc_b->Reserve(s.encoder_graph)));
  s.ExpectViewLeafNotOwned();
  ASSERT_TRUE(IsOk(s.alloc_a->AllocGraph(s.conv_graph)));
  ASSERT_TRUE(IsOk(s.alloc_b->AllocGraph(s.encoder_graph)));
  EXPECT_EQ(s.alloc_b->replans(), 0);
  EXPECT_EQ(s.embd->data, s.conv->data);
  s.RunAndCheck();
}

TEST(WhisperConvToEncoder, EncoderPlacedAgainKeepsItsPlan) {
  // Scenario: whisper conv -> encoder, encoding twice with the same graphs. The first AllocGraph points
  // the view leaf `embd` at conv's bytes (owner: allocator A); that must not make the unchanged encoder
  // graph look different from its plan on the next AllocGraph.
  ConvEncoder s;
  ASSERT_TRUE(IsOk(s.alloc_a->Reserve(s.conv_graph)));
  ASSERT_TRUE(IsOk(s.alloc_a->AllocGraph(s.conv_graph)));
  ASSERT_TRUE(IsOk(s.alloc_b->Reserve(s.encoder_graph)));
  ASSERT_TRUE(IsOk(s.alloc_b->AllocGraph(s.encoder_graph)));
  ASSERT_TRUE(IsOk(s.alloc_a->AllocGraph(s.conv_graph)));
  ASSERT_TRUE(IsOk(s.alloc_b->AllocGraph(s.encoder_graph)));
  EXPECT_EQ(s.alloc_a->replans(), 0);
  EXPECT_EQ(s.alloc_b->replans(), 0);
  s.RunAndCheck();
}

TEST(WhisperConvToEncoder, EncoderOnTwoBuffersCanBePlacedAgain) {
  // Scenario: whisper conv -> encoder with the encoder split over two buffers (as over two backends),
  // encoding twice. With several buffers a re-plan is an error, so placing the unchanged graph again must
  // not need one.
  ConvEncoder s;
  s.alloc_b = MakeAllocator({BufferSpec{}, BufferSpec{}});
  ASSERT_TRUE(IsOk(s.alloc_a->Reserve(s.conv_graph)));
  ASSERT_TRUE(IsOk(s.alloc_a->AllocGraph(s.conv_graph)));
  ASSERT_TRUE(IsOk(s.alloc_b->Reserve(s.encoder_graph, {0, 1})));
  ASSERT_TRUE(IsOk(s.alloc_b->AllocGraph(s.encoder_graph)));
  EXPECT_TRUE(IsOk(s.alloc_b->AllocGraph(s.encoder_graph)));
}

}  // namespace
}  // namespace lifeline::alloc
