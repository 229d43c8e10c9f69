// The allocator layer: Context statuses, BuildGraph, the CPU evaluator and float16 conversion, the
// gallocr-style GraphAllocator (planning, in-place reuse, outputs and inputs, re-planning, several
// buffers), and the scenario of the documented bug gallocr-view-leaf-offset on the fixed code.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tests/testing/status_matchers.h"
#include "harness/oracles/alloc_oracles.h"
#include "core/status.h"
#include "layers/alloc/eval.h"
#include "layers/alloc/gallocr.h"
#include "layers/alloc/tensor.h"
#include "tests/testing/graph_fixtures.h"

namespace lifeline::alloc {
namespace {

using testing_util::Extents;
using testing_util::F32;
using testing_util::Fill;
using testing_util::HasStatus;
using testing_util::InsideBuffer;
using testing_util::IsOk;
using testing_util::MakeAllocator;
using testing_util::MixedGraph;
using testing_util::Must;
using testing_util::Named;
using testing_util::NewTensor;
using testing_util::Overlap;
using testing_util::Storage;
using testing_util::Values;

// =====================================================================================================
// Context: bad requests come back as statuses that name the problem.
// =====================================================================================================

TEST(ContextStatus, NdimsOutsideOneToFourIsInvalidArgument) {
  Context ctx;
  const int64_t ne[8] = {2, 2, 2, 2, 2, 2, 2, 2};
  for (int ndims : {0, -1, 5, 8}) {
    SCOPED_TRACE("ndims " + std::to_string(ndims));
    EXPECT_TRUE(HasStatus(ctx.NewTensor(DType::kF32, ne, ndims).status(), StatusCode::kInvalidArgument,
                          "ndims must be in [1, 4], got " + std::to_string(ndims)));
  }
  EXPECT_EQ(ctx.size(), 0u);
  for (int ndims = 1; ndims <= kMaxDims; ++ndims) EXPECT_TRUE(IsOk(ctx.NewTensor(DType::kF32, ne, ndims).status()));
}

TEST(ContextStatus, ZeroOrNegativeDimensionIsInvalidArgument) {
  struct Row {
    std::vector<int64_t> ne;
    std::string needle;
  };
  const Row rows[] = {
      {{0}, "dimension 0 is 0"},
      {{4, -3}, "dimension 1 is -3"},
      {{4, 4, 4, 0}, "dimension 3 is 0"},
      {{2, std::numeric_limits<int64_t>::min()}, "dimension 1 is -9223372036854775808"},
  };
  Context ctx;
  for (const Row& row : rows) {
    SCOPED_TRACE(row.needle);
    EXPECT_TRUE(HasStatus(ctx.NewTensor(DType::kF16, row.ne.data(), static_cast<int>(row.ne.size())).status(),
                          StatusCode::kInvalidArgument, row.needle));
  }
  EXPECT_EQ(ctx.size(), 0u);
}

TEST(ContextStatus, SizePastMaxTensorBytesIsInvalidArgument) {
  struct Row {
    DType type;
    std::vector<int64_t> ne;
  };
  const Row rows[] = {
      {DType::kF32, {int64_t{1} << 28, 2}},                       // 2^31 bytes
      {DType::kF16, {int64_t{1} << 30}},                          // 2^31 bytes in one dimension
      {DType::kF32, {std::numeric_limits<int64_t>::max()}},       // the element count alone overflows
      {DType::kF32, {1 << 16, 1 << 16, 1 << 16, 1 << 16}},        // 2^64 elements: a naive product wraps
      {DType::kF16, {int64_t{1} << 15, int64_t{1} << 15, 2, 1}},  // 2^31 bytes only with the last factor
  };
  Context ctx;
  for (const Row& row : rows) {
    SCOPED_TRACE(::testing::PrintToString(row.ne));
    EXPECT_TRUE(HasStatus(ctx.NewTensor(row.type, row.ne.data(), static_cast<int>(row.ne.size())).status(),
                          StatusCode::kInvalidArgument, "overflows the 1073741824-byte limit"));
  }
  // Exactly the limit is a valid tensor (no memory is allocated for it here).
  const int64_t at_limit[] = {int64_t{1} << 28};
  StatusOr<Tensor*> t = ctx.NewTensor(DType::kF32, at_limit, 1);
  ASSERT_TRUE(IsOk(t.status()));
  EXPECT_EQ(t.value()->nbytes(), kMaxTensorBytes);
}

// Regression (this test found it; fixed): Context::Reshape builds the shape in an uninitialised `int64_t shape[4]` and FillShape's
// overflow message prints all four entries of it while only the ones before the failing dimension are
// filled. The message then carries indeterminate stack values (undefined behaviour; memcheck reports
// "Conditional jump or move depends on uninitialised value(s)" inside std::to_string in the valgrind
// lane). NewTensor and View are unaffected: their shapes start as {1, 1, 1, 1}.
TEST(ContextStatus, ReshapeToOversizedShapeNamesThatShape) {
  Context ctx;
  Tensor* a = F32(ctx, {4}, "a");
  const int64_t ne[] = {int64_t{1} << 31};
  Status s = ctx.Reshape(a, ne, 1).status();
  EXPECT_TRUE(HasStatus(s, StatusCode::kInvalidArgument, "tensor of shape [2147483648,1,1,1] overflows"));
  // The same request through View names the same shape.
  EXPECT_TRUE(HasStatus(ctx.View(a, ne, 1, 0).status(), StatusCode::kInvalidArgument,
                        "tensor of shape [2147483648,1,1,1] overflows"));
}

TEST(ContextStatus, BinaryOpWithMismatchedShapesOrTypesIsInvalidArgument) {
  Context ctx;
  Tensor* a = F32(ctx, {4, 2}, "a");
  Tensor* b = F32(ctx, {2, 4}, "b");
  Tensor* c = F32(ctx, {8}, "c");
  Tensor* h = NewTensor(ctx, DType::kF16, {4, 2}, "h");
  for (Op op : {Op::kAdd, Op::kMul}) {
    SCOPED_TRACE(OpName(op));
    for (bool inplace : {false, true}) {
      EXPECT_TRUE(HasStatus(ctx.Binary(op, a, b, inplace).status(), StatusCode::kInvalidArgument,
                            "shapes [4,2,1,1] and [2,4,1,1] differ"));
      EXPECT_TRUE(HasStatus(ctx.Binary(op, a, c, inplace).status(), StatusCode::kInvalidArgument,
                            "shapes [4,2,1,1] and [8,1,1,1] differ"));
      EXPECT_TRUE(HasStatus(ctx.Binary(op, a, h, inplace).status(), StatusCode::kInvalidArgument,
                            "element types of a and h differ"));
    }
  }
  EXPECT_EQ(ctx.size(), 4u);
}

TEST(ContextStatus, OpOfTheWrongArityIsInvalidArgument) {
  Context ctx;
  Tensor* a = F32(ctx, {4}, "a");
  for (Op op : {Op::kAdd, Op::kMul, Op::kCopy, Op::kConcat, Op::kView, Op::kNone}) {
    SCOPED_TRACE(OpName(op));
    EXPECT_TRUE(HasStatus(ctx.Unary(op, a, 1.0f, false).status(), StatusCode::kInvalidArgument,
                          std::string(OpName(op)) + " is not a unary op"));
  }
  for (Op op : {Op::kScale, Op::kNeg, Op::kCopy, Op::kConcat}) {
    SCOPED_TRACE(OpName(op));
    EXPECT_TRUE(HasStatus(ctx.Binary(op, a, a, false).status(), StatusCode::kInvalidArgument,
                          std::string(OpName(op)) + " is not a binary op"));
  }
  EXPECT_EQ(ctx.size(), 1u);
}

TEST(ContextStatus, ConcatWithMismatchedInnerDimensionsIsInvalidArgument) {
  struct Row {
    DType type_b;
    std::vector<int64_t> ne_b;
    std::string needle;
  };
  const Row rows[] = {
      {DType::kF32, {3, 2, 2}, "got [4,2,2,1] and [3,2,2,1]"},
      {DType::kF32, {4, 1, 2}, "got [4,2,2,1] and [4,1,2,1]"},
      {DType::kF32, {4, 2, 3}, "got [4,2,2,1] and [4,2,3,1]"},
      {DType::kF16, {4, 2, 2}, "concat needs equal types"},
  };
  Context ctx;
  Tensor* a = F32(ctx, {4, 2, 2}, "a");
  for (const Row& row : rows) {
    SCOPED_TRACE(row.needle);
    Tensor* b = NewTensor(ctx, row.type_b, row.ne_b, "b");
    EXPECT_TRUE(HasStatus(ctx.Concat(a, b).status(), StatusCode::kInvalidArgument, row.needle));
  }
  // Only the outermost dimension may differ; it adds up.
  Tensor* b = F32(ctx, {4, 2, 2, 3}, "b");
  Tensor* c = Must(ctx.Concat(a, b));
  EXPECT_EQ(c->op, Op::kConcat);
  EXPECT_EQ(c->ne[3], 4);
  EXPECT_EQ(c->nelements(), a->nelements() + b->nelements());
}

TEST(ContextStatus, ViewOutsideItsSourceIsInvalidArgument) {
  struct Row {
    std::vector<int64_t> ne;
    size_t offset;
    std::string needle;
  };
  const Row rows[] = {
      {{9}, 0, "view of 36 bytes at offset 0 lies outside a (32 bytes)"},
      {{4}, 20, "view of 16 bytes at offset 20 lies outside a (32 bytes)"},
      {{1}, 32, "view of 4 bytes at offset 32 lies outside a (32 bytes)"},
      {{1}, 36, "view of 4 bytes at offset 36 lies outside a (32 bytes)"},
      // An offset near SIZE_MAX must not wrap around the bounds check.
      {{1}, SIZE_MAX - 3, "lies outside a (32 bytes)"},
  };
  Context ctx;
  Tensor* a = F32(ctx, {8}, "a");
  for (const Row& row : rows) {
    SCOPED_TRACE(row.needle);
    EXPECT_TRUE(HasStatus(ctx.View(a, row.ne.data(), static_cast<int>(row.ne.size()), row.offset).status(),
                          StatusCode::kInvalidArgument, row.needle));
  }
  // The last element, and all of it, are inside.
  const int64_t one[] = {1};
  const int64_t all[] = {2, 4};
  EXPECT_TRUE(IsOk(ctx.View(a, one, 1, 28).status()));
  EXPECT_TRUE(IsOk(ctx.View(a, all, 2, 0).status()));
}

TEST(ContextStatus, ViewOffsetNotMultipleOfElementSizeIsInvalidArgument) {
  Context ctx;
  Tensor* a = F32(ctx, {8}, "a");
  Tensor* h = NewTensor(ctx, DType::kF16, {8}, "h");
  const int64_t ne[] = {2};
  for (size_t offset : {1u, 2u, 3u, 6u}) {
    SCOPED_TRACE("f32 offset " + std::to_string(offset));
    EXPECT_TRUE(HasStatus(ctx.View(a, ne, 1, offset).status(), StatusCode::kInvalidArgument,
                          "view offset " + std::to_string(offset) + " is not a multiple of the element size"));
  }
  EXPECT_TRUE(HasStatus(ctx.View(h, ne, 1, 3).status(), StatusCode::kInvalidArgument, "not a multiple"));
  EXPECT_TRUE(IsOk(ctx.View(h, ne, 1, 2).status()));
}

TEST(ContextStatus, ReshapeThatChangesElementCountIsInvalidArgument) {
  Context ctx;
  Tensor* a = F32(ctx, {4, 3}, "a");
  const int64_t more[] = {13};
  const int64_t fewer[] = {2, 3};
  EXPECT_TRUE(HasStatus(ctx.Reshape(a, more, 1).status(), StatusCode::kInvalidArgument,
                        "reshape to [13,1,1,1] changes the element count of a"));
  EXPECT_TRUE(HasStatus(ctx.Reshape(a, fewer, 2).status(), StatusCode::kInvalidArgument,
                        "reshape to [2,3,1,1] changes the element count of a"));
  const int64_t same[] = {2, 2, 3};
  Tensor* r = Must(ctx.Reshape(a, same, 3));
  EXPECT_EQ(r->op, Op::kReshape);
  EXPECT_EQ(r->view_src, a);
  EXPECT_EQ(r->src[0], a);
}

TEST(ContextStatus, TensorFromAnotherContextIsNotFound) {
  Context ctx;
  Context other;
  Tensor* mine = F32(ctx, {4}, "mine");
  Tensor* node = Must(ctx.Unary(Op::kNeg, mine, 0.0f, false));
  Tensor* theirs = F32(other, {4}, "theirs");
  const int64_t ne[] = {4};
  struct Row {
    const char* what;
    Status status;
  };
  const Row rows[] = {
      {"Unary", ctx.Unary(Op::kScale, theirs, 2.0f, false).status()},
      {"Binary first", ctx.Binary(Op::kAdd, theirs, mine, false).status()},
      {"Binary second", ctx.Binary(Op::kMul, mine, theirs, true).status()},
      {"Copy", ctx.Copy(theirs, DType::kF16).status()},
      {"Concat first", ctx.Concat(theirs, mine).status()},
      {"Concat second", ctx.Concat(mine, theirs).status()},
      {"View", ctx.View(theirs, ne, 1, 0).status()},
      {"Reshape", ctx.Reshape(theirs, ne, 1).status()},
      {"ViewTensor", ctx.ViewTensor(theirs).status()},
      {"SetSource new source", ctx.SetSource(node, 0, theirs)},
      {"SetSource node", ctx.SetSource(Must(other.Unary(Op::kNeg, theirs, 0.0f, false)), 0, mine)},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    EXPECT_TRUE(HasStatus(row.status, StatusCode::kNotFound, "belongs to another context"));
  }
  EXPECT_EQ(node->src[0], mine);
  EXPECT_EQ(ctx.size(), 2u);
}

TEST(ContextStatus, NullTensorIsInvalidArgument) {
  Context ctx;
  Tensor* a = F32(ctx, {4}, "a");
  const int64_t ne[] = {4};
  EXPECT_TRUE(HasStatus(ctx.Unary(Op::kNeg, nullptr, 0.0f, false).status(), StatusCode::kInvalidArgument,
                        "source is null"));
  EXPECT_TRUE(HasStatus(ctx.Binary(Op::kAdd, a, nullptr, false).status(), StatusCode::kInvalidArgument,
                        "second source is null"));
  EXPECT_TRUE(HasStatus(ctx.View(nullptr, ne, 1, 0).status(), StatusCode::kInvalidArgument, "view source is null"));
  EXPECT_TRUE(HasStatus(ctx.ViewTensor(nullptr).status(), StatusCode::kInvalidArgument, "view source is null"));
  EXPECT_TRUE(HasStatus(ctx.SetSource(nullptr, 0, a), StatusCode::kInvalidArgument, "node is null"));
}

TEST(ContextStatus, SetSourceOfAViewIsInvalidArgument) {
  Context ctx;
  Tensor* a = F32(ctx, {4}, "a");
  Tensor* b = F32(ctx, {4}, "b");
  const int64_t ne[] = {4};
  Tensor* view = Named(Must(ctx.View(a, ne, 1, 0)), "view");
  Tensor* reshape = Named(Must(ctx.Reshape(a, ne, 1)), "reshape");
  Tensor* inplace = Named(Must(ctx.Binary(Op::kAdd, a, b, /*inplace=*/true)), "inplace");
  EXPECT_TRUE(HasStatus(ctx.SetSource(view, 0, b), StatusCode::kInvalidArgument, "the source of view view is fixed"));
  EXPECT_TRUE(HasStatus(ctx.SetSource(reshape, 0, b), StatusCode::kInvalidArgument,
                        "the source of view reshape is fixed"));
  // An in-place result writes into its first source: that one is fixed, the second is not.
  EXPECT_TRUE(HasStatus(ctx.SetSource(inplace, 0, b), StatusCode::kInvalidArgument,
                        "the source of view inplace is fixed"));
  EXPECT_EQ(view->src[0], a);
  EXPECT_EQ(reshape->src[0], a);
  EXPECT_EQ(inplace->src[0], a);
  EXPECT_TRUE(IsOk(ctx.SetSource(inplace, 1, a)));
  EXPECT_EQ(inplace->src[1], a);
}

TEST(ContextStatus, SetSourceWithWrongShapeOrTypeIsInvalidArgument) {
  Context ctx;
  Tensor* a = F32(ctx, {4, 2}, "a");
  Tensor* n = Named(Must(ctx.Unary(Op::kNeg, a, 0.0f, false)), "n");
  Tensor* flat = F32(ctx, {8}, "flat");
  Tensor* half = NewTensor(ctx, DType::kF16, {4, 2}, "half");
  EXPECT_TRUE(HasStatus(ctx.SetSource(n, 0, flat), StatusCode::kInvalidArgument,
                        "new source flat [8,1,1,1] does not match [4,2,1,1]"));
  EXPECT_TRUE(HasStatus(ctx.SetSource(n, 0, half), StatusCode::kInvalidArgument, "new source half"));
  EXPECT_EQ(n->src[0], a);
}

TEST(ContextStatus, SetSourceWithBadIndexIsInvalidArgument) {
  Context ctx;
  Tensor* a = F32(ctx, {4}, "a");
  Tensor* b = F32(ctx, {4}, "b");
  Tensor* n = Named(Must(ctx.Unary(Op::kNeg, a, 0.0f, false)), "n");
  for (int i : {-1, 1, 2, 100}) {
    SCOPED_TRACE("index " + std::to_string(i));
    EXPECT_TRUE(HasStatus(ctx.SetSource(n, i, b), StatusCode::kInvalidArgument,
                          "n has no source " + std::to_string(i)));
  }
  // A leaf has no sources at all.
  EXPECT_TRUE(HasStatus(ctx.SetSource(a, 0, b), StatusCode::kInvalidArgument, "a has no source 0"));
  EXPECT_EQ(n->src[0], a);
  EXPECT_EQ(n->src[1], nullptr);
}

// =====================================================================================================
// BuildGraph
// =====================================================================================================

TEST(BuildGraph, NodesComeInPostOrderAndLeafsSeparately) {
  Context ctx;
  Tensor* a = F32(ctx, {4}, "a");
  Tensor* b = F32(ctx, {4}, "b");
  Tensor* c = Named(Must(ctx.Binary(Op::kAdd, a, b, false)), "c");
  Tensor* d = Named(Must(ctx.Unary(Op::kNeg, c, 0.0f, false)), "d");
  Tensor* e = Named(Must(ctx.Binary(Op::kMul, d, b, false)), "e");
  Graph g = Must(BuildGraph({e}));
  EXPECT_EQ(g.nodes, (std::vector<Tensor*>{c, d, e}));
  EXPECT_EQ(g.leafs, (std::vector<Tensor*>{a, b}));
}

TEST(BuildGraph, SharedSourcesAndRepeatedOutputsAppearOnce) {
  // A diamond: b feeds two nodes that both feed the output; a second output is already in the graph.
  Context ctx;
  Tensor* a = F32(ctx, {4}, "a");
  Tensor* b = Named(Must(ctx.Unary(Op::kNeg, a, 0.0f, false)), "b");
  Tensor* l = Named(Must(ctx.Unary(Op::kScale, b, 2.0f, false)), "l");
  Tensor* r = Named(Must(ctx.Unary(Op::kScale, b, 3.0f, false)), "r");
  Tensor* out = Named(Must(ctx.Binary(Op::kAdd, l, r, false)), "out");
  Graph g = Must(BuildGraph({out, b, out, l}));
  EXPECT_EQ(g.nodes, (std::vector<Tensor*>{b, l, r, out}));
  EXPECT_EQ(g.leafs, (std::vector<Tensor*>{a}));
}

TEST(BuildGraph, LeafViewDoesNotPullItsSourceIn) {
  Context ctx;
  Tensor* x = F32(ctx, {4}, "x");
  Tensor* y = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "y");
  Tensor* v = Named(Must(ctx.ViewTensor(y)), "v");
  Tensor* z = Named(Must(ctx.Unary(Op::kScale, v, 2.0f, false)), "z");
  EXPECT_EQ(v->op, Op::kNone);
  EXPECT_EQ(v->view_src, y);
  Graph g = Must(BuildGraph({z}));
  EXPECT_EQ(g.nodes, (std::vector<Tensor*>{z}));
  EXPECT_EQ(g.leafs, (std::vector<Tensor*>{v}));
}

TEST(BuildGraph, ViewNodePullsItsSourceIn) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  Tensor* y = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "y");
  const int64_t ne[] = {4};
  Tensor* v = Named(Must(ctx.View(y, ne, 1, 16)), "v");
  const int64_t two_by_two[] = {2, 2};
  Tensor* r = Named(Must(ctx.Reshape(v, two_by_two, 2)), "r");
  Tensor* z = Named(Must(ctx.Unary(Op::kScale, r, 2.0f, false)), "z");
  Graph g = Must(BuildGraph({z}));
  EXPECT_EQ(g.nodes, (std::vector<Tensor*>{y, v, r, z}));
  EXPECT_EQ(g.leafs, (std::vector<Tensor*>{x}));
}

