// The CPU evaluator of layers/alloc/eval.h: elementwise ops in float32 and float16, type-changing copies,
// concat, views and in-place results, evaluation on other memory through `data_of`, and refusing a graph
// with a tensor that has no memory before anything is written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/status.h"
#include "layers/alloc/eval.h"
#include "layers/alloc/tensor.h"
#include "tests/testing/graph_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace lifeline::alloc {
namespace {

// The shared graph fixtures and status matchers of tests/testing/.
using namespace testing_util;

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

// Row ops work on each row of ne[0] elements: rms_norm scales a row by 1/sqrt(mean of squares + eps), soft_max
// turns it into positive weights that sum to one, largest where the input is largest.
TEST(Evaluate, RowOpsWorkRowByRow) {
  Context ctx;
  Hand hand;
  Tensor* x = hand.Give(F32(ctx, {2, 2}, "x"));
  const float xv[] = {3.0f, 4.0f, 0.0f, std::log(3.0f)};
  std::memcpy(x->data, xv, sizeof xv);
  Tensor* norm = hand.Give(Must(ctx.RowOp(Op::kRmsNorm, x)));
  Tensor* soft = hand.Give(Must(ctx.RowOp(Op::kSoftMax, x)));
  Graph g = Must(BuildGraph({norm, soft}));
  ASSERT_TRUE(IsOk(Evaluate(g)));
  const float s = 1.0f / std::sqrt(12.5f + kRmsNormEps);  // row 0: mean of squares (9 + 16) / 2
  EXPECT_EQ(Values(norm)[0], 3.0f * s);
  EXPECT_EQ(Values(norm)[1], 4.0f * s);
  EXPECT_NEAR(Values(norm)[3], std::sqrt(2.0f), 1e-5);  // row 1: 0 and ln 3, mean of squares (ln 3)^2 / 2 (+ eps)
  EXPECT_FLOAT_EQ(Values(soft)[0], 1.0f / (1.0f + std::exp(1.0f)));
  EXPECT_FLOAT_EQ(Values(soft)[2], 0.25f);  // exp(0) / (exp(0) + 3)
  EXPECT_FLOAT_EQ(Values(soft)[3], 0.75f);
}

// Where a backend's rounding of the same math may move a result past kClose's 1%, the reference writes NaN (not
// compared): a soft_max row holding an input above kSoftMaxConditioned in magnitude (a fuzzed mul_mat chain gave
// ggml 1.0 where the reference had 0.5: two inputs near 3e38 that rounded apart), and a mul_mat element whose
// terms cancel far below their own magnitude. Well-conditioned rows and elements keep their values.
TEST(Evaluate, IllConditionedResultsAreNotCompared) {
  Context ctx;
  Hand hand;
  Tensor* x = hand.Give(F32(ctx, {2, 2}, "x"));
  const float xv[] = {100.0f, 99.0f, 1.0f, 2.0f};
  std::memcpy(x->data, xv, sizeof xv);
  Tensor* soft = hand.Give(Must(ctx.RowOp(Op::kSoftMax, x)));
  Tensor* a = hand.Give(F32(ctx, {2, 1, 1, 2}, "a"));
  Tensor* b = hand.Give(F32(ctx, {2, 1, 1, 1}, "b"));
  const float av[] = {1e8f, -1e8f, 1.0f, 2.0f};
  const float bv[] = {1.0f, 1.0f};
  std::memcpy(a->data, av, sizeof av);
  std::memcpy(b->data, bv, sizeof bv);
  Tensor* p = hand.Give(Must(ctx.MulMat(a, b)));
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({soft, p})))));
  EXPECT_TRUE(std::isnan(Values(soft)[0]) && std::isnan(Values(soft)[1]));
  EXPECT_FLOAT_EQ(Values(soft)[3], 1.0f / (1.0f + std::exp(-1.0f)));
  EXPECT_TRUE(std::isnan(Values(p)[0]));  // 1e8 - 1e8: rounding of 2e8 against a result of 0
  EXPECT_EQ(Values(p)[1], 3.0f);
}

