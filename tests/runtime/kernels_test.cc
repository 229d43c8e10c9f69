// PositiveKernels: the four compute kernels of layers/runtime (fill, add, scale, copy) against the CPU
// reference below, for sizes around a workgroup; dependent ops over 1..8 command buffers; elements past
// n untouched; the largest frame; an empty frame. Every test runs under RuntimeTest (runtime_fixture.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "harness/oracles/runtime_oracles.h"
#include "layers/runtime/buffer.h"
#include "layers/runtime/device.h"
#include "layers/runtime/encoder.h"
#include "tests/runtime/runtime_fixture.h"

namespace lifeline::runtime {
namespace {

class PositiveKernels : public RuntimeTest {};

constexpr uint32_t kSizes[] = {1, 63, 64, 65, 1000};  // one element, around a workgroup, several groups

// The CPU reference of one op over the host views (every element of `out` past `n` stays): the oracle
// the runtime programs' executors use (harness/oracles/runtime_oracles.h).
std::vector<float> Reference(const FrameOp& op, const std::vector<float>& a, const std::vector<float>& b,
                             std::vector<float> out) {
  return oracles::ReferenceKernel(op.kernel, op.n, op.value, a, b, std::move(out));
}

// Runs one op of `kernel` over exactly `n` floats (a, b seeded with distinct patterns, out with the
// sentinel) and compares every buffer with the CPU reference.
void CheckKernel(Device* device, Kernel kernel, uint32_t n, float value) {
  SCOPED_TRACE(std::string(KernelName(kernel)) + " n=" + std::to_string(n));
  std::unique_ptr<Buffer> a = MakeBuffer(device, n), b = MakeBuffer(device, n), out = MakeBuffer(device, n);
  ASSERT_TRUE(a && b && out);
  PatternHost(a.get(), 0.5f);
  PatternHost(b.get(), 100.0f);
  FillHost(out.get(), kSentinel);
  const std::vector<float> a0 = HostView(a.get()), b0 = HostView(b.get()), out0 = HostView(out.get());
  FrameOp op{kernel, a.get(), b.get(), out.get(), n, value};
  std::unique_ptr<Context> ctx = MakeContext(device, 1);
  ASSERT_NE(ctx, nullptr);
  Status s = ctx->Compute({op});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Holds(out.get(), Reference(op, a0, b0, out0)));
  EXPECT_TRUE(Holds(a.get(), a0)) << "an input changed";
  EXPECT_TRUE(Holds(b.get(), b0)) << "an input changed";
}

TEST_F(PositiveKernels, FillWritesTheValueToEveryElement) {
  for (uint32_t n : kSizes) CheckKernel(device_, Kernel::kFill, n, 2.5f);
}

TEST_F(PositiveKernels, AddSumsElementwise) {
  for (uint32_t n : kSizes) CheckKernel(device_, Kernel::kAdd, n, 0);
}

TEST_F(PositiveKernels, ScaleMultipliesEveryElementByTheValue) {
  for (uint32_t n : kSizes) CheckKernel(device_, Kernel::kScale, n, -1.5f);
}

TEST_F(PositiveKernels, CopyDuplicatesTheInput) {
  for (uint32_t n : kSizes) CheckKernel(device_, Kernel::kCopy, n, 0);
}

// Scenario: a frame whose ops each read what the one before wrote (fill a, fill b, c = a + b,
// a = c * 4, b = a), encoded into 1..8 command buffers; the serial barriers inside a command buffer and
// the leading barrier of each one make every dependency hold, so the result is the CPU reference's.
TEST_F(PositiveKernels, DependentOpsGiveTheReferenceForEveryCommandBufferCount) {
  for (uint32_t n : {65u, 1000u}) {
    std::unique_ptr<Buffer> a = MakeBuffer(device_, n), b = MakeBuffer(device_, n), c = MakeBuffer(device_, n);
    ASSERT_TRUE(a && b && c);
    const std::vector<FrameOp> ops = {
        {Kernel::kFill, nullptr, nullptr, a.get(), n, 1.5f},
        {Kernel::kFill, nullptr, nullptr, b.get(), n, 2.25f},
        {Kernel::kAdd, a.get(), b.get(), c.get(), n, 0},
        {Kernel::kScale, c.get(), nullptr, a.get(), n, 4.0f},
        {Kernel::kCopy, a.get(), nullptr, b.get(), n, 0},
    };
    // The reference, op by op on host copies.
    std::vector<float> ra(n, kSentinel), rb(n, kSentinel), rc(n, kSentinel);
    ra = Reference(ops[0], {}, {}, ra);
    rb = Reference(ops[1], {}, {}, rb);
    rc = Reference(ops[2], ra, rb, rc);
    ra = Reference(ops[3], rc, {}, ra);
    rb = Reference(ops[4], ra, {}, rb);
    for (int n_cb = 1; n_cb <= kMaxEncodeThreads; ++n_cb) {
      SCOPED_TRACE("n=" + std::to_string(n) + " n_cb=" + std::to_string(n_cb));
      FillHost(a.get(), kSentinel);  // a frame that did not run leaves the sentinel
      FillHost(b.get(), kSentinel);
      FillHost(c.get(), kSentinel);
      std::unique_ptr<Context> ctx = MakeContext(device_, n_cb);
      ASSERT_NE(ctx, nullptr);
      Status s = ctx->Compute(ops);
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_TRUE(Holds(a.get(), ra)) << "a";
      EXPECT_TRUE(Holds(b.get(), rb)) << "b";
      EXPECT_TRUE(Holds(c.get(), rc)) << "c";
    }
  }
}

// Scenario: n smaller than the buffers; every kernel writes only the first n elements.
TEST_F(PositiveKernels, ElementsPastNAreUntouched) {
  constexpr size_t kFloats = 200;
  for (Kernel kernel : {Kernel::kFill, Kernel::kAdd, Kernel::kScale, Kernel::kCopy}) {
    for (uint32_t n : kSizes) {
      SCOPED_TRACE(std::string(KernelName(kernel)) + " n=" + std::to_string(n) + " of " + std::to_string(kFloats));
      if (n > kFloats) continue;
      std::unique_ptr<Buffer> a = MakeBuffer(device_, kFloats), b = MakeBuffer(device_, kFloats),
                              out = MakeBuffer(device_, kFloats);
      ASSERT_TRUE(a && b && out);
      PatternHost(a.get(), 1.0f);
      PatternHost(b.get(), 2.0f);
      FillHost(out.get(), kSentinel);
      FrameOp op{kernel, a.get(), b.get(), out.get(), n, 3.0f};
      std::vector<float> expected = Reference(op, HostView(a.get()), HostView(b.get()), HostView(out.get()));
      std::unique_ptr<Context> ctx = MakeContext(device_, 1);
      ASSERT_NE(ctx, nullptr);
      Status s = ctx->Compute({op});
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_TRUE(Holds(out.get(), expected));
      EXPECT_EQ(out->data()[kFloats - 1], kSentinel);
    }
  }
}

// Scenario: the largest frame the contract allows (64 ops), spread over 8 command buffers: 64 chained
// scales by 1 of a buffer whose last op doubles it.
TEST_F(PositiveKernels, FrameOfMaxOpsComputes) {
  constexpr uint32_t n = 100;
  std::unique_ptr<Buffer> x = MakeBuffer(device_, n), y = MakeBuffer(device_, n);
  ASSERT_TRUE(x && y);
  PatternHost(x.get(), 0);
  std::vector<float> expected = HostView(x.get());
  std::vector<FrameOp> ops;
  for (int i = 0; i < kMaxFrameOps; ++i) {
    const bool even = i % 2 == 0;  // x -> y, y -> x, ...; the last op (odd) writes x
    ops.push_back({Kernel::kScale, even ? x.get() : y.get(), nullptr, even ? y.get() : x.get(), n,
                   i == kMaxFrameOps - 1 ? 2.0f : 1.0f});
  }
  for (float& v : expected) v *= 2.0f;
  std::unique_ptr<Context> ctx = MakeContext(device_, kMaxEncodeThreads);
  ASSERT_NE(ctx, nullptr);
  Status s = ctx->Compute(ops);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Holds(x.get(), expected));
}

// Scenario: an empty frame is submitted and waited for like any other.
TEST_F(PositiveKernels, EmptyFrameSucceeds) {
  std::unique_ptr<Context> ctx = MakeContext(device_, 3);
  ASSERT_NE(ctx, nullptr);
  Status s = ctx->Compute({});
  EXPECT_TRUE(s.ok()) << s.ToString();
}

}  // namespace
}  // namespace lifeline::runtime