TEST(BuildGraph, InplaceResultIsANodeAfterItsSource) {
  Context ctx;
  Tensor* x = F32(ctx, {4}, "x");
  Tensor* a = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "a");
  Tensor* r = Named(Must(ctx.Unary(Op::kScale, a, 2.0f, /*inplace=*/true)), "r");
  EXPECT_EQ(r->view_src, a);
  Graph g = Must(BuildGraph({r}));
  EXPECT_EQ(g.nodes, (std::vector<Tensor*>{a, r}));
  EXPECT_EQ(g.leafs, (std::vector<Tensor*>{x}));
}

TEST(BuildGraph, CycleMadeWithSetSourceIsInvalidArgument) {
  Context ctx;
  Tensor* a = F32(ctx, {4}, "a");
  Tensor* b = Named(Must(ctx.Unary(Op::kNeg, a, 0.0f, false)), "b");
  Tensor* c = Named(Must(ctx.Unary(Op::kScale, b, 2.0f, false)), "c");
  Tensor* d = Named(Must(ctx.Binary(Op::kAdd, c, a, false)), "d");
  ASSERT_TRUE(IsOk(BuildGraph({d}).status()));
  {
    SCOPED_TRACE("b -> c -> b");
    ASSERT_TRUE(IsOk(ctx.SetSource(b, 0, c)));
    StatusOr<Graph> g = BuildGraph({d});
    EXPECT_TRUE(HasStatus(g.status(), StatusCode::kInvalidArgument, "cycle"));
    EXPECT_NE(g.status().message().find(" depends on itself"), std::string::npos) << g.status().ToString();
    ASSERT_TRUE(IsOk(ctx.SetSource(b, 0, a)));
  }
  {
    SCOPED_TRACE("c -> c");
    ASSERT_TRUE(IsOk(ctx.SetSource(c, 0, c)));
    EXPECT_TRUE(HasStatus(BuildGraph({d}).status(), StatusCode::kInvalidArgument,
                          "cycle: c depends on itself through c"));
    ASSERT_TRUE(IsOk(ctx.SetSource(c, 0, b)));
  }
  {
    SCOPED_TRACE("d -> c -> d through the second source");
    ASSERT_TRUE(IsOk(ctx.SetSource(d, 1, Must(ctx.Unary(Op::kNeg, d, 0.0f, false)))));
    EXPECT_TRUE(HasStatus(BuildGraph({d}).status(), StatusCode::kInvalidArgument, "cycle"));
  }
}

