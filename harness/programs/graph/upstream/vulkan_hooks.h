// The Vulkan oracles of ggml_vulkan_graph_topology: what ggml-vulkan asks of the Vulkan loader, seen from
// inside the process, without changing ggml.
//
// ggml-vulkan reaches Vulkan only through vkGetInstanceProcAddr (vulkan.hpp's dynamic dispatcher is
// initialised with it) and vkGetDeviceProcAddr. vulkan_hooks.cc defines both symbols in the executable,
// so the static link binds ggml-vulkan's references to them; they forward every name to the loader
// (libvulkan.so.1, opened with dlopen) and hand back a wrapper for the calls below. Nothing else in the
// process is affected: the validation layer and the ICD get their dispatch through the loader's chain.
//
// Validation: the wrapper of vkCreateInstance enables VK_LAYER_KHRONOS_validation with synchronization
// validation and a debug messenger that records every error (as layers/runtime's device does), whatever
// ggml asked for. No validation layer: instance creation fails with VK_ERROR_LAYER_NOT_PRESENT and
// InstanceError() says why (an error, never a run without the oracle).
//
// Accounting: every create/destroy (allocate/free) of the object kinds below is counted, with the bytes of
// device memory, so the target can prove that an input left nothing of its own alive. Destroying a handle
// that is not alive is recorded as an error beside the validation messages.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace lifeline::graphs::vkhooks {

enum class Kind : uint8_t {
  kInstance,
  kDevice,
  kBuffer,
  kMemory,
  kCommandPool,
  kCommandBuffer,
  kFence,
  kSemaphore,
  kEvent,
  kQueryPool,
  kDescriptorPool,
  kDescriptorSetLayout,
  kPipelineLayout,
  kPipeline,
  kShaderModule,
  kPipelineCache,
  kMaxValue = kPipelineCache,
};
inline constexpr int kKinds = static_cast<int>(Kind::kMaxValue) + 1;
const char* KindName(Kind kind);

// Kinds a device keeps for its lifetime once created on first use (ggml-vulkan compiles pipelines on
// demand and caches them on the device, with their layouts and shader modules).
bool DeviceLifetime(Kind kind);

struct Counts {
  std::array<int64_t, kKinds> live{};
  int64_t memory_bytes = 0;
  int64_t operator[](Kind k) const { return live[static_cast<int>(k)]; }
  // "buffers 3 (+1), memory 2 (+1, 4096 bytes)": the kinds that differ from `before`, or "" when none.
  std::string DiffFrom(const Counts& before) const;
};

Counts Live();
// The position in creation order now: objects made later are "since" it.
uint64_t Mark();
// The objects created after `mark` and still alive, other than what a device keeps for good: the
// DeviceLifetime kinds, and command buffers of a pool older than `mark` (ggml-vulkan's queues keep their
// command buffers and reuse them). "" when there are none; else as Counts::DiffFrom.
std::string AliveSince(uint64_t mark);
// Validation errors (VUID or message id: text) and accounting errors since the last call.
std::vector<std::string> TakeErrors();
// Why the last vkCreateInstance through the hooks failed ("" when it did not, or was never called).
std::string InstanceError();
// Whether ggml-vulkan's vkGetInstanceProcAddr calls reach the hooks (the oracles are live).
bool Active();

}  // namespace lifeline::graphs::vkhooks