// Evaluate says when an rms_norm reads an element whose float square is not finite: ggml's CPU kernel squares in
// float and asserts on the infinite sum, so the ggml adapters do not compute such a graph (graph_book.h).
TEST(Evaluate, SaysWhenAnRmsNormSquareOverflowsFloat) {
  for (const float big : {1e20f, std::numeric_limits<float>::infinity(), 1e19f}) {
    Context ctx;
    Hand hand;
    Tensor* x = hand.Give(F32(ctx, {2, 1}, "x"));
    const float xv[] = {big, 1.0f};
    std::memcpy(x->data, xv, sizeof xv);
    Tensor* norm = hand.Give(Must(ctx.RowOp(Op::kRmsNorm, x)));
    bool nonfinite = false;
    ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({norm})), [](const Tensor* t) { return t->data; }, &nonfinite)));
    EXPECT_EQ(nonfinite, big > 2e19f) << big;  // sqrt(FLT_MAX) is 1.84e19
  }
}

// mul_mat: [K, M] x [K, N] -> [M, N], element (m, n) the dot product of row m of the first and row n of the second.
TEST(Evaluate, MulMatTakesDotProductsOfRows) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(F32(ctx, {2, 1, 1, 3}, "a"));  // K = 2, M = 3: the program's [2, 3]
  Tensor* b = hand.Give(F32(ctx, {2, 1, 1, 2}, "b"));  // N = 2
  const float av[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  const float bv[] = {1.0f, 0.0f, 0.5f, -1.0f};
  std::memcpy(a->data, av, sizeof av);
  std::memcpy(b->data, bv, sizeof bv);
  Tensor* p = hand.Give(Must(ctx.MulMat(a, b)));
  EXPECT_EQ(p->ne[0], 3);
  EXPECT_EQ(p->ne[3], 2);
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({p})))));
  EXPECT_EQ(Values(p), (std::vector<float>{1.0f, 3.0f, 5.0f, -1.5f, -2.5f, -3.5f}));
  EXPECT_FALSE(ctx.MulMat(a, Must(ctx.Copy(b, DType::kF16))).ok());
  EXPECT_FALSE(ctx.MulMat(a, F32(ctx, {3, 1, 1, 2}, "c")).ok());  // rows of another length
}

// A float16 first source (weights) takes its float32 second source rounded to float16, as ggml's CPU backend converts
// it to the dot product's type: 1024 * (1 + 2^-12) - 1024 is 0 there, not 0.25 (past the comparison's tolerance).
TEST(Evaluate, MulMatOfFloat16WeightsRoundsTheActivationsToFloat16) {
  Context ctx;
  Hand hand;
  Tensor* w = hand.Give(NewTensor(ctx, DType::kF16, {2, 1, 1, 2}, "w"));  // K = 2, M = 2
  const uint16_t wv[] = {FloatToHalf(1024.0f), FloatToHalf(1024.0f), FloatToHalf(0.5f), FloatToHalf(-2.0f)};
  std::memcpy(w->data, wv, sizeof wv);
  Tensor* x = hand.Give(F32(ctx, {2, 1, 1, 1}, "x"));  // N = 1
  const float xv[] = {1.0f + 1.0f / 4096.0f, -1.0f};
  std::memcpy(x->data, xv, sizeof xv);
  Tensor* p = hand.Give(Must(ctx.MulMat(w, x)));
  EXPECT_EQ(p->type, DType::kF32);
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({p})))));
  EXPECT_EQ(Values(p), (std::vector<float>{0.0f, 2.5f}));
  EXPECT_FALSE(ctx.MulMat(x, Must(ctx.Copy(x, DType::kF16))).ok());  // the second source stays float32

  // ggml_vec_dot_f16 asserts its float sum finite: a term past float's range is reported, as the row ops' are; the
  // same values in a float32 product (no such assert) are not.
  const DataOf own = [](const Tensor* t) { return t->data; };
  bool nonfinite = false;
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({p})), own, &nonfinite)));
  EXPECT_FALSE(nonfinite);
  const uint16_t inf = FloatToHalf(std::numeric_limits<float>::infinity());
  std::memcpy(w->data, &inf, sizeof inf);
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({p})), own, &nonfinite)));
  EXPECT_TRUE(nonfinite);
  Tensor* w32 = hand.Give(F32(ctx, {2, 1, 1, 2}, "w32"));
  const float w32v[] = {std::numeric_limits<float>::infinity(), 1.0f, 1.0f, 1.0f};
  std::memcpy(w32->data, w32v, sizeof w32v);
  Tensor* p32 = hand.Give(Must(ctx.MulMat(w32, x)));
  nonfinite = false;
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({p32})), own, &nonfinite)));
  EXPECT_FALSE(nonfinite);
}

