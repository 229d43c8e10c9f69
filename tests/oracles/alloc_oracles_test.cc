// The allocation oracles of harness/oracles/alloc_oracles.h: each passes on a placement made by
// GraphAllocator (the shared PlacedInplaceGraph of tests/testing/graph_fixtures.h) and fails, naming the
// tensor, on a hand-made bad placement. Hand placements put tensors in memory the test owns and set
// their owner to a token (any stable address): the oracles treat tensors with owner == allocator as
// "placed by the allocator".
#include <gtest/gtest.h>

#include <cmath>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "harness/oracles/alloc_oracles.h"
#include "layers/alloc/eval.h"
#include "layers/alloc/gallocr.h"
#include "layers/alloc/tensor.h"
#include "tests/testing/graph_fixtures.h"

namespace lifeline::oracles {
namespace {

// The shared graph fixtures of tests/testing/.
using namespace testing_util;

using alloc::BufferSpec;
using alloc::BuildGraph;
using alloc::Context;
using alloc::DType;
using alloc::Graph;
using alloc::GraphAllocator;
using alloc::Op;
using alloc::Tensor;

// An oracle's verdict is a failure that mentions every one of `names`.
testing::AssertionResult FailsNaming(const Status& verdict, std::initializer_list<std::string_view> names) {
  if (verdict.ok()) return testing::AssertionFailure() << "the oracle passed";
  if (verdict.code() != StatusCode::kInternal) {
    return testing::AssertionFailure() << "not INTERNAL: " << verdict.ToString();
  }
  for (std::string_view n : names) {
    if (verdict.message().find(n) == std::string::npos) {
      return testing::AssertionFailure() << "'" << verdict.message() << "' does not name '" << n << "'";
    }
  }
  return testing::AssertionSuccess();
}

// A hand-made "buffer": memory the test owns, and the token that stands for the allocator.
struct HandBuffer {
  std::vector<uint64_t> words;  // 8-byte aligned
  int token = 0;
  explicit HandBuffer(size_t bytes) : words((bytes + 7) / 8, 0) {}
  uint8_t* base() { return reinterpret_cast<uint8_t*>(words.data()); }
  size_t size() const { return words.size() * 8; }
  const void* allocator() const { return &token; }
  void Place(Tensor* t, size_t offset) {
    t->data = base() + offset;
    t->owner = &token;
  }
  // A placement table: each (tensor, offset) in turn.
  void Place(std::initializer_list<std::pair<Tensor*, size_t>> placements) {
    for (const auto& [t, offset] : placements) Place(t, offset);
  }
  // A view's bytes are its source's, at its offset; owner as the allocator would set it.
  void PlaceView(Tensor* v) {
    v->data = static_cast<uint8_t*>(v->view_src->data) + v->view_offs;
    v->owner = v->view_src->owner;
  }
};

// A one-node graph, nothing placed: leaf `leaf_name` (8 floats) and its negation `node_name`.
struct NegOfLeaf {
  Context ctx;
  Tensor *leaf, *node;
  Graph g;
  NegOfLeaf(const std::string& leaf_name, const std::string& node_name) {
    leaf = F32(ctx, {8}, leaf_name);
    node = Named(Must(ctx.Unary(Op::kNeg, leaf, 0.0f, false)), node_name);
    g = Must(BuildGraph({node}));
  }
};

// x -> a -> b, then c = b + a, hand-placed with b over a although c still reads a: x at 0, a and b at
// 32, c at 64. `elementwise`: a = -x and b = 3a (ops that may run in place, but not here: b is not a's
// last reader); else both are copies.
struct BOverLiveA {
  Context ctx;
  Tensor *x, *a, *b, *c;
  Graph g;
  HandBuffer buf{256};
  explicit BOverLiveA(bool elementwise) {
    x = F32(ctx, {8}, "x");
    a = Named(Must(elementwise ? ctx.Unary(Op::kNeg, x, 0.0f, false) : ctx.Copy(x, DType::kF32)), "a");
    b = Named(Must(elementwise ? ctx.Unary(Op::kScale, a, 3.0f, false) : ctx.Copy(a, DType::kF32)), "b");
    c = Named(Must(ctx.Binary(Op::kAdd, b, a, false)), "c");
    g = Must(BuildGraph({c}));
    buf.Place({{x, 0}, {a, 32}, {b, 32}, {c, 64}});
  }
};

// =====================================================================================================
// CheckNoLiveOverlap
// =====================================================================================================

TEST(NoLiveOverlapOracle, PassesOnGraphAllocatorPlacement) {
  PlacedInplaceGraph p;
  p.Allocate();
  EXPECT_TRUE(IsOk(CheckNoLiveOverlap(p.g, p.alloc.get())));
}

TEST(NoLiveOverlapOracle, FlagsTwoLiveTensorsSharingBytes) {
  Context ctx;
  Tensor* lhs = F32(ctx, {8}, "lhs");
  Tensor* rhs = F32(ctx, {8}, "rhs");
  Tensor* sum = Named(Must(ctx.Binary(Op::kAdd, lhs, rhs, false)), "sum");
  Graph g = Must(BuildGraph({sum}));
  HandBuffer buf(256);
  buf.Place({{lhs, 0}, {rhs, 16}, {sum, 64}});  // rhs shares lhs's upper half
  EXPECT_TRUE(FailsNaming(CheckNoLiveOverlap(g, buf.allocator()), {"no-overlap oracle", "lhs", "rhs"}));
  // Disjoint, it passes; and tensors some other allocator placed are not this one's concern.
  buf.Place(rhs, 32);
  EXPECT_TRUE(IsOk(CheckNoLiveOverlap(g, buf.allocator())));
  buf.Place(rhs, 16);
  int other = 0;
  rhs->owner = &other;
  EXPECT_TRUE(IsOk(CheckNoLiveOverlap(g, buf.allocator())));
}

TEST(NoLiveOverlapOracle, NamesTheFirstOverlappingPairInGraphOrder) {
  // Three leafs on the same bytes, made in the reverse of the order the graph lists them: the verdict
  // names the first two the graph lists (leafs, then nodes), whatever their addresses, on every run.
  Context ctx;
  Tensor* third = F32(ctx, {8}, "third");
  Tensor* second = F32(ctx, {8}, "second");
  Tensor* first = F32(ctx, {8}, "first");
  Tensor* ab = Named(Must(ctx.Binary(Op::kAdd, first, second, false)), "ab");
  Tensor* abc = Named(Must(ctx.Binary(Op::kAdd, ab, third, false)), "abc");
  Graph g = Must(BuildGraph({abc}));
  ASSERT_EQ(g.leafs, (std::vector<Tensor*>{first, second, third}));
  HandBuffer buf(256);
  buf.Place({{third, 0}, {second, 0}, {first, 0}, {ab, 64}, {abc, 128}});
  Status verdict = CheckNoLiveOverlap(g, buf.allocator());
  EXPECT_TRUE(FailsNaming(verdict, {"first [", "second ["}));
  EXPECT_EQ(verdict.message().find("third"), std::string::npos) << verdict.message();
}

TEST(NoLiveOverlapOracle, FlagsNodeWrittenOverATensorStillToBeRead) {
  // b is computed into a's bytes, but c reads a after that; whether or not b's op could run in place.
  for (bool elementwise : {false, true}) {
    SCOPED_TRACE(elementwise ? "a = -x, b = 3a" : "a and b copies");
    BOverLiveA chain(elementwise);
    EXPECT_TRUE(FailsNaming(CheckNoLiveOverlap(chain.g, chain.buf.allocator()), {"a", "b"}));
    chain.buf.Place(chain.b, 96);
    EXPECT_TRUE(IsOk(CheckNoLiveOverlap(chain.g, chain.buf.allocator())));
  }
}

// A scheduler's split graph: a = -x runs on one backend, b = -x and c = b + a on another, which reads a through a
// copy made before b runs. b may then take a's bytes. Where read_at says c reads a before b (the copy), that
// passes; where it says c reads a after b is written, or without read_at (c reads a where it runs), it fails.
TEST(NoLiveOverlapOracle, ReadsThroughACopyEndWhereReadAtSays) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  Tensor* a = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "a");
  Tensor* b = Named(Must(ctx.Unary(Op::kNeg, x, 0.0f, false)), "b");
  Tensor* c = Named(Must(ctx.Binary(Op::kAdd, b, a, false)), "c");
  Graph g = Must(BuildGraph({c}));
  ASSERT_EQ(g.nodes, (std::vector<Tensor*>{b, a, c}));  // depth-first from c: b first
  g.nodes = {a, b, c};                                  // the order the scheduler runs them in
  HandBuffer buf(256);
  buf.Place({{x, 0}, {a, 32}, {b, 32}, {c, 64}});
  auto copied_before = [&](int at) {
    return ReadAt([=](int node, const Tensor* src) { return node == 2 && src == a ? at : node; });
  };
  EXPECT_TRUE(IsOk(CheckNoLiveOverlap(g, buf.allocator(), copied_before(0))));
  EXPECT_TRUE(FailsNaming(CheckNoLiveOverlap(g, buf.allocator(), copied_before(1)), {"a [", "b ["}));
  EXPECT_TRUE(FailsNaming(CheckNoLiveOverlap(g, buf.allocator()), {"a [", "b ["}));
}

