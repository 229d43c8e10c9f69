// alloc_graph_topology: no two live tensors overlap, every view lies inside its source, every tensor is
// placed inside its buffer, external memory is never written, and results on allocator-placed memory
// equal results on separately allocated memory — across graphs built, planned, placed, computed and
// mutated in any order over two allocators.
//
// Program: harness/programs/graph/ (format.h: the bytes; model.h: what is legal and its predicted
// status; executor.h: runs it). Implementation: layers/alloc's GraphAllocator through the LayerAdapter
// (harness/programs/graph/standin/layer_adapter.h), which checks the oracles of
// harness/oracles/alloc_oracles.h after every placement and that every buffer byte is back at the end.
// The allocator's own always-on checks (gallocr-view-leaf-offset) and ASan/valgrind on poisoned free
// buffer space add to that. Shapes it reaches: whisper's conv -> encoder (a leaf view of another graph's
// output), same counts with different edges after Reserve, grown graphs, leafs that gain or lose their
// own memory between Reserve and AllocGraph, views of graphs that were reserved but never placed.
// Out of scope: allocation failure (buffers are large; see tests/alloc/), multi-threading.
// Replay: build/<lane>/targets/alloc_graph_topology FILE|DIR   (LIFELINE_TRACE=1 prints the program).
#include <cstddef>
#include <cstdint>

#include "harness/programs/graph/codec.h"
#include "harness/programs/graph/executor.h"
#include "harness/programs/graph/standin/layer_adapter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lifeline::graphs::Execute(lifeline::graphs::Decode(data, size), *lifeline::graphs::MakeLayerAdapter());
  return 0;
}

// `--program decode|encode` (harness/replay_main.cc): this target's decoder both ways, for `lifeline reduce`.
LIFELINE_TARGET_CODEC(lifeline::graphs::MakeCodec(lifeline::graphs::AllocatorRules{}))
