// ggml_graph_topology: the graph programs of alloc_graph_topology, on upstream ggml's graph allocator
// (ggml-alloc.c's gallocr, ggml 0.25.1 as fetched by scripts/fetch-ggml.sh) and its CPU backend: no two
// live tensors overlap, every view lies inside its source, every tensor lies inside one of its
// allocator's buffers at the buffer's alignment, external memory is never written, and the outputs equal
// those of the reference evaluator on separate memory and of the same graph placed by a fresh gallocr.
//
// The inputs are the same op programs as alloc_graph_topology's (harness/programs/graph/format.h), so
// its corpus and reproducers run here unchanged; ggml's side is harness/programs/graph/upstream/
// ggml_adapter.h, one implementation of the graph executor's AllocatorAdapter. Upstream's
// own checks (GGML_ASSERT, and the assert()s of ggml-alloc.c, compiled in) report as crash type `assert`.
// Each allocator computes on 1-4 of ggml's CPU threads (the program's choice), on thread pools kept for the
// process (harness/programs/graph/upstream/ggml_host.cc). Out of scope: other backends, quantized types.
// Replay: build/<lane>/targets/ggml_graph_topology FILE|DIR   (LIFELINE_TRACE=1 prints the program).
#include <cstddef>
#include <cstdint>

#include "core/guards.h"
#include "harness/programs/graph/codec.h"
#include "harness/programs/graph/executor.h"
#include "harness/programs/graph/upstream/ggml_adapter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lifeline::BeginGuardedInput();
  lifeline::graphs::Execute(lifeline::graphs::Decode(data, size, lifeline::graphs::GgmlRules()),
                            *lifeline::graphs::MakeGgmlAdapter());
  return 0;
}

// `--program decode|encode` (harness/replay_main.cc): this target's decoder both ways, for `lifeline reduce`.
LIFELINE_TARGET_CODEC(lifeline::graphs::MakeCodec(lifeline::graphs::GgmlRules()))
