// The fixture and helpers of the Vulkan runtime tests (tests/runtime/): buffers and contexts made with a
// test failure instead of a status, host fills and patterns, the buffer comparison `Holds`, and
// `RuntimeTest`, which runs every test on the process's device (lavapipe in CI) with the validation
// layer as oracle: it fails a test that leaves a validation error, a Vulkan object, a buffer wrapper, a
// pass descriptor or an active TransientPool behind.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "layers/runtime/buffer.h"
#include "layers/runtime/device.h"
#include "layers/runtime/encoder.h"

namespace lifeline::runtime {

// gtest prints ObjectCounts through ADL; it must live in the type's namespace.
inline void PrintTo(const ObjectCounts& c, std::ostream* os) { *os << c.ToString(); }

// ---- helpers ----------------------------------------------------------------------------------------

inline constexpr float kSentinel = -7.0f;  // what a buffer holds where nothing may write

// A buffer of `floats` floats (nullptr and a test failure when it cannot be made).
inline std::unique_ptr<Buffer> MakeBuffer(Device* device, size_t floats) {
  StatusOr<std::unique_ptr<Buffer>> b = Buffer::Create(device, floats * sizeof(float));
  if (!b.ok()) {
    ADD_FAILURE() << "Buffer::Create(" << floats * sizeof(float) << "): " << b.status().ToString();
    return nullptr;
  }
  return std::move(b).value();
}

inline std::unique_ptr<Context> MakeContext(Device* device, int n_cb,
                                            DescriptorOwnership ownership = DescriptorOwnership::kOwned) {
  StatusOr<std::unique_ptr<Context>> c = Context::Create(device, n_cb, ownership);
  if (!c.ok()) {
    ADD_FAILURE() << "Context::Create(n_cb=" << n_cb << "): " << c.status().ToString();
    return nullptr;
  }
  return std::move(c).value();
}

inline void FillHost(Buffer* b, float value) {
  for (size_t i = 0; i < b->floats(); ++i) b->data()[i] = value;
}

// Deterministic, exactly representable, never denormal: i * 0.25 - 3.
inline float Pattern(size_t i, float offset = 0) { return static_cast<float>(i) * 0.25f - 3.0f + offset; }

inline void PatternHost(Buffer* b, float offset) {
  for (size_t i = 0; i < b->floats(); ++i) b->data()[i] = Pattern(i, offset);
}

// Compares the whole buffer with `expected` (same size); reports the first few mismatches.
inline testing::AssertionResult Holds(const Buffer* b, const std::vector<float>& expected) {
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

inline std::vector<float> HostView(const Buffer* b) { return std::vector<float>(b->data(), b->data() + b->floats()); }

inline std::string JoinLines(const std::vector<std::string>& lines) {
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

}  // namespace lifeline::runtime
