// GgmlAdapter: the graph programs (harness/programs/graph/format.h) on upstream ggml's graph allocator
// (ggml-alloc.c's gallocr), built only where the upstream source is (cmake/LifelineGgml.cmake).
//
// Each program tensor becomes a ggml tensor with the same op: leafs are ggml_new_tensor_4d (inputs
// ggml_set_input; pre-allocated ones get their `data` from outside, with no backend buffer, as ggml
// allows); add, mul, scale and neg are ggml_add/ggml_mul/ggml_scale/ggml_neg or their _inplace forms;
// copy is ggml_cpy into a new tensor of the target type; concat is ggml_concat along dimension 3; views
// are ggml_view_1d and ggml_reshape_1d; the leaf view of another graph's output is ggml_view_tensor
// (whisper's view of the conv result). Outputs are ggml_set_output.
//
// ggml expects a graph to be built afresh for every evaluation (its tensors get their addresses once, and
// gallocr's plans are matched to graphs by position), so every Reserve and every AllocAndCompute builds
// the program's graph anew in a fresh ggml context, as whisper.cpp and llama.cpp do; a leaf view of
// another graph views that graph's tensor from its latest placement. Each of the program's two allocators
// is a ggml_gallocr_new_n over one buffer type per distinct buffer alignment (buffers with the same
// alignment share a type, so gallocr shares their allocator, as it does for repeated buffer types):
// host buffers of this file with the program's alignment (at least 4 bytes: ggml's CPU kernels read
// elements in place), counted so that teardown can prove every byte came back. Graphs are computed by ggml's CPU backend on one thread.
//
// Oracles after every placement, on the placed addresses (harness/oracles/alloc_oracles.h, through the
// program's own tensors, see graph_book.h): no two live tensors share bytes, views inside their sources,
// every tensor gallocr placed inside one of its allocator's live buffers at the buffer's alignment,
// external memory never written (canary), and two differential oracles on the outputs: against the
// reference evaluator (layers/alloc/eval.h) on separately allocated memory, and against the same graph
// placed by a fresh gallocr with one buffer. ggml's own GGML_ASSERT/GGML_ABORT messages and its assert()
// failures are printed with the op trace and a stack (core/upstream_hooks.h; crash type `assert`).
#pragma once

#include <memory>

#include "harness/programs/graph/allocator.h"
#include "harness/programs/graph/upstream/ggml_rules.h"  // GgmlRules: what the model knows of it

namespace lifeline::graphs {

std::unique_ptr<AllocatorAdapter> MakeGgmlAdapter();

}  // namespace lifeline::graphs
