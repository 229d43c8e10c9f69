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

TEST(LlamaExecutor, TheCorruptionProgramRunsCleanUncorrupted) {
  // The program of the death test below, without the flipped byte: what fails there is the corruption.
  const Program p = Decoded({Params(ModelKind::kLlama, 2, 4, 8),
                             {DecodeOp(0b01, 6, 3), SlotOp(OpKind::kSaveSeq, 0, 0), SlotOp(OpKind::kLoadSeq, 0, 1),
                              DecodeOp(0b10, 1, 9)}});
  auto rt = Make(p.params);
  ASSERT_NE(rt, nullptr);
  EXPECT_GT(Execute(p, *rt).compared, 1);
}

TEST(LlamaExecutorDeathTest, TheDifferentialOracleCatchesACorruptedState) {
  // A sequence saved, one byte of its K/V data flipped, restored: the next decode's logits differ from a fresh
  // context's by more than the tolerance.
  const Program p = Decoded({Params(ModelKind::kLlama, 2, 4, 8),
                             {DecodeOp(0b01, 6, 3), SlotOp(OpKind::kSaveSeq, 0, 0), SlotOp(OpKind::kLoadSeq, 0, 1),
                              DecodeOp(0b10, 1, 9)}});
  EXPECT_DEATH(
      {
        auto rt = Make(p.params);
        Execute(p, *rt, /*corrupt_state=*/true);
      },
      "differential oracle: op #3, sequence 1 at position 6");
}

TEST(LlamaExecutorDeathTest, TheDifferentialOracleCatchesACorruptedSessionFile) {
  // The same through a session file: the byte flipped in the file llama_state_seq_save_file wrote (after the
  // file was checked against the buffer form of the state), then llama_state_seq_load_file.
  const Program p = Decoded({Params(ModelKind::kLlama, 2, 4, 8),
                             {DecodeOp(0b01, 6, 3), FileOp(OpKind::kSaveSeq, 0, 0), FileOp(OpKind::kLoadSeq, 0, 1),
                              DecodeOp(0b10, 1, 9)}});
  {
    auto rt = Make(p.params);
    ASSERT_NE(rt, nullptr);
    EXPECT_GT(Execute(p, *rt).compared, 1);  // clean without the flipped byte
  }
  EXPECT_DEATH(
      {
        auto rt = Make(p.params);
        Execute(p, *rt, /*corrupt_state=*/true);
      },
      "differential oracle: op #3, sequence 1 at position 6");
}

}  // namespace
}  // namespace lifeline::llama