// transpose: [ne0, 1, 1, ne1] -> [ne1, 1, 1, ne0], element (i, j) of the result element (j, i) of the source, in
// either type (float16 values pass exactly).
TEST(Evaluate, TransposeSwapsRowsAndColumns) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(F32(ctx, {3, 1, 1, 2}, "a"));  // the program's [3, 2]: rows {1, 2, 3} and {4, 5, 6}
  const float av[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  std::memcpy(a->data, av, sizeof av);
  Tensor* t = hand.Give(Must(ctx.Transpose(a)));
  EXPECT_EQ(t->ne[0], 2);
  EXPECT_EQ(t->ne[3], 3);
  Tensor* h = hand.Give(Must(ctx.Copy(a, DType::kF16)));
  Tensor* th = hand.Give(Must(ctx.Transpose(h)));
  EXPECT_EQ(th->type, DType::kF16);
  Tensor* back = hand.Give(Must(ctx.Copy(th, DType::kF32)));
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({t, back})))));
  EXPECT_EQ(Values(t), (std::vector<float>{1.0f, 4.0f, 2.0f, 5.0f, 3.0f, 6.0f}));
  EXPECT_EQ(Values(back), Values(t));
  const int64_t cube[] = {2, 2, 2, 1};
  EXPECT_FALSE(ctx.Transpose(Must(ctx.NewTensor(DType::kF32, cube, 4))).ok());  // not [ne0, 1, 1, ne1]
}

// get_rows: row j of the float32 result is row rows[j] of the source, of either type; rows repeat; a row past the
// source, or more than kMaxRows of them, is refused.
TEST(Evaluate, GetRowsCopiesThePickedRowsAsFloat32) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(F32(ctx, {2, 1, 1, 3}, "a"));  // rows {1, 2}, {3, 4}, {5, 6}
  const float av[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  std::memcpy(a->data, av, sizeof av);
  const int32_t rows[] = {2, 0, 2};
  Tensor* g = hand.Give(Must(ctx.GetRows(a, rows, 3)));
  EXPECT_EQ(g->ne[0], 2);
  EXPECT_EQ(g->ne[3], 3);
  Tensor* h = hand.Give(Must(ctx.Copy(a, DType::kF16)));
  Tensor* gh = hand.Give(Must(ctx.GetRows(h, rows, 3)));
  EXPECT_EQ(gh->type, DType::kF32);
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({g, gh})))));
  EXPECT_EQ(Values(g), (std::vector<float>{5.0f, 6.0f, 1.0f, 2.0f, 5.0f, 6.0f}));
  EXPECT_EQ(Values(gh), Values(g));
  const int32_t past[] = {3};
  EXPECT_FALSE(ctx.GetRows(a, past, 1).ok());
  const int32_t five[] = {0, 0, 0, 0, 0};
  EXPECT_FALSE(ctx.GetRows(a, five, 5).ok());
}

// conv_2d_dw: dst(x, y) sums kernel(kx, ky) * input(x * stride + kx - pad, y * stride + ky - pad) over the kernel,
// places outside the input skipped; the result has the input's type. Requests ggml would not take are refused.
TEST(Evaluate, ConvDwSumsTheKernelOverThePaddedInput) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(F32(ctx, {3, 1, 1, 3}, "a"));  // rows {1, 2, 3}, {4, 5, 6}, {7, 8, 9}
  const float av[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f};
  std::memcpy(a->data, av, sizeof av);
  Tensor* k = hand.Give(F32(ctx, {2, 1, 1, 2}, "k"));  // {1, 0}, {0, 1}: a pixel plus its lower right neighbour
  const float kv[] = {1.0f, 0.0f, 0.0f, 1.0f};
  std::memcpy(k->data, kv, sizeof kv);
  Tensor* plain = hand.Give(Must(ctx.ConvDw(k, a, ConvParams{1, 0})));
  Tensor* strided = hand.Give(Must(ctx.ConvDw(k, a, ConvParams{2, 1})));
  Tensor* h = hand.Give(Must(ctx.Copy(a, DType::kF16)));
  Tensor* half = hand.Give(Must(ctx.ConvDw(k, h, ConvParams{1, 0})));
  EXPECT_EQ(plain->ne[0], 2);
  EXPECT_EQ(plain->ne[3], 2);
  EXPECT_EQ(half->type, DType::kF16);
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({plain, strided, half})))));
  EXPECT_EQ(Values(plain), (std::vector<float>{6.0f, 8.0f, 12.0f, 14.0f}));
  EXPECT_EQ(Values(strided), (std::vector<float>{1.0f, 3.0f, 7.0f, 14.0f}));
  EXPECT_EQ(Values(half), Values(plain));
  EXPECT_FALSE(ctx.ConvDw(a, k, ConvParams{1, 0}).ok());  // a 3x3 kernel over a 2x2 input
  EXPECT_TRUE(ctx.ConvDw(a, k, ConvParams{1, 1}).ok());   // fits once padded
  EXPECT_FALSE(ctx.ConvDw(k, a, ConvParams{3, 0}).ok());
  EXPECT_FALSE(ctx.ConvDw(k, a, ConvParams{1, 2}).ok());
}

