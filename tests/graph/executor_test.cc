// The graph executor on the stand-in allocator (layers/alloc through the LayerAdapter): the pinned
// program runs clean with every oracle on, a wrong prediction is named by the status oracle, and inputs
// that fuzzing found against the executor itself stay fixed.
#include "harness/programs/graph/executor.h"

#include <gtest/gtest.h>

#include <memory>

#include "harness/programs/graph/standin/layer_adapter.h"
#include "tests/graph/pinned_program.h"

namespace lifeline::graphs {
namespace {

// The pinned program runs through the layer adapter with every oracle on, and the model's predictions
// hold, on the fixed code.
TEST(GraphExecutor, PinnedProgramRunsCleanOnFixedCode) {
  std::vector<uint8_t> b = Sequence();
  Execute(Decode(b.data(), b.size()), *MakeLayerAdapter());
}

TEST(GraphExecutorDeathTest, StatusOracleNamesTheStepAndBothStatuses) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<uint8_t> b = Sequence();
  Program p = Decode(b.data(), b.size());
  p.steps[30].expect = StatusCode::kFailedPrecondition;  // the model is wrong on purpose
  EXPECT_DEATH(Execute(p, *MakeLayerAdapter()),
               "status oracle: alloc\\+compute g0 with allocator 0 -> FAILED_PRECONDITION returned OK(.|\n)*=> #30");
}

// Found by 10 minutes of fuzzing the fixed code: a leaf that gave up its memory (toggle-prealloc) left
// the views of it in its graph pointing at the old bytes, and a later graph viewing one of those views
// read them. Views of a toggled leaf now lose their address until their graph is placed again.
constexpr uint8_t kToggledLeafViews[] = {
    0x94, 0x94, 0x94, 0x94, 0x35, 0x35, 0x35, 0x35, 0xff, 0xff, 0xff, 0xff, 0x35, 0x35, 0x35, 0x35,
    0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x94, 0x94, 0x94, 0x94, 0x94, 0x94, 0x94,
    0x94, 0x7d, 0x7d, 0x7d, 0x7d, 0x7d, 0xff, 0xff, 0x7d, 0x7d, 0x7d, 0xfb, 0xff, 0xff, 0x4b, 0xff,
    0xe3, 0x00, 0xd7, 0xb4, 0xfc, 0xbe, 0xd1, 0x09, 0x00, 0x00, 0x00, 0x94, 0x94, 0x94, 0x94, 0x94,
    0x30, 0x63
};

TEST(GraphExecutorRegression, ViewsOfAToggledLeafLoseTheirAddress) {
  Execute(Decode(kToggledLeafViews, sizeof(kToggledLeafViews)), *MakeLayerAdapter());
}

// Found by 10 minutes of fuzzing the fixed code (status oracle: "alloc+compute g3 with allocator 1 ->
// FAILED_PRECONDITION returned OK"): an alloc+compute refused because a leaf view's source was never placed
// had already placed the graph's earlier leafs and left them placed, so a later graph's view of one of them
// was placed on it. The model's rule (a tensor has memory once its graph was placed, and a refused
// placement places nothing) is ggml's: the layer's AllocGraph now leaves every tensor as it was on refusal.
TEST(GraphExecutorRegression, RefusedPlacementLeavesItsLeafsWithoutMemory) {
  std::unique_ptr<AllocatorAdapter> a = MakeLayerAdapter();
  AllocatorSpec one_buffer;
  one_buffer.buffers = {alloc::BufferSpec{}};
  ASSERT_TRUE(a->CreateAllocator(0, one_buffer).ok());
  ASSERT_TRUE(a->CreateAllocator(1, one_buffer).ok());
  auto leaf = [] { return TensorSpec{}; };  // f32 [1,1]
  auto view_of = [](int g, int t) {
    TensorSpec v;
    v.external_graph = g;
    v.external_tensor = t;
    return v;
  };
  TensorSpec out = leaf();
  out.output = true;
  ASSERT_TRUE(a->AddTensor(0, out).ok());  // g0.t0: never placed
  TensorSpec add;
  add.op = alloc::Op::kAdd;
  add.src[0] = 0;
  add.src[1] = 1;
  add.output = true;
  ASSERT_TRUE(a->AddTensor(1, out).ok());             // g1.t0: placed before the view below
  ASSERT_TRUE(a->AddTensor(1, view_of(0, 0)).ok());  // g1.t1: views g0.t0, which has no memory
  ASSERT_TRUE(a->AddTensor(1, add).ok());             // g1.t2 = t0 + t1
  EXPECT_EQ(a->AllocAndCompute(0, 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(a->Reserve(0, 1).code(), StatusCode::kOk);  // planning places nothing either
  TensorSpec neg;
  neg.op = alloc::Op::kNeg;
  neg.src[0] = 0;
  neg.output = true;
  ASSERT_TRUE(a->AddTensor(2, view_of(1, 0)).ok());  // g2.t0: views g1.t0, which was never placed
  ASSERT_TRUE(a->AddTensor(2, neg).ok());
  EXPECT_EQ(a->AllocAndCompute(1, 2).code(), StatusCode::kFailedPrecondition);
  a->Teardown();
}

}  // namespace
}  // namespace lifeline::graphs