TEST(NoLiveOverlapOracle, AcceptsElementwiseNodeInPlaceOfItsLastSource) {
  // n = -a and m = 2n each take exactly their single source's bytes at its last use.
  Context ctx;
  Tensor* a = F32(ctx, {8}, "a");
  Tensor* n = Named(Must(ctx.Unary(Op::kNeg, a, 0.0f, false)), "n");
  Tensor* m = Named(Must(ctx.Unary(Op::kScale, n, 2.0f, false)), "m");
  Tensor* b = F32(ctx, {8}, "b");
  Tensor* s = Named(Must(ctx.Binary(Op::kAdd, m, b, false)), "s");
  Graph g = Must(BuildGraph({s}));
  HandBuffer buf(256);
  buf.Place({{a, 0}, {n, 0}, {m, 0}, {b, 32}, {s, 32}});  // s in place of its second source
  EXPECT_TRUE(IsOk(CheckNoLiveOverlap(g, buf.allocator())));
}

TEST(NoLiveOverlapOracle, FlagsTheSameSharingForANonElementwiseOp) {
  struct Row {
    const char* what;
    Op op;
  };
  const Row rows[] = {{"neg (control: allowed)", Op::kNeg},
                      {"scale (control: allowed)", Op::kScale},
                      {"copy", Op::kCopy},
                      {"concat", Op::kConcat}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    Context ctx;
    Tensor* src = F32(ctx, {8}, "src");
    Tensor* dst = nullptr;
    switch (row.op) {
      case Op::kNeg: dst = Must(ctx.Unary(Op::kNeg, src, 0.0f, false)); break;
      case Op::kScale: dst = Must(ctx.Unary(Op::kScale, src, 3.0f, false)); break;
      case Op::kCopy: dst = Must(ctx.Copy(src, DType::kF32)); break;
      default: dst = Must(ctx.Concat(src, src)); break;
    }
    dst->name = "dst";
    Graph g = Must(BuildGraph({dst}));
    HandBuffer buf(256);
    buf.Place({{src, 0}, {dst, 0}});  // dst on the source's bytes, at the source's last use
    Status verdict = CheckNoLiveOverlap(g, buf.allocator());
    if (alloc::OpCanInplace(row.op)) {
      EXPECT_TRUE(IsOk(verdict));
    } else {
      EXPECT_TRUE(FailsNaming(verdict, {"src", "dst"}));
    }
  }
}

