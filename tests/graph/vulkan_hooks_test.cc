// The Vulkan oracles of ggml_vulkan_graph_topology (harness/programs/graph/upstream/vulkan_hooks.h), each
// shown firing and staying silent, on the real loader, validation layer and ICD (lavapipe in CI). The test
// reaches Vulkan the way ggml-vulkan does: every function through vkGetInstanceProcAddr, which this
// executable's hooks define. No Vulkan device: the tests fail, they are never skipped.
#include <vulkan/vulkan.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/programs/graph/upstream/vulkan_hooks.h"

namespace lifeline::graphs::vkhooks {
namespace {

template <typename F>
F Get(VkInstance instance, const char* name) {
  return reinterpret_cast<F>(vkGetInstanceProcAddr(instance, name));
}
#define LIFELINE_VK_FN(instance, name) Get<PFN_##name>(instance, #name)

bool AnyContains(const std::vector<std::string>& errors, const std::string& what) {
  for (const std::string& e : errors) {
    if (e.find(what) != std::string::npos) return true;
  }
  return false;
}

std::string Joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const std::string& e : errors) out += e + "\n";
  return out;
}

// An instance made with no layers and no extensions asked for (as ggml asks without GGML_VULKAN_VALIDATE),
// a device with one queue, and two 256-byte buffers in one allocation.
class VulkanHooksTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    ASSERT_EQ(LIFELINE_VK_FN(VK_NULL_HANDLE, vkCreateInstance)(&ici, nullptr, &instance_), VK_SUCCESS)
        << InstanceError();
    uint32_t n = 1;
    VkResult r = LIFELINE_VK_FN(instance_, vkEnumeratePhysicalDevices)(instance_, &n, &physical_);
    ASSERT_TRUE(r == VK_SUCCESS || r == VK_INCOMPLETE);
    ASSERT_EQ(n, 1u) << "no Vulkan device (Debian: mesa-vulkan-drivers gives lavapipe)";
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = 0;  // lavapipe's one family does compute and transfer; so does every GPU's first
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    ASSERT_EQ(LIFELINE_VK_FN(instance_, vkCreateDevice)(physical_, &dci, nullptr, &device_), VK_SUCCESS);
    LIFELINE_VK_FN(instance_, vkGetDeviceQueue)(device_, 0, 0, &queue_);
  }
  // The instance and device live as long as the process, as ggml-vulkan's do: vkDestroyInstance unloads the
  // validation layer and the ICD, and what those leave allocated at exit (suppressed by library name in
  // core/sanitizer_defaults.cc) would then have no library name left to match.

  void SetUp() override {
    ASSERT_NE(device_, VK_NULL_HANDLE);
    ASSERT_TRUE(TakeErrors().empty());
  }

  struct Buffers {
    VkBuffer a = VK_NULL_HANDLE, b = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
  };
  Buffers MakeBuffers() {
    Buffers out;
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = 256;
    bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    EXPECT_EQ(LIFELINE_VK_FN(instance_, vkCreateBuffer)(device_, &bci, nullptr, &out.a), VK_SUCCESS);
    EXPECT_EQ(LIFELINE_VK_FN(instance_, vkCreateBuffer)(device_, &bci, nullptr, &out.b), VK_SUCCESS);
    VkMemoryRequirements req{};
    LIFELINE_VK_FN(instance_, vkGetBufferMemoryRequirements)(device_, out.a, &req);
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = 2 * ((req.size + req.alignment - 1) / req.alignment * req.alignment);
    for (uint32_t i = 0; i < 32; ++i) {
      if (req.memoryTypeBits & (1u << i)) {
        mai.memoryTypeIndex = i;
        break;
      }
    }
    EXPECT_EQ(LIFELINE_VK_FN(instance_, vkAllocateMemory)(device_, &mai, nullptr, &out.memory), VK_SUCCESS);
    LIFELINE_VK_FN(instance_, vkBindBufferMemory)(device_, out.a, out.memory, 0);
    LIFELINE_VK_FN(instance_, vkBindBufferMemory)(device_, out.b, out.memory, mai.allocationSize / 2);
    return out;
  }
  void Free(const Buffers& b) {
    LIFELINE_VK_FN(instance_, vkDestroyBuffer)(device_, b.a, nullptr);
    LIFELINE_VK_FN(instance_, vkDestroyBuffer)(device_, b.b, nullptr);
    LIFELINE_VK_FN(instance_, vkFreeMemory)(device_, b.memory, nullptr);
  }

  // Records fill(a) then copy(b <- a) in one command buffer, with or without the barrier between them, and
  // runs it to completion.
  void FillThenCopy(const Buffers& b, bool barrier) {
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.queueFamilyIndex = 0;
    VkCommandPool pool = VK_NULL_HANDLE;
    ASSERT_EQ(LIFELINE_VK_FN(instance_, vkCreateCommandPool)(device_, &pci, nullptr, &pool), VK_SUCCESS);
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    ASSERT_EQ(LIFELINE_VK_FN(instance_, vkAllocateCommandBuffers)(device_, &cai, &cmd), VK_SUCCESS);
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    LIFELINE_VK_FN(instance_, vkBeginCommandBuffer)(cmd, &begin);
    LIFELINE_VK_FN(instance_, vkCmdFillBuffer)(cmd, b.a, 0, 256, 0x3f800000u);
    if (barrier) {
      // The fill's transfer write made visible to the copy's transfer read.
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
      LIFELINE_VK_FN(instance_, vkCmdPipelineBarrier)(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                                     0, 1, &mb, 0, nullptr, 0, nullptr);
    }
    VkBufferCopy region{0, 0, 256};
    LIFELINE_VK_FN(instance_, vkCmdCopyBuffer)(cmd, b.a, b.b, 1, &region);
    LIFELINE_VK_FN(instance_, vkEndCommandBuffer)(cmd);
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    ASSERT_EQ(LIFELINE_VK_FN(instance_, vkQueueSubmit)(queue_, 1, &submit, VK_NULL_HANDLE), VK_SUCCESS);
    LIFELINE_VK_FN(instance_, vkQueueWaitIdle)(queue_);
    LIFELINE_VK_FN(instance_, vkDestroyCommandPool)(device_, pool, nullptr);
  }

  static VkInstance instance_;
  static VkPhysicalDevice physical_;
  static VkDevice device_;
  static VkQueue queue_;
};
VkInstance VulkanHooksTest::instance_ = VK_NULL_HANDLE;
VkPhysicalDevice VulkanHooksTest::physical_ = VK_NULL_HANDLE;
VkDevice VulkanHooksTest::device_ = VK_NULL_HANDLE;
VkQueue VulkanHooksTest::queue_ = VK_NULL_HANDLE;

