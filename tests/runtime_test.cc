// The Vulkan runtime of layers/runtime on the fixed code: kernels against a CPU reference, argument
// checking, transient pools and pass descriptors, object accounting, the capture registry, contexts on
// several threads, and VkResult reporting. Every Vulkan test runs on the process's device (lavapipe in
// CI) with the validation layer as oracle: the fixture fails a test that leaves a validation error, a
// Vulkan object, a buffer wrapper or a pass descriptor behind. The re-introduced bugs are tested by the
// reproducers, not here.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/testing/status_matchers.h"
#include "core/status.h"
#include "layers/runtime/buffer.h"
#include "layers/runtime/device.h"
#include "layers/runtime/encoder.h"

namespace lifeline::runtime {

// gtest prints ObjectCounts through ADL; it must live in the type's namespace.
static void PrintTo(const ObjectCounts& c, std::ostream* os) { *os << c.ToString(); }

namespace {

// ---- helpers ----------------------------------------------------------------------------------------

constexpr uint32_t kSizes[] = {1, 63, 64, 65, 1000};  // one element, around a workgroup, several groups
constexpr float kSentinel = -7.0f;                     // what a buffer holds where nothing may write

using testing_util::HasStatus;

// A buffer of `floats` floats (nullptr and a test failure when it cannot be made).
std::unique_ptr<Buffer> MakeBuffer(Device* device, size_t floats) {
  StatusOr<std::unique_ptr<Buffer>> b = Buffer::Create(device, floats * sizeof(float));
  if (!b.ok()) {
    ADD_FAILURE() << "Buffer::Create(" << floats * sizeof(float) << "): " << b.status().ToString();
    return nullptr;
  }
  return std::move(b).value();
}

std::unique_ptr<Context> MakeContext(Device* device, int n_cb,
                                     DescriptorOwnership ownership = DescriptorOwnership::kOwned) {
  StatusOr<std::unique_ptr<Context>> c = Context::Create(device, n_cb, ownership);
  if (!c.ok()) {
    ADD_FAILURE() << "Context::Create(n_cb=" << n_cb << "): " << c.status().ToString();
    return nullptr;
  }
  return std::move(c).value();
}

void FillHost(Buffer* b, float value) {
  for (size_t i = 0; i < b->floats(); ++i) b->data()[i] = value;
}

// Deterministic, exactly representable, never denormal: i * 0.25 - 3.
float Pattern(size_t i, float offset = 0) { return static_cast<float>(i) * 0.25f - 3.0f + offset; }

void PatternHost(Buffer* b, float offset) {
  for (size_t i = 0; i < b->floats(); ++i) b->data()[i] = Pattern(i, offset);
}

// Compares the whole buffer with `expected` (same size); reports the first few mismatches.
testing::AssertionResult Holds(const Buffer* b, const std::vector<float>& expected) {
  if (b->floats() != expected.size())
    return testing::AssertionFailure() << "buffer has " << b->floats() << " floats, expected " << expected.size();
  testing::AssertionResult result = testing::AssertionSuccess();
  int bad = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (b->data()[i] == expected[i]) continue;
    if (bad == 0) result = testing::AssertionFailure();
    if (++bad <= 5) result << "[" << i << "] = " << b->data()[i] << ", expected " << expected[i] << "; ";
  }
  if (bad > 5) result << "(" << bad << " mismatches in all)";
  return result;
}

// The CPU reference of one op over the host views (every element of `out` past `n` stays).
std::vector<float> Reference(const FrameOp& op, const std::vector<float>& a, const std::vector<float>& b,
                             std::vector<float> out) {
  for (uint32_t i = 0; i < op.n; ++i) {
    switch (op.kernel) {
      case Kernel::kFill: out[i] = op.value; break;
      case Kernel::kAdd: out[i] = a[i] + b[i]; break;
      case Kernel::kScale: out[i] = a[i] * op.value; break;
      case Kernel::kCopy: out[i] = a[i]; break;
    }
  }
  return out;
}

std::vector<float> HostView(const Buffer* b) { return std::vector<float>(b->data(), b->data() + b->floats()); }

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += "\n  " + l;
  return s;
}

// ---- the fixture --------------------------------------------------------------------------------------

