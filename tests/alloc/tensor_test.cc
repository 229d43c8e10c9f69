// ggml-style tensors and graphs of layers/alloc/tensor.h: bad requests to a Context come back as statuses
// that name the problem (ContextStatus), and BuildGraph orders nodes and leafs, follows views and refuses
// cycles and null outputs (BuildGraph).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/status.h"
#include "layers/alloc/tensor.h"
#include "tests/testing/graph_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace lifeline::alloc {
namespace {

// The shared graph fixtures and status matchers of tests/testing/.
using namespace testing_util;

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

}  // namespace
}  // namespace lifeline::alloc