TEST(BuildGraph, NullOutputIsInvalidArgument) {
  Context ctx;
  Tensor* a = F32(ctx, {4}, "a");
  EXPECT_TRUE(HasStatus(BuildGraph({a, nullptr}).status(), StatusCode::kInvalidArgument, "graph output is null"));
}

// =====================================================================================================
// float16 and the evaluator
// =====================================================================================================

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(HalfFloat, ExactValuesRoundTrip) {
  struct Row {
    float value;
    uint16_t half;
  };
  const Row rows[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3C00},
      {-2.5f, 0xC100},
      {0.5f, 0x3800},
      {65504.0f, 0x7BFF},                // largest finite
      {-65504.0f, 0xFBFF},
      {std::ldexp(1.0f, -14), 0x0400},   // smallest normal
      {std::ldexp(1.0f, -24), 0x0001},   // smallest subnormal
      {-std::ldexp(1.0f, -24), 0x8001},
      {std::ldexp(1023.0f, -24), 0x03FF},  // largest subnormal
      {std::ldexp(1.0f, -15), 0x0200},
      {std::numeric_limits<float>::infinity(), 0x7C00},
      {-std::numeric_limits<float>::infinity(), 0xFC00},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(::testing::Message() << row.value << " <-> 0x" << std::hex << row.half);
    EXPECT_EQ(FloatToHalf(row.value), row.half);
    EXPECT_EQ(Bits(HalfToFloat(row.half)), Bits(row.value));  // bitwise: keeps the sign of zero
  }
}