TEST(NoLiveOverlapOracle, FlagsInPlaceSharingOfPartOfTheSource) {
  // Elementwise, but not exactly the source's bytes: shifted by one element.
  NegOfLeaf t("src", "dst");
  HandBuffer buf(256);
  buf.Place({{t.leaf, 0}, {t.node, 4}});
  EXPECT_TRUE(FailsNaming(CheckNoLiveOverlap(t.g, buf.allocator()), {"src", "dst"}));
}

TEST(NoLiveOverlapOracle, FlagsReuseOfAnOutputAfterItsLastReader) {
  // y is an output: it lives to the end of the graph even after z, its last reader.
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  Tensor* y = Named(Must(ctx.Copy(x, DType::kF32)), "y");
  y->output = true;
  Tensor* z = Named(Must(ctx.Copy(y, DType::kF32)), "z");
  Tensor* w = Named(Must(ctx.Copy(z, DType::kF32)), "w");
  Graph g = Must(BuildGraph({w}));
  HandBuffer buf(256);
  buf.Place({{x, 0}, {y, 32}, {z, 64}, {w, 32}});
  EXPECT_TRUE(FailsNaming(CheckNoLiveOverlap(g, buf.allocator()), {"y", "w"}));
  y->output = false;  // the same bytes are fine for an ordinary tensor
  EXPECT_TRUE(IsOk(CheckNoLiveOverlap(g, buf.allocator())));
}

