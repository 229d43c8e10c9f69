// GgmlGraphAdapter's computes (ggml_graph_adapter.h): a placed graph's inputs filled and the graph computed under
// every oracle of a compute, then checked against a fresh gallocr (ggml_fresh_gallocr.cc); a reused graph computed
// again; how a graph's outputs compare.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/graph/upstream/ggml_graph_adapter.h"
#include "layers/alloc/eval.h"

namespace lifeline::graphs::internal {

using alloc::Tensor;

// A graph holding a row op, mul_mat or rope compares its outputs within the row ops' tolerance (Equality::kClose: ggml's
// kernels and the reference round them differently); any other, as the backend's outputs compare.
oracles::Equality GgmlGraphAdapter::EqualityFor(int g) const {
  for (int i = 0; i < book_.size(g); ++i) {
    const alloc::Op op = book_.spec(g, i).op;
    if (op == alloc::Op::kRmsNorm || op == alloc::Op::kSoftMax || op == alloc::Op::kMulMat || op == alloc::Op::kRope ||
        op == alloc::Op::kConvDw) {
      return oracles::Equality::kClose;
    }
  }
  return OutputEquality();
}

// Program::reuse: graph g, placed last by allocator k and unchanged since, computed again on the same build as
// llama.cpp reuses a graph: its inputs set anew, nothing built, planned or allocated (a scheduler keeps its
// placement too), every oracle of a compute checked again.
Status GgmlGraphAdapter::Recompute(int k, int g, const std::vector<Tensor*>& outputs) {
  const LastPlacement& last = last_[k];
  const std::string what = "g" + std::to_string(g) + " (reused)";
  if (programs::TraceRequested()) {
    std::fprintf(stderr, "lifeline: %s: computed again as built and placed\n", what.c_str());
  }
  NoteUpstream(*last.inst, "", {});
  FillAndCompute(k, g, *last.inst, last.placed, last.split, outputs, what, /*reused=*/true);
  return Status::Ok();
}

// Graph g's build `inst`, placed by allocator k (its scheduler when `split`) as `placed` says: the caller fills the
// allocator's leafs after placing, as whisper sets its inputs; the graph is computed under every oracle of a compute
// (graph_book.h; the no-overlap one only in the program's order, which a split graph does not run in), and checked
// against a fresh gallocr when it was computed.
void GgmlGraphAdapter::FillAndCompute(int k, int g, Instance& inst, const alloc::Graph& placed, bool split,
                                      const std::vector<Tensor*>& outputs, const std::string& what, bool reused) {
  ggml_backend_sched_t sched = split ? Scheduler(k) : nullptr;
  const void* owner = split ? static_cast<const void*>(sched) : galloc_[k];
  const int id = split ? SchedulerId(k) : k;
  for (Tensor* leaf : placed.leafs) {
    if (leaf->is_view() || leaf->owner != owner) continue;
    const int i = book_.IndexOf(g, leaf);
    FillLeaf(leaf, g, i);
    Upload(inst.t[i], leaf);
  }
  UploadRows(inst);
  // Also for the CPU parts of a split graph, and the fresh-allocator oracle.
  SetCpuThreads(cpu_threads_[k], shared_pool_);
  // Memory from outside that the graph writes (a set_rows into a pre-allocated leaf: a KV cache) holds what this
  // compute wrote once it is done; the fresh-allocator run starts from the bytes this one started from, and then
  // the cache is given back what this compute left in it (what the program's later steps read).
  std::vector<std::pair<Tensor*, std::vector<uint8_t>>> before;
  for (const Tensor* r : oracles::WrittenExternal(placed, owner)) {
    const auto* p = static_cast<const uint8_t*>(r->data);
    before.emplace_back(const_cast<Tensor*>(r), std::vector<uint8_t>(p, p + r->nbytes()));
  }
  AddUpstreamCall(std::string(split ? "ggml_backend_sched_graph_compute" : "ggml_backend_graph_compute") +
                  (reused ? " [graph computed again as placed]" : ""));
  if (ComputeUnderOracles(placed, owner, Extents(id), outputs, [&] { Compute(inst.graph, what, sched); },
                          EqualityFor(g), /*check_overlap=*/!split, /*refuse_nonfinite_row_input=*/true)) {
    std::vector<std::vector<uint8_t>> after;
    for (auto& [r, bytes] : before) {
      const auto* p = static_cast<const uint8_t*>(r->data);
      after.emplace_back(p, p + bytes.size());
      std::memcpy(r->data, bytes.data(), bytes.size());
    }
    LIFELINE_CHECK_OK(CompareWithFreshAllocator(g, inst));
    for (size_t j = 0; j < before.size(); ++j) {
      Tensor* r = before[j].first;
      for (int64_t e = 0; e < r->nelements(); ++e) {
        const float fresh_value = alloc::LoadElement(r->type, r->data, e);
        const float placed_value = alloc::LoadElement(r->type, after[j].data(), e);
        LIFELINE_CHECK(oracles::SameElement(placed_value, fresh_value, EqualityFor(g)),
                       "fresh-allocator oracle: element " + std::to_string(e) + " of " + r->name + ", memory from " +
                           "outside that " + what + " writes, is " + std::to_string(placed_value) + " after the " +
                           "program's compute but " + std::to_string(fresh_value) + " after a fresh gallocr's");
      }
      std::memcpy(r->data, after[j].data(), after[j].size());
    }
  }
}

// The index tensors of the build's get_rows, rope and set_rows get their rows and positions, in whatever memory the
// placement gave them.
void GgmlGraphAdapter::UploadRows(const Instance& inst) {
  for (const auto& [idx, rows] : inst.rows) {
    LIFELINE_CHECK(idx->buffer != nullptr, std::string(idx->name) + ", an input of the placed graph, has no memory");
    ggml_backend_tensor_set(idx, rows.data(), 0, ggml_nbytes(idx));
  }
}

}  // namespace lifeline::graphs::internal
