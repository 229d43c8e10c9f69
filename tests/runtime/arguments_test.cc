// NegativeArguments: requests outside the contract of layers/runtime (buffer sizes, command-buffer
// counts, bad ops, too many ops) are refused with INVALID_ARGUMENT statuses that name the problem, before
// anything is created or recorded, and leave the context usable; boundary sizes are accepted.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "layers/runtime/buffer.h"
#include "layers/runtime/device.h"
#include "layers/runtime/encoder.h"
#include "tests/runtime/runtime_fixture.h"
#include "tests/testing/status_matchers.h"

namespace lifeline::runtime {
namespace {

using testing_util::HasStatus;

class NegativeArguments : public RuntimeTest {};

TEST_F(NegativeArguments, BufferSizesOutsideTheContractAreInvalidArgument) {
  for (size_t bytes : {size_t{0}, size_t{3}, size_t{6}, kMaxBufferBytes + 4}) {
    SCOPED_TRACE("bytes=" + std::to_string(bytes));
    StatusOr<std::unique_ptr<Buffer>> b = Buffer::Create(device_, bytes);
    EXPECT_TRUE(HasStatus(b.status(), StatusCode::kInvalidArgument, std::to_string(bytes)));
    EXPECT_EQ(Delta(), ObjectCounts{});
    EXPECT_EQ(GetWrapperCounts().wrappers, wrappers_.wrappers);
  }
}

TEST_F(NegativeArguments, BufferBoundarySizesAreAccepted) {
  for (size_t bytes : {size_t{4}, kMaxBufferBytes}) {
    SCOPED_TRACE("bytes=" + std::to_string(bytes));
    StatusOr<std::unique_ptr<Buffer>> b = Buffer::Create(device_, bytes);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(b.value()->bytes(), bytes);
    EXPECT_EQ(b.value()->data()[0], 0.0f) << "a new buffer is zero-filled";
    EXPECT_EQ(b.value()->data()[bytes / sizeof(float) - 1], 0.0f) << "a new buffer is zero-filled";
  }
}

TEST_F(NegativeArguments, ContextCommandBufferCountOutsideOneToEightIsInvalidArgument) {
  for (int n_cb : {0, kMaxEncodeThreads + 1, -1}) {
    SCOPED_TRACE("n_cb=" + std::to_string(n_cb));
    StatusOr<std::unique_ptr<Context>> c = Context::Create(device_, n_cb);
    EXPECT_TRUE(HasStatus(c.status(), StatusCode::kInvalidArgument, "n_cb " + std::to_string(n_cb)));
    EXPECT_EQ(Delta(), ObjectCounts{});
    EXPECT_EQ(PassDescriptor::Live(), descriptors_);
  }
}

// Scenario: a rejected SetEncodeThreads keeps the context's pools and n_cb, and it still computes.
TEST_F(NegativeArguments, RejectedSetEncodeThreadsLeavesTheContextUsable) {
  std::unique_ptr<Context> ctx = MakeContext(device_, 3);
  ASSERT_NE(ctx, nullptr);
  const ObjectCounts with_context = Delta();
  for (int n_cb : {0, -1}) {
    SCOPED_TRACE("n_cb=" + std::to_string(n_cb));
    EXPECT_TRUE(HasStatus(ctx->SetEncodeThreads(n_cb), StatusCode::kInvalidArgument, std::to_string(n_cb)));
    EXPECT_EQ(ctx->n_cb(), 3);
    EXPECT_EQ(Delta(), with_context);
  }
  std::unique_ptr<Buffer> out = MakeBuffer(device_, 70);
  ASSERT_NE(out, nullptr);
  const std::vector<FrameOp> ops = {{Kernel::kFill, nullptr, nullptr, out.get(), 70, 1.0f},
                                    {Kernel::kScale, out.get(), nullptr, out.get(), 70, 3.0f},
                                    {Kernel::kCopy, out.get(), nullptr, out.get(), 70, 0}};
  Status s = ctx->Compute(ops);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Holds(out.get(), std::vector<float>(70, 3.0f)));
}

// Scenario: frames with a bad op are refused before anything is recorded; the message names the op,
// the earlier valid ops did not run, and nothing is left behind.
TEST_F(NegativeArguments, ComputeRefusesBadOpsNamingTheOp) {
  std::unique_ptr<Buffer> small = MakeBuffer(device_, 16), big = MakeBuffer(device_, 64);
  ASSERT_TRUE(small && big);
  FillHost(small.get(), kSentinel);
  FillHost(big.get(), kSentinel);
  std::unique_ptr<Context> ctx = MakeContext(device_, 2);
  ASSERT_NE(ctx, nullptr);
  const ObjectCounts with_context = Delta();
  const FrameOp fill_big{Kernel::kFill, nullptr, nullptr, big.get(), 64, 1.0f};
  struct Row {
    const char* name;
    std::vector<FrameOp> ops;
    const char* needle;
  };
  const Row rows[] = {
      {"fill without out", {{Kernel::kFill, nullptr, nullptr, nullptr, 4, 1.0f}}, "op 0 (fill)"},
      {"add without b", {fill_big, {Kernel::kAdd, big.get(), nullptr, big.get(), 4, 0}}, "op 1 (add)"},
      {"scale without a", {fill_big, fill_big, {Kernel::kScale, nullptr, nullptr, big.get(), 4, 2.0f}}, "op 2 (scale)"},
      {"copy without a", {fill_big, {Kernel::kCopy, nullptr, nullptr, big.get(), 4, 0}}, "op 1 (copy)"},
      {"n past out", {fill_big, {Kernel::kFill, nullptr, nullptr, small.get(), 17, 1.0f}}, "op 1 (fill): 17"},
      {"n past a", {fill_big, {Kernel::kCopy, small.get(), nullptr, big.get(), 17, 0}}, "op 1 (copy): 17"},
      {"n past b", {{Kernel::kAdd, big.get(), small.get(), big.get(), 64, 0}}, "op 0 (add): 64"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_TRUE(HasStatus(ctx->Compute(row.ops), StatusCode::kInvalidArgument, row.needle));
    EXPECT_TRUE(Holds(big.get(), std::vector<float>(64, kSentinel))) << "a valid op of a refused frame ran";
    EXPECT_TRUE(Holds(small.get(), std::vector<float>(16, kSentinel)));
    EXPECT_EQ(Delta(), with_context);
  }
}

TEST_F(NegativeArguments, ComputeRefusesMoreThanMaxOps) {
  std::unique_ptr<Buffer> out = MakeBuffer(device_, 4);
  ASSERT_NE(out, nullptr);
  FillHost(out.get(), kSentinel);
  std::unique_ptr<Context> ctx = MakeContext(device_, 4);
  ASSERT_NE(ctx, nullptr);
  const ObjectCounts with_context = Delta();
  std::vector<FrameOp> ops(kMaxFrameOps + 1, FrameOp{Kernel::kFill, nullptr, nullptr, out.get(), 4, 1.0f});
  // The count is the problem, not an op: the message names the limit and the count.
  EXPECT_TRUE(HasStatus(ctx->Compute(ops), StatusCode::kInvalidArgument,
                        "at most " + std::to_string(kMaxFrameOps) + " ops, got " + std::to_string(kMaxFrameOps + 1)));
  EXPECT_TRUE(Holds(out.get(), std::vector<float>(4, kSentinel)));
  EXPECT_EQ(Delta(), with_context);
}

}  // namespace
}  // namespace lifeline::runtime