TEST(HalfFloat, RoundsToNearestEven) {
  struct Row {
    const char* what;
    float value;
    uint16_t half;
  };
  const float ulp1 = std::ldexp(1.0f, -10);  // the float16 spacing at 1
  const Row rows[] = {
      {"tie below even 1.0 stays", 1.0f + ulp1 / 2, 0x3C00},
      {"tie above odd 1+ulp goes up", 1.0f + 3 * ulp1 / 2, 0x3C02},
      {"just above the tie goes up", 1.0f + ulp1 / 2 + std::ldexp(1.0f, -20), 0x3C01},
      {"just below the tie goes down", 1.0f + ulp1 / 2 - std::ldexp(1.0f, -20), 0x3C00},
      {"negative tie to even", -(1.0f + 3 * ulp1 / 2), 0xBC02},
      {"subnormal tie to zero", std::ldexp(1.0f, -25), 0x0000},
      {"subnormal tie to two", std::ldexp(3.0f, -25), 0x0002},
      {"below half the smallest subnormal", std::ldexp(1.0f, -26), 0x0000},
      {"largest subnormal tie carries into the normals", std::ldexp(2047.0f, -25), 0x0400},
      {"largest normal mantissa carries into the exponent", 2.0f - ulp1 / 2, 0x4000},
      {"just under the overflow tie", 65519.0f, 0x7BFF},
      {"overflow tie rounds to infinity", 65520.0f, 0x7C00},
      {"far past the range", 1e6f, 0x7C00},
      {"far past the range, negative", -1e6f, 0xFC00},
      {"float subnormal flushes to zero", std::numeric_limits<float>::denorm_min(), 0x0000},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    EXPECT_EQ(FloatToHalf(row.value), row.half) << std::hex << FloatToHalf(row.value);
  }
}

