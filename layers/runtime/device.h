// The Vulkan device of layers/runtime: instance, physical device and one compute queue, chosen once per
// process, with the Khronos validation layer as an oracle and the compute kernels (GLSL compiled to
// SPIR-V by glslc at build time) ready as pipelines.
//
// Whatever the ICD — lavapipe (Debian's mesa-vulkan-drivers, a CPU implementation) in CI, a GPU driver
// where there is one — the device is the first that offers a compute queue and host-visible coherent
// memory. `LIFELINE_VK_ICD_FILTER=lvp` (a substring of the device name) picks one when several exist.
//
// Validation: VK_LAYER_KHRONOS_validation is enabled, synchronization validation included (a missing
// barrier is a SYNC-HAZARD-* error), with a debug messenger that records every error with its message;
// `TakeValidationErrors()` hands them to the oracle. A missing layer is an error of `Device::Get()`, never a
// silent run without the oracle.
//
// Accounting: every create and destroy of a VkBuffer, VkDeviceMemory, VkCommandPool, VkDescriptorPool and
// VkFence made through `Track*` is counted here, independently of any wrapper or registry, so an oracle
// can compare what is alive with what should be.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace lifeline::runtime {

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" for a VkResult.
const char* VkResultName(VkResult result);
// INTERNAL status "vkCreateBuffer failed: VK_ERROR_... at layers/runtime/buffer.cc:42".
Status VkError(const char* call, VkResult result, const char* file, int line);

#define LIFELINE_VK_RETURN_IF_ERROR(call)                                                       \
  do {                                                                                          \
    VkResult lifeline_vk_result_ = (call);                                                      \
    if (lifeline_vk_result_ != VK_SUCCESS)                                                      \
      return ::lifeline::runtime::VkError(#call, lifeline_vk_result_, __FILE__, __LINE__);     \
  } while (0)

enum class Kernel : uint8_t { kFill, kAdd, kScale, kCopy, kMaxValue = kCopy };
inline constexpr int kKernelCount = static_cast<int>(Kernel::kMaxValue) + 1;
inline constexpr uint32_t kLocalSize = 64;  // local_size_x of every kernel
const char* KernelName(Kernel kernel);

// Push constants of every kernel: element count and a scalar (fill value, scale factor).
struct KernelArgs {
  uint32_t n;
  float value;
};

// Live Vulkan objects of the kinds the runtime creates per buffer or per frame.
struct ObjectCounts {
  int64_t buffers = 0;
  int64_t memories = 0;
  int64_t memory_bytes = 0;
  int64_t command_pools = 0;
  int64_t descriptor_pools = 0;
  int64_t fences = 0;
  bool operator==(const ObjectCounts& o) const {
    return buffers == o.buffers && memories == o.memories && memory_bytes == o.memory_bytes &&
           command_pools == o.command_pools && descriptor_pools == o.descriptor_pools && fences == o.fences;
  }
  std::string ToString() const;
};

class Device {
 public:
  // The process's device, created on first call. Errors (no loader, no ICD, no compute queue, no
  // validation layer, a kernel that does not build) are returned every time, with the VkResult.
  static StatusOr<Device*> Get();

  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  uint32_t host_memory_type() const { return host_memory_type_; }
  const std::string& name() const { return name_; }
  VkPipeline pipeline(Kernel k) const { return pipelines_[static_cast<int>(k)]; }
  VkPipelineLayout pipeline_layout() const { return pipeline_layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  // Records one dispatch of `kernel` over `n` floats with `set` bound (see WriteKernelBindings).
  void RecordDispatch(VkCommandBuffer cmd, Kernel kernel, VkDescriptorSet set, uint32_t n, float value) const;
  // vkQueueSubmit is externally synchronized per queue.
  std::mutex& queue_mutex() { return queue_mutex_; }

  // Validation messages recorded since the last call (errors, and warnings the layer files under
  // object lifetime); the messenger may run on any thread.
  std::vector<std::string> TakeValidationErrors();

  // The accounting of live objects; `Track*` are called right after a successful create and right
  // before a destroy.
  ObjectCounts Counts() const;
  void TrackBuffer(int delta);
  void TrackMemory(int delta, int64_t bytes);
  void TrackCommandPool(int delta);
  void TrackDescriptorPool(int delta);
  void TrackFence(int delta);

 private:
  Device() = default;
  Status Init();
  Status BuildPipelines();
  static VKAPI_ATTR VkBool32 VKAPI_CALL OnMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT types,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* user);

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  uint32_t host_memory_type_ = 0;
  std::string name_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout_ = VK_NULL_HANDLE;
  std::array<VkPipeline, kKernelCount> pipelines_{};
  std::mutex queue_mutex_;
  std::mutex messages_mutex_;
  std::vector<std::string> messages_;
  std::atomic<int64_t> buffers_{0}, memories_{0}, memory_bytes_{0}, command_pools_{0}, descriptor_pools_{0},
      fences_{0};
};

// Points the three storage-buffer bindings of `set` at `buffers`: a (0) and b (1) are read, out (2) written.
void WriteKernelBindings(VkDevice device, VkDescriptorSet set, const VkBuffer (&buffers)[3]);
// A pipeline barrier from compute-shader writes to `dst_access` at `dst_stage`.
void ComputeBarrier(VkCommandBuffer cmd, VkAccessFlags dst_access, VkPipelineStageFlags dst_stage);

}  // namespace lifeline::runtime
