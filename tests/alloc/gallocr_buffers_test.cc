// The gallocr-style GraphAllocator of layers/alloc/gallocr.h over several buffers (as over several
// backends): nodes and leafs in their assigned buffers, in-place reuse too, a changed graph refused
// rather than re-planned, an unchanged structure placed with its plan, bad buffer ids, and the live
// buffer bytes of all allocators back to their start after destruction.
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

TEST(GraphAllocator, TwoBuffersPlaceNodesInTheirAssignedBuffer) {
  const std::vector<BufferSpec> specs = {BufferSpec{32, 1 << 16}, BufferSpec{128, 1 << 16}};
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* a = Named(Must(ctx.Copy(x, DType::kF32)), "a");
  Tensor* b = Named(Must(ctx.Copy(a, DType::kF32)), "b");
  Tensor* c = Named(Must(ctx.Concat(a, b)), "c");
  Graph g = Must(BuildGraph({c}));
  ASSERT_EQ(g.nodes, (std::vector<Tensor*>{a, b, c}));
  auto alloc = MakeAllocator(specs);
  ASSERT_TRUE(IsOk(alloc->Reserve(g, {0, 1, 1}, {0})));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_GT(alloc->buffer_size(0), 0u);
  EXPECT_GT(alloc->buffer_size(1), 0u);
  EXPECT_TRUE(InsideBuffer(*alloc, 0, x));
  EXPECT_TRUE(InsideBuffer(*alloc, 0, a));
  EXPECT_TRUE(InsideBuffer(*alloc, 1, b));
  EXPECT_TRUE(InsideBuffer(*alloc, 1, c));
  EXPECT_EQ(alloc->placement_of(b)->buffer_id, 1);
  EXPECT_EQ(alloc->placement_of(c)->size_max, 128u);
  EXPECT_TRUE(IsOk(oracles::CheckPlacedInsideBuffers(g, alloc.get(), Extents(*alloc, specs))));
  EXPECT_TRUE(IsOk(oracles::CheckNoLiveOverlap(g, alloc.get())));
  Fill(x, 1.0f, 1.0f);
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(c), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8}));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_EQ(alloc->replans(), 0);
}

// Regression (this test found it; fixed): in-place reuse ignores node_buffer_ids. `b` (neg of a) is assigned buffer 1, its source `a`
// buffer 0; the planner lets b take a's bytes in place, so b lands in buffer 0 and buffer 1 stays empty.
// gallocr.h says node_buffer_ids "give each node / leaf's buffer"; with buffers standing for backends
// (as in ggml_backend_sched) a node must not end up in another backend's memory.
TEST(GraphAllocator, InplaceReuseStaysInTheAssignedBuffer) {
  const std::vector<BufferSpec> specs = {BufferSpec{}, BufferSpec{}};
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* a = Named(Must(ctx.Copy(x, DType::kF32)), "a");
  Tensor* b = Named(Must(ctx.Unary(Op::kNeg, a, 0.0f, false)), "b");
  Graph g = Must(BuildGraph({b}));
  auto alloc = MakeAllocator(specs);
  ASSERT_TRUE(IsOk(alloc->Reserve(g, {0, 1})));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  EXPECT_TRUE(InsideBuffer(*alloc, 0, a));
  EXPECT_TRUE(InsideBuffer(*alloc, 1, b)) << "b, assigned buffer 1, was placed in buffer 0 over its source";
  EXPECT_EQ(alloc->placement_of(b)->buffer_id, 1);
}

TEST(GraphAllocator, ChangedGraphWithTwoBuffersIsFailedPrecondition) {
  struct Chain {
    Context ctx;
    Tensor *x, *a, *b, *c;
    Graph g;
    Chain() {
      x = F32(ctx, {8}, "x");
      x->input = true;
      a = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "a");
      b = Named(Must(ctx.Unary(Op::kNeg, a, 0.0f, false)), "b");
      c = Named(Must(ctx.Binary(Op::kAdd, b, x, false)), "c");
      g = Must(BuildGraph({c}));
    }
  };
  {
    SCOPED_TRACE("grown");
    Chain ch;
    auto alloc = MakeAllocator({BufferSpec{}, BufferSpec{}});
    ASSERT_TRUE(IsOk(alloc->Reserve(ch.g, {0, 1, 1})));
    ASSERT_TRUE(IsOk(alloc->AllocGraph(ch.g)));
    Tensor* d = Named(Must(ch.ctx.Unary(Op::kNeg, ch.c, 0.0f, false)), "d");
    EXPECT_TRUE(HasStatus(alloc->AllocGraph(Must(BuildGraph({d}))), StatusCode::kFailedPrecondition,
                          "differs from the reserved one and this allocator has 2 buffers"));
    EXPECT_EQ(alloc->replans(), 0);
  }
  {
    SCOPED_TRACE("rewired: same node count, different edges");
    Chain ch;
    auto alloc = MakeAllocator({BufferSpec{}, BufferSpec{}});
    ASSERT_TRUE(IsOk(alloc->Reserve(ch.g, {0, 1, 1})));
    ASSERT_TRUE(IsOk(alloc->AllocGraph(ch.g)));
    ASSERT_TRUE(IsOk(ch.ctx.SetSource(ch.c, 1, ch.a)));
    Graph g2 = Must(BuildGraph({ch.c}));
    ASSERT_EQ(g2.nodes, ch.g.nodes);
    EXPECT_TRUE(HasStatus(alloc->AllocGraph(g2), StatusCode::kFailedPrecondition, "reserve it first"));
    EXPECT_EQ(alloc->replans(), 0);
    // Reserved explicitly, the rewired graph is placed.
    ASSERT_TRUE(IsOk(alloc->Reserve(g2, {0, 1, 1})));
    ASSERT_TRUE(IsOk(alloc->AllocGraph(g2)));
    EXPECT_FALSE(Overlap(ch.b, ch.a));
  }
}