// set_rows writes rows of its float32 source into distinct rows of its destination, in the destination's own bytes (the
// result is a view of it), converting to the destination's type; the rows not named keep their values. Requests that
// ggml leaves undefined (a row twice, rows that share the destination's bytes) or refuses are refused.
TEST(Evaluate, SetRowsWritesTheNamedRowsIntoItsDestination) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(F32(ctx, {2, 1, 1, 3}, "a"));  // rows {1, 2}, {3, 4}, {5, 6}
  const float av[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  std::memcpy(a->data, av, sizeof av);
  Tensor* b = hand.Give(F32(ctx, {2, 1, 1, 2}, "b"));  // rows {7, 8}, {9, 10}
  const float bv[] = {7.0f, 8.0f, 9.0f, 10.0f};
  std::memcpy(b->data, bv, sizeof bv);
  const int32_t rows[] = {2, 0};
  Tensor* s = Must(ctx.SetRows(a, b, rows));
  EXPECT_EQ(s->view_src, a);
  EXPECT_EQ(s->type, DType::kF32);
  s->data = a->data;
  Tensor* h = hand.Give(NewTensor(ctx, DType::kF16, {2, 1, 1, 2}, "h"));
  const uint16_t hv[] = {FloatToHalf(1.0f), FloatToHalf(2.0f), FloatToHalf(3.0f), FloatToHalf(4.0f)};
  std::memcpy(h->data, hv, sizeof hv);
  Tensor* one = hand.Give(F32(ctx, {2, 1, 1, 1}, "one"));
  const float ov[] = {0.1f, -3.0f};
  std::memcpy(one->data, ov, sizeof ov);
  const int32_t row1[] = {1};
  Tensor* sh = Must(ctx.SetRows(h, one, row1));
  sh->data = h->data;
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({s, sh})))));
  EXPECT_EQ(Values(a), (std::vector<float>{9.0f, 10.0f, 3.0f, 4.0f, 7.0f, 8.0f}));
  EXPECT_EQ(Values(h), (std::vector<float>{1.0f, 2.0f, HalfToFloat(FloatToHalf(0.1f)), -3.0f}));

  const int32_t twice[] = {1, 1};
  EXPECT_FALSE(ctx.SetRows(a, b, twice).ok());
  const int32_t past[] = {3, 0};
  EXPECT_FALSE(ctx.SetRows(a, b, past).ok());
  EXPECT_FALSE(ctx.SetRows(a, Must(ctx.Copy(b, DType::kF16)), rows).ok());  // the rows are float32
  const int64_t row_shape[] = {2, 1, 1, 2};
  EXPECT_FALSE(ctx.SetRows(a, Must(ctx.View(a, row_shape, 4, 0)), rows).ok());  // rows in a's own bytes
  const int32_t four[] = {0, 1, 2, 3};
  EXPECT_FALSE(ctx.SetRows(b, Must(ctx.Copy(Must(ctx.Concat(b, b)), DType::kF32)), four).ok());  // more rows than b has
  EXPECT_FALSE(ctx.SetRows(a, F32(ctx, {3, 1, 1, 2}, "wide"), rows).ok());
}