// Regression (this test found it; fixed): an output that is a view (an in-place result) does not keep its root alive. `r` = 2a in
// place is marked output, so its bytes — a's — must survive the graph; the hand placement puts `w`
// (planned after r's last reader) on them. CheckNoLiveOverlap only extends the life of tensors it owns
// that are themselves outputs, and views are never owned, so a's life ends at r's last reader and the
// overwrite passes. (This is the placement GraphAllocator made before it pinned the roots of output
// views — GraphAllocator.OutputInplaceResultKeepsItsSourceAlive in tests/alloc/gallocr_plan_test.cc —
// and the no-overlap oracle could not have found it; only Differential, and only when r is among its
// outputs.)
TEST(NoLiveOverlapOracle, FlagsReuseOfTheRootOfAnOutputView) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  Tensor* a = Named(Must(ctx.Copy(x, DType::kF32)), "a");
  Tensor* r = Named(Must(ctx.Unary(Op::kScale, a, 2.0f, /*inplace=*/true)), "r");
  r->output = true;
  Tensor* z = Named(Must(ctx.Copy(r, DType::kF32)), "z");
  Tensor* w = Named(Must(ctx.Concat(z, z)), "w");
  Graph g = Must(BuildGraph({w, r}));
  ASSERT_EQ(g.nodes, (std::vector<Tensor*>{a, r, z, w}));
  HandBuffer buf(256);
  buf.Place({{x, 0}, {a, 32}, {z, 0}, {w, 32}});  // w over a, hence over the output r
  buf.PlaceView(r);
  EXPECT_TRUE(FailsNaming(CheckNoLiveOverlap(g, buf.allocator()), {"a", "w"}));
}

// =====================================================================================================
// CheckViewsInsideSources
// =====================================================================================================

TEST(ViewsInsideSourcesOracle, PassesOnGraphAllocatorPlacement) {
  PlacedInplaceGraph p;
  p.Allocate();
  EXPECT_TRUE(IsOk(CheckViewsInsideSources(p.g)));
}

TEST(ViewsInsideSourcesOracle, FlagsViewOutsideItsSource) {
  struct Row {
    const char* what;
    std::ptrdiff_t shift;  // bytes from where the view belongs
  };
  const Row rows[] = {{"one element past", 4}, {"wholly past the end", 64}, {"before the start", -20}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    Context ctx;
    Tensor* src = F32(ctx, {8}, "src");
    const int64_t four[] = {4};
    Tensor* v = Named(Must(ctx.View(src, four, 1, 16)), "v");  // the upper half
    Tensor* use = Named(Must(ctx.Unary(Op::kNeg, v, 0.0f, false)), "use");
    Graph g = Must(BuildGraph({use}));
    HandBuffer buf(256);
    buf.Place({{src, 64}, {use, 128}});
    buf.PlaceView(v);
    ASSERT_TRUE(IsOk(CheckViewsInsideSources(g)));
    v->data = static_cast<uint8_t*>(v->data) + row.shift;
    EXPECT_TRUE(FailsNaming(CheckViewsInsideSources(g), {"view oracle", "v [", "outside its source src"}));
  }
}

TEST(ViewsInsideSourcesOracle, FlagsViewOfAViewOutsideTheRoot) {
  // The chain ends in `root`: the view of the view is checked against root's bytes.
  Context ctx;
  Tensor* root = F32(ctx, {8}, "root");
  const int64_t six[] = {6};
  const int64_t two[] = {2};
  Tensor* mid = Named(Must(ctx.View(root, six, 1, 8)), "mid");
  Tensor* tip = Named(Must(ctx.View(mid, two, 1, 16)), "tip");
  Tensor* use = Named(Must(ctx.Unary(Op::kNeg, tip, 0.0f, false)), "use");
  Graph g = Must(BuildGraph({use}));
  HandBuffer buf(256);
  buf.Place({{root, 0}, {use, 64}});
  buf.PlaceView(mid);
  buf.PlaceView(tip);
  ASSERT_EQ(tip->data, buf.base() + 24);
  ASSERT_TRUE(IsOk(CheckViewsInsideSources(g)));
  tip->data = buf.base() + 28;  // root ends at 32; tip's 8 bytes would end at 36
  EXPECT_TRUE(FailsNaming(CheckViewsInsideSources(g), {"tip", "root"}));
}

