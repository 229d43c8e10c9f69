// The llama-runtime executor on llama.cpp: the seeds run clean, and the differential oracle fails on a corrupted
// state. (The status oracle failing: the forward-ported llama.cpp #17527, repro/llama-state-restore-needs-contiguous-cells.)
#include "harness/programs/llama/executor.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "harness/programs/llama/upstream/llama_runtime.h"
#include "tests/llama/seed_programs.h"

namespace lifeline::llama {
namespace {

std::unique_ptr<Runtime> Make(const ContextParams& p) {
  std::string error;
  auto rt = MakeLlamaRuntime(p, &error);
  EXPECT_NE(rt, nullptr) << error;
  return rt;
}

// The predictions are the decoder's: a program goes through its bytes, as a fuzz input does.
Program Decoded(const Program& p) {
  const std::vector<uint8_t> bytes = Encode(p);
  return Decode(bytes.data(), bytes.size());
}

TEST(LlamaExecutor, EverySeedRunsClean) {
  for (const auto& [name, program] : SeedPrograms()) {
    SCOPED_TRACE(name);
    const Program p = Decoded(program);
    auto rt = Make(p.params);
    ASSERT_NE(rt, nullptr);
    const ExecuteStats stats = Execute(p, *rt);
    // Every seed has outputs a fresh context reproduces: the oracle is consulted, not only present.
    EXPECT_GT(stats.compared, 0);
    std::printf("%-32s compared %4d skipped %4d worst %.2e (tolerance %.2e)\n", name.c_str(), stats.compared,
                stats.skipped, stats.worst, Tolerance(p.params));
  }
}

// The corruption tests' program: a sequence saved (in a buffer, or a session file), restored into sequence 1,
// which then decodes one token.
Program CorruptionProgram(bool file) {
  const auto slot = [&](OpKind kind, int seq) { return file ? FileOp(kind, 0, seq) : SlotOp(kind, 0, seq); };
  return Decoded({Params(ModelKind::kLlama, 2, 4, 8),
                  {DecodeOp(0b01, 6, 3), slot(OpKind::kSaveSeq, 0), slot(OpKind::kLoadSeq, 1), DecodeOp(0b10, 1, 9)}});
}

// With a byte of the saved K/V data flipped (in the buffer, or in the file after it was checked against the
// buffer form of the state), the next decode's logits differ from a fresh context's by more than the tolerance.
void ExpectCorruptionCaught(const Program& p) {
  EXPECT_DEATH(
      {
        auto rt = Make(p.params);
        Execute(p, *rt, /*corrupt_state=*/true);
      },
      "differential oracle: op #3, sequence 1 at position 6");
}

TEST(LlamaExecutor, TheCorruptionProgramsRunCleanUncorrupted) {
  // The programs of the death tests below, without the flipped byte: what fails there is the corruption.
  for (bool file : {false, true}) {
    SCOPED_TRACE(file ? "session file" : "buffer");
    const Program p = CorruptionProgram(file);
    auto rt = Make(p.params);
    ASSERT_NE(rt, nullptr);
    EXPECT_GT(Execute(p, *rt).compared, 1);
  }
}

TEST(LlamaExecutorDeathTest, TheDifferentialOracleCatchesACorruptedState) {
  ExpectCorruptionCaught(CorruptionProgram(false));
}

TEST(LlamaExecutorDeathTest, TheDifferentialOracleCatchesACorruptedSessionFile) {
  ExpectCorruptionCaught(CorruptionProgram(true));
}

}  // namespace
}  // namespace lifeline::llama
