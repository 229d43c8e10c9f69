// Sizing a gallocr's hash set before it plans: the remedy of guard ggml-gallocr-hash-set-external-view-src, for
// every source of GgmlGraphAdapter that plans on a gallocr (defined in ggml_graph_adapter.cc).
#pragma once

#include <string>

#include "ggml-alloc.h"
#include "ggml.h"
#include "harness/programs/graph/upstream/gallocr_shadow.h"

namespace lifeline::graphs::internal {

// Guard ggml-gallocr-hash-set-external-view-src: planning `graph` looks up more distinct tensors than the
// hash set that ggml_gallocr_reserve_n_impl sizes for it has slots (ggml_hash_find_or_insert aborts when
// full). The careful user's remedy, as llama.cpp's worst-case reserve does by accident: plan a graph big
// enough first (leafs with memory of their own: nothing is placed), which grows the set for good. Returns
// whether it did. `galloc` plans with `ids` as its node and leaf buffer ids; `shadow` is its plan's shadow;
// `what` names the graph in the guard's message.
bool SizeHashSet(ggml_gallocr_t galloc, GallocrShadow& shadow, ggml_cgraph* graph, const int* ids,
                 const std::string& what);

}  // namespace lifeline::graphs::internal
