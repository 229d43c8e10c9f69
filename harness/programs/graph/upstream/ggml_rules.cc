#include "harness/programs/graph/upstream/ggml_rules.h"

#include "core/guards.h"

namespace lifeline::graphs {
namespace {

// What the lane's ggml tree's ggml_set_rows takes (cmake/LifelineGgml.cmake; a lane without ggml refuses nothing).
void SetRowsRules(AllocatorRules* rules) {
#if defined(LIFELINE_GGML_HAS_SET_ROWS)
  rules->refuses_set_rows = !LIFELINE_GGML_HAS_SET_ROWS || !LIFELINE_GGML_SET_ROWS_I32;
  rules->refuses_f16_set_rows = !LIFELINE_GGML_SET_ROWS_F16;
#else
  (void)rules;
#endif
}

}  // namespace

AllocatorRules GgmlRules() {
  AllocatorRules rules;
  rules.refuses_f16_scale = GuardOn(Guard::kGgmlCpuScaleF16Unsupported);
  rules.refuses_odd_rope = GuardOn(Guard::kGgmlCpuRopeOddRowOverflow);
  rules.refuses_f16_conv = GuardOn(Guard::kGgmlCpuConv2dDwF16Overflow);
#if defined(LIFELINE_GGML_HAS_CONV_2D_DW_DIRECT)
  rules.draws_conv = LIFELINE_GGML_HAS_CONV_2D_DW_DIRECT != 0;  // a tree without ggml_conv_2d_dw_direct draws none
#endif
  SetRowsRules(&rules);
  return rules;
}

AllocatorRules GgmlVulkanRules() {
  AllocatorRules rules;
  rules.refuses_f16_scale = true;  // ggml_backend_vk_device_supports_op: scale needs a contiguous f32 source
  rules.splits_cpu_marks = true;
  rules.draws_conv = false;  // format.h: VulkanRefuses builds no convolution to ask the device about
  // Its fresh-allocator differential computes each graph again on ggml's CPU backend (ggml_fresh_gallocr.cc).
  rules.refuses_odd_rope = GuardOn(Guard::kGgmlCpuRopeOddRowOverflow);
  rules.refuses_f16_rope = true;  // format.h: rope_*_f16 as Debian's glslang compiles them is invalid SPIR-V
  // lavapipe's minStorageBufferOffsetAlignment; the adapter checks the device's own (ggml_vulkan_adapter.cc).
  rules.refuses_misaligned_sources = GuardOn(Guard::kGgmlVkMulMatMisalignedSrc) ? 16 : 0;
  SetRowsRules(&rules);
  return rules;
}

}  // namespace lifeline::graphs
