#include "harness/programs/graph/upstream/ggml_rules.h"

#include "core/guards.h"

namespace lifeline::graphs {

AllocatorRules GgmlRules() {
  AllocatorRules rules;
  rules.refuses_f16_scale = GuardOn(Guard::kGgmlCpuScaleF16Unsupported);
  rules.refuses_odd_rope = GuardOn(Guard::kGgmlCpuRopeOddRowOverflow);
  return rules;
}

AllocatorRules GgmlVulkanRules() {
  AllocatorRules rules;
  rules.refuses_f16_scale = true;  // ggml_backend_vk_device_supports_op: scale needs a contiguous f32 source
  rules.splits_cpu_marks = true;
  // Its fresh-allocator differential computes each graph again on ggml's CPU backend (ggml_graph_adapter.cc).
  rules.refuses_odd_rope = GuardOn(Guard::kGgmlCpuRopeOddRowOverflow);
  rules.refuses_f16_rope = true;  // format.h: rope_*_f16 as Debian's glslang compiles them is invalid SPIR-V
  // lavapipe's minStorageBufferOffsetAlignment; the adapter checks the device's own (ggml_vulkan_adapter.cc).
  rules.refuses_misaligned_sources = GuardOn(Guard::kGgmlVkMulMatMisalignedSrc) ? 16 : 0;
  return rules;
}

}  // namespace lifeline::graphs
