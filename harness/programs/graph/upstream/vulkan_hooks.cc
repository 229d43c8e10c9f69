// See vulkan_hooks.h.
#include "harness/programs/graph/upstream/vulkan_hooks.h"

#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace lifeline::graphs::vkhooks {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

// ---- the loader's entry points, and the real functions behind the wrappers -------------------------

void* Loader() {
  static void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  return lib;
}

PFN_vkGetInstanceProcAddr LoaderGipa() {
  static auto gipa =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(Loader() != nullptr ? dlsym(Loader(), "vkGetInstanceProcAddr") : nullptr);
  return gipa;
}

// Filled when ggml asks for the function (through either proc-addr call): the loader's trampolines and the
// layer's device functions dispatch on the handle, so one pointer per name serves every device.
struct Real {
  PFN_vkCreateInstance CreateInstance;
  PFN_vkDestroyInstance DestroyInstance;
  PFN_vkCreateDevice CreateDevice;
  PFN_vkDestroyDevice DestroyDevice;
  PFN_vkGetDeviceProcAddr GetDeviceProcAddr;
  PFN_vkCreateDebugUtilsMessengerEXT CreateMessenger;
  PFN_vkDestroyDebugUtilsMessengerEXT DestroyMessenger;
  PFN_vkAllocateMemory AllocateMemory;
  PFN_vkFreeMemory FreeMemory;
  PFN_vkAllocateCommandBuffers AllocateCommandBuffers;
  PFN_vkFreeCommandBuffers FreeCommandBuffers;
  PFN_vkCreateComputePipelines CreateComputePipelines;
  PFN_vkDestroyPipeline DestroyPipeline;
  PFN_vkGetFenceStatus GetFenceStatus;
  PFN_vkWaitForFences WaitForFences;
#define LIFELINE_VK_PAIR(Name, kind) \
  PFN_vkCreate##Name Create##Name;   \
  PFN_vkDestroy##Name Destroy##Name;
#define LIFELINE_VK_PAIRS(X)                        \
  X(Buffer, kBuffer)                                \
  X(CommandPool, kCommandPool)                      \
  X(Fence, kFence)                                  \
  X(Semaphore, kSemaphore)                          \
  X(Event, kEvent)                                  \
  X(QueryPool, kQueryPool)                          \
  X(DescriptorPool, kDescriptorPool)                \
  X(DescriptorSetLayout, kDescriptorSetLayout)      \
  X(PipelineLayout, kPipelineLayout)                \
  X(ShaderModule, kShaderModule)                    \
  X(PipelineCache, kPipelineCache)
  LIFELINE_VK_PAIRS(LIFELINE_VK_PAIR)
#undef LIFELINE_VK_PAIR
};
Real g_real{};

// ---- the ledger ------------------------------------------------------------------------------------------

std::mutex g_mu;
struct Entry {
  Kind kind;
  uint64_t seq;   // creation order (Mark)
  uint64_t pool;  // command buffers: their VkCommandPool
};
std::unordered_map<uint64_t, Entry> g_live;           // handle -> what it is
std::unordered_map<uint64_t, int64_t> g_memory;       // VkDeviceMemory -> bytes
uint64_t g_seq = 0;
Counts g_counts;
std::vector<std::string> g_errors;
std::string g_instance_error;
std::atomic<bool> g_active{false};
VkDebugUtilsMessengerEXT g_messenger = VK_NULL_HANDLE;

template <typename H>
uint64_t Key(H h) {
  uint64_t k = 0;
  static_assert(sizeof(H) <= sizeof(k), "handle wider than 64 bits");
  std::memcpy(&k, &h, sizeof(H));
  return k;
}

template <typename H>
void Created(Kind kind, H h, uint64_t pool = 0) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_live[Key(h)] = Entry{kind, ++g_seq, pool};
  ++g_counts.live[static_cast<int>(kind)];
}

// Before the real destroy: a null handle is a legal no-op; a handle the ledger does not hold is an error.
template <typename H>
void Destroyed(Kind kind, H h, const char* call) {
  if (Key(h) == 0) return;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_live.find(Key(h));
  if (it == g_live.end() || it->second.kind != kind) {
    g_errors.push_back(std::string("accounting: ") + call + " of a " + KindName(kind) + " that is not alive");
    return;
  }
  g_live.erase(it);
  --g_counts.live[static_cast<int>(kind)];
  if (kind == Kind::kMemory) {
    g_counts.memory_bytes -= g_memory[Key(h)];
    g_memory.erase(Key(h));
  }
  if (kind == Kind::kCommandPool) {  // destroying a pool frees the command buffers allocated from it
    for (auto c = g_live.begin(); c != g_live.end();) {
      if (c->second.kind != Kind::kCommandBuffer || c->second.pool != Key(h)) {
        ++c;
        continue;
      }
      --g_counts.live[static_cast<int>(Kind::kCommandBuffer)];
      c = g_live.erase(c);
    }
  }
}

