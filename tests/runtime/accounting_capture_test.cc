// Object accounting and the debug capture registry of layers/runtime: device counts follow live buffers,
// a context owns one command and one descriptor pool per command buffer and reads the clamped thread
// count (PositiveAccounting); captured buffers are listed and still die with their wrappers
// (PositiveCapture, the fixed igl-capture-retains-buffers).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "layers/runtime/buffer.h"
#include "layers/runtime/device.h"
#include "layers/runtime/encoder.h"
#include "tests/runtime/runtime_fixture.h"

namespace lifeline::runtime {
namespace {

class PositiveAccounting : public RuntimeTest {};
class PositiveCapture : public RuntimeTest {};

// ---- PositiveAccounting ---------------------------------------------------------------------------

// Scenario: upstream's fix (llama.cpp #9747) made the stored block read ctx->n_cb, the count set_n_cb
// clamps to its maximum, instead of the raw argument the block captured. SetEncodeThreads(12) leaves 8
// encode threads, and a frame whose 16 dependent ops are split into shares by that count computes exactly:
// a callback that split by the raw 12 would leave the ops of shares 8..11 unencoded.
TEST_F(PositiveAccounting, EncodeCallbackReadsTheClampedThreadCountWhenItRuns) {
  std::unique_ptr<Context> ctx = MakeContext(device_, 2);
  ASSERT_NE(ctx, nullptr);
  ASSERT_TRUE(ctx->SetEncodeThreads(kMaxEncodeThreads + 4).ok());
  EXPECT_EQ(ctx->n_cb(), kMaxEncodeThreads);
  EXPECT_EQ(Delta().command_pools, kMaxEncodeThreads);
  std::unique_ptr<Buffer> out = MakeBuffer(device_, 65);
  ASSERT_NE(out, nullptr);
  std::vector<FrameOp> ops = {{Kernel::kFill, nullptr, nullptr, out.get(), 65, 1.0f}};
  for (int i = 1; i < 16; ++i) ops.push_back({Kernel::kScale, out.get(), nullptr, out.get(), 65, 2.0f});
  Status s = ctx->Compute(ops);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Holds(out.get(), std::vector<float>(65, 32768.0f)));  // 2^15
}

// Scenario: buffers of several sizes destroyed in several orders; after every step the device's
// VkBuffer / VkDeviceMemory / byte counts and the wrapper counts equal what the live buffers account for.
TEST_F(PositiveAccounting, DeviceCountsMatchLiveBuffersInAnyDestroyOrder) {
  const size_t kBytes[] = {4, 256, 4096, size_t{1} << 20};
  const std::vector<std::vector<int>> orders = {{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}};
  for (const std::vector<int>& order : orders) {
    SCOPED_TRACE("destroy order " + std::to_string(order[0]) + std::to_string(order[1]) +
                 std::to_string(order[2]) + std::to_string(order[3]));
    std::unique_ptr<Buffer> buffers[4];
    int64_t live = 0, bytes = 0;
    auto check = [&](const char* when) {
      SCOPED_TRACE(when);
      ObjectCounts expected;
      expected.buffers = live;
      expected.memories = live;
      expected.memory_bytes = bytes;
      EXPECT_EQ(Delta(), expected);
      EXPECT_EQ(GetWrapperCounts().wrappers - wrappers_.wrappers, live);
      EXPECT_EQ(GetWrapperCounts().bytes - wrappers_.bytes, bytes);
    };
    for (int i = 0; i < 4; ++i) {
      StatusOr<std::unique_ptr<Buffer>> b = Buffer::Create(device_, kBytes[i]);
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      buffers[i] = std::move(b).value();
      ++live;
      bytes += static_cast<int64_t>(kBytes[i]);
      check("after a create");
    }
    for (int i : order) {
      buffers[i].reset();
      --live;
      bytes -= static_cast<int64_t>(kBytes[i]);
      check("after a destroy");
    }
  }
}

TEST_F(PositiveAccounting, ComputeLeavesNoFenceOrExtraPools) {
  std::unique_ptr<Buffer> x = MakeBuffer(device_, 200);
  ASSERT_NE(x, nullptr);
  std::unique_ptr<Context> ctx = MakeContext(device_, 3);
  ASSERT_NE(ctx, nullptr);
  const ObjectCounts before = device_->Counts();
  for (int frame = 0; frame < 5; ++frame) {
    SCOPED_TRACE("frame " + std::to_string(frame));
    Status s = ctx->Compute({{Kernel::kFill, nullptr, nullptr, x.get(), 200, static_cast<float>(frame)},
                             {Kernel::kScale, x.get(), nullptr, x.get(), 200, 2.0f}});
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(device_->Counts(), before);
    EXPECT_EQ(x->data()[199], 2.0f * static_cast<float>(frame));
  }
}

// Scenario: a context owns one command pool and one descriptor pool per encode thread, replaces them on
// SetEncodeThreads, and frees them when destroyed.
TEST_F(PositiveAccounting, ContextOwnsOneCommandAndDescriptorPoolPerCommandBuffer) {
  auto pools = [](int64_t n) {
    ObjectCounts c;
    c.command_pools = n;
    c.descriptor_pools = n;
    return c;
  };
  for (int n_cb = 1; n_cb <= kMaxEncodeThreads; ++n_cb) {
    SCOPED_TRACE("n_cb=" + std::to_string(n_cb));
    std::unique_ptr<Context> ctx = MakeContext(device_, n_cb);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ctx->n_cb(), n_cb);
    EXPECT_EQ(Delta(), pools(n_cb));
    ASSERT_TRUE(ctx->SetEncodeThreads(5).ok());
    EXPECT_EQ(ctx->n_cb(), 5);
    EXPECT_EQ(Delta(), pools(5));
    ctx.reset();
    EXPECT_EQ(Delta(), ObjectCounts{});
  }
}