TEST(HalfFloat, NanStaysNan) {
  uint16_t h = FloatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(h & 0x7C00u, 0x7C00u);
  EXPECT_NE(h & 0x03FFu, 0u);
  EXPECT_TRUE(std::isnan(HalfToFloat(h)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7C00)));
}

TEST(HalfFloat, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    if ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0) continue;  // NaN payloads are not kept
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

// Tensors with memory the test owns: each gets its own Storage.
struct Hand {
  std::vector<std::unique_ptr<Storage>> storage;
  Tensor* Give(Tensor* t) {
    storage.push_back(std::make_unique<Storage>(t));
    t->data = storage.back()->data();
    return t;
  }
};

TEST(Evaluate, ComputesElementwiseOps) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(F32(ctx, {2, 2}, "a"));
  Tensor* b = hand.Give(F32(ctx, {2, 2}, "b"));
  const float av[] = {1.0f, 2.0f, 3.0f, -4.0f};
  const float bv[] = {10.0f, -20.0f, 0.5f, 2.0f};
  std::memcpy(a->data, av, sizeof av);
  std::memcpy(b->data, bv, sizeof bv);
  Tensor* add = hand.Give(Must(ctx.Binary(Op::kAdd, a, b, false)));
  Tensor* mul = hand.Give(Must(ctx.Binary(Op::kMul, a, b, false)));
  Tensor* scale = hand.Give(Must(ctx.Unary(Op::kScale, a, -3.0f, false)));
  Tensor* neg = hand.Give(Must(ctx.Unary(Op::kNeg, b, 0.0f, false)));
  Tensor* chain = hand.Give(Must(ctx.Binary(Op::kAdd, scale, neg, false)));  // reads earlier results
  Graph g = Must(BuildGraph({add, mul, chain}));
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(add), (std::vector<float>{11.0f, -18.0f, 3.5f, -2.0f}));
  EXPECT_EQ(Values(mul), (std::vector<float>{10.0f, -40.0f, 1.5f, -8.0f}));
  EXPECT_EQ(Values(scale), (std::vector<float>{-3.0f, -6.0f, -9.0f, 12.0f}));
  EXPECT_EQ(Values(neg), (std::vector<float>{-10.0f, 20.0f, -0.5f, -2.0f}));
  EXPECT_EQ(Values(chain), (std::vector<float>{-13.0f, 14.0f, -9.5f, 10.0f}));
  // Leafs are read, never written.
  EXPECT_EQ(Values(a), (std::vector<float>{1.0f, 2.0f, 3.0f, -4.0f}));
  EXPECT_EQ(Values(b), (std::vector<float>{10.0f, -20.0f, 0.5f, 2.0f}));
}