VKAPI_ATTR VkBool32 VKAPI_CALL OnMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
                                         const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) return VK_FALSE;
  std::lock_guard<std::mutex> lock(g_mu);
  g_errors.push_back(std::string(data->pMessageIdName ? data->pMessageIdName : "?") + ": " +
                     (data->pMessage ? data->pMessage : ""));
  return VK_FALSE;  // the call goes on; the target fails the input
}

std::string ResultName(VkResult r) {
  switch (r) {
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER (no Vulkan ICD: Debian's mesa-vulkan-drivers gives lavapipe; or "
             "VK_ICD_FILENAMES names none)";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    default: return "VkResult " + std::to_string(r);
  }
}

// ---- wrappers ----------------------------------------------------------------------------------------------

VKAPI_ATTR VkResult VKAPI_CALL CreateInstance(const VkInstanceCreateInfo* info, const VkAllocationCallbacks* alloc,
                                              VkInstance* out) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_instance_error.clear();
  }
  auto enumerate_layers = reinterpret_cast<PFN_vkEnumerateInstanceLayerProperties>(
      LoaderGipa()(VK_NULL_HANDLE, "vkEnumerateInstanceLayerProperties"));
  uint32_t n = 0;
  enumerate_layers(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  enumerate_layers(&n, layers.data());
  bool have_validation = false;
  for (const auto& l : layers) have_validation |= std::strcmp(l.layerName, kValidationLayer) == 0;
  if (!have_validation) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_instance_error = std::string(kValidationLayer) +
                       " is not installed (Debian: vulkan-validationlayers; scripts/install-deps.sh): the target's "
                       "validation oracle cannot run";
    return VK_ERROR_LAYER_NOT_PRESENT;
  }

  std::vector<const char*> names(info->ppEnabledLayerNames, info->ppEnabledLayerNames + info->enabledLayerCount);
  bool asked = false;
  for (const char* l : names) asked |= std::strcmp(l, kValidationLayer) == 0;
  if (!asked) names.push_back(kValidationLayer);
  std::vector<const char*> extensions(info->ppEnabledExtensionNames,
                                      info->ppEnabledExtensionNames + info->enabledExtensionCount);
  for (const char* want : {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME}) {
    bool have = false;
    for (const char* e : extensions) have |= std::strcmp(e, want) == 0;
    if (!have) extensions.push_back(want);
  }

  VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger.pfnUserCallback = &OnMessage;
  messenger.pNext = info->pNext;  // whatever ggml chained stays in the chain, after ours
  // Synchronization validation: a write and a later access of the same memory with no barrier between them
  // is a SYNC-HAZARD-* error. lavapipe runs dispatches in order, so no value oracle could see it.
  const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.pNext = &messenger;
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;

  VkInstanceCreateInfo with_oracle = *info;
  with_oracle.pNext = &features;
  with_oracle.enabledLayerCount = static_cast<uint32_t>(names.size());
  with_oracle.ppEnabledLayerNames = names.data();
  with_oracle.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  with_oracle.ppEnabledExtensionNames = extensions.data();
  VkResult r = g_real.CreateInstance(&with_oracle, alloc, out);
  if (r != VK_SUCCESS) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_instance_error = "vkCreateInstance with " + std::string(kValidationLayer) + " failed: " + ResultName(r);
    return r;
  }
  Created(Kind::kInstance, *out);
  g_real.CreateMessenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      LoaderGipa()(*out, "vkCreateDebugUtilsMessengerEXT"));
  g_real.DestroyMessenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
      LoaderGipa()(*out, "vkDestroyDebugUtilsMessengerEXT"));
  messenger.pNext = nullptr;
  if (g_real.CreateMessenger == nullptr || g_real.CreateMessenger(*out, &messenger, nullptr, &g_messenger) != VK_SUCCESS) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_instance_error = "vkCreateDebugUtilsMessengerEXT failed: the validation messages would go unseen";
    g_errors.push_back(g_instance_error);
  }
  return r;
}

