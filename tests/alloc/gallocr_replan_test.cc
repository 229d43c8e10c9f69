// Re-planning by the gallocr-style GraphAllocator of layers/alloc/gallocr.h, one buffer: an unchanged
// graph keeps its plan; a rewired edge, a leaf that lost or gained its own memory, or a grown graph is
// planned again and placed correctly; a view of a tensor another allocator reserved but never placed is
// refused until that allocator places it, and a refused placement leaves no tensor placed.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "harness/oracles/alloc_oracles.h"
#include "layers/alloc/eval.h"
#include "layers/alloc/gallocr.h"
#include "layers/alloc/tensor.h"
#include "tests/testing/graph_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace lifeline::alloc {
namespace {

// The shared graph fixtures and status matchers of tests/testing/.
using namespace testing_util;

TEST(GraphAllocator, UnchangedGraphKeepsItsPlan) {
  MixedGraph m;
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(m.g)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(m.g)));
  void* s_data = m.s->data;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(IsOk(alloc->AllocGraph(m.g)));
  EXPECT_EQ(alloc->replans(), 0);
  EXPECT_EQ(m.s->data, s_data);
  // Without a Reserve, the first AllocGraph plans once.
  MixedGraph fresh;
  auto lazy = MakeAllocator();
  ASSERT_TRUE(IsOk(lazy->AllocGraph(fresh.g)));
  ASSERT_TRUE(IsOk(lazy->AllocGraph(fresh.g)));
  EXPECT_EQ(lazy->replans(), 1);
  fresh.FillLeafs();
  ASSERT_TRUE(IsOk(Evaluate(fresh.g)));
  fresh.ExpectValues();
}

TEST(GraphAllocator, RewiredGraphWithSameNodeCountIsReplanned) {
  // c = b + x becomes c = b + a: a gains a second consumer, so b may no longer overwrite it in place.
  // With the stale plan c would read b's values twice: "same node count, different edges", the shape
  // upstream ggml keeps its stale plan on (repro/ggml-gallocr-stale-plan-rewired-edges/bug.json).
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* a = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "a");
  Tensor* b = Named(Must(ctx.Unary(Op::kNeg, a, 0.0f, false)), "b");
  Tensor* c = Named(Must(ctx.Binary(Op::kAdd, b, x, false)), "c");
  Graph g1 = Must(BuildGraph({c}));
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g1)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g1)));
  ASSERT_EQ(b->data, a->data);
  ASSERT_EQ(alloc->replans(), 0);

  ASSERT_TRUE(IsOk(ctx.SetSource(c, 1, a)));
  Graph g2 = Must(BuildGraph({c}));
  ASSERT_EQ(g2.nodes, g1.nodes);
  ASSERT_EQ(g2.leafs, g1.leafs);
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g2)));
  EXPECT_EQ(alloc->replans(), 1);
  EXPECT_FALSE(Overlap(b, a));
  EXPECT_TRUE(IsOk(oracles::CheckNoLiveOverlap(g2, alloc.get())));
  EXPECT_TRUE(IsOk(oracles::CheckPlacedInsideBuffers(g2, alloc.get(), Extents(*alloc, {BufferSpec{}}))));
  Fill(x, 1.0f, 1.0f);
  oracles::Differential diff(g2, alloc.get(), {c});
  ASSERT_TRUE(IsOk(Evaluate(g2)));
  EXPECT_TRUE(IsOk(diff.Check()));
  EXPECT_EQ(Values(c), std::vector<float>(8, 0.0f));
}

TEST(GraphAllocator, LeafThatLostItsDataIsReplannedAndPlaced) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* w = F32(ctx, {8}, "w");
  Tensor* y = Named(Must(ctx.Binary(Op::kMul, x, w, false)), "y");
  Graph g = Must(BuildGraph({y}));
  Storage w_mem(w);
  w->data = w_mem.data();  // pre-allocated at Reserve time: not the allocator's
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g)));
  const TensorPlacement* p = alloc->placement_of(w);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->buffer_id, -1);
  EXPECT_EQ(p->offset, kNotOwned);

  w->data = nullptr;  // ... but gone at AllocGraph time
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_EQ(alloc->replans(), 1);
  EXPECT_EQ(w->owner, alloc.get());
  EXPECT_TRUE(InsideBuffer(*alloc, 0, w));
  p = alloc->placement_of(w);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->buffer_id, 0);
  EXPECT_EQ(w->data, alloc->buffer_base(0) + p->offset);
  EXPECT_FALSE(Overlap(w, x));
  EXPECT_TRUE(IsOk(oracles::CheckNoLiveOverlap(g, alloc.get())));
  EXPECT_TRUE(IsOk(oracles::CheckPlacedInsideBuffers(g, alloc.get(), Extents(*alloc, {BufferSpec{}}))));
  Fill(x, 1.0f, 1.0f);
  Fill(w, -2.0f, 0.0f);
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(y), (std::vector<float>{-2, -4, -6, -8, -10, -12, -14, -16}));
}

TEST(GraphAllocator, LeafThatGainedDataIsLeftWhereItIs) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* w = F32(ctx, {8}, "w");
  Tensor* y = Named(Must(ctx.Binary(Op::kAdd, x, w, false)), "y");
  Graph g = Must(BuildGraph({y}));
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g)));
  ASSERT_EQ(alloc->placement_of(w)->buffer_id, 0);
  Storage w_mem(w);
  w->data = w_mem.data();
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_EQ(alloc->replans(), 1);
  EXPECT_EQ(w->data, w_mem.data());
  EXPECT_EQ(w->owner, nullptr);
  EXPECT_EQ(alloc->placement_of(w)->offset, kNotOwned);
  Fill(x, 1.0f, 0.0f);
  Fill(w, 2.0f, 0.0f);
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(y), std::vector<float>(8, 3.0f));
}