TEST(Evaluate, ComputesInFloat16) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(NewTensor(ctx, DType::kF16, {3}, "a"));
  Tensor* b = hand.Give(NewTensor(ctx, DType::kF16, {3}, "b"));
  Fill(a, 1.0f, 1.0f);   // 1 2 3
  Fill(b, 0.25f, 0.0f);  // 0.25 ...
  Tensor* sum = hand.Give(Must(ctx.Binary(Op::kAdd, a, b, false)));
  Tensor* big = hand.Give(Must(ctx.Unary(Op::kScale, a, 30000.0f, false)));  // 60000 fits, 90000 does not
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({sum, big})))));
  EXPECT_EQ(Values(sum), (std::vector<float>{1.25f, 2.25f, 3.25f}));
  const uint16_t* raw = static_cast<const uint16_t*>(big->data);
  EXPECT_EQ(raw[0], FloatToHalf(30000.0f));
  EXPECT_EQ(raw[1], FloatToHalf(60000.0f));
  EXPECT_EQ(raw[2], 0x7C00);
}

TEST(Evaluate, CopyConvertsBetweenTypes) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(F32(ctx, {6}, "a"));
  const float av[] = {1.0f, -2.5f, 65504.0f, std::ldexp(1.0f, -24), 1.0f + std::ldexp(1.0f, -11), 1e6f};
  std::memcpy(a->data, av, sizeof av);
  Tensor* h = hand.Give(Must(ctx.Copy(a, DType::kF16)));
  Tensor* back = hand.Give(Must(ctx.Copy(h, DType::kF32)));
  ASSERT_EQ(h->type, DType::kF16);
  ASSERT_EQ(h->nbytes(), 12u);
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({back})))));
  const uint16_t* raw = static_cast<const uint16_t*>(h->data);
  EXPECT_EQ(std::vector<uint16_t>(raw, raw + 6),
            (std::vector<uint16_t>{0x3C00, 0xC100, 0x7BFF, 0x0001, 0x3C00, 0x7C00}));
  EXPECT_EQ(Values(back),
            (std::vector<float>{1.0f, -2.5f, 65504.0f, std::ldexp(1.0f, -24), 1.0f,
                                std::numeric_limits<float>::infinity()}));
}