VKAPI_ATTR void VKAPI_CALL DestroyInstance(VkInstance instance, const VkAllocationCallbacks* alloc) {
  if (g_messenger != VK_NULL_HANDLE && g_real.DestroyMessenger != nullptr) {
    g_real.DestroyMessenger(instance, g_messenger, nullptr);
    g_messenger = VK_NULL_HANDLE;
  }
  Destroyed(Kind::kInstance, instance, "vkDestroyInstance");
  g_real.DestroyInstance(instance, alloc);
}

VKAPI_ATTR VkResult VKAPI_CALL CreateDevice(VkPhysicalDevice physical, const VkDeviceCreateInfo* info,
                                            const VkAllocationCallbacks* alloc, VkDevice* out) {
  VkResult r = g_real.CreateDevice(physical, info, alloc, out);
  if (r == VK_SUCCESS) Created(Kind::kDevice, *out);
  return r;
}

VKAPI_ATTR void VKAPI_CALL DestroyDevice(VkDevice device, const VkAllocationCallbacks* alloc) {
  Destroyed(Kind::kDevice, device, "vkDestroyDevice");
  g_real.DestroyDevice(device, alloc);
}

VKAPI_ATTR VkResult VKAPI_CALL AllocateMemory(VkDevice device, const VkMemoryAllocateInfo* info,
                                              const VkAllocationCallbacks* alloc, VkDeviceMemory* out) {
  VkResult r = g_real.AllocateMemory(device, info, alloc, out);
  if (r == VK_SUCCESS) {
    Created(Kind::kMemory, *out);
    std::lock_guard<std::mutex> lock(g_mu);
    g_memory[Key(*out)] = static_cast<int64_t>(info->allocationSize);
    g_counts.memory_bytes += static_cast<int64_t>(info->allocationSize);
  }
  return r;
}

VKAPI_ATTR void VKAPI_CALL FreeMemory(VkDevice device, VkDeviceMemory memory, const VkAllocationCallbacks* alloc) {
  Destroyed(Kind::kMemory, memory, "vkFreeMemory");
  g_real.FreeMemory(device, memory, alloc);
}

VKAPI_ATTR VkResult VKAPI_CALL AllocateCommandBuffers(VkDevice device, const VkCommandBufferAllocateInfo* info,
                                                      VkCommandBuffer* out) {
  VkResult r = g_real.AllocateCommandBuffers(device, info, out);
  if (r == VK_SUCCESS) {
    for (uint32_t i = 0; i < info->commandBufferCount; ++i) Created(Kind::kCommandBuffer, out[i], Key(info->commandPool));
  }
  return r;
}

VKAPI_ATTR void VKAPI_CALL FreeCommandBuffers(VkDevice device, VkCommandPool pool, uint32_t count,
                                              const VkCommandBuffer* buffers) {
  for (uint32_t i = 0; i < count; ++i) Destroyed(Kind::kCommandBuffer, buffers[i], "vkFreeCommandBuffers");
  g_real.FreeCommandBuffers(device, pool, count, buffers);
}

VKAPI_ATTR VkResult VKAPI_CALL CreateComputePipelines(VkDevice device, VkPipelineCache cache, uint32_t count,
                                                      const VkComputePipelineCreateInfo* infos,
                                                      const VkAllocationCallbacks* alloc, VkPipeline* out) {
  VkResult r = g_real.CreateComputePipelines(device, cache, count, infos, alloc, out);
  if (r == VK_SUCCESS) {
    for (uint32_t i = 0; i < count; ++i) Created(Kind::kPipeline, out[i]);
  }
  return r;
}

VKAPI_ATTR void VKAPI_CALL DestroyPipeline(VkDevice device, VkPipeline pipeline, const VkAllocationCallbacks* alloc) {
  Destroyed(Kind::kPipeline, pipeline, "vkDestroyPipeline");
  g_real.DestroyPipeline(device, pipeline, alloc);
}

