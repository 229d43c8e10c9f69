// Transient pools and pass descriptors of layers/runtime/encoder.h: without a pool a +0 descriptor or a
// borrowing context cannot be made (NegativePassDescriptors); descriptors belong to the innermost pool,
// New and Retain keep one past the drain, and a borrowing context inside an outliving pool computes
// (PositivePassDescriptors).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
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

class NegativePassDescriptors : public RuntimeTest {};
class PositivePassDescriptors : public RuntimeTest {
 protected:
  // `d`, a serial descriptor that outlived its pool, is alive with one reference (the caller's), and
  // releasing that reference frees it.
  void ExpectOnlyTheCallersReferenceThenRelease(PassDescriptor* d) {
    EXPECT_EQ(PassDescriptor::Live(), descriptors_ + 1);
    EXPECT_EQ(d->refs(), 1);
    EXPECT_EQ(d->dispatch_type(), DispatchType::kSerial);
    EXPECT_EQ(d->label(), "serial compute pass");
    d->Release();
    EXPECT_EQ(PassDescriptor::Live(), descriptors_);
  }
};

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
  ExpectOnlyTheCallersReferenceThenRelease(d);
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
  ExpectOnlyTheCallersReferenceThenRelease(d);
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

}  // namespace
}  // namespace lifeline::runtime
