// The runtime executors on the stand-in runtime (layers/runtime on the process's Vulkan device): the
// pinned programs run clean with every oracle on, and an invalid request the model predicts is refused
// without leaving anything behind.
#include "harness/programs/runtime/executor.h"

#include <gtest/gtest.h>

#include <vector>

#include "harness/programs/runtime/standin/lifeline_runtime.h"

namespace lifeline::rtprog {
namespace {

TEST(RuntimeExecutor, InvalidCreateIsRefusedAndTheSlotReused) {
  // create 0 floats -> s0 (INVALID_ARGUMENT); create 17 floats -> s0 (see decoder_test.cc)
  const std::vector<uint8_t> bytes = {0x10, 0x00, 0x00, 0xfc, 0x00};
  ReclaimProgram p = DecodeReclaim(bytes.data(), bytes.size());
  ASSERT_EQ(p.size(), 2u);
  Execute(p, *MakeLifelineRuntime());
}

TEST(RuntimeExecutorDeathTest, AModelThatExpectsTheInvalidCreateToSucceedIsNamed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::vector<uint8_t> bytes = {0x10, 0x00, 0x00, 0xfc, 0x00};
  ReclaimProgram p = DecodeReclaim(bytes.data(), bytes.size());
  p[0].expect = StatusCode::kOk;  // the model is wrong on purpose
  EXPECT_DEATH(Execute(p, *MakeLifelineRuntime()),
               "status oracle: create 0 floats -> s0 returned INVALID_ARGUMENT: .*, model predicted OK");
}

TEST(RuntimeExecutor, EncoderProgramOfTheReproducerRunsCleanOnFixedCode) {
  // repro/metal-encode-async-block/stored-stack-callback: a context with two encode threads computes a
  // frame under a pool; with the bug switched off every oracle holds.
  const std::vector<uint8_t> bytes = {0x01, 0x05, 0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x02, 0x05,
                                      0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x04, 0x01, 0x02};
  Execute(DecodeEncoder(bytes.data(), bytes.size()), *MakeLifelineRuntime());
}

}  // namespace
}  // namespace lifeline::rtprog
