// Planning and placement by the gallocr-style GraphAllocator of layers/alloc/gallocr.h, one buffer:
// bad buffer specs (GraphAllocatorCreate), then every tensor placed aligned inside its buffer, views on
// their sources, in-place reuse and when it is not allowed (several consumers, outputs, inputs), inputs
// and leafs kept alive from the start, outputs never freed, and a buffer limit too small for the plan.
// Each placement is checked with the shared oracles (harness/oracles/alloc_oracles.h) and by evaluating.
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

// =====================================================================================================
// GraphAllocator::Create
// =====================================================================================================

TEST(GraphAllocatorCreate, BadBufferSpecsAreInvalidArgument) {
  struct Row {
    const char* what;
    std::vector<BufferSpec> specs;
    std::string needle;
  };
  const Row rows[] = {
      {"no buffers", {}, "at least one buffer"},
      {"alignment 0", {BufferSpec{0, 1024}}, "buffer 0: alignment 0 is not a power of two"},
      {"alignment 3", {BufferSpec{3, 1024}}, "buffer 0: alignment 3 is not a power of two"},
      {"alignment 48", {BufferSpec{48, 1024}}, "buffer 0: alignment 48 is not a power of two"},
      {"alignment 2^63 + 1", {BufferSpec{(size_t{1} << 63) + 1, 1024}}, "is not a power of two"},
      {"max_size 0", {BufferSpec{32, 0}}, "buffer 0: max_size is 0"},
      {"second buffer bad", {BufferSpec{32, 1024}, BufferSpec{6, 1024}}, "buffer 1: alignment 6"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    EXPECT_TRUE(HasStatus(GraphAllocator::Create(row.specs).status(), StatusCode::kInvalidArgument, row.needle));
  }
}

TEST(GraphAllocatorCreate, PowerOfTwoAlignmentsAreAccepted) {
  for (size_t alignment : {1u, 2u, 8u, 32u, 4096u}) {
    SCOPED_TRACE(alignment);
    StatusOr<std::unique_ptr<GraphAllocator>> a = GraphAllocator::Create({BufferSpec{alignment, 1}});
    ASSERT_TRUE(IsOk(a.status()));
    EXPECT_EQ(a.value()->buffer_count(), 1u);
    EXPECT_EQ(a.value()->buffer_size(0), 0u);  // nothing reserved yet
    EXPECT_EQ(a.value()->replans(), 0);
  }
}

// =====================================================================================================
// GraphAllocator: planning and placement
// =====================================================================================================

TEST(GraphAllocator, PlacesEveryNonViewTensorInsideBufferZeroAligned) {
  MixedGraph m;
  auto alloc = MakeAllocator({BufferSpec{64, 1 << 20}});
  ASSERT_TRUE(IsOk(alloc->Reserve(m.g)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(m.g)));
  EXPECT_GT(alloc->buffer_size(0), 0u);
  std::vector<Tensor*> all = m.g.nodes;
  all.insert(all.end(), m.g.leafs.begin(), m.g.leafs.end());
  int owned = 0;
  for (Tensor* t : all) {
    SCOPED_TRACE(t->name);
    const TensorPlacement* p = alloc->placement_of(t);
    ASSERT_NE(p, nullptr);
    ASSERT_NE(t->data, nullptr);
    if (t->is_view()) continue;
    ++owned;
    EXPECT_EQ(t->owner, alloc.get());
    EXPECT_EQ(p->buffer_id, 0);
    EXPECT_EQ(p->offset % 64, 0u);
    EXPECT_GE(p->size_max, t->nbytes());
    EXPECT_EQ(t->data, alloc->buffer_base(0) + p->offset);
    EXPECT_TRUE(InsideBuffer(*alloc, 0, t));
  }
  EXPECT_EQ(owned, 7);
  EXPECT_TRUE(IsOk(oracles::CheckPlacedInsideBuffers(m.g, alloc.get(), Extents(*alloc, {BufferSpec{64, 1 << 20}}))));
  EXPECT_TRUE(IsOk(oracles::CheckNoLiveOverlap(m.g, alloc.get())));
  m.FillLeafs();
  oracles::Differential diff(m.g, alloc.get(), {m.h, m.out});
  ASSERT_TRUE(IsOk(Evaluate(m.g)));
  m.ExpectValues();
  EXPECT_TRUE(IsOk(diff.Check()));
}

TEST(GraphAllocator, ViewsPointIntoTheirSourcesAtTheirOffset) {
  MixedGraph m;
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(m.g)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(m.g)));
  for (Tensor* v : {m.lo, m.hi, m.r}) {
    SCOPED_TRACE(v->name);
    EXPECT_EQ(v->data, static_cast<uint8_t*>(m.s->data) + v->view_offs);
    EXPECT_EQ(v->owner, alloc.get());
    const TensorPlacement* p = alloc->placement_of(v);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->buffer_id, -1);
    EXPECT_EQ(p->offset, kNotOwned);
    EXPECT_EQ(p->size_max, 0u);
  }
  EXPECT_EQ(m.hi->data, static_cast<uint8_t*>(m.s->data) + 32);
  EXPECT_TRUE(IsOk(oracles::CheckViewsInsideSources(m.g)));
}

