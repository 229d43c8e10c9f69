// The graph-program decoder is a file format: these tests pin how bytes become steps. If one fails after
// a deliberate decoder change, every file in corpus/alloc_graph_topology/, corpus/ggml_graph_topology/
// and the graph reproducers in repro/ now means something else: regenerate them and update each
// bug.json's "program" line in the same change.
#include "harness/programs/graph/format.h"
#include "harness/programs/graph/model.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "tests/graph/pinned_program.h"

namespace lifeline::graphs {
namespace {

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

TEST(GraphDecoder, EmptyInputDecodesToNoSteps) { EXPECT_TRUE(Decode(nullptr, 0).steps.empty()); }

TEST(GraphDecoder, ProgramIsBoundedByMaxSteps) {
  std::vector<uint8_t> b(100000, 0x11);
  EXPECT_LE(Decode(b.data(), b.size()).steps.size(), kMaxSteps);
}

// Found by fuzzing ggml_graph_topology in-process (2026-11-23): graph g2 viewed g1's leaf view of g0's output
// and was placed by g0's allocator, which gave the bytes that view reads to g2's own tensors (the differential
// oracle saw the output change). The model follows a view of a view to the graph whose bytes it reads.
ModelTensor ModelLeaf() { return ModelTensor{}; }

ModelTensor ModelViewOf(int h, int i) {
  ModelTensor t;
  t.spec.external_graph = h;
  t.spec.external_tensor = i;
  t.owned_root = false;
  return t;
}

// Adds tensor `t` to graph `gi` (marked output when `output`).
void Add(Model& m, int gi, ModelTensor t, bool output) {
  Step s;
  t.spec.output = output;
  m.AddTensor(gi, s, t);
}

StepKind Place(Model& m, int gi, int k) {
  Step s;
  s.kind = StepKind::kAlloc;
  m.ReserveOrAlloc(gi, k, s);
  return s.kind;
}

TEST(GraphModel, AViewOfAViewIsNotPlacedByTheAllocatorOfTheBytesItReads) {
  Model m;
  m.buffers[0] = m.buffers[1] = 1;
  for (int gi = 0; gi < 3; ++gi) m.g.emplace_back();
  Add(m, 0, ModelLeaf(), false);
  Add(m, 0, Derived(m.g[0].t[0], alloc::Op::kNeg, 0), true);
  m.g[0].sealed = true;
  ASSERT_EQ(Place(m, 0, 0), StepKind::kAlloc);
  Add(m, 1, ModelViewOf(0, 1), true);  // g1.t0 reads g0.t1's bytes (allocator 0)
  m.g[1].sealed = true;
  ASSERT_EQ(Place(m, 1, 1), StepKind::kAlloc);
  Add(m, 2, ModelViewOf(1, 0), false);  // g2.t0 views g1.t0: g0's bytes again
  Add(m, 2, Derived(m.g[2].t[0], alloc::Op::kNeg, 0), true);
  m.g[2].sealed = true;
  EXPECT_EQ(m.ViewedGraphs(2), (std::vector<int>{1, 0}));
  EXPECT_EQ(Place(m, 2, 0), StepKind::kReserve) << "allocator 0 would overwrite g0's bytes, which g2.t0 reads";
  EXPECT_EQ(Place(m, 2, 1), StepKind::kReserve) << "allocator 1 would overwrite g1's";
}

}  // namespace
}  // namespace lifeline::graphs
