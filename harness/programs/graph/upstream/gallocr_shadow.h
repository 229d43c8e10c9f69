// What a gallocr's plan holds: the guards' view of it (core/guard_list.def; used by ggml_graph_adapter.cc,
// ggml_fresh_gallocr.cc and ggml_graph_split.cc).
//
// The guards need what ggml_gallocr_reserve_n recorded, which ggml keeps in its private struct. GallocrShadow
// computes the same records from the graph that was planned, by the rules of ggml-alloc.c (0.25.1): a tensor
// with view_src or data is recorded "not owned" (buffer -1, size_max 0), any other tensor owned with size_max =
// its allocation size (ggml_nbytes: the adapter's buffer types have no get_alloc_size). From them it answers
// ggml_gallocr_needs_realloc exactly, which the adapter checks against ggml's own debug line on every
// ggml_gallocr_alloc_graph (so a shadow that drifts from upstream fails loudly), and walks
// ggml_gallocr_alloc_graph's ggml_gallocr_init_tensor calls in their order to say which of them a reused plan
// would fail.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "ggml-impl.h"  // struct ggml_cgraph (leafs) and ggml_hash_size
#include "ggml.h"

namespace lifeline::graphs {

struct Record {
  bool owned = false;  // buffer_id >= 0 and a real offset
  size_t size_max = 0;
};

// Where a source sits in its graph: -1 none, else 2*index for a node, 2*index+1 for a leaf.
using Edges = std::array<int, GGML_MAX_SRC>;

// Why a reused plan cannot place a graph, in the terms of the findings it belongs to.
enum class PlanFault { kNone, kLeafRecord, kViewNodeOwnedRecord };

struct GallocrShadow {
  int n_nodes = 0, n_leafs = 0;  // as ggml_gallocr_new_n leaves them: no plan matches any graph
  std::vector<Record> node, leaf;
  std::vector<std::array<Record, GGML_MAX_SRC>> src;
  std::vector<Edges> edges;  // the planned graph's node sources, by position
  std::vector<bool> output;  // and whether each is an output (gallocr never reuses an output's bytes)
  std::vector<bool> leaf_output;  // whether each leaf is one, by position
  size_t hash_size = 0;      // the hash set only grows, across plans
  std::string planned;       // what was planned, for trace lines

  // ggml_gallocr_reserve_n_impl's hash set size for `graph`.
  size_t HashSizeFor(const ggml_cgraph* graph) const;
  // The records ggml_gallocr_reserve_n makes for `graph` (they are made before its buffers are allocated, so
  // even a reserve that fails leaves them).
  void Planned(const ggml_cgraph* graph, std::string what);
  // ggml_gallocr_needs_realloc.
  bool NeedsRealloc(const ggml_cgraph* graph) const;
  // ggml_gallocr_alloc_graph's ggml_gallocr_init_tensor calls on a reused plan, in order (leafs, then each
  // node's sources and the node): the first that would fail its checks, and the tensor (`*where`).
  PlanFault FirstFault(const ggml_cgraph* graph, const ggml_tensor** where) const;
  // The first node whose sources, output flag or source leafs' output flags differ, by position, from the
  // planned graph's (the plan's in-place reuse and frees were decided on them); -1 when none does.
  int FirstRewiredNode(const ggml_cgraph* graph) const;
};

// The distinct tensors ggml_gallocr_alloc_graph_impl looks up (and so inserts) in the hash set while planning
// `graph`: its leafs and nodes, their sources, the view_src of every view node (other than GGML_OP_NONE ones)
// and the view_src of every source that is a view (looked up when its last consumer frees it). A leaf view of
// another graph's tensor brings a view_src that is in neither list.
size_t HashKeysOf(const ggml_cgraph* graph);

}  // namespace lifeline::graphs
