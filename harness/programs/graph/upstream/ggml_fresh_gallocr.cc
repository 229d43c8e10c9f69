// GgmlGraphAdapter's fresh-allocator differentials (ggml_graph_adapter.h): what a fresh gallocr does with the
// program's graph, against what the program's allocator did: the buffer sizes of its reserve against a measure,
// and its placement, computed on ggml's CPU backend, against a compute's outputs.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"
#include "harness/programs/graph/upstream/gallocr_sizing.h"
#include "harness/programs/graph/upstream/ggml_graph_adapter.h"
#include "layers/alloc/eval.h"

namespace lifeline::graphs::internal {

using alloc::Tensor;

// Oracle of ggml_gallocr_reserve_n_size ("the buffer sizes per galloc buffer that would be allocated by
// ggml_gallocr_reserve_n", ggml-alloc.h): a fresh gallocr of allocator k's buffer types reserves the same
// graph, and ggml_gallocr_get_buffer_size reads each of its buffers back (the first of its type's: the measure
// repeats that size for a buffer sharing an earlier one's type). ggml_gallocr_get_buffer_size of such a buffer
// itself is 0, "to avoid double counting" (ggml-alloc.c's comment there).
Status GgmlGraphAdapter::CheckMeasuredSizes(int k, ggml_cgraph* graph, const std::vector<size_t>& sizes,
                                            const std::string& what) {
  ggml_gallocr_t fresh = ggml_gallocr_new_n(bufts_[k].data(), nbuf_[k]);
  LIFELINE_CHECK(fresh != nullptr, "ggml_gallocr_new_n returned null");
  GallocrShadow fresh_shadow;
  SizeHashSet(fresh, fresh_shadow, graph, ids_[k].data(), what + " on a fresh gallocr");
  std::string error;
  if (!ggml_gallocr_reserve_n(fresh, graph, ids_[k].data(), ids_[k].data())) {
    error = "ggml_gallocr_reserve_n of " + what + " on a fresh gallocr failed";
  }
  for (int b = 0; b < nbuf_[k] && error.empty(); ++b) {
    const size_t reserved = ggml_gallocr_get_buffer_size(fresh, FirstOfType(k, b));
    if (sizes[b] != reserved) {
      error = "measure oracle: ggml_gallocr_reserve_n_size of " + what + " gives buffer " + std::to_string(b) +
              " of allocator " + std::to_string(k) + " " + std::to_string(sizes[b]) +
              " bytes, a reserve of it on a fresh gallocr allocates " + std::to_string(reserved);
    } else if (FirstOfType(k, b) != b && ggml_gallocr_get_buffer_size(fresh, b) != 0) {
      error = "ggml_gallocr_get_buffer_size of buffer " + std::to_string(b) + " of allocator " + std::to_string(k) +
              ", which shares buffer " + std::to_string(FirstOfType(k, b)) + "'s type, is " +
              std::to_string(ggml_gallocr_get_buffer_size(fresh, b)) + ", not 0";
    }
  }
  ggml_gallocr_free(fresh);
  if (!error.empty()) LIFELINE_CHECK(false, error);
  return Status::Ok();
}

// The same graph, built again on host memory, placed by a fresh gallocr with a single host buffer and computed
// by ggml's CPU backend, must give the same output bytes. Tensors from outside the graph are read where the
// program's placement left them (host addresses: Source's stand-ins), so both runs see the same inputs.
Status GgmlGraphAdapter::CompareWithFreshAllocator(int g, const Instance& inst) {
  alloc::BufferSpec spec;
  spec.alignment = 32;
  HostBufferType* type = HostTypeFor(-1, spec);
  ggml_gallocr_t fresh = ggml_gallocr_new(&type->buft);
  Instance* again = Build(g, /*detached=*/true);
  std::string error;
  GallocrShadow fresh_shadow;
  SizeHashSet(fresh, fresh_shadow, again->graph, nullptr, "g" + std::to_string(g) + " on a fresh gallocr");
  if (!ggml_gallocr_alloc_graph(fresh, again->graph)) {
    error = "fresh-allocator oracle: a fresh gallocr could not place g" + std::to_string(g);
  } else {
    for (int i = 0; i < book_.size(g); ++i) {
      ggml_tensor* t = again->t[i];
      if (t == nullptr || t->op != GGML_OP_NONE || t->view_src != nullptr || book_.preallocated(g, i)) continue;
      Tensor* m = book_.tensor(g, i);
      void* saved = m->data;
      m->data = t->data;
      FillLeaf(m, g, i);
      m->data = saved;
    }
    UploadRows(*again);
    ggml_status st = ggml_backend_graph_compute(Cpu(), again->graph);
    if (st != GGML_STATUS_SUCCESS) {
      error = "fresh-allocator oracle: computing g" + std::to_string(g) + " returned " + ggml_status_to_string(st);
    }
    for (int i = 0; i < book_.size(g) && error.empty(); ++i) {
      const Tensor* m = book_.tensor(g, i);
      if (!m->output || inst.t[i] == nullptr) continue;
      const size_t n = ggml_nbytes(inst.t[i]);
      const void* placed_bytes = HostAddress(inst.t[i]);
      if (std::memcmp(placed_bytes, again->t[i]->data, n) == 0) continue;
      for (int64_t e = 0; e < m->nelements(); ++e) {
        float placed = alloc::LoadElement(m->type, placed_bytes, e);
        float fresh_value = alloc::LoadElement(m->type, again->t[i]->data, e);
        if (!oracles::SameElement(placed, fresh_value, EqualityFor(g))) {
          error = "fresh-allocator oracle: output " + m->name + " element " + std::to_string(e) + " is " +
                  std::to_string(placed) + " as placed by the program's allocator but " +
                  std::to_string(fresh_value) + " with a fresh gallocr on ggml's CPU backend";
          break;
        }
      }
    }
  }
  ggml_gallocr_free(fresh);
  instances_.pop_back();  // `again` was the last build; nothing views it
  return error.empty() ? Status::Ok() : Internal(error);
}

}  // namespace lifeline::graphs::internal