TEST(GraphAllocator, ElementwiseChainReusesMemoryInPlace) {
  Context ctx;
  Tensor* a = F32(ctx, {8}, "a");
  Tensor* n = Named(Must(ctx.Unary(Op::kNeg, a, 0.0f, false)), "n");
  Tensor* s = Named(Must(ctx.Unary(Op::kScale, n, 2.0f, false)), "s");
  Graph g = Must(BuildGraph({s}));
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_EQ(n->data, a->data);
  EXPECT_EQ(s->data, n->data);
  EXPECT_EQ(alloc->buffer_size(0), 32u);  // one block for all three
  EXPECT_TRUE(IsOk(oracles::CheckNoLiveOverlap(g, alloc.get())));
  Fill(a, 1.0f, 1.0f);
  oracles::Differential diff(g, alloc.get(), {s});
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(s), (std::vector<float>{-2, -4, -6, -8, -10, -12, -14, -16}));
  EXPECT_TRUE(IsOk(diff.Check()));
}

TEST(GraphAllocator, InplaceReuseNeedsASingleConsumer) {
  Context ctx;
  Tensor* a = F32(ctx, {8}, "a");
  Tensor* n = Named(Must(ctx.Unary(Op::kNeg, a, 0.0f, false)), "n");
  Tensor* s = Named(Must(ctx.Unary(Op::kScale, n, 2.0f, false)), "s");
  Tensor* t = Named(Must(ctx.Binary(Op::kAdd, s, n, false)), "t");  // n has two consumers
  Graph g = Must(BuildGraph({t}));
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_FALSE(Overlap(s, n));
  EXPECT_TRUE(IsOk(oracles::CheckNoLiveOverlap(g, alloc.get())));
  Fill(a, 1.0f, 0.0f);
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(t), std::vector<float>(8, -3.0f));
}

TEST(GraphAllocator, OutputIsNeverReusedInPlace) {
  Context ctx;
  Tensor* a = F32(ctx, {8}, "a");
  Tensor* y = Named(Must(ctx.Unary(Op::kNeg, a, 0.0f, false)), "y");
  y->output = true;
  Tensor* z = Named(Must(ctx.Unary(Op::kScale, y, 2.0f, false)), "z");
  Graph g = Must(BuildGraph({z}));
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_EQ(y->data, a->data);  // a is neither input nor output: y may take it
  EXPECT_FALSE(Overlap(z, y));
  Fill(a, 1.0f, 1.0f);
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(y), (std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8}));
  EXPECT_EQ(Values(z), (std::vector<float>{-2, -4, -6, -8, -10, -12, -14, -16}));
}