// The instance asked for no layer; the hooks enabled the validation layer with synchronization validation.
TEST_F(VulkanHooksTest, AReadOfAWriteWithNoBarrierBetweenIsASyncHazard) {
  Buffers b = MakeBuffers();
  FillThenCopy(b, /*barrier=*/false);
  Free(b);
  std::vector<std::string> errors = TakeErrors();
  EXPECT_TRUE(AnyContains(errors, "SYNC-HAZARD-READ-AFTER-WRITE")) << Joined(errors);
}

TEST_F(VulkanHooksTest, TheSameCopyAfterABarrierIsSilent) {
  Buffers b = MakeBuffers();
  FillThenCopy(b, /*barrier=*/true);
  Free(b);
  std::vector<std::string> errors = TakeErrors();
  EXPECT_TRUE(errors.empty()) << Joined(errors);
}

// What an iteration makes and leaves alive is reported, by kind, with the bytes of device memory.
TEST_F(VulkanHooksTest, ObjectsMadeSinceTheMarkAndLeftAliveAreReported) {
  const uint64_t mark = Mark();
  const Counts before = Live();
  Buffers b = MakeBuffers();
  const std::string left = AliveSince(mark);
  EXPECT_NE(left.find("buffer 2 (+2)"), std::string::npos) << left;
  EXPECT_NE(left.find("device memory 1 (+1, +"), std::string::npos) << left;
  EXPECT_EQ(Live()[Kind::kBuffer], before[Kind::kBuffer] + 2);
  Free(b);
  EXPECT_EQ(AliveSince(mark), "");
  EXPECT_EQ(Live().memory_bytes, before.memory_bytes);
  EXPECT_TRUE(TakeErrors().empty());
}

