// A structure-aware mutation of the graph programs: libFuzzer's LLVMFuzzerCustomMutator for
// ggml_vulkan_graph_topology (LIFELINE_GRAPH_MUTATOR in the target's file).
//
// The format reads a program's bytes in order, each step's choices depending on the model state the steps
// before it left, so a byte mutation in the middle of an input mostly rewrites every step after it. That keeps
// conjunctions of a few features out of reach: `ggml-vk-graph-optimize-view-alias` needs an in-place binary op,
// a later reader of the tensor it writes, and the scheduler's path with all three in one Vulkan split (a
// Program::scheduled program, or an op marked for the CPU that does not split them apart, and a leaf in
// ggml-vulkan's memory that the ops read from: a graph fed by inputs alone runs on the CPU); docs/upstream-ggml-vulkan.md
// has the times to exposure with and without it. This mutator decodes the
// input to its program in id form (format.h, ToIds), makes one edit to it, and encodes it back (Encode), so the
// steps it does not touch keep their meaning. The edits are generic, in terms of the format alone:
//   - an op's CPU mark, in-place flag or function (add/mul, scale/neg) toggled;
//   - a leaf's input flag or its memory from outside toggled;
//   - a source of an op moved to another tensor of its graph made before it;
//   - a new unary op reading a tensor of a graph while it is open (a later reader);
//   - a new reshape of a tensor (a view of its memory), right after it;
//   - a new add or mul of a tensor and another of its graph, often a view of it, in place half the time;
//   - a tensor updated in place from a value computed from it, with a read of it just after the update or just
//     before it (a residual or a cache updated in place, then read);
//   - a mul_mat of a 1-D view of a tensor, at any length and offset the format allows, by itself or by a second
//     view of the same tensor (attention's read of a slice of a cache);
//   - a graph placed and computed again right after a placement, a leaf of it given memory from outside or
//     taken it back in between (the same graph computed at the next decode, a leaf's bytes moved);
//   - an op that adds a tensor duplicated right after itself;
//   - an option of the program that draws no step toggled, or an allocator's CPU thread count changed.
// An edit the format cannot write (Unencodable: an operand the model does not offer there, an op it would make
// into another) is not made; the caller then mutates the bytes instead.
#pragma once

#include <cstddef>
#include <cstdint>

#include "harness/programs/graph/format.h"

namespace lifeline::graphs {

// Writes into `data` (room for `max_size` bytes) the encoding of `data`'s program with one edit drawn from
// `seed`, and returns its size; returns 0, leaving `data` as it was, when the drawn edit cannot be written or
// its encoding would not fit.
size_t MutateProgram(uint8_t* data, size_t size, size_t max_size, uint32_t seed, const AllocatorRules& rules);

}  // namespace lifeline::graphs

// In a graph target's file: half of libFuzzer's mutations are MutateProgram's (when its edit can be written),
// the others libFuzzer's own byte mutations, so that what bytes alone reach stays reachable. Deterministic:
// everything follows from libFuzzer's seed. LLVMFuzzerMutate is weak: the replay executables of the lanes
// without libFuzzer (harness/replay_main.cc) link the target's file but never call the mutator.
#define LIFELINE_GRAPH_MUTATOR(rules)                                                                           \
  extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) __attribute__((weak));       \
  extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) { \
    if ((seed & 1) != 0) {                                                                                      \
      const size_t n = ::lifeline::graphs::MutateProgram(data, size, max_size, seed >> 1, (rules));            \
      if (n != 0) return n;                                                                                     \
    }                                                                                                           \
    return LLVMFuzzerMutate(data, size, max_size);                                                              \
  }