// Gets the device (there is always lavapipe: a missing device is a failure, never a skip) and checks
// that a test leaves no validation error and no object behind.
class RuntimeTest : public testing::Test {
 protected:
  void SetUp() override {
    StatusOr<Device*> d = Device::Get();
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    device_ = d.value();
    counts_ = device_->Counts();
    wrappers_ = GetWrapperCounts();
    descriptors_ = PassDescriptor::Live();
  }

  void TearDown() override {
    if (!device_) return;
    std::vector<std::string> errors = device_->TakeValidationErrors();
    EXPECT_TRUE(errors.empty()) << errors.size() << " validation message(s):" << JoinLines(errors);
    EXPECT_EQ(device_->Counts(), counts_) << "Vulkan objects left behind";
    WrapperCounts w = GetWrapperCounts();
    EXPECT_EQ(w.wrappers, wrappers_.wrappers) << "buffer wrappers left behind";
    EXPECT_EQ(w.bytes, wrappers_.bytes) << "wrapper bytes left behind";
    EXPECT_EQ(PassDescriptor::Live(), descriptors_) << "pass descriptors left behind";
    EXPECT_EQ(TransientPool::Depth(), 0) << "a TransientPool is still active";
  }

  // Counts now minus counts at SetUp.
  ObjectCounts Delta() const {
    ObjectCounts now = device_->Counts();
    now.buffers -= counts_.buffers;
    now.memories -= counts_.memories;
    now.memory_bytes -= counts_.memory_bytes;
    now.command_pools -= counts_.command_pools;
    now.descriptor_pools -= counts_.descriptor_pools;
    now.fences -= counts_.fences;
    return now;
  }

  Device* device_ = nullptr;
  ObjectCounts counts_;
  WrapperCounts wrappers_;
  int64_t descriptors_ = 0;
};

class PositiveKernels : public RuntimeTest {};
class NegativeArguments : public RuntimeTest {};
class PositivePassDescriptors : public RuntimeTest {};
class NegativePassDescriptors : public RuntimeTest {};
class PositiveAccounting : public RuntimeTest {};
class PositiveCapture : public RuntimeTest {};
class PositiveThreads : public RuntimeTest {};

// ---- PositiveKernels ----------------------------------------------------------------------------------

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

// ---- NegativeArguments ----------------------------------------------------------------------------

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

// ---- pools and pass descriptors -------------------------------------------------------------------

TEST_F(NegativePassDescriptors, CreateWithoutAPoolReturnsNull) {
  ASSERT_EQ(TransientPool::Depth(), 0);
  EXPECT_EQ(PassDescriptor::Create(DispatchType::kSerial), nullptr);
  EXPECT_EQ(PassDescriptor::Live(), descriptors_);
}

TEST_F(NegativePassDescriptors, BorrowedContextWithoutAPoolIsFailedPrecondition) {
  ASSERT_EQ(TransientPool::Depth(), 0);
  StatusOr<std::unique_ptr<Context>> c = Context::Create(device_, 2, DescriptorOwnership::kBorrowed);
  EXPECT_TRUE(HasStatus(c.status(), StatusCode::kFailedPrecondition, "TransientPool"));
  EXPECT_EQ(Delta(), ObjectCounts{});
  EXPECT_EQ(PassDescriptor::Live(), descriptors_);
}

// Scenario: +0 descriptors in nested pools belong to the innermost pool active when they were made and
// die when that pool drains.
TEST_F(PositivePassDescriptors, CreateIsReleasedByTheInnermostPoolsDrain) {
  ASSERT_EQ(TransientPool::Depth(), 0);
  {
    TransientPool outer;
    EXPECT_EQ(TransientPool::Depth(), 1);
    PassDescriptor* from_outer = PassDescriptor::Create(DispatchType::kConcurrent);
    ASSERT_NE(from_outer, nullptr);
    EXPECT_EQ(outer.size(), 1u);
    {
      TransientPool inner;
      EXPECT_EQ(TransientPool::Depth(), 2);
      PassDescriptor* from_inner = PassDescriptor::Create(DispatchType::kSerial);
      ASSERT_NE(from_inner, nullptr);
      EXPECT_EQ(from_inner->refs(), 1);
      EXPECT_EQ(inner.size(), 1u);
      EXPECT_EQ(outer.size(), 1u);
      EXPECT_EQ(PassDescriptor::Live(), descriptors_ + 2);
    }
    EXPECT_EQ(TransientPool::Depth(), 1);
    EXPECT_EQ(PassDescriptor::Live(), descriptors_ + 1);
    EXPECT_EQ(from_outer->dispatch_type(), DispatchType::kConcurrent);
    EXPECT_EQ(from_outer->label(), "concurrent compute pass");
  }
  EXPECT_EQ(TransientPool::Depth(), 0);
  EXPECT_EQ(PassDescriptor::Live(), descriptors_);
}

