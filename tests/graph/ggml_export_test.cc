// The standalone-C exporter (harness/programs/graph/upstream/ggml_export.h) on programs written here step by
// step, not decoded from bytes: what each step becomes in the C text. Whether the C reproduces a finding is
// checked by the asan lane's repro.<id>.asan.export tests, which compile and run it.
#include "harness/programs/graph/upstream/ggml_export.h"

#include <gtest/gtest.h>

#include <string>

namespace lifeline::graphs {
namespace {

Step Leaf(int g, int64_t ne0, bool preallocated = false) {
  Step s;
  s.kind = StepKind::kLeaf;
  s.graph = g;
  s.tensor.ne[0] = ne0;
  s.tensor.input = !preallocated;
  s.tensor.preallocated = preallocated;
  return s;
}

Step Neg(int g, int src) {
  Step s;
  s.kind = StepKind::kUnary;
  s.graph = g;
  s.tensor.op = alloc::Op::kNeg;
  s.tensor.src[0] = src;
  return s;
}

Step Seal(int g, int output) {
  Step s;
  s.kind = StepKind::kSeal;
  s.graph = g;
  s.tensor_index = output;
  return s;
}

Step Alloc(int g, int k, StatusCode expect = StatusCode::kOk) {
  Step s;
  s.kind = StepKind::kAlloc;
  s.graph = g;
  s.allocator = k;
  s.expect = expect;
  return s;
}

Program TwoAllocators() {
  Program p;
  p.allocators[0].buffers.resize(1);
  p.allocators[1].buffers.resize(2);
  return p;
}

std::string Export(const Program& p) {
  StatusOr<std::string> c = ExportGgmlC(p, ExportOptions{"some-bug/some-input"});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? c.value() : "";
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(GgmlExport, UsesOnlyUpstreamPublicHeaders) {
  Program p = TwoAllocators();
  p.steps = {Leaf(0, 4), Neg(0, 0), Seal(0, 1), Alloc(0, 0)};
  const std::string c = Export(p);
  for (const char* header : {"\"ggml.h\"", "\"ggml-alloc.h\"", "\"ggml-backend.h\"", "\"ggml-cpu.h\""}) {
    EXPECT_TRUE(Has(c, std::string("#include ") + header)) << header;
  }
  size_t includes = 0;
  for (size_t at = c.find("#include"); at != std::string::npos; at = c.find("#include", at + 1)) ++includes;
  EXPECT_EQ(includes, 9u) << "4 of ggml, 5 of the C library";
  EXPECT_FALSE(Has(c, "lifeline/")) << "no lifeline header";
  EXPECT_TRUE(Has(c, " * some-bug/some-input\n"));
}

TEST(GgmlExport, AllocAndComputeBecomesPlaceFillComputeCheck) {
  Program p = TwoAllocators();
  p.steps = {Leaf(0, 4), Neg(0, 0), Seal(0, 1), Alloc(0, 1)};
  const std::string c = Export(p);
  EXPECT_TRUE(Has(c, "galloc[1] = ggml_gallocr_new_n(bufts, 2);"));
  EXPECT_TRUE(Has(c, "ggml_backend_buffer_type_t bufts[2] = {ggml_backend_cpu_buffer_type(), ggml_backend_cpu_buffer_type()};"));
  EXPECT_TRUE(Has(c, "    /* #3 alloc+compute g0 with allocator 1 */\n"
                     "    step(\"#3 alloc+compute g0 with allocator 1\");\n"
                     "    b = build_g0_0();\n"
                     "    alloc_graph(1, b);\n"
                     "    fill_leafs(b);\n"
                     "    compute(b);\n"
                     "    check_same_outputs(1, b, build_g0_0);\n"
                     "    remember_placement(b);\n"));
  EXPECT_TRUE(Has(c, "    t[0] = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 4, 1, 1, 1);\n"
                     "    ggml_set_input(t[0]);\n"));
  EXPECT_TRUE(Has(c, "    t[1] = ggml_neg(ctx, t[0]);\n"));
  EXPECT_TRUE(Has(c, "    ggml_set_output(t[1]);\n    ggml_build_forward_expand(b->graph, t[1]);\n"));
  EXPECT_FALSE(Has(c, "static void reserve(")) << "helpers no step calls are left out";
}

TEST(GgmlExport, ThreadsAboveOneComputeOnAKeptPoolPerCountAsTheHarnessDoes) {
  Program p = TwoAllocators();
  p.allocators[1].cpu_threads = 2;
  p.steps = {Leaf(0, 4), Neg(0, 0), Seal(0, 1), Alloc(0, 1), Alloc(0, 0)};
  const std::string c = Export(p);
  EXPECT_TRUE(Has(c, "    fill_leafs(b);\n    set_threads(2);\n    compute(b);\n"));
  EXPECT_TRUE(Has(c, "    fill_leafs(b);\n    set_threads(1);\n    compute(b);\n")) << "back to 1 for allocator 0";
  EXPECT_TRUE(Has(c, "pools[n] = ggml_threadpool_new(&params);"));
  EXPECT_TRUE(Has(c, "ggml_backend_cpu_set_threadpool(cpu, n > 1 ? pools[n] : NULL);"));
  EXPECT_TRUE(Has(c, "getenv(\"LIFELINE_GGML_POOL_COMPUTES\")")) << "the harness's knob: a pool's earlier computes";
  EXPECT_TRUE(Has(c, "    teardown();\n    free_pools();\n"));
  EXPECT_TRUE(Has(c, "#define MAX_THREADS 4 "));

  p.allocators[1].cpu_threads = 1;
  const std::string one = Export(p);
  EXPECT_FALSE(Has(one, "set_threads(")) << "one thread everywhere: setup()'s, and no pool";
  EXPECT_FALSE(Has(one, "pools["));
}

TEST(GgmlExport, StepsPredictedToFailAreCommentsOnly) {
  Program p = TwoAllocators();
  p.steps = {Leaf(0, 4), Neg(0, 0), Seal(0, 1), Alloc(0, 1, StatusCode::kFailedPrecondition)};
  const std::string c = Export(p);
  EXPECT_TRUE(Has(c, "/* #3 alloc+compute g0 with allocator 1 -> FAILED_PRECONDITION (predicted to fail: not run) */"));
  EXPECT_FALSE(Has(c, "alloc_graph(1, b);"));
}

TEST(GgmlExport, PreallocatedLeafGetsItsOwnMemoryAndNoBuffer) {
  Program p = TwoAllocators();
  p.steps = {Leaf(0, 3, /*preallocated=*/true), Neg(0, 0), Seal(0, 1), Alloc(0, 0)};
  const std::string c = Export(p);
  EXPECT_TRUE(Has(c, "    leaf_memory_on(0, 0, GGML_TYPE_F32, 3);\n"));
  EXPECT_TRUE(Has(c, "t[0]->data = leaf_memory[0][0];"));
}

TEST(GgmlExport, ViewOfAnotherGraphUsesItsLatestPlacementOrAnUnplacedBuild) {
  Program p = TwoAllocators();
  Step view;
  view.kind = StepKind::kViewExternal;
  view.graph = 1;
  view.tensor.external_graph = 0;
  view.tensor.external_tensor = 1;
  view.tensor.ne[0] = 4;
  Step reserve;
  reserve.kind = StepKind::kReserve;
  reserve.graph = 1;
  p.steps = {Leaf(0, 4), Neg(0, 0), Seal(0, 1), view, Neg(1, 0), Seal(1, 1), reserve, Alloc(0, 0), reserve};
  const std::string c = Export(p);
  // Before g0 is placed, g1's view builds g0 afresh; after, it views g0's placement.
  EXPECT_TRUE(Has(c, "t[0] = ggml_view_tensor(ctx, build_g0_0()->t[1]);"));
  EXPECT_TRUE(Has(c, "t[0] = ggml_view_tensor(ctx, placed[0][1]);"));
  EXPECT_LT(c.find("static struct build * build_g0_0(void)"), c.find("static struct build * build_g1_0(void)"));
}

TEST(GgmlExport, RefusesAProgramItsGraphsRefuse) {
  Program p = TwoAllocators();
  p.steps = {Leaf(0, 4), Leaf(0, 3)};
  Step add;
  add.kind = StepKind::kBinary;
  add.tensor.op = alloc::Op::kAdd;
  add.tensor.src[0] = 0;
  add.tensor.src[1] = 1;  // shapes differ: predicted OK here, refused by the book
  p.steps.push_back(add);
  StatusOr<std::string> c = ExportGgmlC(p, {});
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Has(c.status().ToString(), "step #2")) << c.status().ToString();
}

TEST(GgmlExport, RefusesALabelThatWouldEndTheComment) {
  EXPECT_FALSE(ExportGgmlC(TwoAllocators(), ExportOptions{"a */ b"}).ok());
  EXPECT_FALSE(ExportGgmlC(TwoAllocators(), ExportOptions{"two\nlines"}).ok());
}

}  // namespace
}  // namespace lifeline::graphs