TEST(Evaluate, ConcatAppendsTheSecondSource) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(F32(ctx, {3}, "a"));
  Tensor* b = hand.Give(F32(ctx, {3, 1, 1, 2}, "b"));
  Fill(a, 1.0f, 1.0f);
  Fill(b, -1.0f, -1.0f);
  Tensor* c = hand.Give(Must(ctx.Concat(a, b)));
  Tensor* cc = hand.Give(Must(ctx.Concat(c, a)));
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({cc})))));
  EXPECT_EQ(Values(c), (std::vector<float>{1, 2, 3, -1, -2, -3, -4, -5, -6}));
  EXPECT_EQ(Values(cc), (std::vector<float>{1, 2, 3, -1, -2, -3, -4, -5, -6, 1, 2, 3}));
}

TEST(Evaluate, ViewNodesNeedNoComputation) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(F32(ctx, {8}, "a"));
  Fill(a, 0.0f, 1.0f);
  const int64_t four[] = {4};
  Tensor* v = Named(Must(ctx.View(a, four, 1, 16)), "v");  // elements 4..7
  const int64_t two_by_four[] = {2, 4};
  Tensor* r = Named(Must(ctx.Reshape(a, two_by_four, 2)), "r");
  Tensor* unused = Named(Must(ctx.View(a, four, 1, 0)), "unused");
  // Views read their source's bytes: their data is set as an allocator would set it.
  v->data = static_cast<uint8_t*>(a->data) + v->view_offs;
  r->data = a->data;
  Tensor* cv = hand.Give(Must(ctx.Copy(v, DType::kF32)));
  Tensor* nr = hand.Give(Must(ctx.Unary(Op::kNeg, r, 0.0f, false)));
  // `unused` has no memory at all and is a node of the graph: it is skipped, not an error.
  Graph g = Must(BuildGraph({cv, nr, unused}));
  ASSERT_EQ(g.nodes.size(), 5u);
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(cv), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(Values(nr), (std::vector<float>{0, -1, -2, -3, -4, -5, -6, -7}));
  EXPECT_EQ(Values(a), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(unused->data, nullptr);
}

TEST(Evaluate, InplaceResultWritesIntoItsSource) {
  Context ctx;
  Hand hand;
  Tensor* x = hand.Give(F32(ctx, {4}, "x"));
  Fill(x, 1.0f, 1.0f);
  Tensor* a = hand.Give(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)));
  Tensor* r = Must(ctx.Unary(Op::kScale, a, 2.0f, /*inplace=*/true));
  r->data = a->data;
  Tensor* out = hand.Give(Must(ctx.Binary(Op::kAdd, r, x, false)));
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({out})))));
  EXPECT_EQ(Values(a), (std::vector<float>{-2, -4, -6, -8}));
  EXPECT_EQ(Values(out), (std::vector<float>{-1, -2, -3, -4}));
}

TEST(Evaluate, DataOfMapsEveryTensorItReads) {
  // The differential oracle runs a graph on other memory through `data_of`; the tensors' own data is
  // neither read nor written then.
  Context ctx;
  Tensor* a = F32(ctx, {4}, "a");
  Tensor* n = Named(Must(ctx.Unary(Op::kScale, a, 10.0f, false)), "n");
  std::vector<float> a_mem = {1, 2, 3, 4};
  std::vector<float> n_mem(4, 0.0f);
  Graph g = Must(BuildGraph({n}));
  ASSERT_TRUE(IsOk(Evaluate(g, [&](const Tensor* t) -> void* {
    return t == a ? static_cast<void*>(a_mem.data()) : t == n ? n_mem.data() : nullptr;
  })));
  EXPECT_EQ(n_mem, (std::vector<float>{10, 20, 30, 40}));
  EXPECT_EQ(a->data, nullptr);
  EXPECT_EQ(n->data, nullptr);
}

