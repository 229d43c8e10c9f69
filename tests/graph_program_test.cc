// The graph-program decoder is a file format: these tests pin how bytes become steps. If one fails after
// a deliberate decoder change, every file in corpus/alloc_graph_topology/ and
// repro/gallocr-view-leaf-offset/ now means something else: regenerate them and update bug.json's
// "program" line in the same change.
#include "harness/programs/graph_program.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace lifeline::graphs {
namespace {

// 96 bytes of a fixed arithmetic sequence: enough for most step kinds.
std::vector<uint8_t> Sequence() {
  std::vector<uint8_t> b(96);
  for (int i = 0; i < 96; ++i) b[i] = static_cast<uint8_t>((i * 73 + 29) & 0xff);
  return b;
}

constexpr char kSequenceProgram[] =
    "allocator 0: buffer(align 16)\n"
    "allocator 1: buffer(align 32)\n"
    "#0 leaf g0.t0 = none f32 [8,3] input\n"
    "#1 view g0.t1 = reshape f32 [24,1] src0=t0\n"
    "#2 binary g0.t2 = mul f32 [24,1] src0=t1 src1=t1 inplace\n"
    "#3 mark-output g0.t0\n"
    "#4 concat g0.t3 = concat f32 [24,2] src0=t1 src1=t1\n"
    "#5 unary g0.t4 = scale f32 [8,3] src0=t0 x-1.00 inplace\n"
    "#6 concat g0.t5 = concat f32 [8,6] src0=t4 src1=t0\n"
    "#7 unary g0.t6 = scale f32 [24,1] src0=t2 x-1.00 inplace\n"
    "#8 concat g0.t7 = concat f32 [8,6] src0=t0 src1=t4\n"
    "#9 unary g0.t8 = scale f32 [8,3] src0=t0 x-1.00 inplace\n"
    "#10 concat g0.t9 = concat f32 [8,12] src0=t5 src1=t7\n"
    "#11 unary g0.t10 = scale f32 [8,3] src0=t8 x-1.00 inplace\n"
    "#12 concat g0.t11 = concat f32 [8,6] src0=t4 src1=t8\n"
    "#13 unary g0.t12 = scale f32 [8,3] src0=t0 x-1.00 inplace\n"
    "#14 concat g0.t13 = concat f32 [8,15] src0=t9 src1=t12\n"
    "#15 unary g0.t14 = scale f32 [8,3] src0=t10 x-1.00 inplace\n"
    "#16 concat g0.t15 = concat f32 [24,3] src0=t6 src1=t3\n"
    "#17 seal g0\n"
    "#18 reserve g0 with allocator 0\n"
    "#19 reserve g0 with allocator 0\n"
    "#20 mark-output g0.t15\n"
    "#21 leaf g1.t0 = none f32 [4,3] input\n"
    "#22 view-external g1.t1 = none f32 [24,3] view of g0.t15\n"
    "#23 reserve g0 with allocator 0\n"
    "#24 concat g1.t2 = concat f32 [4,6] src0=t0 src1=t0\n"
    "#25 reserve g0 with allocator 0\n"
    "#26 leaf g1.t3 = none f16 [1,4] preallocated\n"
    "#27 copy g1.t4 = copy f16 [4,3] src0=t0\n"
    "#28 reserve g0 with allocator 0\n"
    "#29 reserve g0 with allocator 0\n"
    "#30 alloc+compute g0 with allocator 0\n"
    "#31 mark-output g1.t2\n"
    "#32 unary g1.t5 = neg f32 [4,3] src0=t0\n";

TEST(GraphDecoderGolden, FixedSequenceDecodesToThePinnedProgram) {
  std::vector<uint8_t> b = Sequence();
  EXPECT_EQ(Describe(Decode(b.data(), b.size())), kSequenceProgram);
}

TEST(GraphDecoderGolden, ReproducerDecodesToTheProgramInBugJson) {
  std::ifstream in(LIFELINE_SOURCE_DIR "/repro/gallocr-view-leaf-offset/conv-to-encoder-view-leaf", std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(Describe(Decode(b.data(), b.size())),
            "allocator 0: buffer(align 8)\n"
            "allocator 1: buffer(align 4)\n"
            "#0 leaf g0.t0 = none f32 [8,1] input\n"
            "#1 unary g0.t1 = scale f32 [8,1] src0=t0 x2.000\n"
            "#2 seal g0 (t1 becomes the output)\n"
            "#3 alloc+compute g0 with allocator 0\n"
            "#4 view-external g1.t0 = none f32 [8,1] view of g0.t1\n"
            "#5 unary g1.t1 = scale f32 [8,1] src0=t0 x2.000\n"
            "#6 seal g1 (t1 becomes the output)\n"
            "#7 alloc+compute g1 with allocator 1\n");
}

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

TEST(GraphDecoder, StepSpansCoverTheInputBackToFront) {
  std::vector<uint8_t> b = Sequence();
  auto spans = StepSpans(b.data(), b.size());
  ASSERT_EQ(spans.size(), Decode(b.data(), b.size()).steps.size() + 1);  // header + one per step
  EXPECT_EQ(spans[0].second, b.size());
  for (size_t i = 1; i < spans.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(spans[i].second, spans[i - 1].first);  // each step's bytes sit just before the previous
    EXPECT_LE(spans[i].first, spans[i].second);
  }
}

TEST(GraphDecoder, EmptyInputDecodesToNoSteps) { EXPECT_TRUE(Decode(nullptr, 0).steps.empty()); }

TEST(GraphDecoder, ProgramIsBoundedByMaxSteps) {
  std::vector<uint8_t> b(100000, 0x11);
  EXPECT_LE(Decode(b.data(), b.size()).steps.size(), kMaxSteps);
}

}  // namespace
}  // namespace lifeline::graphs