TEST_F(PositivePassDescriptors, NewIsOwnedByTheCallerUntilRelease) {
  PassDescriptor* d = nullptr;
  {
    TransientPool pool;
    d = PassDescriptor::New(DispatchType::kSerial);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(pool.size(), 0u) << "New registered its object with the pool";
  }
  EXPECT_EQ(PassDescriptor::Live(), descriptors_ + 1);
  EXPECT_EQ(d->refs(), 1);
  EXPECT_EQ(d->dispatch_type(), DispatchType::kSerial);
  EXPECT_EQ(d->label(), "serial compute pass");
  d->Release();
  EXPECT_EQ(PassDescriptor::Live(), descriptors_);
}

TEST_F(PositivePassDescriptors, RetainKeepsAnAutoreleasedDescriptorPastTheDrain) {
  PassDescriptor* d = nullptr;
  {
    TransientPool pool;
    d = PassDescriptor::Create(DispatchType::kSerial);
    ASSERT_NE(d, nullptr);
    d->Retain();
    EXPECT_EQ(d->refs(), 2);
  }
  EXPECT_EQ(PassDescriptor::Live(), descriptors_ + 1);
  EXPECT_EQ(d->refs(), 1);
  EXPECT_EQ(d->label(), "serial compute pass");
  d->Release();
  EXPECT_EQ(PassDescriptor::Live(), descriptors_);
}

// Scenario: a context that borrows its descriptor from a pool that outlives it (the correct use of
// kBorrowed) computes like an owning one, and the pool frees the descriptor after the context is gone.
TEST_F(PositivePassDescriptors, BorrowedContextInsideAnOutlivingPoolComputes) {
  constexpr uint32_t n = 130;
  std::unique_ptr<Buffer> a = MakeBuffer(device_, n), out = MakeBuffer(device_, n);
  ASSERT_TRUE(a && out);
  PatternHost(a.get(), 0);
  std::vector<float> expected = HostView(a.get());
  for (float& v : expected) v = (v + v) * 0.5f;
  {
    TransientPool pool;
    std::unique_ptr<Context> ctx = MakeContext(device_, 2, DescriptorOwnership::kBorrowed);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(pool.size(), 1u);
    EXPECT_EQ(PassDescriptor::Live(), descriptors_ + 1);
    Status s = ctx->Compute({{Kernel::kAdd, a.get(), a.get(), out.get(), n, 0},
                             {Kernel::kScale, out.get(), nullptr, out.get(), n, 0.5f}});
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(Holds(out.get(), expected));
    ctx.reset();
    EXPECT_EQ(PassDescriptor::Live(), descriptors_ + 1) << "the context released a descriptor it did not own";
  }
  EXPECT_EQ(PassDescriptor::Live(), descriptors_);
}

// ---- PositiveAccounting ---------------------------------------------------------------------------

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

// ---- PositiveThreads ------------------------------------------------------------------------------