// Replacing a leaf by another of the same kind keeps the graph's structure: the plan applies as is.
TEST(GraphAllocator, GraphWithSameStructureReusesThePlan) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* a = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "a");
  Tensor* b = Named(Must(ctx.Copy(a, DType::kF32)), "b");
  Graph g1 = Must(BuildGraph({b}));
  auto alloc = MakeAllocator({BufferSpec{}, BufferSpec{}});
  ASSERT_TRUE(IsOk(alloc->Reserve(g1, {0, 1})));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g1)));
  Tensor* x2 = F32(ctx, {8}, "x2");
  x2->input = true;
  ASSERT_TRUE(IsOk(ctx.SetSource(a, 0, x2)));
  Graph g2 = Must(BuildGraph({b}));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g2)));
  EXPECT_EQ(alloc->replans(), 0);
  EXPECT_EQ(x2->data, alloc->buffer_base(0) + alloc->placement_of(x)->offset);
  Fill(x2, 1.0f, 1.0f);
  ASSERT_TRUE(IsOk(Evaluate(g2)));
  EXPECT_EQ(Values(b), (std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8}));
}

TEST(GraphAllocator, BufferIdsOfWrongLengthOrUnknownIdAreInvalidArgument) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  Tensor* a = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "a");
  Tensor* b = Named(Must(ctx.Copy(a, DType::kF32)), "b");
  Graph g = Must(BuildGraph({b}));
  ASSERT_EQ(g.nodes.size(), 2u);
  ASSERT_EQ(g.leafs.size(), 1u);
  struct Row {
    const char* what;
    std::vector<int> nodes;
    std::vector<int> leafs;
    std::string needle;
  };
  const Row rows[] = {
      {"too few node ids", {0}, {}, "node_buffer_ids has 1 entries for 2 nodes"},
      {"too many node ids", {0, 1, 0}, {}, "node_buffer_ids has 3 entries for 2 nodes"},
      {"unknown node id", {0, 2}, {}, "buffer id 2 does not exist"},
      {"negative node id", {-1, 0}, {}, "buffer id -1 does not exist"},
      {"too many leaf ids", {0, 1}, {0, 0}, "leaf_buffer_ids has 2 entries for 1 leafs"},
      {"unknown leaf id", {}, {7}, "buffer id 7 does not exist"},
  };
  auto alloc = MakeAllocator({BufferSpec{}, BufferSpec{}});
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    EXPECT_TRUE(HasStatus(alloc->Reserve(g, row.nodes, row.leafs), StatusCode::kInvalidArgument, row.needle));
  }
  EXPECT_EQ(alloc->placement_of(a), nullptr);
  EXPECT_EQ(alloc->buffer_size(0), 0u);
  EXPECT_EQ(alloc->buffer_size(1), 0u);
  EXPECT_TRUE(IsOk(alloc->Reserve(g, {1, 0}, {1})));
}

TEST(GraphAllocator, LiveBufferBytesReturnToStartAfterDestruction) {
  const int64_t start = GraphAllocator::live_buffer_bytes();
  {
    MixedGraph m;
    auto one = MakeAllocator();
    auto two = MakeAllocator({BufferSpec{}, BufferSpec{}});
    ASSERT_TRUE(IsOk(one->Reserve(m.g)));
    ASSERT_TRUE(IsOk(two->Reserve(m.g, std::vector<int>(m.g.nodes.size(), 1))));
    const int64_t sizes = static_cast<int64_t>(one->buffer_size(0) + two->buffer_size(0) + two->buffer_size(1));
    EXPECT_GT(sizes, 0);
    EXPECT_EQ(GraphAllocator::live_buffer_bytes(), start + sizes);
    // Growing replaces a block: the old one no longer counts.
    Tensor* more = Must(m.ctx.Concat(m.out, m.out));
    Graph bigger = Must(BuildGraph({m.h, more}));
    ASSERT_TRUE(IsOk(one->AllocGraph(bigger)));
    EXPECT_EQ(one->replans(), 1);
    EXPECT_EQ(GraphAllocator::live_buffer_bytes(),
              start + static_cast<int64_t>(one->buffer_size(0) + two->buffer_size(0) + two->buffer_size(1)));
  }
  EXPECT_EQ(GraphAllocator::live_buffer_bytes(), start);
}

}  // namespace
}  // namespace lifeline::alloc