// rope: pair k of a row at position p turns by p * 10000^(-2k/n_dims); NORMAL pairs adjacent elements, NEOX
// element k with k + n_dims/2; the elements past n_dims are copied, also when a row is of odd length; rows of one
// token share its position. Requests ggml would not take are refused.
TEST(Evaluate, RopeTurnsPairsByTheirTokensPosition) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(F32(ctx, {5, 1, 1, 2}, "a"));  // rows {1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}
  const float av[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  std::memcpy(a->data, av, sizeof av);
  RopeParams normal;
  normal.n_dims = 4;
  normal.pos_first = 1;  // tokens at 1 and 3
  normal.pos_step = 2;
  Tensor* n = hand.Give(Must(ctx.Rope(a, normal)));
  RopeParams neox = normal;
  neox.mode = kRopeNeox;
  neox.heads = 2;  // one token of two heads: both rows at position 1
  Tensor* x = hand.Give(Must(ctx.Rope(a, neox)));
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({n, x})))));
  auto turn = [](double x0, double x1, double theta) {
    return std::pair<double, double>{x0 * std::cos(theta) - x1 * std::sin(theta), x0 * std::sin(theta) + x1 * std::cos(theta)};
  };
  const double f1 = std::pow(10000.0, -2.0 / 4);  // pair 1's frequency
  for (int row = 0; row < 2; ++row) {
    const double p = row == 0 ? 1.0 : 3.0;
    const std::vector<float> got = Values(n);
    auto [y0, y1] = turn(1.0, 2.0, p);
    auto [y2, y3] = turn(3.0, 4.0, p * f1);
    EXPECT_NEAR(got[row * 5 + 0], y0, 1e-5);
    EXPECT_NEAR(got[row * 5 + 1], y1, 1e-5);
    EXPECT_NEAR(got[row * 5 + 2], y2, 1e-5);
    EXPECT_NEAR(got[row * 5 + 3], y3, 1e-5);
    EXPECT_EQ(got[row * 5 + 4], 5.0f);  // the fifth element, past n_dims, copied
    const std::vector<float> neo = Values(x);
    auto [z0, z2] = turn(1.0, 3.0, 1.0);  // NEOX: element 0 with 2, 1 with 3
    auto [z1, z3] = turn(2.0, 4.0, f1);
    EXPECT_NEAR(neo[row * 5 + 0], z0, 1e-5);
    EXPECT_NEAR(neo[row * 5 + 2], z2, 1e-5);
    EXPECT_NEAR(neo[row * 5 + 1], z1, 1e-5);
    EXPECT_NEAR(neo[row * 5 + 3], z3, 1e-5);
    EXPECT_EQ(neo[row * 5 + 4], 5.0f);
  }
  RopeParams bad = normal;
  bad.n_dims = 6;  // past ne0
  EXPECT_FALSE(ctx.Rope(a, bad).ok());
  bad.n_dims = 3;  // odd
  EXPECT_FALSE(ctx.Rope(a, bad).ok());
  bad = normal;
  bad.heads = 3;  // does not divide the 2 rows
  EXPECT_FALSE(ctx.Rope(a, bad).ok());
  bad = normal;
  bad.mode = 1;
  EXPECT_FALSE(ctx.Rope(a, bad).ok());
}

// A rope element whose two products nearly cancel is ill-conditioned (NaN, not compared), as mul_mat's.
TEST(Evaluate, RopeOfCancellingHugePairsIsNotCompared) {
  Context ctx;
  Hand hand;
  Tensor* a = hand.Give(F32(ctx, {2}, "a"));
  const float av[] = {1e30f, 1e30f};
  std::memcpy(a->data, av, sizeof av);
  RopeParams r;
  r.pos_first = 1;  // the one pair turns by 1 radian
  Tensor* t = hand.Give(Must(ctx.Rope(a, r)));  // y0 = 1e30 (cos 1 - sin 1): nothing cancels
  const float cancel[] = {1e30f, 1e30f * std::cos(1.0f) / std::sin(1.0f)};  // y0 = x0 cos 1 - x1 sin 1: about 0
  Tensor* b = hand.Give(F32(ctx, {2}, "b"));
  std::memcpy(b->data, cancel, sizeof cancel);
  Tensor* u = hand.Give(Must(ctx.Rope(b, r)));
  ASSERT_TRUE(IsOk(Evaluate(Must(BuildGraph({t, u})))));
  EXPECT_FALSE(std::isnan(Values(t)[0]));
  EXPECT_TRUE(std::isnan(Values(u)[0]));
  EXPECT_FALSE(std::isnan(Values(u)[1]));
}

TEST(Evaluate, RowOpsTakeFloat32Only) {
  Context ctx;
  Tensor* h = F32(ctx, {2, 2}, "h");
  Tensor* half = Must(ctx.Copy(h, DType::kF16));
  EXPECT_FALSE(ctx.RowOp(Op::kSoftMax, half).ok());
  EXPECT_FALSE(ctx.RowOp(Op::kAdd, h).ok());
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

}  // namespace
}  // namespace lifeline::alloc
