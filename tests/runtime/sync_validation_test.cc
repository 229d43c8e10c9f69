// SyncValidation: the device's synchronization validation is on and is an oracle. Two dispatches in one
// command buffer, the second reading what the first wrote: without a barrier between them the validation
// layer reports a SYNC-HAZARD-READ-AFTER-WRITE, with one it is silent. lavapipe runs the dispatches in
// order, so the copied values are right either way: only this oracle sees the missing barrier.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "tests/runtime/runtime_fixture.h"

namespace lifeline::runtime {
namespace {

constexpr uint32_t kFloats = 64;

class SyncValidation : public RuntimeTest {
 protected:
  // fill(x, 3) then copy(y <- x), in one command buffer, with or without a compute-to-compute barrier
  // between them; returns the validation messages the frame raised.
  std::vector<std::string> FillThenCopy(bool barrier) {
    std::unique_ptr<Buffer> x = MakeBuffer(device_, kFloats), y = MakeBuffer(device_, kFloats);
    if (!x || !y) return {"no buffers"};
    VkDevice dev = device_->device();
    VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpi.queueFamilyIndex = device_->queue_family();
    VkCommandPool pool = VK_NULL_HANDLE;
    EXPECT_EQ(vkCreateCommandPool(dev, &cpi, nullptr, &pool), VK_SUCCESS);
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 6};
    VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.maxSets = 2;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &size;
    VkDescriptorPool dpool = VK_NULL_HANDLE;
    EXPECT_EQ(vkCreateDescriptorPool(dev, &dpi, nullptr, &dpool), VK_SUCCESS);
    VkDescriptorSetLayout layouts[2] = {device_->set_layout(), device_->set_layout()};
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = dpool;
    ai.descriptorSetCount = 2;
    ai.pSetLayouts = layouts;
    VkDescriptorSet sets[2] = {};
    EXPECT_EQ(vkAllocateDescriptorSets(dev, &ai, sets), VK_SUCCESS);
    // Bindings a, b, out: the fill writes x (out); the copy reads x (a) and writes y (out).
    const VkBuffer bound[2][3] = {{x->handle(), x->handle(), x->handle()}, {x->handle(), x->handle(), y->handle()}};
    for (int s = 0; s < 2; ++s) WriteKernelBindings(dev, sets[s], bound[s]);
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    EXPECT_EQ(vkAllocateCommandBuffers(dev, &cai, &cmd), VK_SUCCESS);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    EXPECT_EQ(vkBeginCommandBuffer(cmd, &bi), VK_SUCCESS);
    const Kernel kernels[2] = {Kernel::kFill, Kernel::kCopy};
    for (int s = 0; s < 2; ++s) {
      if (s == 1 && barrier)
        ComputeBarrier(cmd, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
      device_->RecordDispatch(cmd, kernels[s], sets[s], kFloats, 3.0f);
    }
    ComputeBarrier(cmd, VK_ACCESS_HOST_READ_BIT, VK_PIPELINE_STAGE_HOST_BIT);
    EXPECT_EQ(vkEndCommandBuffer(cmd), VK_SUCCESS);
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    {
      std::lock_guard<std::mutex> lock(device_->queue_mutex());
      EXPECT_EQ(vkQueueSubmit(device_->queue(), 1, &si, VK_NULL_HANDLE), VK_SUCCESS);
      EXPECT_EQ(vkQueueWaitIdle(device_->queue()), VK_SUCCESS);
    }
    for (uint32_t i = 0; i < kFloats; ++i) EXPECT_EQ(y->data()[i], 3.0f) << "y[" << i << "]";
    vkDestroyCommandPool(dev, pool, nullptr);
    vkDestroyDescriptorPool(dev, dpool, nullptr);
    return device_->TakeValidationErrors();
  }
};

TEST_F(SyncValidation, AReadOfAWriteWithNoBarrierBetweenIsAHazard) {
  std::vector<std::string> messages = FillThenCopy(/*barrier=*/false);
  ASSERT_FALSE(messages.empty()) << "synchronization validation did not report the missing barrier";
  bool hazard = false;
  for (const std::string& m : messages) hazard |= m.find("SYNC-HAZARD-READ-AFTER-WRITE") != std::string::npos;
  EXPECT_TRUE(hazard) << messages.size() << " message(s), the first: " << messages[0];
}

TEST_F(SyncValidation, TheSameFrameWithTheBarrierIsSilent) {
  std::vector<std::string> messages = FillThenCopy(/*barrier=*/true);
  EXPECT_TRUE(messages.empty()) << messages.size() << " message(s), the first: " << messages[0];
}

}  // namespace
}  // namespace lifeline::runtime