// ggml-vulkan waits for a graph by polling vkGetFenceStatus in a loop of pause instructions
// (ggml_vk_wait_for_fence): on lavapipe, whose queue thread computes the graph and compiles each pipeline on its
// first dispatch, the poll held one of this machine's two cores for as long as the other worked (a cold
// soft_max: 12.9 CPU-s for 7.8 s, 2026-11-27). A status not yet ready now waits up to 10 ms for the fence
// first: the answer is the one a slower host would read, and the core is free meanwhile.
VKAPI_ATTR VkResult VKAPI_CALL GetFenceStatus(VkDevice device, VkFence fence) {
  VkResult r = g_real.GetFenceStatus(device, fence);
  if (r != VK_NOT_READY) return r;
  if (g_real.WaitForFences == nullptr && Loader() != nullptr) {
    g_real.WaitForFences = reinterpret_cast<PFN_vkWaitForFences>(dlsym(Loader(), "vkWaitForFences"));
  }
  if (g_real.WaitForFences == nullptr) return r;
  r = g_real.WaitForFences(device, 1, &fence, VK_TRUE, 10'000'000);
  return r == VK_TIMEOUT ? VK_NOT_READY : r;
}

// vkCreate<Name>/vkDestroy<Name> pairs with the common signature.
#define LIFELINE_VK_WRAP(Name, kind)                                                                        \
  VKAPI_ATTR VkResult VKAPI_CALL Create##Name(VkDevice device, const Vk##Name##CreateInfo* info,           \
                                              const VkAllocationCallbacks* alloc, Vk##Name* out) {         \
    VkResult r = g_real.Create##Name(device, info, alloc, out);                                           \
    if (r == VK_SUCCESS) Created(Kind::kind, *out);                                                       \
    return r;                                                                                             \
  }                                                                                                       \
  VKAPI_ATTR void VKAPI_CALL Destroy##Name(VkDevice device, Vk##Name handle, const VkAllocationCallbacks* alloc) { \
    Destroyed(Kind::kind, handle, "vkDestroy" #Name);                                                      \
    g_real.Destroy##Name(device, handle, alloc);                                                          \
  }

LIFELINE_VK_PAIRS(LIFELINE_VK_WRAP)
#undef LIFELINE_VK_WRAP

PFN_vkVoidFunction DeviceProcAddr(VkDevice device, const char* name);

// The wrapper for `name`, with the real function (from `resolve`) stored for it; null for names not wrapped.
template <typename Resolve>
PFN_vkVoidFunction Wrap(const char* name, Resolve resolve) {
#define LIFELINE_VK_ENTRY(fn)                                                         \
  if (std::strcmp(name, "vk" #fn) == 0) {                                             \
    g_real.fn = reinterpret_cast<decltype(g_real.fn)>(resolve());                     \
    return g_real.fn == nullptr ? nullptr : reinterpret_cast<PFN_vkVoidFunction>(&fn); \
  }
  LIFELINE_VK_ENTRY(CreateInstance)
  LIFELINE_VK_ENTRY(DestroyInstance)
  LIFELINE_VK_ENTRY(CreateDevice)
  LIFELINE_VK_ENTRY(DestroyDevice)
  LIFELINE_VK_ENTRY(AllocateMemory)
  LIFELINE_VK_ENTRY(FreeMemory)
  LIFELINE_VK_ENTRY(AllocateCommandBuffers)
  LIFELINE_VK_ENTRY(FreeCommandBuffers)
  LIFELINE_VK_ENTRY(CreateComputePipelines)
  LIFELINE_VK_ENTRY(DestroyPipeline)
  LIFELINE_VK_ENTRY(GetFenceStatus)
#define LIFELINE_VK_PAIR_ENTRY(Name, kind) \
  LIFELINE_VK_ENTRY(Create##Name)          \
  LIFELINE_VK_ENTRY(Destroy##Name)
  LIFELINE_VK_PAIRS(LIFELINE_VK_PAIR_ENTRY)
#undef LIFELINE_VK_PAIR_ENTRY
#undef LIFELINE_VK_ENTRY
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0) {
    g_real.GetDeviceProcAddr = reinterpret_cast<PFN_vkGetDeviceProcAddr>(resolve());
    // The loader answers this name with its own exported vkGetDeviceProcAddr, which this executable's definition
    // (below) interposes: the "real" function would be this one, and a call through it would recurse forever.
    if (reinterpret_cast<void*>(g_real.GetDeviceProcAddr) == reinterpret_cast<void*>(&::vkGetDeviceProcAddr) &&
        Loader() != nullptr) {
      g_real.GetDeviceProcAddr = reinterpret_cast<PFN_vkGetDeviceProcAddr>(dlsym(Loader(), "vkGetDeviceProcAddr"));
    }
    return g_real.GetDeviceProcAddr == nullptr ? nullptr : reinterpret_cast<PFN_vkVoidFunction>(&DeviceProcAddr);
  }
  return nullptr;
}

PFN_vkVoidFunction DeviceProcAddr(VkDevice device, const char* name) {
  if (g_real.GetDeviceProcAddr == nullptr && Loader() != nullptr) {  // called before any instance asked for it
    g_real.GetDeviceProcAddr = reinterpret_cast<PFN_vkGetDeviceProcAddr>(dlsym(Loader(), "vkGetDeviceProcAddr"));
  }
  if (g_real.GetDeviceProcAddr == nullptr) return nullptr;
  auto resolve = [&] { return g_real.GetDeviceProcAddr(device, name); };
  if (PFN_vkVoidFunction w = Wrap(name, resolve)) return w;
  return resolve();
}

}  // namespace

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kInstance: return "instance";
    case Kind::kDevice: return "device";
    case Kind::kBuffer: return "buffer";
    case Kind::kMemory: return "device memory";
    case Kind::kCommandPool: return "command pool";
    case Kind::kCommandBuffer: return "command buffer";
    case Kind::kFence: return "fence";
    case Kind::kSemaphore: return "semaphore";
    case Kind::kEvent: return "event";
    case Kind::kQueryPool: return "query pool";
    case Kind::kDescriptorPool: return "descriptor pool";
    case Kind::kDescriptorSetLayout: return "descriptor set layout";
    case Kind::kPipelineLayout: return "pipeline layout";
    case Kind::kPipeline: return "pipeline";
    case Kind::kShaderModule: return "shader module";
    case Kind::kPipelineCache: return "pipeline cache";
  }
  return "?";
}