TEST(ViewsInsideSourcesOracle, FlagsLeafViewWithMemoryWhoseSourceHasNone) {
  Context ctx;
  Tensor* y = F32(ctx, {8}, "y");
  Tensor* v = Named(Must(ctx.ViewTensor(y)), "v");
  Tensor* use = Named(Must(ctx.Unary(Op::kNeg, v, 0.0f, false)), "use");
  Graph g = Must(BuildGraph({use}));
  HandBuffer buf(64);
  EXPECT_TRUE(IsOk(CheckViewsInsideSources(g)));  // no memory anywhere: nothing to check
  v->data = buf.base();
  EXPECT_TRUE(FailsNaming(CheckViewsInsideSources(g), {"v has memory but its source y has none"}));
}

// =====================================================================================================
// CheckPlacedInsideBuffers
// =====================================================================================================

TEST(PlacedInsideBuffersOracle, PassesOnGraphAllocatorPlacement) {
  PlacedInplaceGraph p;
  p.Allocate();
  EXPECT_TRUE(IsOk(CheckPlacedInsideBuffers(p.g, p.alloc.get(), p.Extents())));
}

TEST(PlacedInsideBuffersOracle, PassesOnGraphAllocatorPlacementOverTwoBuffers) {
  Context ctx;
  Tensor* x = F32(ctx, {8}, "x");
  x->input = true;
  Tensor* a = Named(Must(ctx.Copy(x, DType::kF16)), "a");
  Tensor* b = Named(Must(ctx.Copy(a, DType::kF32)), "b");
  Graph g = Must(BuildGraph({b}));
  auto alloc = Must(GraphAllocator::Create({BufferSpec{16, 1 << 16}, BufferSpec{256, 1 << 16}}));
  ASSERT_TRUE(IsOk(alloc->Reserve(g, {0, 1})));
  ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
  std::vector<BufferExtent> extents = {{alloc->buffer_base(0), alloc->buffer_size(0), 16},
                                       {alloc->buffer_base(1), alloc->buffer_size(1), 256}};
  EXPECT_TRUE(IsOk(CheckPlacedInsideBuffers(g, alloc.get(), extents)));
  ASSERT_GE(b->data, alloc->buffer_base(1));
  // Checked against buffer 0 alone, b (in buffer 1) lies in none.
  EXPECT_TRUE(FailsNaming(CheckPlacedInsideBuffers(g, alloc.get(), {extents[0]}), {"b [", "in none of its buffers"}));
}

TEST(PlacedInsideBuffersOracle, FlagsMisalignedTensor) {
  NegOfLeaf t("x", "odd");
  Tensor *x = t.leaf, *odd = t.node;
  const Graph& g = t.g;
  HandBuffer buf(256);
  std::vector<BufferExtent> extents = {{buf.base(), buf.size(), 32}};
  buf.Place({{x, 0}, {odd, 64}});
  ASSERT_TRUE(IsOk(CheckPlacedInsideBuffers(g, buf.allocator(), extents)));
  for (size_t offset : {4u, 8u, 16u, 100u}) {
    SCOPED_TRACE(offset);
    buf.Place(odd, offset);
    EXPECT_TRUE(FailsNaming(CheckPlacedInsideBuffers(g, buf.allocator(), extents),
                            {"odd at offset " + std::to_string(offset) + " is not aligned to 32"}));
  }
}

TEST(PlacedInsideBuffersOracle, FlagsTensorPastTheBufferEnd) {
  NegOfLeaf t("x", "tail");
  Tensor *x = t.leaf, *tail = t.node;
  const Graph& g = t.g;
  HandBuffer buf(256);
  std::vector<BufferExtent> extents = {{buf.base(), 128, 32}};  // the extent ends before the memory does
  buf.Place({{x, 0}, {tail, 96}});  // tail at [96, 128): the last fitting slot
  ASSERT_TRUE(IsOk(CheckPlacedInsideBuffers(g, buf.allocator(), extents)));
  buf.Place(tail, 112);
  EXPECT_TRUE(FailsNaming(CheckPlacedInsideBuffers(g, buf.allocator(), extents),
                          {"tail", "runs past the end of its 128-byte buffer"}));
  buf.Place(tail, 128);
  EXPECT_TRUE(FailsNaming(CheckPlacedInsideBuffers(g, buf.allocator(), extents), {"tail", "in none of its buffers"}));
}

