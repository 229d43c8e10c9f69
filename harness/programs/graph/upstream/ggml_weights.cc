// GgmlGraphAdapter::PlaceWeights (ggml_graph_adapter.h): Program::weights, a build's pre-allocated leafs placed as
// llama.cpp places a model's weights, and the oracles of that placement.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/check.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/graph/upstream/ggml_graph_adapter.h"

namespace lifeline::graphs::internal {

using alloc::Tensor;

// The weights `w` placed by hand on the CPU backend (PlaceWeights, g3): a buffer of their padded sizes, a
// ggml_tallocr on it, one ggml_tallocr_alloc each, checked call by call.
ggml_backend_buffer_t GgmlGraphAdapter::PlaceWithTallocr(const std::vector<ggml_tensor*>& w, const std::string& what) {
  ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(Cpu());
  const size_t align = ggml_backend_buft_get_alignment(buft);
  size_t size = 0;
  for (const ggml_tensor* t : w) size += GGML_PAD(ggml_backend_buft_get_alloc_size(buft, t), align);
  ggml_backend_buffer_t buffer = ggml_backend_alloc_buffer(Cpu(), size);
  LIFELINE_CHECK(buffer != nullptr, what + ": ggml_backend_alloc_buffer of " + std::to_string(size) + " bytes failed");
  ggml_tallocr talloc = ggml_tallocr_new(buffer);
  const auto* base = static_cast<const uint8_t*>(ggml_backend_buffer_get_base(buffer));
  LIFELINE_CHECK(talloc.buffer == buffer && talloc.base == base && talloc.alignment == align && talloc.offset == 0,
                 what + ": ggml_tallocr_new on a buffer of alignment " + std::to_string(align) +
                     " starts at offset " + std::to_string(talloc.offset) + " with alignment " +
                     std::to_string(talloc.alignment));
  for (ggml_tensor* t : w) {
    const size_t at = talloc.offset;
    const ggml_status status = ggml_tallocr_alloc(&talloc, t);
    LIFELINE_CHECK(status == GGML_STATUS_SUCCESS,
                   what + ": ggml_tallocr_alloc of " + t->name + " returned " + ggml_status_to_string(status));
    LIFELINE_CHECK(t->buffer == buffer && static_cast<const uint8_t*>(t->data) == base + at && at % align == 0,
                   what + ": ggml_tallocr_alloc put " + t->name + " at offset " +
                       std::to_string(static_cast<const uint8_t*>(t->data) - base) + " where the tallocr stood at " +
                       std::to_string(at));
  }
  LIFELINE_CHECK(talloc.offset == size, what + ": the tensors took " + std::to_string(talloc.offset) +
                                            " bytes of a buffer of their padded sizes, " + std::to_string(size));
  return buffer;
}

// Program::weights: a build's pre-allocated leafs that have no weight yet are placed as llama.cpp places a
// model's weights, once, all of a context at once (later builds of the graph read the same tensors: Make). Three
// ways, by graph:
// - even graphs: ggml_backend_alloc_ctx_tensors_from_buft with a host buffer type whose max_size is the largest
//   leaf's padded size, so leafs that do not fit one buffer together are split into chunks (alloc_tensor_range
//   and a ggml_tallocr per chunk, a multi-buffer over them);
// - g1: ggml_backend_alloc_ctx_tensors on the CPU backend (its own buffer type, one buffer);
// - g3: by hand, as ggml's examples and older whisper.cpp place a model: one ggml_backend_alloc_buffer of the
//   padded sizes summed, then ggml_tallocr_new on it and a ggml_tallocr_alloc per tensor.
// Then they get the book's bytes. Oracles (ggml-alloc.h, ggml-backend.h): the buffer's size is what
// ggml_backend_alloc_ctx_tensors_from_buft_size said beforehand; every weight lies inside its own chunk, which
// is no larger than the type's max_size; no two overlap; the chunks are as many as ggml-alloc.c's greedy split
// makes; the usage set on the whole buffer reaches every chunk (ggml_backend_buffer_set_usage on a multi-buffer).
// By hand, also: every ggml_tallocr_alloc succeeds and puts its tensor at the tallocr's offset before the call,
// an aligned one, in that buffer; the tensors fill the buffer exactly.
void GgmlGraphAdapter::PlaceWeights(Instance& inst, int g) {
  const std::string what = "the weights of g" + std::to_string(g);
  std::vector<ggml_tensor*> w;
  for (ggml_tensor* t = ggml_get_first_tensor(inst.weights_ctx); t != nullptr;
       t = ggml_get_next_tensor(inst.weights_ctx, t)) {
    w.push_back(t);
  }
  LIFELINE_CHECK(w.size() == inst.weight_index.size(), what + ": the weights context holds other tensors");
  const bool chunked = g % 2 == 0;
  ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(Cpu());
  size_t max_size = SIZE_MAX;
  size_t chunks = 1;
  if (chunked) {
    alloc::BufferSpec spec;
    spec.alignment = kWeightsAlignment;
    HostBufferType* type = HostTypeFor(kWeightsAllocator, spec);
    max_size = 0;
    for (const ggml_tensor* t : w) max_size = std::max(max_size, GGML_PAD(ggml_nbytes(t), kWeightsAlignment));
    type->max_size = max_size;  // this build's; the type serves one call at a time
    buft = &type->buft;
    size_t cur = 0;  // ggml_backend_alloc_ctx_tensors_from_buft_impl's split, as ggml-alloc.c's comments give it
    chunks = 0;
    for (const ggml_tensor* t : w) {
      const size_t size = GGML_PAD(ggml_nbytes(t), kWeightsAlignment);
      if (cur > 0 && cur + size > max_size) {
        ++chunks;
        cur = size;
      } else {
        cur += size;
      }
    }
    if (cur > 0) ++chunks;
  }
  const bool by_hand = !chunked && g % 4 == 3;
#if LIFELINE_GGML_HAS_BACKEND_ALLOC_CTX_TENSORS_FROM_BUFT_SIZE
  const size_t expected = ggml_backend_alloc_ctx_tensors_from_buft_size(inst.weights_ctx, buft);
#endif
  if (by_hand) {
    inst.weights = PlaceWithTallocr(w, what);
  } else {
    inst.weights = chunked ? ggml_backend_alloc_ctx_tensors_from_buft(inst.weights_ctx, buft)
                           : ggml_backend_alloc_ctx_tensors(inst.weights_ctx, Cpu());
    LIFELINE_CHECK(inst.weights != nullptr, what + ": ggml_backend_alloc_ctx_tensors" + (chunked ? "_from_buft" : "") +
                                                " returned null for " + std::to_string(w.size()) + " tensors");
  }
#if LIFELINE_GGML_HAS_BACKEND_ALLOC_CTX_TENSORS_FROM_BUFT_SIZE  // a ggml without it has no size to check against
  LIFELINE_CHECK(ggml_backend_buffer_get_size(inst.weights) == expected,
                 what + ": a buffer of " + std::to_string(ggml_backend_buffer_get_size(inst.weights)) +
                     " bytes where ggml_backend_alloc_ctx_tensors_from_buft_size said " + std::to_string(expected));
#endif
  ggml_backend_buffer_set_usage(inst.weights, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
  std::vector<ggml_backend_buffer_t> seen;
  for (size_t a = 0; a < w.size(); ++a) {
    const ggml_tensor* t = w[a];
    LIFELINE_CHECK(t->buffer != nullptr && t->data != nullptr, what + ": " + std::string(t->name) + " was not placed");
    const auto* base = static_cast<const uint8_t*>(ggml_backend_buffer_get_base(t->buffer));
    const size_t size = ggml_backend_buffer_get_size(t->buffer);
    const auto* lo = static_cast<const uint8_t*>(t->data);
    LIFELINE_CHECK(lo >= base && lo + ggml_nbytes(t) <= base + size,
                   what + ": a weight lies outside its buffer of " + std::to_string(size) + " bytes");
    LIFELINE_CHECK(size <= max_size, what + ": a chunk of " + std::to_string(size) +
                                         " bytes, above the type's max_size " + std::to_string(max_size));
    LIFELINE_CHECK(ggml_backend_buffer_get_usage(t->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS,
                   what + ": the usage set on the whole buffer did not reach this weight's chunk");
    for (size_t b = 0; b < a; ++b) {
      const auto* other = static_cast<const uint8_t*>(w[b]->data);
      LIFELINE_CHECK(lo + ggml_nbytes(t) <= other || other + ggml_nbytes(w[b]) <= lo,
                     what + ": two weights share bytes");
    }
    if (std::find(seen.begin(), seen.end(), t->buffer) == seen.end()) seen.push_back(t->buffer);
  }
  LIFELINE_CHECK(seen.size() == chunks, what + ": " + std::to_string(w.size()) + " weights in " +
                                            std::to_string(seen.size()) + " chunks where the split makes " +
                                            std::to_string(chunks));
  // The weights hold the leafs' bytes from now on, as a placement's tensors do (Mirror): the book follows them
  // at once, also for a build that is only reserved or read through another graph's view (Source), so that
  // every view of a leaf, whichever build it reads, lies inside what the book calls the leaf.
  for (size_t a = 0; a < w.size(); ++a) {
    Tensor* m = book_.tensor(g, inst.weight_index[a]);
    ggml_backend_tensor_set(w[a], m->data, 0, ggml_nbytes(w[a]));
    m->data = w[a]->data;
    weights_placed_[{g, inst.weight_index[a]}] = w[a];
  }
  if (programs::TraceRequested()) {
    std::fprintf(stderr, "lifeline: %s: %zu tensors, %zu bytes in %zu buffer(s) (%s)\n", what.c_str(), w.size(),
                 ggml_backend_buffer_get_size(inst.weights), seen.size(),
                 chunked   ? ("ggml_backend_alloc_ctx_tensors_from_buft, max_size " + std::to_string(max_size)).c_str()
                 : by_hand ? "ggml_tallocr_alloc in a ggml_backend_alloc_buffer of the CPU backend"
                           : "ggml_backend_alloc_ctx_tensors on the CPU backend");
  }
}

}  // namespace lifeline::graphs::internal