TEST(GraphAllocator, GrownGraphCanBeReservedAgain) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* a = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "a");
  Graph g1 = Must(BuildGraph({a}));
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g1)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g1)));
  const size_t size1 = alloc->buffer_size(0);
  Fill(x, 1.0f, 1.0f);
  ASSERT_TRUE(IsOk(Evaluate(g1)));

  // Append to the placed graph: its tensors hold this allocator's (soon stale) addresses.
  Tensor* b = Named(Must(ctx.Concat(a, a)), "b");
  Tensor* c = Named(Must(ctx.Unary(Op::kScale, b, 3.0f, false)), "c");
  Tensor* d = Named(Must(ctx.Binary(Op::kAdd, c, c, false)), "d");
  Graph g2 = Must(BuildGraph({d}));
  ASSERT_TRUE(IsOk(alloc->Reserve(g2)));
  EXPECT_GT(alloc->buffer_size(0), size1);
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g2)));
  EXPECT_EQ(alloc->replans(), 0);
  for (Tensor* t : {x, a, b, c, d}) {
    SCOPED_TRACE(t->name);
    EXPECT_TRUE(InsideBuffer(*alloc, 0, t));
    EXPECT_EQ(t->owner, alloc.get());
  }
  EXPECT_TRUE(IsOk(oracles::CheckNoLiveOverlap(g2, alloc.get())));
  EXPECT_TRUE(IsOk(oracles::CheckPlacedInsideBuffers(g2, alloc.get(), Extents(*alloc, {BufferSpec{}}))));
  Fill(x, 1.0f, 1.0f);
  oracles::Differential diff(g2, alloc.get(), {d});
  ASSERT_TRUE(IsOk(Evaluate(g2)));
  EXPECT_TRUE(IsOk(diff.Check()));
  std::vector<float> want;
  for (int rep = 0; rep < 2; ++rep) {
    for (int i = 1; i <= 8; ++i) want.push_back(-6.0f * static_cast<float>(i));
  }
  EXPECT_EQ(Values(d), want);
}

TEST(GraphAllocator, ViewOfReservedButNeverAllocatedTensorIsFailedPrecondition) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* y = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "y");
  y->output = true;
  Graph ga = Must(BuildGraph({y}));
  auto alloc_a = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc_a->Reserve(ga)));  // reserved only

  Tensor* v = Named(Must(ctx.ViewTensor(y)), "v");
  Tensor* z = Named(Must(ctx.Unary(Op::kScale, v, 2.0f, false)), "z");
  Graph gb = Must(BuildGraph({z}));
  auto alloc_b = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc_b->Reserve(gb)));
  Status s = alloc_b->AllocGraph(gb);
  EXPECT_TRUE(HasStatus(s, StatusCode::kFailedPrecondition, "never allocated"));
  EXPECT_NE(s.message().find("view v of y"), std::string::npos) << s.ToString();
  EXPECT_EQ(v->data, nullptr);

  // Once A has placed y, B places the view on it.
  ASSERT_TRUE(IsOk(alloc_a->AllocGraph(ga)));
  ASSERT_TRUE(IsOk(alloc_b->AllocGraph(gb)));
  EXPECT_EQ(v->data, y->data);
}

// Found by fuzzing alloc_graph_topology (fixed code): a refused AllocGraph had already placed the leafs
// before the refused view, and kept them placed, so a view of one of them in a later graph was placed on
// bytes that no placement filled (the model predicted FailedPrecondition; the layer returned OK). A
// refused AllocGraph leaves every tensor as it was, as ggml_gallocr_alloc_graph fails only before it
// touches one.
TEST(GraphAllocator, RefusedAllocGraphLeavesNoTensorPlaced) {
  Context ctx;
  Tensor* y = F32(ctx, {4}, "y");  // another graph's tensor, never placed
  Tensor* x = F32(ctx, {4}, "x");
  Tensor* v = Named(Must(ctx.ViewTensor(y)), "v");
  Tensor* s = Named(Must(ctx.Binary(Op::kAdd, x, v, false)), "s");
  s->output = true;
  Graph ga = Must(BuildGraph({s}));
  ASSERT_EQ(ga.leafs.size(), 2u);
  ASSERT_EQ(ga.leafs[0], x);  // placed before the refused view
  auto alloc_a = MakeAllocator();
  EXPECT_TRUE(HasStatus(alloc_a->AllocGraph(ga), StatusCode::kFailedPrecondition, "view v of y"));
  EXPECT_EQ(x->data, nullptr);
  EXPECT_EQ(x->owner, nullptr);
  EXPECT_EQ(s->data, nullptr);

  // A later graph, on another allocator, viewing x: x has no memory, so it is refused too.
  Tensor* w = Named(Must(ctx.ViewTensor(x)), "w");
  Tensor* z = Named(Must(ctx.Unary(Op::kNeg, w, 0.0f, false)), "z");
  Graph gb = Must(BuildGraph({z}));
  auto alloc_b = MakeAllocator();
  EXPECT_TRUE(HasStatus(alloc_b->AllocGraph(gb), StatusCode::kFailedPrecondition, "view w of x"));
  EXPECT_EQ(w->data, nullptr);
}

}  // namespace
}  // namespace lifeline::alloc