// Regression (this test found it; fixed): eval.h promises that Evaluate "Fails (without touching memory) when a node or source has no
// memory", but Evaluate checks each node only when it reaches it: nodes before the first one without
// memory have already been computed and written when the status comes back.
TEST(Evaluate, MissingMemoryFailsWithoutTouchingMemory) {
  Context ctx;
  Hand hand;
  Tensor* x = hand.Give(F32(ctx, {4}, "x"));
  Fill(x, 1.0f, 1.0f);
  Tensor* first = hand.Give(Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "first"));
  Fill(first, 100.0f, 0.0f);  // sentinel
  Tensor* second = Named(Must(ctx.Unary(Op::kNeg, first, 0.0f, false)), "second");  // no memory
  Graph g = Must(BuildGraph({second}));
  EXPECT_TRUE(HasStatus(Evaluate(g), StatusCode::kFailedPrecondition, "node second has no memory"));
  EXPECT_EQ(Values(first), (std::vector<float>{100, 100, 100, 100}))
      << "the first node was computed before the failure";

  // A source without memory is reported the same way.
  Tensor* lone = F32(ctx, {4}, "lone");
  Tensor* third = hand.Give(Named(Must(ctx.Unary(Op::kScale, lone, 2.0f, false)), "third"));
  EXPECT_TRUE(HasStatus(Evaluate(Must(BuildGraph({third}))), StatusCode::kFailedPrecondition,
                        "source lone of third has no memory"));
}

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
  EXPECT_EQ(oracles::CheckPlacedInsideBuffers(m.g, alloc.get(), Extents(*alloc, {BufferSpec{64, 1 << 20}})), "");
  EXPECT_EQ(oracles::CheckNoLiveOverlap(m.g, alloc.get()), "");
  m.FillLeafs();
  oracles::Differential diff(m.g, alloc.get(), {m.h, m.out});
  ASSERT_TRUE(IsOk(Evaluate(m.g)));
  m.ExpectValues();
  EXPECT_EQ(diff.Check(), "");
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
  EXPECT_EQ(oracles::CheckViewsInsideSources(m.g), "");
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
  EXPECT_EQ(oracles::CheckNoLiveOverlap(g, alloc.get()), "");
  Fill(a, 1.0f, 1.0f);
  oracles::Differential diff(g, alloc.get(), {s});
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(s), (std::vector<float>{-2, -4, -6, -8, -10, -12, -14, -16}));
  EXPECT_EQ(diff.Check(), "");
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
  EXPECT_EQ(oracles::CheckNoLiveOverlap(g, alloc.get()), "");
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
  EXPECT_EQ(oracles::CheckNoLiveOverlap(g, alloc.get()), "");
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
  // With the stale plan c would read b's values twice (BUGS.md §3, "same node count, different edges").
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
  EXPECT_EQ(oracles::CheckNoLiveOverlap(g2, alloc.get()), "");
  EXPECT_EQ(oracles::CheckPlacedInsideBuffers(g2, alloc.get(), Extents(*alloc, {BufferSpec{}})), "");
  Fill(x, 1.0f, 1.0f);
  oracles::Differential diff(g2, alloc.get(), {c});
  ASSERT_TRUE(IsOk(Evaluate(g2)));
  EXPECT_EQ(diff.Check(), "");
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
  EXPECT_EQ(oracles::CheckNoLiveOverlap(g, alloc.get()), "");
  EXPECT_EQ(oracles::CheckPlacedInsideBuffers(g, alloc.get(), Extents(*alloc, {BufferSpec{}})), "");
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
  EXPECT_EQ(oracles::CheckNoLiveOverlap(g2, alloc.get()), "");
  EXPECT_EQ(oracles::CheckPlacedInsideBuffers(g2, alloc.get(), Extents(*alloc, {BufferSpec{}})), "");
  Fill(x, 1.0f, 1.0f);
  oracles::Differential diff(g2, alloc.get(), {d});
  ASSERT_TRUE(IsOk(Evaluate(g2)));
  EXPECT_EQ(diff.Check(), "");
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
  EXPECT_EQ(oracles::CheckPlacedInsideBuffers(g, alloc.get(), Extents(*alloc, specs)), "");
  EXPECT_EQ(oracles::CheckNoLiveOverlap(g, alloc.get()), "");
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
  EXPECT_EQ(diff.Check(), "");
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
  EXPECT_EQ(oracles::CheckNoLiveOverlap(g, alloc.get()), "");
  Fill(x, 1.0f, 0.0f);
  Fill(l, 10.0f, 0.0f);
  oracles::Differential diff(g, alloc.get(), {c});
  ASSERT_TRUE(IsOk(Evaluate(g)));
  EXPECT_EQ(Values(c), std::vector<float>(8, 11.0f));
  EXPECT_EQ(diff.Check(), "");
}

// =====================================================================================================
// Scenario: whisper conv -> encoder (BUGS.md §3, gallocr-view-leaf-offset), on the fixed code
// =====================================================================================================

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
    EXPECT_EQ(canary.Check(), "");
    EXPECT_EQ(diff.Check(), "");
    EXPECT_EQ(oracles::CheckNoLiveOverlap(encoder_graph, alloc_b.get()), "");
    EXPECT_EQ(oracles::CheckViewsInsideSources(encoder_graph), "");
    EXPECT_EQ(oracles::CheckPlacedInsideBuffers(encoder_graph, alloc_b.get(), Extents(*alloc_b, {BufferSpec{}})), "");
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