TEST(GraphAllocator, OutputIsNeverFreed) {
  // y's last reader is z; w comes after it and would take y's block were y freed.
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* y = Named(Must(ctx.Copy(x, DType::kF32)), "y");
  y->output = true;
  Tensor* z = Named(Must(ctx.Unary(Op::kNeg, y, 0.0f, false)), "z");
  Tensor* w = Named(Must(ctx.Copy(z, DType::kF32)), "w");
  Graph g = Must(BuildGraph({w}));
  ASSERT_EQ(g.nodes, (std::vector<Tensor*>{y, z, w}));
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  for (Tensor* t : {x, z, w}) {
    SCOPED_TRACE(t->name);
    EXPECT_FALSE(Overlap(t, y));
  }
  EXPECT_TRUE(IsOk(oracles::CheckNoLiveOverlap(g, alloc.get())));
  Fill(x, 1.0f, 1.0f);
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(y), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(Values(w), (std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8}));
}

TEST(GraphAllocator, InputIsNotReusedInPlace) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* y = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "y");
  Tensor* z = Named(Must(ctx.Unary(Op::kScale, y, 3.0f, false)), "z");
  Graph g = Must(BuildGraph({z}));
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_FALSE(Overlap(y, x));
  EXPECT_EQ(z->data, y->data);  // y is an ordinary tensor: z takes it
  Fill(x, 1.0f, 1.0f);
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(x), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(Values(z), (std::vector<float>{-3, -6, -9, -12, -15, -18, -21, -24}));
}

TEST(GraphAllocator, InputIsPlacedBeforeAnythingElse) {
  // The input is read only by the last node; nothing planned before that may take its bytes.
  Context ctx;
  Tensor* a = F32(ctx, {8}, "a");
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* b = Named(Must(ctx.Copy(a, DType::kF32)), "b");
  Tensor* c = Named(Must(ctx.Copy(b, DType::kF32)), "c");
  Tensor* d = Named(Must(ctx.Binary(Op::kAdd, c, x, false)), "d");
  Graph g = Must(BuildGraph({d}));
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_EQ(alloc->placement_of(x)->offset, 0u);
  for (Tensor* t : {a, b, c, d}) {
    SCOPED_TRACE(t->name);
    EXPECT_FALSE(Overlap(t, x));
  }
  Fill(a, 1.0f, 0.0f);
  Fill(x, 10.0f, 0.0f);
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(d), std::vector<float>(8, 11.0f));
}

TEST(GraphAllocator, MaxSizeTooSmallIsResourceExhausted) {
  // a, b and their concat are alive together: 32 + 32 + 64 bytes.
  Context ctx;
  Tensor* a = F32(ctx, {8}, "a");
  Tensor* b = F32(ctx, {8}, "b");
  Tensor* c = Named(Must(ctx.Concat(a, b)), "c");
  Graph g = Must(BuildGraph({c}));
  for (size_t max_size : {64u, 127u}) {
    SCOPED_TRACE(max_size);
    auto alloc = MakeAllocator({BufferSpec{32, max_size}});
    EXPECT_TRUE(HasStatus(alloc->Reserve(g), StatusCode::kResourceExhausted,
                          "not enough space in a buffer of at most " + std::to_string(max_size) + " bytes"));
    EXPECT_EQ(alloc->buffer_size(0), 0u);
    EXPECT_EQ(alloc->placement_of(c), nullptr);
    EXPECT_TRUE(HasStatus(alloc->AllocGraph(g), StatusCode::kResourceExhausted, "not enough space"));
    EXPECT_EQ(c->data, nullptr);
  }
  auto fits = MakeAllocator({BufferSpec{32, 128}});
  EXPECT_TRUE(IsOk(fits->Reserve(g)));
  EXPECT_EQ(fits->buffer_size(0), 128u);
}

