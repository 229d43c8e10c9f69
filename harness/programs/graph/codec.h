// The graph programs as JSON (harness/programs/common/codec.h): what `lifeline reduce` edits.
//
//   {"format": "graph", "allocators": [{"buffers": [<alignment>, ...], "threads": <n>}, x2],
//    "ops": [{"id": 0, "op": "leaf", "type": "f32", "ne": [8, 3], "input": true, "preallocated": false}, ...]}
//
// Operands by op (references are "#<id>" of the op that made the tensor or sealed the graph):
//   leaf            type, ne, input, preallocated
//   unary           fn (scale|neg), src, param (scale), inplace, cpu
//   binary          fn (add|mul), src [a, b], inplace, cpu
//   copy            src, type, cpu
//   concat          src [a, b]
//   view            src, reshape: true | n, offset (elements)
//   view-external   of (an output of a sealed graph)
//   mark-output     tensor
//   seal            -
//   reserve, alloc+compute   graph, allocator
//   rewire          graph, tensor, slot, to
//   grow            graph, of
//   toggle-prealloc graph, tensor
// Ops that build a graph also carry "graph": the seal of the graph they build (absent while it is open),
// so that deleting a seal deletes its graph. "model" holds the prediction ("expect") and, for a seal, the
// tensor it made the output; for a toggle, whether the leaf now brings its own memory.
#pragma once

#include <memory>

#include "harness/programs/common/codec.h"
#include "harness/programs/graph/format.h"

namespace lifeline::graphs {

std::unique_ptr<programs::Codec> MakeCodec(const AllocatorRules& rules);

}  // namespace lifeline::graphs
