// Buffers of layers/runtime and the debug capture registry.
//
// A `Buffer` is the wrapper user code holds; the `Backing` under it owns the VkBuffer and its
// VkDeviceMemory (host-visible, coherent, mapped for the backing's life) and destroys both when the last
// reference goes. Wrappers are counted here (live wrappers and their bytes); the device counts backing
// objects in its create/destroy paths (device.h), so an oracle can compare the two.
//
// The capture registry (process lifetime, like a frame-capture layer) remembers every backing created
// while capture is on, so a capture can list what existed. The documented bug igl-capture-retains-buffers
// (facebook/igl #179, no upstream fix) lives in how it holds them:
//   fixed         weak references: a backing dies with its last wrapper, capture or not;
//   re-introduced strong references: backings (VkBuffer + VkDeviceMemory) outlive their wrappers, all still
//                 reachable, so neither ASan nor LSan says anything; only the accounting sees it.
// `PurgeCapture()` is the reporter's workaround: for backings whose wrapper is gone it frees the bytes
// (VkDeviceMemory) and keeps the object (VkBuffer), like marking a Metal buffer purgeable-empty. It makes
// the bytes check pass and leaves the object check failing.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/status.h"
#include "layers/runtime/device.h"

namespace lifeline::runtime {

inline constexpr size_t kMaxBufferBytes = size_t{64} << 20;

class Backing {
 public:
  ~Backing();
  VkBuffer buffer() const { return buffer_; }
  size_t bytes() const { return bytes_; }
  float* data() const { return static_cast<float*>(mapped_); }
  bool purged() const { return memory_ == VK_NULL_HANDLE; }

 private:
  friend class Buffer;
  friend void PurgeCapture();
  Backing(Device* device, size_t bytes) : device_(device), bytes_(bytes) {}
  void FreeMemory();
  Device* device_;
  size_t bytes_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  bool wrapped_ = true;  // a Buffer still wraps it
};

class Buffer {
 public:
  // A zero-filled buffer of `bytes` (a multiple of 4, 4 .. kMaxBufferBytes): INVALID_ARGUMENT otherwise,
  // INTERNAL with the VkResult when Vulkan refuses.
  static StatusOr<std::unique_ptr<Buffer>> Create(Device* device, size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  size_t bytes() const { return backing_->bytes(); }
  size_t floats() const { return backing_->bytes() / sizeof(float); }
  float* data() const { return backing_->data(); }  // host view of the device memory
  VkBuffer handle() const { return backing_->buffer(); }

 private:
  explicit Buffer(std::shared_ptr<Backing> backing);
  std::shared_ptr<Backing> backing_;
};

// Live wrappers and the bytes they account for.
struct WrapperCounts {
  int64_t wrappers = 0;
  int64_t bytes = 0;
};
WrapperCounts GetWrapperCounts();

// The debug capture registry.
void SetCaptureEnabled(bool on);
bool CaptureEnabled();
// Backings the registry remembers that are still alive (with or without a wrapper).
size_t CapturedAlive();
// The workaround (see above).
void PurgeCapture();
// Forgets every entry (a capture ends); with strong references this releases what it kept.
void ClearCapture();

}  // namespace lifeline::runtime
