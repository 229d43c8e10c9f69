// The graph executor on the stand-in allocator (layers/alloc through the LayerAdapter): the pinned
// program runs clean with every oracle on, a wrong prediction is named by the status oracle, and inputs
// that fuzzing found against the executor itself stay fixed.
#include "harness/programs/graph/executor.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace lifeline::graphs