// An in-place result marked output is a view: its bytes are its source's. After r's consumer z has run,
// r's view count on `a` drops to zero; `a` must still not be freed, or the concat `w` planned afterwards
// takes a's block and overwrites the output. (ggml-alloc.c frees it: ggml_gallocr_free_node consults only
// the freed tensor's own output flag.)
TEST(GraphAllocator, OutputInplaceResultKeepsItsSourceAlive) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* a = Named(Must(ctx.Copy(x, DType::kF32)), "a");
  Tensor* r = Named(Must(ctx.Unary(Op::kScale, a, 2.0f, /*inplace=*/true)), "r");
  r->output = true;
  Tensor* z = Named(Must(ctx.Copy(r, DType::kF32)), "z");
  Tensor* z2 = Named(Must(ctx.Unary(Op::kNeg, z, 0.0f, false)), "z2");
  Tensor* w = Named(Must(ctx.Concat(z2, z2)), "w");
  Graph g = Must(BuildGraph({w, r}));
  ASSERT_EQ(g.nodes, (std::vector<Tensor*>{a, r, z, z2, w}));
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_FALSE(Overlap(w, r)) << "w is planned over the bytes of output r";
  Fill(x, 1.0f, 1.0f);
  oracles::Differential diff(g, alloc.get(), {r, w});
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(r), (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16}));
  EXPECT_TRUE(IsOk(diff.Check()));
}

// Leafs are filled by the caller before the graph runs (the oracles assume it: CheckNoLiveOverlap lets
// leafs live from the start, Differential snapshots them before the placed run). `l`, read only by the
// last node, must therefore not be planned on the bytes of `a`, which an earlier node writes. (ggml
// places a leaf that is not flagged input at its first reader, where it can land on exactly those bytes.)
TEST(GraphAllocator, LeafFilledBeforeEvaluateSurvivesUntilItIsRead) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* a = Named(Must(ctx.Copy(x, DType::kF32)), "a");
  Tensor* b = Named(Must(ctx.Copy(a, DType::kF32)), "b");
  Tensor* l = F32(ctx, {8}, "l");
  Tensor* c = Named(Must(ctx.Binary(Op::kAdd, b, l, false)), "c");
  Graph g = Must(BuildGraph({c}));
  ASSERT_EQ(g.nodes, (std::vector<Tensor*>{a, b, c}));
  ASSERT_EQ(g.leafs, (std::vector<Tensor*>{x, l}));
  auto alloc = MakeAllocator();
  ASSERT_TRUE(IsOk(alloc->Reserve(g)));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_FALSE(Overlap(l, a)) << "leaf l is planned over a, which is written before l is read";
  EXPECT_TRUE(IsOk(oracles::CheckNoLiveOverlap(g, alloc.get())));
  Fill(x, 1.0f, 0.0f);
  Fill(l, 10.0f, 0.0f);
  oracles::Differential diff(g, alloc.get(), {c});
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(c), std::vector<float>(8, 11.0f));
  EXPECT_TRUE(IsOk(diff.Check()));
}

// A leaf view (ggml_view_tensor) of a node of the same graph: the graph reaches the node through another
// path, and the view is initialised only after the node has its place, so it points at the node's bytes.
TEST(GraphAllocator, LeafViewOfANodeInTheSameGraphFollowsThatNode) {
  Context ctx;
  Tensor* x = F32(ctx, {4}, "x");
  x->input = true;
  Tensor* y = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "y");
  y->output = true;
  Tensor* v = Named(Must(ctx.ViewTensor(y)), "v");
  Tensor* z = Named(Must(ctx.Binary(Op::kAdd, v, y, false)), "z");
  z->output = true;
  Graph g = Must(BuildGraph({z}));
  auto a = Must(GraphAllocator::Create({BufferSpec{}}));
  ASSERT_TRUE(IsOk(a->AllocGraph(g)));
  EXPECT_EQ(v->data, y->data);
  Fill(x, 1.0f, 1.0f);
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(LoadElement(DType::kF32, z->data, 3), -8.0f);
}

}  // namespace
}  // namespace lifeline::alloc