TEST(PlacedInsideBuffersOracle, FlagsLeafOutsideEveryBuffer) {
  NegOfLeaf t("stray", "y");
  Tensor *stray = t.leaf, *y = t.node;
  const Graph& g = t.g;
  HandBuffer buf(256);
  HandBuffer elsewhere(64);
  std::vector<BufferExtent> extents = {{buf.base(), buf.size(), 32}};
  buf.Place(y, 0);
  stray->data = elsewhere.base();
  stray->owner = buf.allocator();
  EXPECT_TRUE(FailsNaming(CheckPlacedInsideBuffers(g, buf.allocator(), extents),
                          {"stray", "placed by the allocator but lies in none of its buffers"}));
  stray->owner = nullptr;  // external memory: not the allocator's to place
  EXPECT_TRUE(IsOk(CheckPlacedInsideBuffers(g, buf.allocator(), extents)));
}

// =====================================================================================================
// Canary
// =====================================================================================================

// A graph placed by allocator B with two kinds of external memory: a weight leaf in memory the test
// owns, and a leaf view of a tensor allocator A placed.
struct External {
  Context ctx;
  Tensor *x, *y, *weights, *view, *sum, *out;
  Graph ga, gb;
  std::unique_ptr<GraphAllocator> alloc_a = Must(GraphAllocator::Create({BufferSpec{}}));
  std::unique_ptr<GraphAllocator> alloc_b = Must(GraphAllocator::Create({BufferSpec{}}));
  std::vector<float> weights_mem = std::vector<float>(8, 0.0f);
  External() {
    x = F32(ctx, {8}, "x");
    x->input = true;
    y = Named(Must(ctx.Unary(Op::kScale, x, 10.0f, false)), "y");
    y->output = true;
    ga = Must(BuildGraph({y}));
    weights = F32(ctx, {8}, "weights");
    weights->data = weights_mem.data();
    view = Named(Must(ctx.ViewTensor(y)), "view");
    sum = Named(Must(ctx.Binary(Op::kAdd, view, weights, false)), "sum");
    out = Named(Must(ctx.Unary(Op::kNeg, sum, 0.0f, false)), "out");
    gb = Must(BuildGraph({out}));
  }
  void Allocate() {
    ASSERT_TRUE(IsOk(alloc_a->Reserve(ga)));
    ASSERT_TRUE(IsOk(alloc_a->AllocGraph(ga)));
    ASSERT_TRUE(IsOk(alloc_b->Reserve(gb)));
    ASSERT_TRUE(IsOk(alloc_b->AllocGraph(gb)));
    ASSERT_EQ(view->data, y->data);
    ASSERT_EQ(weights->data, weights_mem.data());
    Fill(x, 1.0f, 1.0f);
    Fill(weights, 0.5f, 0.0f);
    ASSERT_TRUE(IsOk(alloc::Evaluate(ga)));
  }
};

TEST(CanaryOracle, PassesWhenExternalBytesAreUntouched) {
  External e;
  e.Allocate();
  Canary canary(e.gb, e.alloc_b.get());
  ASSERT_TRUE(IsOk(alloc::Evaluate(e.gb)));
  EXPECT_TRUE(IsOk(canary.Check()));
  EXPECT_EQ(alloc::LoadElement(DType::kF32, e.out->data, 2), -30.5f);
}

TEST(CanaryOracle, FlagsExternalLeafChangedAfterConstruction) {
  External e;
  e.Allocate();
  Canary canary(e.gb, e.alloc_b.get());
  ASSERT_TRUE(IsOk(alloc::Evaluate(e.gb)));
  e.weights_mem[5] = 99.0f;
  EXPECT_TRUE(FailsNaming(canary.Check(), {"canary oracle", "external tensor weights (32 bytes"}));
}

