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
  rules.model_ops = false;  // format.h: the first compile of the row ops' pipelines on lavapipe outlasts a per-input timeout
  return rules;
}

}  // namespace lifeline::graphs
