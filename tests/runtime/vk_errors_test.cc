// VkErrors: how layers/runtime/device.h reports a failed Vulkan call: VkResult names, the status of
// VkError, and LIFELINE_VK_RETURN_IF_ERROR naming the call site. No device is needed.
#include <gtest/gtest.h>

#include <string>

#include "core/status.h"
#include "layers/runtime/device.h"
#include "tests/testing/status_matchers.h"

namespace lifeline::runtime {
namespace {

using testing_util::HasStatus;

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
  EXPECT_TRUE(HasStatus(s, StatusCode::kInternal, "tests/runtime/vk_errors_test.cc:" + std::to_string(line)));
  EXPECT_TRUE(HasStatus(SucceedsThroughTheMacro(), StatusCode::kFailedPrecondition, "reached the end"));
}

}  // namespace
}  // namespace lifeline::runtime