TEST(CanaryOracle, FlagsSourceOfLeafViewChangedAfterConstruction) {
  // The view leaf's bytes are y's, in A's buffer: the canary guards y.
  External e;
  e.Allocate();
  Canary canary(e.gb, e.alloc_b.get());
  ASSERT_TRUE(IsOk(alloc::Evaluate(e.gb)));
  alloc::StoreElement(DType::kF32, e.y->data, 7, -1.0f);
  EXPECT_TRUE(FailsNaming(canary.Check(), {"external tensor y"}));
}

TEST(CanaryOracle, DoesNotGuardTheAllocatorsOwnLeafs) {
  // x is A's own input: for allocator A's graph, x is not external and may change.
  External e;
  e.Allocate();
  Canary canary(e.ga, e.alloc_a.get());
  Fill(e.x, -7.0f, 0.0f);
  EXPECT_TRUE(IsOk(canary.Check()));
}

// A KV cache: a leaf in memory the test owns (rows {1, 2}, {3, 4}, {5, 6}) that the allocator's graph writes with
// set_rows (row 1 from the input rows) and reads back through get_rows (row 0 only: no output depends on what was
// written).
struct Cache {
  Context ctx;
  Tensor *cache, *rows, *set, *read;
  Graph g;
  std::unique_ptr<GraphAllocator> alloc = Must(GraphAllocator::Create({BufferSpec{}}));
  std::vector<float> cache_mem = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  Cache() {
    cache = F32(ctx, {2, 1, 1, 3}, "cache");
    cache->data = cache_mem.data();
    rows = F32(ctx, {2, 1, 1, 1}, "rows");
    rows->input = true;
    const int32_t at[] = {1};
    set = Named(Must(ctx.SetRows(cache, rows, at)), "set");
    const int32_t first[] = {0};
    read = Named(Must(ctx.GetRows(set, first, 1)), "read");
    read->output = true;
    g = Must(BuildGraph({read}));
  }
  void Allocate() {
    ASSERT_TRUE(IsOk(alloc->Reserve(g)));
    ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
    ASSERT_EQ(set->data, cache_mem.data());
    Fill(rows, 7.0f, 1.0f);
  }
};

TEST(CanaryOracle, LeavesTheExternalTensorsTheGraphWritesToTheDifferential) {
  Cache c;
  c.Allocate();
  EXPECT_EQ(WrittenExternal(c.g, c.alloc.get()), (std::vector<const Tensor*>{c.cache}));
  Canary canary(c.g, c.alloc.get());
  Differential diff(c.g, c.alloc.get(), {c.read});
  // The reference wrote its own copy of the cache, not the cache: the placed run is still to write row 1.
  EXPECT_EQ(c.cache_mem, (std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}));
  ASSERT_TRUE(IsOk(alloc::Evaluate(c.g)));
  EXPECT_EQ(c.cache_mem, (std::vector<float>{1.0f, 2.0f, 7.0f, 8.0f, 5.0f, 6.0f}));
  EXPECT_TRUE(IsOk(canary.Check()));
  EXPECT_TRUE(IsOk(diff.Check()));
}

TEST(DifferentialOracle, ComparesTheWholeOfAWrittenExternalTensor) {
  Cache c;
  c.Allocate();
  Differential diff(c.g, c.alloc.get(), {c.read});
  ASSERT_TRUE(IsOk(alloc::Evaluate(c.g)));
  c.cache_mem[4] = -1.0f;  // row 2, which no set_rows wrote and no output reads
  EXPECT_TRUE(FailsNaming(diff.Check(), {"differential oracle: written external tensor cache element 4 is -1"}));
}

// =====================================================================================================
// Differential
// =====================================================================================================

// PlacedInplaceGraph placed and filled, a Differential taken over its outputs h and out, then run on
// the placed memory: what a test changes afterwards, the Differential's Check must see.
struct DifferentialOnPlaced {
  PlacedInplaceGraph p;
  std::optional<Differential> diff;
  void Run() {
    ASSERT_NO_FATAL_FAILURE(p.Allocate());
    p.FillLeafs();
    diff.emplace(p.g, p.alloc.get(), std::vector<Tensor*>{p.h, p.out});
    ASSERT_TRUE(IsOk(alloc::Evaluate(p.g)));
  }
};