// Scenario: four threads, each with its own context (n_cb 1..4) and buffers, compute 20 frames at once;
// they share only the device, whose queue submission is locked. Race-free by design (the tsan lane).
TEST_F(PositiveThreads, ContextsOnSeveralThreadsComputeIndependently) {
  constexpr int kThreads = 4, kFrames = 20;
  constexpr uint32_t n = 257;
  struct Result {
    std::string error;  // the first failure, empty when none
    int frames_checked = 0;
  };
  std::vector<Result> results(kThreads);
  Device* device = device_;
  auto work = [device, &results](int t) {
    Result& r = results[t];
    StatusOr<std::unique_ptr<Context>> ctx = Context::Create(device, t + 1);
    StatusOr<std::unique_ptr<Buffer>> a = Buffer::Create(device, n * sizeof(float));
    StatusOr<std::unique_ptr<Buffer>> e = Buffer::Create(device, n * sizeof(float));
    StatusOr<std::unique_ptr<Buffer>> c = Buffer::Create(device, n * sizeof(float));
    StatusOr<std::unique_ptr<Buffer>> d = Buffer::Create(device, n * sizeof(float));
    for (const Status* s : {&ctx.status(), &a.status(), &e.status(), &c.status(), &d.status()}) {
      if (!s->ok()) {
        r.error = s->ToString();
        return;
      }
    }
    PatternHost(e.value().get(), static_cast<float>(t));
    for (int f = 0; f < kFrames; ++f) {
      FillHost(d.value().get(), kSentinel);
      const float fill = static_cast<float>(t + 1), scale = static_cast<float>(f + 1);
      Status s = ctx.value()->Compute({
          {Kernel::kFill, nullptr, nullptr, a.value().get(), n, fill},
          {Kernel::kAdd, a.value().get(), e.value().get(), c.value().get(), n, 0},
          {Kernel::kScale, c.value().get(), nullptr, d.value().get(), n, scale},
      });
      if (!s.ok()) {
        r.error = "frame " + std::to_string(f) + ": " + s.ToString();
        return;
      }
      for (uint32_t i = 0; i < n; ++i) {
        const float want = (fill + Pattern(i, static_cast<float>(t))) * scale;
        if (d.value()->data()[i] != want) {
          r.error = "frame " + std::to_string(f) + " d[" + std::to_string(i) + "] = " +
                    std::to_string(d.value()->data()[i]) + ", expected " + std::to_string(want);
          return;
        }
      }
      ++r.frames_checked;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t) + " (n_cb " + std::to_string(t + 1) + ")");
    EXPECT_EQ(results[t].error, "");
    EXPECT_EQ(results[t].frames_checked, kFrames);
  }
}

// ---- VkResult reporting ---------------------------------------------------------------------------

TEST(VkErrors, ResultNamesAreTheEnumeratorNames) {
  EXPECT_STREQ(VkResultName(VK_ERROR_DEVICE_LOST), "VK_ERROR_DEVICE_LOST");
  EXPECT_STREQ(VkResultName(VK_SUCCESS), "VK_SUCCESS");
  EXPECT_STREQ(VkResultName(VK_ERROR_OUT_OF_DEVICE_MEMORY), "VK_ERROR_OUT_OF_DEVICE_MEMORY");
  EXPECT_STREQ(VkResultName(static_cast<VkResult>(-123456)), "VK_RESULT_UNKNOWN");
}

TEST(VkErrors, VkErrorNamesCallResultFileAndLine) {
  Status s = VkError("vkQueueSubmit", VK_ERROR_DEVICE_LOST, "layers/runtime/encoder.cc", 42);
  EXPECT_TRUE(HasStatus(s, StatusCode::kInternal, "vkQueueSubmit"));
  EXPECT_TRUE(HasStatus(s, StatusCode::kInternal, "VK_ERROR_DEVICE_LOST"));
  EXPECT_TRUE(HasStatus(s, StatusCode::kInternal, "layers/runtime/encoder.cc:42"));
}

Status FailsWithDeviceLost(int* line) {
  *line = __LINE__ + 1;
  LIFELINE_VK_RETURN_IF_ERROR(VK_ERROR_DEVICE_LOST);
  return Status::Ok();
}

Status SucceedsThroughTheMacro() {
  LIFELINE_VK_RETURN_IF_ERROR(VK_SUCCESS);
  return FailedPrecondition("reached the end");
}

TEST(VkErrors, ReturnIfErrorMacroReportsTheCallSite) {
  int line = 0;
  Status s = FailsWithDeviceLost(&line);
  EXPECT_TRUE(HasStatus(s, StatusCode::kInternal, "VK_ERROR_DEVICE_LOST failed: VK_ERROR_DEVICE_LOST"));
  EXPECT_TRUE(HasStatus(s, StatusCode::kInternal, "runtime_test.cc:" + std::to_string(line)));
  EXPECT_TRUE(HasStatus(SucceedsThroughTheMacro(), StatusCode::kFailedPrecondition, "reached the end"));
}

}  // namespace
}  // namespace lifeline::runtime