// Scenario: after SetEncodeThreads the context encodes with the new count.
TEST_F(PositiveAccounting, SetEncodeThreadsThenComputeUsesTheNewPools) {
  std::unique_ptr<Buffer> x = MakeBuffer(device_, 300), y = MakeBuffer(device_, 300);
  ASSERT_TRUE(x && y);
  std::unique_ptr<Context> ctx = MakeContext(device_, 2);
  ASSERT_NE(ctx, nullptr);
  for (int n_cb : {5, 1, 8}) {
    SCOPED_TRACE("n_cb=" + std::to_string(n_cb));
    ASSERT_TRUE(ctx->SetEncodeThreads(n_cb).ok());
    FillHost(y.get(), kSentinel);
    Status s = ctx->Compute({{Kernel::kFill, nullptr, nullptr, x.get(), 300, static_cast<float>(n_cb)},
                             {Kernel::kAdd, x.get(), x.get(), y.get(), 300, 0},
                             {Kernel::kScale, y.get(), nullptr, y.get(), 300, 0.25f}});
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(Holds(y.get(), std::vector<float>(300, static_cast<float>(n_cb) * 0.5f)));
  }
}

// ---- PositiveCapture ------------------------------------------------------------------------------

// Turns capture off and forgets its entries however the test ends.
struct CaptureOff {
  ~CaptureOff() {
    SetCaptureEnabled(false);
    ClearCapture();
  }
};

// Scenario: with capture on, the registry lists the buffers made while it was on, and does not keep
// them: each backing dies with its wrapper (igl-capture-retains-buffers, fixed).
TEST_F(PositiveCapture, CapturedBuffersAreTrackedAndFreedWithTheirWrappers) {
  CaptureOff guard;
  ClearCapture();
  std::unique_ptr<Buffer> before = MakeBuffer(device_, 8);  // made before capture: not listed
  ASSERT_NE(before, nullptr);
  SetCaptureEnabled(true);
  EXPECT_TRUE(CaptureEnabled());
  EXPECT_EQ(CapturedAlive(), 0u);
  std::unique_ptr<Buffer> b[3] = {MakeBuffer(device_, 16), MakeBuffer(device_, 1024), MakeBuffer(device_, 4)};
  ASSERT_TRUE(b[0] && b[1] && b[2]);
  EXPECT_EQ(CapturedAlive(), 3u);
  const ObjectCounts all = Delta();
  EXPECT_EQ(all.buffers, 4);
  EXPECT_EQ(all.memory_bytes, int64_t{4} * (8 + 16 + 1024 + 4));

  b[1].reset();
  EXPECT_EQ(CapturedAlive(), 2u);
  EXPECT_EQ(Delta().buffers, 3);
  EXPECT_EQ(Delta().memories, 3);
  EXPECT_EQ(Delta().memory_bytes, int64_t{4} * (8 + 16 + 4));

  // The workaround finds nothing to purge: live buffers keep their memory and work.
  PurgeCapture();
  EXPECT_EQ(CapturedAlive(), 2u);
  EXPECT_EQ(Delta().memory_bytes, int64_t{4} * (8 + 16 + 4));
  {
    std::unique_ptr<Context> ctx = MakeContext(device_, 1);
    ASSERT_NE(ctx, nullptr);
    Status s = ctx->Compute({{Kernel::kFill, nullptr, nullptr, b[0].get(), 16, 9.0f},
                             {Kernel::kCopy, b[0].get(), nullptr, b[2].get(), 4, 0}});
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(Holds(b[2].get(), std::vector<float>(4, 9.0f)));
  }

  b[0].reset();
  b[2].reset();
  before.reset();
  EXPECT_EQ(CapturedAlive(), 0u);
  EXPECT_EQ(Delta(), ObjectCounts{});
  PurgeCapture();
  EXPECT_EQ(Delta(), ObjectCounts{});
}

// Scenario: a capture that ends (ClearCapture) while its buffers are alive forgets them without
// freeing them; they stay usable and die with their wrappers.
TEST_F(PositiveCapture, ClearCaptureForgetsWithoutFreeing) {
  CaptureOff guard;
  ClearCapture();
  SetCaptureEnabled(true);
  std::unique_ptr<Buffer> x = MakeBuffer(device_, 64);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(CapturedAlive(), 1u);
  ClearCapture();
  EXPECT_EQ(CapturedAlive(), 0u);
  EXPECT_TRUE(CaptureEnabled()) << "ClearCapture ends the capture's entries, not capturing";
  EXPECT_EQ(Delta().buffers, 1);
  FillHost(x.get(), 5.0f);
  EXPECT_EQ(x->data()[63], 5.0f);
  SetCaptureEnabled(false);
  EXPECT_FALSE(CaptureEnabled());
  std::unique_ptr<Buffer> y = MakeBuffer(device_, 4);  // capture off: not listed
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(CapturedAlive(), 0u);
  x.reset();
  y.reset();
  EXPECT_EQ(Delta(), ObjectCounts{});
}

}  // namespace
}  // namespace lifeline::runtime
