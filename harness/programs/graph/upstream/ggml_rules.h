// What the graph programs' model must know of the ggml adapters (format.h, AllocatorRules), apart from the
// adapters themselves: the decoder needs it, and so do the codec and its tests, which link no ggml.
#pragma once

#include "harness/programs/graph/format.h"

namespace lifeline::graphs {

// ggml's CPU backend (ggml_adapter.h): with guard ggml-cpu-scale-f16-unsupported on, a graph holding a node
// of its class (ggml_cpu_f16_unsupported.def: ops the backend claims for float16 and aborts on) is refused; of
// the programs' ops that is scale alone (refuses_f16_scale); with guard ggml-cpu-rope-odd-row-overflow on, a graph
// holding a rope of a tensor with an odd ne0 (refuses_odd_rope); with guard ggml-cpu-conv-2d-dw-f16-overflow on, a graph
// holding a conv_2d_dw of a float16 input (refuses_f16_conv). It draws conv_2d_dw where the tree has it.
AllocatorRules GgmlRules();

// ggml-vulkan (ggml_vulkan_adapter.h): it computes scale only on float32, ops marked for the CPU split
// the graph between ggml-vulkan and the CPU backend, a rope of a float16 tensor is refused (its shader as built
// here is invalid SPIR-V), and the CPU backend's guarded rope is refused as there (the differential runs on it).
AllocatorRules GgmlVulkanRules();

}  // namespace lifeline::graphs
