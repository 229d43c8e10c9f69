// ggml_vulkan_graph_topology: the graph programs of ggml_graph_topology, placed by upstream ggml's graph
// allocator (ggml-alloc.c's gallocr) in ggml-vulkan's buffer type and computed by ggml's Vulkan backend
// (ggml 0.25.1 as fetched by scripts/fetch-ggml.sh; lavapipe in CI). Every placement keeps ggml_graph_topology's
// oracles (no live overlap, views inside sources, tensors inside their allocator's buffers, external memory
// never written, outputs equal to the reference evaluator's); the outputs also equal ggml's CPU backend's on
// the same graph; the Khronos validation layer, with synchronization validation, reports nothing; and after
// every input, every Vulkan object and byte of device memory the input made is gone (the device and its
// pipelines may stay).
//
// The inputs are the same op programs byte for byte (harness/programs/graph/format.h), so the graph corpora
// and reproducers run here unchanged; the Vulkan side is harness/programs/graph/upstream/
// ggml_vulkan_adapter.h. A graph holding an op ggml-vulkan does not support (scale of float16) is refused
// before placement, as the model predicts.
// A program that marks ops for the CPU, or asks for every graph to be scheduled (Program::scheduled, as llama.cpp
// computes), runs its graphs through ggml_backend_sched over ggml-vulkan and the CPU backend (ggml_graph_split.cc),
// with the same oracles and the scheduler's own answers checked. Out of scope: quantized types, other devices than the first.
// Half of libFuzzer's mutations edit the program rather than its bytes (harness/programs/graph/mutator.h).
// Replay: build/<lane>/targets/ggml_vulkan_graph_topology FILE|DIR   (LIFELINE_TRACE=1 prints the program).
#include <cstddef>
#include <cstdint>

#include "core/guards.h"
#include "harness/programs/graph/codec.h"
#include "harness/programs/graph/executor.h"
#include "harness/programs/graph/mutator.h"
#include "harness/programs/graph/upstream/ggml_vulkan_adapter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lifeline::BeginGuardedInput();
  lifeline::graphs::Execute(lifeline::graphs::Decode(data, size, lifeline::graphs::GgmlVulkanTargetRules()),
                            *lifeline::graphs::MakeGgmlVulkanAdapter());
  return 0;
}

// `--program decode|encode` (harness/replay_main.cc): this target's decoder both ways, for `lifeline reduce`.
LIFELINE_TARGET_CODEC(lifeline::graphs::MakeCodec(lifeline::graphs::GgmlVulkanTargetRules()))

// Structure-aware mutations (libFuzzer's LLVMFuzzerCustomMutator), with ggml-vulkan's rules for the model.
LIFELINE_GRAPH_MUTATOR(lifeline::graphs::GgmlVulkanTargetRules())