bool DeviceLifetime(Kind kind) {
  switch (kind) {
    case Kind::kInstance:
    case Kind::kDevice:
    case Kind::kDescriptorSetLayout:
    case Kind::kPipelineLayout:
    case Kind::kPipeline:
    case Kind::kShaderModule:
    case Kind::kPipelineCache:
      return true;
    default:
      return false;
  }
}

std::string Counts::DiffFrom(const Counts& before) const {
  std::string out;
  for (int i = 0; i < kKinds; ++i) {
    const int64_t d = live[i] - before.live[i];
    if (d == 0 && !(static_cast<Kind>(i) == Kind::kMemory && memory_bytes != before.memory_bytes)) continue;
    if (!out.empty()) out += ", ";
    out += std::string(KindName(static_cast<Kind>(i))) + " " + std::to_string(live[i]) + " (" + (d >= 0 ? "+" : "") +
           std::to_string(d);
    if (static_cast<Kind>(i) == Kind::kMemory) {
      const int64_t b = memory_bytes - before.memory_bytes;
      out += ", " + std::string(b >= 0 ? "+" : "") + std::to_string(b) + " bytes";
    }
    out += ")";
  }
  return out;
}

uint64_t Mark() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_seq;
}

std::string AliveSince(uint64_t mark) {
  std::lock_guard<std::mutex> lock(g_mu);
  Counts left;
  for (const auto& [handle, e] : g_live) {
    if (e.seq <= mark || DeviceLifetime(e.kind)) continue;
    if (e.kind == Kind::kCommandBuffer) {
      auto pool = g_live.find(e.pool);
      if (pool != g_live.end() && pool->second.seq <= mark) continue;  // the device's pool, reused by the device
    }
    ++left.live[static_cast<int>(e.kind)];
    if (e.kind == Kind::kMemory) left.memory_bytes += g_memory[handle];
  }
  return left.DiffFrom(Counts{});
}

Counts Live() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_counts;
}

std::vector<std::string> TakeErrors() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string> out;
  out.swap(g_errors);
  return out;
}

std::string InstanceError() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_instance_error;
}

bool Active() { return g_active.load(); }

}  // namespace lifeline::graphs::vkhooks

// The two symbols ggml-vulkan links against (see vulkan_hooks.h).
extern "C" VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance instance, const char* name) {
  using namespace lifeline::graphs::vkhooks;
  PFN_vkGetInstanceProcAddr loader = LoaderGipa();
  if (loader == nullptr) return nullptr;  // no libvulkan.so.1: ggml reports no devices
  g_active.store(true);
  auto resolve = [&] { return loader(instance, name); };
  if (PFN_vkVoidFunction w = Wrap(name, resolve)) return w;
  return resolve();
}

extern "C" VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice device, const char* name) {
  return lifeline::graphs::vkhooks::DeviceProcAddr(device, name);
}