// Command buffers of a pool older than the mark are the pool owner's (ggml-vulkan's queues keep theirs).
TEST_F(VulkanHooksTest, CommandBuffersOfAnOlderPoolAreNotTheIterations) {
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.queueFamilyIndex = 0;
  VkCommandPool older = VK_NULL_HANDLE;
  ASSERT_EQ(LIFELINE_VK_FN(instance_, vkCreateCommandPool)(device_, &pci, nullptr, &older), VK_SUCCESS);
  const uint64_t mark = Mark();
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = older;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 2;
  VkCommandBuffer cmd[2];
  ASSERT_EQ(LIFELINE_VK_FN(instance_, vkAllocateCommandBuffers)(device_, &cai, cmd), VK_SUCCESS);
  EXPECT_EQ(AliveSince(mark), "");
  VkCommandPool newer = VK_NULL_HANDLE;
  ASSERT_EQ(LIFELINE_VK_FN(instance_, vkCreateCommandPool)(device_, &pci, nullptr, &newer), VK_SUCCESS);
  cai.commandPool = newer;
  cai.commandBufferCount = 1;
  ASSERT_EQ(LIFELINE_VK_FN(instance_, vkAllocateCommandBuffers)(device_, &cai, cmd), VK_SUCCESS);
  EXPECT_EQ(AliveSince(mark), "command pool 1 (+1), command buffer 1 (+1)");
  const Counts with_pools = Live();
  LIFELINE_VK_FN(instance_, vkDestroyCommandPool)(device_, newer, nullptr);
  LIFELINE_VK_FN(instance_, vkDestroyCommandPool)(device_, older, nullptr);
  EXPECT_EQ(Live()[Kind::kCommandBuffer], with_pools[Kind::kCommandBuffer] - 3);  // freed with their pools
  EXPECT_EQ(AliveSince(mark), "");
  EXPECT_TRUE(TakeErrors().empty());
}

// vkGetFenceStatus waits a little for a fence that is not ready (vulkan_hooks.cc: ggml-vulkan polls it in a
// busy loop) but answers as the driver does: not ready, never VK_TIMEOUT, for a fence nothing will signal.
TEST_F(VulkanHooksTest, AFenceStatusAnswersAsTheDriverWould) {
  auto status = LIFELINE_VK_FN(instance_, vkGetFenceStatus);
  ASSERT_EQ(status, reinterpret_cast<PFN_vkGetFenceStatus>(vkGetDeviceProcAddr(device_, "vkGetFenceStatus")));
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence unsignaled = VK_NULL_HANDLE, signaled = VK_NULL_HANDLE;
  ASSERT_EQ(LIFELINE_VK_FN(instance_, vkCreateFence)(device_, &fci, nullptr, &unsignaled), VK_SUCCESS);
  fci.flags = VK_FENCE_CREATE_SIGNALED_BIT;
  ASSERT_EQ(LIFELINE_VK_FN(instance_, vkCreateFence)(device_, &fci, nullptr, &signaled), VK_SUCCESS);
  EXPECT_EQ(status(device_, unsignaled), VK_NOT_READY);
  EXPECT_EQ(status(device_, signaled), VK_SUCCESS);
  // Signaled by the queue: polled as ggml-vulkan polls, it turns ready.
  ASSERT_EQ(LIFELINE_VK_FN(instance_, vkQueueSubmit)(queue_, 0, nullptr, unsignaled), VK_SUCCESS);
  VkResult r = VK_NOT_READY;
  for (int i = 0; i < 1000 && r == VK_NOT_READY; ++i) r = status(device_, unsignaled);
  EXPECT_EQ(r, VK_SUCCESS);
  LIFELINE_VK_FN(instance_, vkDestroyFence)(device_, unsignaled, nullptr);
  LIFELINE_VK_FN(instance_, vkDestroyFence)(device_, signaled, nullptr);
  const std::vector<std::string> errors = TakeErrors();
  EXPECT_TRUE(errors.empty()) << Joined(errors);
}

// vkGetDeviceProcAddr as an instance hands it out (vulkan-hpp's dynamic dispatcher asks for it that way) resolves
// device functions through the hooks, and reaches the loader's: it once returned this executable's own definition
// as the "real" one, and a call through it recursed until the stack ran out.
TEST_F(VulkanHooksTest, TheInstancesDeviceProcAddrReachesTheLoader) {
  auto gdpa = LIFELINE_VK_FN(instance_, vkGetDeviceProcAddr);
  ASSERT_NE(gdpa, nullptr);
  EXPECT_EQ(reinterpret_cast<void*>(gdpa(device_, "vkGetFenceStatus")),
            reinterpret_cast<void*>(vkGetDeviceProcAddr(device_, "vkGetFenceStatus")));  // wrapped: the hook
  EXPECT_NE(gdpa(device_, "vkCmdDispatch"), nullptr);  // not wrapped: the loader's or the layer's
}

TEST_F(VulkanHooksTest, TheHooksAreWhatTheProcessCalls) {
  EXPECT_TRUE(Active());
  EXPECT_EQ(InstanceError(), "");
}

}  // namespace
}  // namespace lifeline::graphs::vkhooks
