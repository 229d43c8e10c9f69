#include "harness/programs/graph/upstream/gallocr_shadow.h"

#include <algorithm>
#include <utility>

#include "core/check.h"

namespace lifeline::graphs {
namespace {

Record RecordOf(const ggml_tensor* t) {
  if (t == nullptr || t->view_src != nullptr || t->data != nullptr) return {};
  return {true, ggml_nbytes(t)};
}

// Every node's sources, by position. Runs for every plan: one sorted table, no map.
std::vector<Edges> EdgesOf(const ggml_cgraph* graph) {
  std::vector<std::pair<const ggml_tensor*, int>> pos;
  pos.reserve(static_cast<size_t>(graph->n_nodes + graph->n_leafs));
  for (int j = 0; j < graph->n_nodes; ++j) pos.emplace_back(graph->nodes[j], 2 * j);
  for (int j = 0; j < graph->n_leafs; ++j) pos.emplace_back(graph->leafs[j], 2 * j + 1);
  std::sort(pos.begin(), pos.end());
  std::vector<Edges> out(graph->n_nodes);
  for (int i = 0; i < graph->n_nodes; ++i) {
    for (int j = 0; j < GGML_MAX_SRC; ++j) {
      const ggml_tensor* s = graph->nodes[i]->src[j];
      if (s == nullptr) {
        out[i][j] = -1;
        continue;
      }
      auto it = std::lower_bound(pos.begin(), pos.end(), std::make_pair(s, 0),
                                 [](const auto& a, const auto& b) { return a.first < b.first; });
      // ggml_build_forward_expand visits every source: each is a node or a leaf of the graph.
      LIFELINE_CHECK(it != pos.end() && it->first == s, std::string("gallocr shadow: source ") + s->name +
                                                            " of " + graph->nodes[i]->name + " is not in its graph");
      out[i][j] = it->second;
    }
  }
  return out;
}

// ggml_gallocr_node_needs_realloc (which, despite its name, answers whether the record still fits).
bool Fits(const ggml_tensor* t, const Record& r) {
  size_t size = 0;
  if (t->data == nullptr && t->view_src == nullptr) {
    if (!r.owned) return false;
    size = ggml_nbytes(t);
  }
  return r.size_max >= size;
}

}  // namespace

size_t GallocrShadow::HashSizeFor(const ggml_cgraph* graph) const {
  size_t min = static_cast<size_t>(graph->n_nodes + graph->n_leafs);
  min += min / 4;
  return hash_size < min ? ggml_hash_size(min) : hash_size;
}

void GallocrShadow::Planned(const ggml_cgraph* graph, std::string what) {
  hash_size = HashSizeFor(graph);
  n_nodes = graph->n_nodes;
  n_leafs = graph->n_leafs;
  node.assign(n_nodes, {});
  src.assign(n_nodes, {});
  edges = EdgesOf(graph);
  output.assign(n_nodes, false);
  leaf_output.assign(n_leafs, false);
  for (int i = 0; i < n_leafs; ++i) leaf_output[i] = (graph->leafs[i]->flags & GGML_TENSOR_FLAG_OUTPUT) != 0;
  for (int i = 0; i < n_nodes; ++i) {
    const ggml_tensor* t = graph->nodes[i];
    output[i] = (t->flags & GGML_TENSOR_FLAG_OUTPUT) != 0;
    node[i] = RecordOf(t);
    for (int j = 0; j < GGML_MAX_SRC; ++j) src[i][j] = RecordOf(t->src[j]);
  }
  leaf.assign(n_leafs, {});
  for (int i = 0; i < n_leafs; ++i) leaf[i] = RecordOf(graph->leafs[i]);
  planned = std::move(what);
}

bool GallocrShadow::NeedsRealloc(const ggml_cgraph* graph) const {
  if (graph->n_nodes != n_nodes || graph->n_leafs != n_leafs) return true;
  for (int i = 0; i < n_nodes; ++i) {
    const ggml_tensor* t = graph->nodes[i];
    if (!Fits(t, node[i])) return true;
    for (int j = 0; j < GGML_MAX_SRC; ++j) {
      if (t->src[j] != nullptr && !Fits(t->src[j], src[i][j])) return true;
    }
  }
  return false;
}

// A tensor without data and view_src needs an owned record it fits in (else bufts[-1] is read, or an assert
// fails); a view without a buffer needs a record that is not owned (assert offset == SIZE_MAX). Views get their
// buffer when their source has one; other tensors theirs when placed.
PlanFault GallocrShadow::FirstFault(const ggml_cgraph* graph, const ggml_tensor** where) const {
  std::vector<const ggml_tensor*> placed;  // buffer (and data) set by an earlier init; a few tensors
  auto was_placed = [&](const ggml_tensor* t) { return std::find(placed.begin(), placed.end(), t) != placed.end(); };
  auto has_buffer = [&](const ggml_tensor* t) { return t->buffer != nullptr || was_placed(t); };
  auto init = [&](const ggml_tensor* t, const Record& r) {
    if (t->view_src == nullptr) {
      if (t->data != nullptr || was_placed(t)) return true;
      if (!r.owned || ggml_nbytes(t) > r.size_max) return false;
      placed.push_back(t);
      return true;
    }
    if (has_buffer(t)) return true;
    if (r.owned) return false;
    if (has_buffer(t->view_src)) placed.push_back(t);
    return true;
  };
  for (int i = 0; i < graph->n_leafs; ++i) {
    if (!init(graph->leafs[i], leaf[i])) {
      *where = graph->leafs[i];
      return PlanFault::kLeafRecord;
    }
  }
  for (int i = 0; i < graph->n_nodes; ++i) {
    const ggml_tensor* t = graph->nodes[i];
    for (int j = 0; j < GGML_MAX_SRC; ++j) {
      if (t->src[j] != nullptr && !init(t->src[j], src[i][j])) {
        *where = t->src[j];
        return t->src[j]->view_src != nullptr ? PlanFault::kViewNodeOwnedRecord : PlanFault::kNone;
      }
    }
    if (!init(t, node[i])) {
      *where = t;
      return t->view_src != nullptr ? PlanFault::kViewNodeOwnedRecord : PlanFault::kNone;
    }
  }
  return PlanFault::kNone;
}

int GallocrShadow::FirstRewiredNode(const ggml_cgraph* graph) const {
  const std::vector<Edges> now = EdgesOf(graph);
  auto is_output = [](const ggml_tensor* t) { return (t->flags & GGML_TENSOR_FLAG_OUTPUT) != 0; };
  for (int i = 0; i < graph->n_nodes && i < n_nodes; ++i) {
    if (now[i] != edges[i] || is_output(graph->nodes[i]) != output[i]) return i;
    // A source leaf that became (or stopped being) an output: the plan's in-place reuse of it was decided on it.
    for (int j = 0; j < GGML_MAX_SRC; ++j) {
      const int at = now[i][j];
      if (at >= 0 && at % 2 == 1 && at / 2 < n_leafs && at / 2 < graph->n_leafs &&
          is_output(graph->leafs[at / 2]) != leaf_output[at / 2]) {
        return i;
      }
    }
  }
  return -1;
}

size_t HashKeysOf(const ggml_cgraph* graph) {
  std::vector<const ggml_tensor*> keys;  // every reserve counts them: one vector, sorted once
  keys.reserve(static_cast<size_t>(graph->n_leafs + 4 * graph->n_nodes));
  for (int i = 0; i < graph->n_leafs; ++i) keys.push_back(graph->leafs[i]);
  for (int i = 0; i < graph->n_nodes; ++i) {
    const ggml_tensor* t = graph->nodes[i];
    keys.push_back(t);
    if (t->view_src != nullptr && t->op != GGML_OP_NONE) keys.push_back(t->view_src);
    for (const ggml_tensor* s : t->src) {
      if (s == nullptr) continue;
      keys.push_back(s);
      if (s->view_src != nullptr) keys.push_back(s->view_src);
    }
  }
  std::sort(keys.begin(), keys.end());
  return static_cast<size_t>(std::unique(keys.begin(), keys.end()) - keys.begin());
}

}  // namespace lifeline::graphs
