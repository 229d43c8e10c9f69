// GgmlVulkanAdapter: the graph programs (harness/programs/graph/format.h) on upstream ggml's graph allocator
// placing them in ggml-vulkan's buffer type, computed by ggml's Vulkan backend (lavapipe in CI, whatever
// device GGML_VK_VISIBLE_DEVICES names elsewhere; unset, the adapter sets it to 0, the first device, since
// ggml skips CPU devices such as lavapipe by default). Built where cmake/LifelineGgml.cmake builds
// ggml-vulkan.
//
// Everything about gallocr is GgmlAdapter's (ggml_graph_adapter.h: the same builds, plans, placements, guards
// and placement oracles). What differs:
//   - each of the program's allocators is a gallocr over ggml-vulkan's buffer type, one entry per program
//     buffer (repeats share gallocr's allocator, as for any repeated type). The type the adapter hands gallocr
//     is ggml-vulkan's own interface, context and device, with allocation observed: every buffer ggml-vulkan
//     makes for it gets a host copy (filled with 0xff like the device memory, so a read of bytes no tensor
//     wrote is NaN), which the oracles read; it is brought up to date after every compute;
//   - a pre-allocated leaf lives in a Vulkan buffer of its own, outside every allocator;
//   - a graph holding an op the Vulkan backend does not support (ggml_backend_supports_op) is refused,
//     before anything is placed, with kUnimplemented; the model predicts it (GgmlVulkanRules);
//   - the second differential oracle is ggml's CPU backend: the same graph on host memory, placed by a fresh
//     gallocr, must give the same output bytes.
//
// Vulkan oracles (vulkan_hooks.h): the validation layer with synchronization validation must stay silent
// through every upload, compute and download; and at the end of every input, once its allocators, buffers
// and backend are freed, every Vulkan object and every byte of device memory the input made is gone. The
// device ggml keeps (vk_instance) and what it caches there for good (pipelines, their layouts and shader
// modules, compiled on first use) may outlive an input; nothing else may. The backend
// (ggml_backend_vk_init) is the input's own: created at the start, freed at the end.
#pragma once

#include <memory>

#include "harness/programs/graph/allocator.h"
#include "harness/programs/graph/upstream/ggml_rules.h"  // GgmlVulkanRules: what the model knows of it

namespace lifeline::graphs {

std::unique_ptr<AllocatorAdapter> MakeGgmlVulkanAdapter();

// GgmlVulkanRules, plus the backend's own answer to which nodes it takes (AllocatorRules::backend_refuses: its
// device's supports_op, asked once per op and types): the rules the target decodes with, on whatever ggml version
// it was built from. It sets up the Vulkan device on first use.
AllocatorRules GgmlVulkanTargetRules();

}  // namespace lifeline::graphs