TEST(DifferentialOracle, PassesOnGraphAllocatorPlacement) {
  DifferentialOnPlaced d;
  ASSERT_NO_FATAL_FAILURE(d.Run());
  EXPECT_TRUE(IsOk(d.diff->error()));
  EXPECT_TRUE(IsOk(d.diff->Check()));
  // x = 1..16, w = 0.5: s = 1.5..16.5; lo = s[0..8), n = -s[8..16), m = 2n.
  EXPECT_EQ(alloc::LoadElement(DType::kF16, d.p.h->data, 0), -19.0f);
  EXPECT_EQ(alloc::LoadElement(DType::kF32, d.p.out->data, 0), -1.5f);
  EXPECT_EQ(alloc::LoadElement(DType::kF32, d.p.out->data, 8), 19.0f);
}

TEST(DifferentialOracle, PassesWithExternalMemory) {
  External e;
  e.Allocate();
  Differential diff(e.gb, e.alloc_b.get(), {e.out});
  ASSERT_TRUE(IsOk(alloc::Evaluate(e.gb)));
  EXPECT_TRUE(IsOk(diff.Check()));
}

TEST(DifferentialOracle, FlagsOutputCorruptedAfterThePlacedRun) {
  DifferentialOnPlaced d;
  ASSERT_NO_FATAL_FAILURE(d.Run());
  ASSERT_TRUE(IsOk(d.diff->Check()));
  alloc::StoreElement(DType::kF32, d.p.out->data, 3, 1234.0f);
  EXPECT_TRUE(FailsNaming(d.diff->Check(), {"differential oracle: output out element 3 is 1234"}));
}

TEST(DifferentialOracle, FlagsFloat16OutputCorruptedAfterThePlacedRun) {
  DifferentialOnPlaced d;
  ASSERT_NO_FATAL_FAILURE(d.Run());
  static_cast<uint16_t*>(d.p.h->data)[5] ^= 0x0001;  // one ulp
  EXPECT_TRUE(FailsNaming(d.diff->Check(), {"output h element 5"}));
}

TEST(DifferentialOracle, FlagsWrongNumbersFromAnOverlappingPlacement) {
  // b is placed over a although c still reads a: the placed run computes c from b twice.
  BOverLiveA chain(/*elementwise=*/true);
  Fill(chain.x, 1.0f, 1.0f);
  Differential diff(chain.g, chain.buf.allocator(), {chain.c});
  ASSERT_TRUE(IsOk(alloc::Evaluate(chain.g)));
  EXPECT_TRUE(FailsNaming(diff.Check(), {"output c element 0 is -6.0", "but -4.0"}));
}

TEST(DifferentialOracle, ReportsAFailedReferenceRun) {
  // An external node input with no memory: the reference run cannot read it.
  NegOfLeaf t("x", "y");
  HandBuffer buf(64);
  buf.Place(t.node, 0);
  Differential diff(t.g, buf.allocator(), {t.node});
  EXPECT_TRUE(FailsNaming(diff.error(),
                          {"differential oracle: the reference run failed", "source x of y has no memory"}));
  EXPECT_EQ(diff.Check().ToString(), diff.error().ToString());
}

// kClose, for graphs with a row op: within 1% of the reference (absolute below 1); a reference NaN (undefined or
// ill-conditioned there) takes anything, a NaN where the reference has a number is not close; a value an aliasing
// placement would produce instead is not close.
TEST(SameElement, CloseToleratesRoundingOnly) {
  EXPECT_TRUE(SameElement(1.005f, 1.0f, Equality::kClose));
  EXPECT_TRUE(SameElement(0.004f, -0.004f, Equality::kClose));
  EXPECT_TRUE(SameElement(201.0f, 200.0f, Equality::kClose));
  EXPECT_FALSE(SameElement(1.02f, 1.0f, Equality::kClose));
  EXPECT_FALSE(SameElement(0.25f, 0.75f, Equality::kClose));
  EXPECT_FALSE(SameElement(std::nanf(""), 1.0f, Equality::kClose));
  EXPECT_TRUE(SameElement(std::nanf(""), std::nanf(""), Equality::kClose));
  EXPECT_TRUE(SameElement(1.0f, std::nanf(""), Equality::kClose));
  EXPECT_FALSE(SameElement(1.0f, std::nanf(""), Equality::kBits));
  EXPECT_FALSE(SameElement(1.005f, 1.0f, Equality::kBits));
}

}  // namespace
}  // namespace lifeline::oracles
