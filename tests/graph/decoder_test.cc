// The graph-program decoder is a file format: these tests pin how bytes become steps. If one fails after
// a deliberate decoder change, every file in corpus/alloc_graph_topology/, corpus/ggml_graph_topology/,
// corpus/ggml_vulkan_graph_topology/ and the graph reproducers in repro/ now means something else:
// regenerate them and update each bug.json's "program" line in the same change. (The `on-cpu` marks come
// from bits the decoder had always read and ignored: every earlier program keeps its steps.)
#include "harness/programs/graph/format.h"
#include "harness/programs/graph/model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/graph/pinned_program.h"

namespace lifeline::graphs {
namespace {

constexpr char kSequenceProgram[] =
    "allocator 0: buffer(align 16), 3 cpu threads\n"
    "allocator 1: buffer(align 32), 2 cpu threads\n"
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

// Bits 1 and 2 of the byte that chooses an op's kind (or a copy's type: byte 6 here) mark the op for the CPU
// backend; clearing one of them removes the mark and changes nothing else.
TEST(GraphDecoderGolden, TheChoiceByteCarriesTheCpuMark) {
  std::vector<uint8_t> b = {0xb2, 0x7d, 0xff, 0xff, 0xff, 0x1c, 0xff, 0xff, 0x95, 0xd8, 0x6e, 0x04, 0x20, 0x60, 0x00, 0x00};
  const std::string marked =
      "allocator 0: buffer(align 1)\n"
      "allocator 1: buffer(align 16)\n"
      "#0 leaf g0.t0 = none f32 [7,1] input\n"
      "#1 copy g0.t1 = copy f16 [7,1] src0=t0 on-cpu\n"
      "#2 concat g0.t2 = concat f16 [7,2] src0=t1 src1=t1\n"
      "#3 seal g0 (t2 becomes the output)\n"
      "#4 alloc+compute g0 with allocator 1\n"
      "#5 alloc+compute g0 with allocator 1\n";
  EXPECT_EQ(Describe(Decode(b.data(), b.size())), marked);
  b[6] ^= 0x02;
  std::string unmarked = marked;
  unmarked.erase(unmarked.find(" on-cpu"), 7);
  EXPECT_EQ(Describe(Decode(b.data(), b.size())), unmarked);
}

// Bits 1 and 2 of each allocator's first byte (the last byte of the input for allocator 0: FuzzedDataProvider
// reads integers from the end) give its CPU threads, 1 to 4; bit 0 its buffer count. The steps stay the same.
TEST(GraphDecoderGolden, TheAllocatorByteCarriesTheCpuThreads) {
  std::vector<uint8_t> b = Sequence();
  const std::string program = kSequenceProgram;
  const std::string steps = program.substr(program.find("#0 "));
  for (int threads = 1; threads <= kMaxCpuThreads; ++threads) {
    b.back() = static_cast<uint8_t>((b.back() & ~0x06) | ((threads - 1) << 1));
    const Program p = Decode(b.data(), b.size());
    EXPECT_EQ(p.allocators[0].cpu_threads, threads);
    EXPECT_EQ(p.allocators[1].cpu_threads, 2);
    const std::string text = Describe(p);
    EXPECT_EQ(text.substr(text.find("#0 ")), steps) << threads << " threads";
  }
  EXPECT_EQ(Decode(nullptr, 0).allocators[0].cpu_threads, 1);  // no bytes: one thread, as before
}

// Bits 3 to 5 of allocator 0's byte (the input's last) let the program use a kind added after the format's first
// release: bit 3 measure, bit 4 row ops (rms_norm, soft_max of a float32 tensor), bit 5 mul_mat ([K, M] x [K, N]
// -> [M, N] of float32 tensors). A program that uses one has its bit set; without it, the same bytes draw none of
// that kind. Every input written before these kinds existed had bits 3 to 7 cleared when they were added (the
// corpora were rewritten).
void ExpectTheBitGatesTheKind(std::vector<uint8_t> b, uint8_t bit, bool Program::*flag, StepKind kind,
                              const std::string& program) {
  const Program p = Decode(b.data(), b.size());
  EXPECT_TRUE(p.*flag);
  EXPECT_EQ(Describe(p), program);
  b.back() &= static_cast<uint8_t>(~bit);
  const Program q = Decode(b.data(), b.size());
  EXPECT_FALSE(q.*flag);
  for (const Step& s : q.steps) EXPECT_NE(s.kind, kind) << Describe(s);
}

TEST(GraphDecoderGolden, TheAllocatorByteBit3LetsTheProgramMeasure) {
  ExpectTheBitGatesTheKind({0x03, 0x00, 0x07, 0x07, 0x00, 0x01, 0x01, 0x00, 0x02, 0x00, 0x00,
                            0x00, 0x01, 0x01, 0x00, 0x03, 0x00, 0x05, 0x00, 0x05, 0x08},
                           0x08, &Program::measures, StepKind::kMeasure,
                           "allocator 0: buffer(align 32) (the program may measure)\n"
                           "allocator 1: buffer(align 32)\n"
                           "#0 leaf g0.t0 = none f32 [4,1] input\n"
                           "#1 unary g0.t1 = neg f32 [4,1] src0=t0\n"
                           "#2 binary g0.t2 = add f32 [4,1] src0=t0 src1=t1\n"
                           "#3 seal g0 (t2 becomes the output)\n"
                           "#4 measure g0 with allocator 0\n"
                           "#5 alloc+compute g0 with allocator 0\n");
}

TEST(GraphDecoderGolden, TheAllocatorByteBit4LetsTheProgramUseRowOps) {
  ExpectTheBitGatesTheKind({0x00, 0x03, 0x07, 0x00, 0x01, 0x08, 0x01, 0x07, 0x01, 0x01, 0x03,
                            0x00, 0x05, 0x00, 0x05, 0x10},
                           0x10, &Program::row_ops, StepKind::kRowOp,
                           "allocator 0: buffer(align 32) (the program may use row ops)\n"
                           "allocator 1: buffer(align 32)\n"
                           "#0 leaf g0.t0 = none f32 [4,2] input\n"
                           "#1 row g0.t1 = rms_norm f32 [4,2] src0=t0\n"
                           "#2 row g0.t2 = soft_max f32 [4,2] src0=t1\n"
                           "#3 seal g0 (t2 becomes the output)\n"
                           "#4 alloc+compute g0 with allocator 0\n");
}

TEST(GraphDecoderGolden, TheAllocatorByteBit5LetsTheProgramUseMulMat) {
  ExpectTheBitGatesTheKind({0x00, 0x03, 0x07, 0x00, 0x01, 0x07, 0x01, 0x02, 0x03, 0x00, 0x00,
                            0x01, 0x01, 0x03, 0x00, 0x05, 0x00, 0x05, 0x20},
                           0x20, &Program::mul_mats, StepKind::kMatMul,
                           "allocator 0: buffer(align 32) (the program may use mul_mat)\n"
                           "allocator 1: buffer(align 32)\n"
                           "#0 leaf g0.t0 = none f32 [4,2] input\n"
                           "#1 leaf g0.t1 = none f32 [4,3] input\n"
                           "#2 mul_mat g0.t2 = mul_mat f32 [2,3] src0=t0 src1=t1\n"
                           "#3 seal g0 (t2 becomes the output)\n"
                           "#4 alloc+compute g0 with allocator 0\n");
}

// Bit 6 of allocator 0's byte asks the upstream adapters to place pre-allocated leafs as weights, and bit 0 of the
// options byte that bit 7 announces (read after allocator 0's byte: the input's second-to-last) to compute on one
// CPU thread pool. Neither draws a step: the same bytes without them decode to the same steps.
// `option`: the options byte's value, with bit 7.
void ExpectTheBitDrawsNoStep(uint8_t bit, bool Program::*flag, const std::string& said, uint8_t option = 0) {
  std::vector<uint8_t> b = {0x00, 0x03, 0x07, 0x00, 0x01, 0x08, 0x01, 0x07, 0x01, 0x01, 0x03,
                            0x00, 0x05, 0x00, 0x05, static_cast<uint8_t>(0x10 | bit)};
  if (bit == 0x80) b.insert(b.end() - 1, option);
  const Program p = Decode(b.data(), b.size());
  EXPECT_TRUE(p.*flag);
  b.back() &= static_cast<uint8_t>(~bit);
  if (bit == 0x80) b.erase(b.end() - 2);
  const Program q = Decode(b.data(), b.size());
  EXPECT_FALSE(q.*flag);
  std::string described = Describe(p);
  ASSERT_NE(described.find(said), std::string::npos) << described;
  EXPECT_EQ(described.erase(described.find(said), said.size()), Describe(q));
}

TEST(GraphDecoderGolden, TheAllocatorByteBit6PlacesWeightsAndDrawsNoStep) {
  ExpectTheBitDrawsNoStep(0x40, &Program::weights, " (pre-allocated leafs placed as weights)");
}

TEST(GraphDecoderGolden, TheOptionsByteBit0SharesOneCpuPoolAndDrawsNoStep) {
  ExpectTheBitDrawsNoStep(0x80, &Program::shared_pool, " (one CPU thread pool for every compute)", 0x01);
}

TEST(GraphDecoderGolden, TheOptionsByteBit1ReusesGraphsAndDrawsNoStep) {
  ExpectTheBitDrawsNoStep(0x80, &Program::reuse, " (graphs reused while unchanged)", 0x02);
}

TEST(GraphDecoderGolden, TheOptionsByteBit2ChunksHostBuffersAndDrawsNoStep) {
  ExpectTheBitDrawsNoStep(0x80, &Program::chunked, " (host buffers of at most 256 bytes)", 0x04);
}

// Bit 3 of the options byte lets the program transpose ([ne0, ne1] -> [ne1, ne0], built by ggml as a permuted or
// transposed view made contiguous); without it, the same bytes draw no transpose.
TEST(GraphDecoderGolden, TheOptionsByteBit3LetsTheProgramTranspose) {
  std::vector<uint8_t> b = {0x00, 0x03, 0x07, 0x00, 0x01, 0x08, 0x01, 0x07, 0x01,
                            0x01, 0x03, 0x00, 0x05, 0x00, 0x05, 0x08, 0x80};
  const Program p = Decode(b.data(), b.size());
  EXPECT_TRUE(p.layout_ops);
  EXPECT_EQ(Describe(p),
            "allocator 0: buffer(align 32) (the program may transpose)\n"
            "allocator 1: buffer(align 32)\n"
            "#0 leaf g0.t0 = none f32 [4,2] input\n"
            "#1 transpose g0.t1 = transpose f32 [2,4] src0=t0 via-permute\n"
            "#2 transpose g0.t2 = transpose f32 [4,2] src0=t1 via-transpose\n"
            "#3 seal g0 (t2 becomes the output)\n"
            "#4 alloc+compute g0 with allocator 0\n");
  b[b.size() - 2] = 0x00;
  const Program q = Decode(b.data(), b.size());
  EXPECT_FALSE(q.layout_ops);
  for (const Step& s : q.steps) EXPECT_NE(s.kind, StepKind::kTranspose) << Describe(s);
}

// Bit 4 of the options byte lets the program get rows (float32 [ne0, n] from rows first + j * step of any tensor,
// through an int32 index tensor); without it, the same bytes draw none.
TEST(GraphDecoderGolden, TheOptionsByteBit4LetsTheProgramGetRows) {
  std::vector<uint8_t> b = {0x00, 0x03, 0x07, 0x00, 0x03, 0x01, 0x01, 0x08, 0x01, 0x02, 0x03,
                            0x07, 0x01, 0x02, 0x03, 0x01, 0x05, 0x00, 0x05, 0x10, 0x80};
  const Program p = Decode(b.data(), b.size());
  EXPECT_TRUE(p.get_rows);
  EXPECT_EQ(Describe(p),
            "allocator 0: buffer(align 32) (the program may get rows)\n"
            "allocator 1: buffer(align 32)\n"
            "#0 leaf g0.t0 = none f16 [4,3] input\n"
            "#1 get_rows g0.t1 = get_rows f32 [4,4] src0=t0 rows 2+1j\n"
            "#2 get_rows g0.t2 = get_rows f32 [4,2] src0=t1 rows 3+0j\n"
            "#3 seal g0 (t2 becomes the output)\n"
            "#4 alloc+compute g0 with allocator 0\n");
  TensorSpec spec = p.steps[1].tensor;
  int32_t rows[alloc::kMaxRows] = {};
  RowsOf(spec, 3, rows);
  EXPECT_EQ(std::vector<int32_t>(rows, rows + 4), (std::vector<int32_t>{2, 0, 1, 2}));  // wraps around ne1
  b[b.size() - 2] = 0x00;
  const Program q = Decode(b.data(), b.size());
  EXPECT_FALSE(q.get_rows);
  for (const Step& s : q.steps) EXPECT_NE(s.kind, StepKind::kGetRows) << Describe(s);
}

// Bit 5 of the options byte lets the program rope (n_dims, mode, heads per token and positions first + j * step);
// without it, the same bytes draw none.
TEST(GraphDecoderGolden, TheOptionsByteBit5LetsTheProgramRope) {
  std::vector<uint8_t> b = {0x00, 0x03, 0x07, 0x00, 0x00, 0x02, 0x00, 0x02, 0x01, 0x08, 0x03, 0x07, 0x01,
                            0x01, 0x01, 0x07, 0x01, 0x03, 0x05, 0x00, 0x05, 0x00, 0x05, 0x20, 0x80};
  const Program p = Decode(b.data(), b.size());
  EXPECT_TRUE(p.rope);
  EXPECT_EQ(Describe(p),
            "allocator 0: buffer(align 32) (the program may rope)\n"
            "allocator 1: buffer(align 32)\n"
            "#0 leaf g0.t0 = none f32 [6,4] input\n"
            "#1 rope g0.t1 = rope f32 [6,4] src0=t0 neox n_dims=4 heads=2 positions 7+3j\n"
            "#2 rope g0.t2 = rope f32 [6,4] src0=t1 normal n_dims=6 heads=4 positions 0+0j\n"
            "#3 seal g0 (t2 becomes the output)\n"
            "#4 alloc+compute g0 with allocator 0\n");
  EXPECT_EQ(PositionsOf(p.steps[1].tensor), (std::vector<int32_t>{7, 10}));  // 4 rows, 2 heads: 2 tokens
  EXPECT_EQ(PositionsOf(p.steps[2].tensor), (std::vector<int32_t>{0}));
  b[b.size() - 2] = 0x00;
  const Program q = Decode(b.data(), b.size());
  EXPECT_FALSE(q.rope);
  for (const Step& s : q.steps) EXPECT_NE(s.kind, StepKind::kRope) << Describe(s);
}

TEST(GraphDecoderGolden, TheOptionsByteBit6LetsTheProgramSetRows) {
  std::vector<uint8_t> b = {0x00, 0x03, 0x07, 0x00, 0x00, 0x01, 0x08, 0x01, 0x03, 0x07, 0x01, 0x01,
                            0x03, 0x00, 0x00, 0x01, 0x03, 0x03, 0x01, 0x05, 0x00, 0x05, 0x40, 0x80};
  const Program p = Decode(b.data(), b.size());
  EXPECT_TRUE(p.set_rows);
  EXPECT_EQ(Describe(p),
            "allocator 0: buffer(align 32) (the program may set rows)\n"
            "allocator 1: buffer(align 32)\n"
            "#0 leaf g0.t0 = none f16 [4,4] input\n"
            "#1 leaf g0.t1 = none f32 [4,2] input\n"
            "#2 set_rows g0.t2 = set_rows f16 [4,4] src0=t0 src1=t1 into rows 3+3j\n"
            "#3 set_rows g0.t3 = set_rows f16 [4,4] src0=t2 src1=t1 into rows 0+1j\n"
            "#4 seal g0 (t3 becomes the output)\n"
            "#5 alloc+compute g0 with allocator 0\n");
  int32_t rows[alloc::kMaxRows] = {};
  SetRowsOf(p.steps[2].tensor, 2, 4, rows);
  EXPECT_EQ(rows[0], 3);
  EXPECT_EQ(rows[1], 2);  // (3 + 3) % 4: the step is coprime with the 4 rows, so no row is written twice
  EXPECT_TRUE(p.steps[2].tensor.inplace);  // it writes into t0's bytes
  b[b.size() - 2] = 0x00;
  const Program q = Decode(b.data(), b.size());
  EXPECT_FALSE(q.set_rows);
  for (const Step& s : q.steps) EXPECT_NE(s.kind, StepKind::kSetRows) << Describe(s);
}

// Bit 7 of the options byte reads a second options byte; its bit 0 lets a mul_mat's first source be float16.
TEST(GraphDecoderGolden, TheSecondOptionsByteLetsMulMatTakeFloat16Weights) {
  std::vector<uint8_t> b = {0x00, 0x03, 0x07, 0x02, 0x00, 0x08, 0x01, 0x01, 0x03, 0x00, 0x07, 0x01, 0x02,
                            0x07, 0x00, 0x00, 0x01, 0x03, 0x07, 0x01, 0x05, 0x00, 0x05, 0x01, 0x80, 0xa4};
  const Program p = Decode(b.data(), b.size());
  EXPECT_TRUE(p.f16_mul_mat);
  EXPECT_EQ(Describe(p),
            "allocator 0: buffer(align 32), 3 cpu threads (the program may use mul_mat) (mul_mat may take float16 "
            "weights)\n"
            "allocator 1: buffer(align 32)\n"
            "#0 leaf g0.t0 = none f16 [8,4] input\n"
            "#1 leaf g0.t1 = none f32 [8,3] input\n"
            "#2 mul_mat g0.t2 = mul_mat f32 [4,3] src0=t0 src1=t1\n"
            "#3 copy g0.t3 = copy f16 [8,3] src0=t1\n"
            "#4 mul_mat g0.t4 = mul_mat f32 [3,3] src0=t3 src1=t1\n"
            "#5 seal g0 (t4 becomes the output)\n"
            "#6 alloc+compute g0 with allocator 0\n");
  b[b.size() - 3] = 0x00;  // the second options byte: float32 first sources only
  const Program q = Decode(b.data(), b.size());
  EXPECT_FALSE(q.f16_mul_mat);
  std::map<std::pair<int, int>, alloc::DType> type;  // (graph, tensor) -> its type
  int mul_mats = 0;
  for (const Step& s : q.steps) {
    if (!AddsTensor(s.kind)) continue;
    type[{s.graph, s.tensor_index}] = s.tensor.type;
    if (s.kind != StepKind::kMatMul) continue;
    ++mul_mats;
    EXPECT_EQ(type.at({s.graph, s.tensor.src[0]}), alloc::DType::kF32) << Describe(s);
  }
  EXPECT_GT(mul_mats, 0);
}

// Bit 1 of the second options byte keeps an alloc+compute by an allocator of several buffers that has planned nothing:
// predicted FAILED_PRECONDITION (without it, the step is a reserve, as before).
TEST(GraphDecoderGolden, TheSecondOptionsByteAsksAnUnplannedAllocatorToPlace) {
  std::vector<uint8_t> b = {0x01, 0x01, 0x03, 0x08, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x07, 0x01,
                            0x00, 0x03, 0x02, 0x00, 0x03, 0x07, 0x00, 0x00, 0x00, 0x01, 0x01, 0x01,
                            0x03, 0x00, 0x05, 0x00, 0x04, 0x05, 0x02, 0x80, 0x81};
  const Program p = Decode(b.data(), b.size());
  EXPECT_TRUE(p.unplanned_allocs);
  ASSERT_GE(p.steps.size(), 6u);
  EXPECT_EQ(Describe(p.steps[3]), "alloc+compute g0 with allocator 0 -> FAILED_PRECONDITION");
  EXPECT_EQ(Describe(p.steps[4]), "reserve g0 with allocator 0");
  EXPECT_EQ(Describe(p.steps[5]), "alloc+compute g0 with allocator 0");  // planned now
  b[b.size() - 3] = 0x00;
  const Program q = Decode(b.data(), b.size());
  EXPECT_FALSE(q.unplanned_allocs);
  ASSERT_GE(q.steps.size(), 4u);
  EXPECT_EQ(Describe(q.steps[3]), "reserve g0 with allocator 0");
}

// Bit 2 of the second options byte sends every graph to the scheduler where the allocator under test has one
// (AllocatorRules::splits_cpu_marks): a scheduler places a graph without a plan of its allocator's gallocr, so the
// alloc+compute that an unplanned allocator of two buffers would turn into a reserve stays one. Elsewhere the bit
// is ignored.
TEST(GraphDecoderGolden, TheSecondOptionsByteSchedulesEveryGraph) {
  std::vector<uint8_t> b = {0x01, 0x01, 0x03, 0x08, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x07, 0x01,
                            0x00, 0x03, 0x02, 0x00, 0x03, 0x07, 0x00, 0x00, 0x00, 0x01, 0x01, 0x01,
                            0x03, 0x00, 0x05, 0x00, 0x04, 0x05, 0x04, 0x80, 0x81};
  AllocatorRules vulkan;
  vulkan.splits_cpu_marks = true;
  const Program p = Decode(b.data(), b.size(), vulkan);
  EXPECT_TRUE(p.scheduled);
  EXPECT_NE(Describe(p).find("allocator 0: buffer(align 32) buffer(align 16) (every graph through the scheduler)\n"),
            std::string::npos)
      << Describe(p);
  ASSERT_GE(p.steps.size(), 4u);
  EXPECT_EQ(Describe(p.steps[3]), "alloc+compute g0 with allocator 0");
  const Program cpu = Decode(b.data(), b.size());  // no scheduler: the bit is read and changes nothing
  EXPECT_TRUE(cpu.scheduled);
  ASSERT_GE(cpu.steps.size(), 4u);
  EXPECT_EQ(Describe(cpu.steps[3]), "reserve g0 with allocator 0");
  b[b.size() - 3] = 0x00;
  const Program q = Decode(b.data(), b.size(), vulkan);
  EXPECT_FALSE(q.scheduled);
  ASSERT_GE(q.steps.size(), 4u);
  EXPECT_EQ(Describe(q.steps[3]), "reserve g0 with allocator 0");
}

// No destination a set_rows step picks shares its float32 rows' bytes (where none fits, the step copies the rows).
TEST(GraphDecoder, SetRowsNeverWritesWhereItsRowsLie) {
  int set_rows = 0;
  for (uint32_t seed = 0; seed < 400; ++seed) {
    std::vector<uint8_t> b(96);
    uint32_t x = seed * 2654435761u + 1;
    for (uint8_t& v : b) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      v = static_cast<uint8_t>(x);
    }
    b[b.size() - 1] |= 0x80;
    b[b.size() - 2] = 0x40;
    const Program p = Decode(b.data(), b.size());
    ModelGraph g;  // the open graph's roots, as the model computes them
    for (const Step& s : p.steps) {
      if (s.kind == StepKind::kSeal) g.t.clear();
      if (!AddsTensor(s.kind) || s.kind == StepKind::kGrow || s.tensor_index != static_cast<int>(g.t.size())) continue;
      ModelTensor mt;
      mt.spec = s.tensor;
      g.t.push_back(mt);
      if (s.kind == StepKind::kSetRows) {
        ++set_rows;
        EXPECT_NE(g.RootOf(s.tensor.src[0]), g.RootOf(s.tensor.src[1])) << Describe(p);
        EXPECT_EQ(s.tensor.src[1] >= 0 ? g.t[s.tensor.src[1]].spec.type : alloc::DType::kF16, alloc::DType::kF32);
      }
    }
  }
  EXPECT_GT(set_rows, 20);
}

// An in-place op computes where its source's memory is: it never carries the mark, whatever its bytes.
TEST(GraphDecoder, NoInPlaceOpIsMarkedForTheCpu) {
  int marked = 0;
  for (const char* dir : {"/corpus/alloc_graph_topology", "/corpus/ggml_graph_topology"}) {
    for (const auto& entry : std::filesystem::directory_iterator(std::string(LIFELINE_SOURCE_DIR) + dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (const Step& s : Decode(b.data(), b.size()).steps) {
        EXPECT_FALSE(s.tensor.cpu && s.tensor.inplace) << entry.path() << ": " << Describe(s);
        marked += s.tensor.cpu ? 1 : 0;
      }
    }
  }
  EXPECT_GT(marked, 0);  // the corpora do carry marks: the check above saw some
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

// With split graphs (ggml_vulkan_graph_topology), a graph holding an op marked for the CPU, and a graph reading
// one whose last placement was split, go to a scheduler: placed without a reserve first, whatever the buffer
// count, while the same graph unmarked on a two-buffer allocator must be reserved first.
TEST(GraphModel, ASplitGraphIsPlacedWithoutAReserveFirst) {
  for (bool splits : {false, true}) {
    SCOPED_TRACE(splits ? "splits_cpu_marks" : "no splits");
    Model m;
    m.rules.splits_cpu_marks = splits;
    m.buffers[0] = m.buffers[1] = 2;
    for (int gi = 0; gi < 2; ++gi) m.g.emplace_back();
    Add(m, 0, ModelLeaf(), false);
    ModelTensor marked = Derived(m.g[0].t[0], alloc::Op::kNeg, 0);
    marked.spec.cpu = true;
    Add(m, 0, marked, true);
    m.g[0].sealed = true;
    EXPECT_EQ(m.Split(0), splits);
    EXPECT_EQ(Place(m, 0, 0), splits ? StepKind::kAlloc : StepKind::kReserve);
    Add(m, 1, ModelViewOf(0, 1), false);  // reads g0's bytes
    Add(m, 1, Derived(m.g[1].t[0], alloc::Op::kNeg, 0), true);
    m.g[1].sealed = true;
    EXPECT_EQ(m.Split(1), splits) << "g1 has no mark of its own; it reads a split placement";
  }
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
