// GgmlGraphAdapter (ggml_graph_adapter.h): what the upstream graph adapters share, on gallocr; the scheduler
// path of split graphs is ggml_graph_split.cc, the host side ggml_host.cc.
#include "harness/programs/graph/upstream/ggml_graph_adapter.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/check.h"
#include "core/guards.h"
#include "harness/programs/common/describe.h"
#include "layers/alloc/eval.h"

namespace lifeline::graphs::internal {
namespace {

using alloc::Tensor;

constexpr int kMaxBufferIds = 2 * kGraphSize;  // node/leaf buffer id arrays for reserve_n

}  // namespace

// ---- GgmlGraphAdapter ------------------------------------------------------------------------------

GgmlGraphAdapter::GgmlGraphAdapter() : baseline_(HostLiveBytes()) { Cpu(); }
GgmlGraphAdapter::~GgmlGraphAdapter() { Release(); }

Status GgmlGraphAdapter::CreateAllocator(int k, const AllocatorSpec& spec) {
  std::vector<ggml_backend_buffer_type_t> bufts;
  for (alloc::BufferSpec b : spec.buffers) {
    if (chunked_) b.max_size = kChunkedBufferBytes;  // host buffer types only: ggml-vulkan's say their own
    bufts.push_back(BufferTypeFor(k, b));
  }
  bufts_[k] = bufts;
  galloc_[k] = ggml_gallocr_new_n(bufts.data(), static_cast<int>(bufts.size()));
  if (galloc_[k] == nullptr) return ResourceExhausted("ggml_gallocr_new_n returned null");
  nbuf_[k] = static_cast<int>(bufts.size());
  cpu_threads_[k] = spec.cpu_threads;
  shadow_[k] = GallocrShadow();
  // Buffer ids as the layer adapter gives them: by position, round robin over the allocator's buffers.
  ids_[k].resize(kMaxBufferIds);
  for (int i = 0; i < kMaxBufferIds; ++i) ids_[k][i] = i % nbuf_[k];
  return Status::Ok();
}

Status GgmlGraphAdapter::SetPreallocated(int g, int t, bool on) {
  ++versions_[g];
  Status s = book_.SetPreallocated(g, t, on);
  if (!s.ok()) return s;
  // The tensor's memory changed, and with it what its views (in this graph) read: the next view of any
  // of them from another graph must not see the old placement (the layer's views lose their address).
  const Tensor* leaf = book_.tensor(g, t);
  for (int i = 0; i < book_.size(g); ++i) {
    if (book_.tensor(g, i) == leaf || book_.tensor(g, i)->root() == leaf) placed_[{g, i}] = nullptr;
  }
  return Status::Ok();
}

Status GgmlGraphAdapter::Reserve(int k, int g) {
  StatusOr<alloc::Graph> mirror = alloc::BuildGraph(book_.Outputs(g));
  if (!mirror.ok()) return mirror.status();
  ForgetPlacementsBy(k);
  if (Split(g)) {  // the scheduler plans it (its own gallocr); allocator k's gallocr keeps its plan
    Instance* inst = Build(g);
    // ggml_backend_sched gives every tensor a backend from the buffer of what it views (GGML_ASSERT otherwise):
    // it cannot plan a graph viewing a tensor that has no memory now, which gallocr plans as a leaf it does not
    // own. Nothing depends on a scheduler's plan (it plans again when it places), so that reserve is left out.
    for (int i = 0; i < book_.size(g); ++i) {
      const ggml_tensor* t = inst->t[i];
      if (t != nullptr && t->view_src != nullptr && t->view_src->data == nullptr) return Status::Ok();
    }
    sched_shadow_[k].Planned(inst->graph, "g" + std::to_string(g));
    if (!ggml_backend_sched_reserve(SchedulerFor(k, g, *inst), inst->graph)) {
      return ResourceExhausted("ggml_backend_sched_reserve failed");
    }
    return Status::Ok();
  }
  return ReserveN(k, Build(g)->graph, "g" + std::to_string(g));
}

namespace {

// Guard ggml-gallocr-hash-set-external-view-src: planning `graph` looks up more distinct tensors than the
// hash set that ggml_gallocr_reserve_n_impl sizes for it has slots (ggml_hash_find_or_insert aborts when
// full). The careful user's remedy, as llama.cpp's worst-case reserve does by accident: plan a graph big
// enough first (leafs with memory of their own: nothing is placed), which grows the set for good. Returns
// whether it did.
bool SizeHashSet(ggml_gallocr_t galloc, GallocrShadow& shadow, ggml_cgraph* graph, const int* ids,
                        const std::string& what) {
  const size_t keys = HashKeysOf(graph);
  const size_t slots = shadow.HashSizeFor(graph);
  if (keys <= slots || !GuardHolds(Guard::kGgmlGallocrHashSetExternalViewSrc, [&] {
        return "planning " + what + " (" + std::to_string(graph->n_nodes) + " nodes, " +
               std::to_string(graph->n_leafs) + " leafs) looks up " + std::to_string(keys) +
               " tensors in a hash set of " + std::to_string(slots) + " slots; a larger plan sizes it first";
      })) {
    return false;
  }
  SizingGraph sizing(keys);
  shadow.Planned(sizing.graph, "a sizing graph of " + std::to_string(keys) + " leafs");
  const bool ok = ggml_gallocr_reserve_n(galloc, sizing.graph, ids, ids);
  LIFELINE_CHECK(ok, "ggml_gallocr_reserve_n of a graph with nothing to place failed");
  LIFELINE_CHECK(shadow.hash_size >= keys, "the sizing graph did not grow gallocr's hash set");
  return true;
}

// Guards on a plan that ggml_gallocr_needs_realloc accepts for `graph`: whether the graph is re-planned
// first. A record ggml_gallocr_init_tensor would fail on decides alone (its guard, on or off: the failure
// would come before any placement mattered); else `*rewired` names a node whose sources moved (whether that
// matters is only seen in the placement: AllocAndCompute).
bool PlanIsStale(const GallocrShadow& shadow, const ggml_cgraph* graph, const std::string& what,
                        int* rewired) {
  const ggml_tensor* t = nullptr;
  switch (shadow.FirstFault(graph, &t)) {
    case PlanFault::kLeafRecord:
      return GuardHolds(Guard::kGgmlGallocrLeafRecordsUnchecked, [&] {
        return "leaf " + std::string(t->name) + " of " + what + " does not fit its record in the plan of " +
               shadow.planned + " (ggml_gallocr_needs_realloc compares no leaf records); re-planned first";
      });
    case PlanFault::kViewNodeOwnedRecord:
      return GuardHolds(Guard::kGgmlGallocrViewNodeOwnedRecord, [&] {
        return "view " + std::string(t->name) + " of " + what + " has an owned record in the plan of " +
               shadow.planned + " (a view needs 0 bytes, so every record fits it); re-planned first";
      });
    case PlanFault::kNone:
      break;
  }
  *rewired = shadow.FirstRewiredNode(graph);
  return false;
}

}  // namespace

// ggml_gallocr_reserve_n_size of graph g by allocator k: the buffer sizes its reserve would allocate, checked
// against a reserve's (CheckMeasuredSizes). It plans g as a reserve does (ggml-alloc.c runs the same
// ggml_gallocr_reserve_n_impl with no_alloc) and frees every buffer that plan outgrows, leaving it null.
// Guard ggml-gallocr-reserve-size-drops-buffers: a buffer the plan places tensors in (its measured size is
// not 0) reads 0 bytes afterwards, so it is null, and gallocr's plan is the graph just measured:
// ggml_gallocr_alloc_graph of that graph finds nothing to re-plan and places its tensors in the null buffer
// (ggml_vbuffer_tensor_alloc reads buf->chunks). The careful user's remedy: reserve the graph after measuring it.
// A split graph is measured by a reserve of its scheduler (ggml_backend_sched_reserve_size is not driven yet).
Status GgmlGraphAdapter::Measure(int k, int g) {
  StatusOr<alloc::Graph> mirror = alloc::BuildGraph(book_.Outputs(g));
  if (!mirror.ok()) return mirror.status();
  if (Split(g)) return Reserve(k, g);
#if !LIFELINE_GGML_HAS_GALLOCR_RESERVE_N_SIZE
  // A ggml without ggml_gallocr_reserve_n_size: the step plans the graph as the model has it (a Measure changes
  // the model as a Reserve does), by the one call that tree has; there is no measure to check.
  return Reserve(k, g);
#else
  ForgetPlacementsBy(k);
  Instance* inst = Build(g);
  const std::string what = "g" + std::to_string(g);
  SizeHashSet(galloc_[k], shadow_[k], inst->graph, ids_[k].data(), what);
  shadow_[k].Planned(inst->graph, what);
  std::vector<size_t> sizes(nbuf_[k], 0);
  ggml_gallocr_reserve_n_size(galloc_[k], inst->graph, ids_[k].data(), ids_[k].data(), sizes.data());
  LIFELINE_RETURN_IF_ERROR(CheckMeasuredSizes(k, inst->graph, sizes, what));
  for (int b = 0; b < nbuf_[k]; ++b) {
    if (FirstOfType(k, b) != b || sizes[b] == 0 || ggml_gallocr_get_buffer_size(galloc_[k], b) != 0) continue;
    if (GuardHolds(Guard::kGgmlGallocrReserveSizeDropsBuffers, [&] {
          return "measuring " + what + " left buffer " + std::to_string(b) + " of allocator " + std::to_string(k) +
                 " null (it needs " + std::to_string(sizes[b]) + " bytes), and the plan is " + what +
                 "'s: its next placement would find nothing to re-plan; reserved again";
        })) {
      return ReserveN(k, inst->graph, what);
    }
    break;
  }
  return Status::Ok();
#endif
}

// The kernel copies the elements past n_dims two at a time, so a row of odd length has one element written past
// its end (the last row's past the tensor).
Status GgmlGraphAdapter::RefuseOddRope(const ggml_tensor* t, const std::string& what) {
  if (t->op == GGML_OP_ROPE && t->src[0]->ne[0] % 2 != 0 &&
      GuardHolds(Guard::kGgmlCpuRopeOddRowOverflow, [&] {
        return std::string(t->name) + " is a rope of rows of " + std::to_string(t->src[0]->ne[0]) +
               " elements: the CPU kernel writes one element past each; " + what + " is refused before it is placed";
      })) {
    return Unimplemented(std::string(t->name) + ": ggml's CPU backend writes past a rope of odd rows " +
                         "(guard ggml-cpu-rope-odd-row-overflow)");
  }
  return Status::Ok();
}

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

int GgmlGraphAdapter::FirstOfType(int k, int b) const {
  for (int i = 0; i < b; ++i) {
    if (bufts_[k][i] == bufts_[k][b]) return i;
  }
  return b;
}

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

Status GgmlGraphAdapter::AllocAndCompute(int k, int g) {
  std::vector<Tensor*> outputs = book_.Outputs(g);
  StatusOr<alloc::Graph> mirror = alloc::BuildGraph(outputs);
  if (!mirror.ok()) return mirror.status();
  // The program's precondition: a leaf view of another graph's tensor has memory once that graph placed
  // it (or it is a pre-allocated leaf). ggml flattens view chains to their root when a view is created, so
  // it would give memory to a view of a never-placed view of a placed tensor; refused here, as layers/alloc
  // refuses it. (A view of a plain tensor that was never placed ggml leaves without memory itself: below.)
  for (Tensor* t : mirror->leafs) {
    const TensorSpec& spec = book_.spec(g, book_.IndexOf(g, t));
    if (spec.external_graph < 0) continue;
    auto it = placed_.find({spec.external_graph, spec.external_tensor});
    if ((it == placed_.end() || it->second == nullptr) && !book_.preallocated(spec.external_graph, spec.external_tensor)) {
      return FailedPrecondition(t->name + " views a tensor that its graph never placed");
    }
  }
  if (reuse_ && last_[k].g == g && last_[k].version == versions_[g] && ViewedGraphs(g).empty()) {
    return Recompute(k, g, outputs);
  }
  ForgetPlacementsBy(k);
  Instance* inst = Build(g);
  const std::string what = "g" + std::to_string(g);
  if (!inst->unsupported.empty()) return Unimplemented(what + ": " + inst->unsupported);
  LIFELINE_RETURN_IF_ERROR(Refuse(*inst, what));
  const bool split = Split(g);
  ggml_backend_sched_t sched = split ? Scheduler(k) : nullptr;
  const void* owner = split ? static_cast<const void*>(sched) : galloc_[k];
  const int id = split ? SchedulerId(k) : k;
  alloc::Graph placed;
  alloc::Graph executed;  // a split graph's nodes in the order the scheduler placed and runs them
  if (split) {
    // The program's order, taken before placing: the scheduler hands each backend a view of the build's node
    // array, and ggml-vulkan's graph_optimize reorders it in place. The reference runs in the order the
    // program built (what the graph means); the backend in whatever order the optimizer chose, which the node
    // array holds once the scheduler has placed the graph: the order its gallocr planned lifetimes for.
    placed = InGgmlOrder(*inst, mirror.value(), g);
    LIFELINE_RETURN_IF_ERROR(PlaceSplit(k, g, &inst, what));
    Mirror(g, *inst, id, owner);
    executed = InGgmlOrder(*inst, mirror.value(), g);
    // The scheduler hands each split to its backend's graph_optimize, which may reorder it (ggml-vulkan's does): named
    // among the upstream calls when it did, since a wrong result of a reordered graph is that call's to answer for.
    if (executed.nodes != placed.nodes) AddUpstreamCall("graph_optimize [reordered the nodes]");
  } else {
    int rewired = -1;
    LIFELINE_RETURN_IF_ERROR(Place(k, g, *inst, what, &rewired));
    Mirror(g, *inst, id, owner);
    placed = InGgmlOrder(*inst, mirror.value(), g);
    // Guard ggml-gallocr-stale-plan-rewired-edges, exact: the plan was kept although a node's sources moved, and
    // it puts two tensors that are live at once (by the graph's edges now) in the same bytes. Nothing in ggml
    // fails on it (the outputs would come out wrong), so the guard looks at the placement before computing:
    // the graph is built again, re-planned and placed afresh.
    if (rewired >= 0 && !oracles::CheckNoLiveOverlap(placed, owner).ok() &&
        GuardHolds(Guard::kGgmlGallocrStalePlanRewiredEdges, [&] {
          return "node " + std::string(ggml_graph_node(inst->graph, rewired)->name) + " of " + what +
                 " has other sources than node " + std::to_string(rewired) + " of the plan of " + shadow_[k].planned +
                 " (same counts and sizes, so ggml_gallocr_needs_realloc kept the plan), and that plan puts live " +
                 "tensors in the same bytes; re-planned and placed again";
        })) {
      inst = Build(g);
      LIFELINE_RETURN_IF_ERROR(ReserveN(k, inst->graph, what));
      LIFELINE_RETURN_IF_ERROR(Place(k, g, *inst, what, &rewired));
      Mirror(g, *inst, id, owner);
      placed = InGgmlOrder(*inst, mirror.value(), g);
    }
    std::vector<std::string> held = {plan_kept_ ? "kept plan" : "new plan"};
    if (rewired >= 0) held.push_back("edges changed since the plan");
    NoteUpstream(*inst, "ggml_gallocr_alloc_graph", std::move(held));
  }

  // A split graph runs in the scheduler's order (the splits one after the other, each as its backend's
  // graph_optimize reordered it): no two program tensors live at once in that order may share bytes. A tensor
  // read by a node on a backend that cannot use its buffer is read through the scheduler's copy, made when that
  // node's split starts: the scheduler keeps the original until then (its input_dep nodes) and may reuse its
  // bytes after (SplitReads). The scheduler's copies themselves are not program tensors and are not checked.
  if (split) {
    Status s = oracles::CheckNoLiveOverlap(executed, owner, SplitReads(Scheduler(k), *inst, executed, g));
    LIFELINE_CHECK(s.ok(), "ggml_backend_sched's placement of " + what + " (in the order it runs the splits): " +
                               s.ToString());
  }
  FillAndCompute(k, g, *inst, placed, split, outputs, what);
  placed_split_[g] = split;
  placed_by_[g] = k;
  for (int i = 0; i < book_.size(g); ++i) {
    if (inst->t[i] != nullptr) placed_[{g, i}] = inst->t[i];
  }
  last_[k] = LastPlacement{g, versions_[g], inst, placed, split};
  return Status::Ok();
}

void GgmlGraphAdapter::NoteUpstream(const Instance& inst, const std::string& call, std::vector<std::string> held) {
  std::string calls;
  for (const ggml_tensor* t : inst.t) {
    if (t == nullptr || t->view_src == nullptr || (t->flags & GGML_TENSOR_FLAG_OUTPUT) == 0) continue;
    if ((t->view_src->flags & GGML_TENSOR_FLAG_OUTPUT) == 0) {
      calls = "ggml_set_output [an output view's source is no output] / ";
      break;
    }
  }
  if (call.empty()) {
    if (!calls.empty()) calls.resize(calls.size() - 3);  // no " / " after the last
    SetUpstreamContext(std::move(calls));
    return;
  }
  calls += call;
  if (!held.empty()) {
    calls += " [";
    for (size_t i = 0; i < held.size(); ++i) calls += (i > 0 ? "; " : "") + held[i];
    calls += "]";
  }
  SetUpstreamContext(std::move(calls));
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

void GgmlGraphAdapter::Teardown() {
  Release();
  CheckReleased();  // frees what the backend's adapter holds itself (schedulers among it) first
  LIFELINE_CHECK(HostLiveBytes() == baseline_,
                 "baseline oracle: " + std::to_string(HostLiveBytes() - baseline_) +
                     " bytes of host buffers still held after every allocator was freed");
}

// ggml_gallocr_reserve_n of `graph` by allocator k, with the hash set sized first when it would overflow.
Status GgmlGraphAdapter::ReserveN(int k, ggml_cgraph* graph, const std::string& what) {
  SizeHashSet(galloc_[k], shadow_[k], graph, ids_[k].data(), what);
  shadow_[k].Planned(graph, what);
  if (!ggml_gallocr_reserve_n(galloc_[k], graph, ids_[k].data(), ids_[k].data())) {
    return ResourceExhausted("ggml_gallocr_reserve_n failed to allocate its buffers");
  }
  return Status::Ok();
}

// ggml_gallocr_alloc_graph of graph g's build `inst` by allocator k: it places the graph on the allocator's
// plan, or (one buffer) re-plans first when ggml_gallocr_needs_realloc says the plan is stale. The guards step
// in where that verdict is wrong (re-planning first, as ggml-alloc.h promises) and where re-planning would
// overflow the hash set. `*rewired`: a node whose sources moved while the plan is kept, else -1.
Status GgmlGraphAdapter::Place(int k, int g, Instance& inst, const std::string& what, int* rewired) {
  GallocrShadow& shadow = shadow_[k];
  *rewired = -1;
  bool needs_realloc = shadow.NeedsRealloc(inst.graph);
  plan_kept_ = !needs_realloc;
  if (!needs_realloc) {
    if (PlanIsStale(shadow, inst.graph, what, rewired)) {
      LIFELINE_RETURN_IF_ERROR(ReserveN(k, inst.graph, what));
      *rewired = -1;
      plan_kept_ = false;
    }
  } else if (nbuf_[k] == 1) {
    if (SizeHashSet(galloc_[k], shadow, inst.graph, ids_[k].data(), what)) {
      LIFELINE_RETURN_IF_ERROR(ReserveN(k, inst.graph, what));  // planned here, not by alloc_graph
      needs_realloc = false;
    } else {
      shadow.Planned(inst.graph, what);  // by alloc_graph's ggml_gallocr_reserve
    }
  }
  ForgetGallocrLog();
  const bool allocated = ggml_gallocr_alloc_graph(galloc_[k], inst.graph);
  LIFELINE_CHECK(GallocrLoggedRealloc() == needs_realloc,
                 "gallocr shadow: the adapter predicted ggml_gallocr_needs_realloc " +
                     std::string(needs_realloc ? "true" : "false") + " for " + what + " on the plan of " +
                     shadow.planned + ", ggml said otherwise (the guards' view of gallocr is wrong)");
  if (!allocated) {
    return FailedPrecondition("ggml_gallocr_alloc_graph: the graph needs a reserve_n first (several buffers)");
  }
  return NoTensorWithoutMemory(g, inst);
}

// A leaf view of a tensor that has no memory stays without memory ("allocated without ggml-backend").
Status GgmlGraphAdapter::NoTensorWithoutMemory(int g, const Instance& inst) const {
  for (int i = 0; i < book_.size(g); ++i) {
    ggml_tensor* t = inst.t[i];
    if (t != nullptr && t->data == nullptr) {
      return FailedPrecondition(std::string(t->name) + " has no memory after its graph was placed: it views " +
                                "a tensor that was never placed");
    }
  }
  return Status::Ok();
}

// The ggml tensor another graph's leaf view of (h, i) views: the one of h's latest placement, or, when
// h was never placed (or that tensor lost its memory since), one of a build that was not placed.
// `detached`: a stand-in in `ctx` holding (h, i)'s bytes at their host address, with no backend buffer (as
// ggml allows for memory from outside), so that the CPU backend can read them whatever holds the original.
ggml_tensor* GgmlGraphAdapter::Source(int h, int i, bool detached, ggml_context* ctx) {
  if (detached) {
    const Tensor* m = book_.tensor(h, i);
    ggml_tensor* s = ggml_new_tensor_4d(ctx, m->type == alloc::DType::kF16 ? GGML_TYPE_F16 : GGML_TYPE_F32, m->ne[0],
                                        m->ne[1], m->ne[2], m->ne[3]);
    s->data = m->data;
    return s;
  }
  auto it = placed_.find({h, i});
  if (it != placed_.end() && it->second != nullptr) return it->second;
  Instance* inst = Build(h);
  return inst->t[i];
}

// Builds graph g of the book afresh in a new ggml context (kept until teardown: later graphs may view
// its tensors). `detached`: every tensor from outside the graph is a stand-in on host memory (Source).
Instance* GgmlGraphAdapter::Build(int g, bool detached) {
  auto inst = std::make_unique<Instance>();
  ggml_init_params params{};
  params.mem_size = ggml_tensor_overhead() * 2 * kGraphSize + ggml_graph_overhead_custom(kGraphSize, false);
  params.no_alloc = true;
  inst->ctx = ggml_init(params);
  LIFELINE_CHECK(inst->ctx != nullptr, "ggml_init failed");
  inst->t.assign(book_.size(g), nullptr);
  inst->graph = ggml_new_graph_custom(inst->ctx, kGraphSize, false);
  for (Tensor* out : book_.Outputs(g)) {
    ggml_build_forward_expand(inst->graph, Make(*inst, g, book_.IndexOf(g, out), detached));
  }
  if (inst->weights_ctx != nullptr) PlaceWeights(*inst, g);
  instances_.push_back(std::move(inst));
  return instances_.back().get();
}

ggml_tensor* GgmlGraphAdapter::Make(Instance& inst, int g, int i, bool detached) {
  if (inst.t[i] != nullptr) return inst.t[i];
  const TensorSpec& spec = book_.spec(g, i);
  const Tensor* m = book_.tensor(g, i);
  ggml_context* ctx = inst.ctx;
  auto src = [&](int j) { return Make(inst, g, spec.src[j], detached); };
  const ggml_type type = m->type == alloc::DType::kF16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
  const bool inplace = spec.inplace;
  ggml_tensor* t = nullptr;
  switch (spec.op) {
    case alloc::Op::kNone:
      if (spec.external_graph >= 0) {
        t = ggml_view_tensor(ctx, Source(spec.external_graph, spec.external_tensor, detached, ctx));
      } else {
        const bool weight = book_.preallocated(g, i) && !detached && weights_;
        auto placed_weight = weights_placed_.find({g, i});
        if (weight && placed_weight != weights_placed_.end() && placed_weight->second->data == m->data) {
          // Placed once, as llama.cpp's weights are: every later build reads the same tensor, until the leaf
          // gets memory of another kind (a toggle gives the book a new block).
          t = placed_weight->second;
          if (m->input) ggml_set_input(t);
          break;
        }
        if (weight && inst.weights_ctx == nullptr) {
          ggml_init_params params{};
          params.mem_size = ggml_tensor_overhead() * kMaxTensorsPerGraph;
          params.no_alloc = true;
          inst.weights_ctx = ggml_init(params);
          LIFELINE_CHECK(inst.weights_ctx != nullptr, "ggml_init of a weights context failed");
        }
        // A weight lives in the weights context, as llama.cpp's model tensors do, and the graph reads it there.
        t = ggml_new_tensor_4d(weight ? inst.weights_ctx : ctx, type, m->ne[0], m->ne[1], m->ne[2], m->ne[3]);
        if (weight) {
          inst.weight_index.push_back(i);  // placed with the others once the graph is built (PlaceWeights)
        } else if (book_.preallocated(g, i)) {
          if (detached) {
            t->data = m->data;  // memory from outside, no backend buffer
          } else {
            BindPreallocated(t, g, i);
          }
        }
        if (m->input) ggml_set_input(t);
      }
      break;
    case alloc::Op::kScale:
      t = inplace ? ggml_scale_inplace(ctx, src(0), m->param) : ggml_scale(ctx, src(0), m->param);
      break;
    case alloc::Op::kNeg:
      t = inplace ? ggml_neg_inplace(ctx, src(0)) : ggml_neg(ctx, src(0));
      break;
    case alloc::Op::kAdd:
      t = inplace ? ggml_add_inplace(ctx, src(0), src(1)) : ggml_add(ctx, src(0), src(1));
      break;
    case alloc::Op::kMul:
      t = inplace ? ggml_mul_inplace(ctx, src(0), src(1)) : ggml_mul(ctx, src(0), src(1));
      break;
    case alloc::Op::kCopy: {
      ggml_tensor* a = src(0);
      t = ggml_cpy(ctx, a, ggml_new_tensor(ctx, type, GGML_MAX_DIMS, a->ne));
      break;
    }
    case alloc::Op::kConcat:
      t = ggml_concat(ctx, src(0), src(1), 3);
      break;
    case alloc::Op::kView:
      t = ggml_view_1d(ctx, src(0), m->ne[0], static_cast<size_t>(spec.view_offset) * ggml_type_size(src(0)->type));
      break;
    case alloc::Op::kReshape:
      t = ggml_reshape_1d(ctx, src(0), m->ne[0]);
      break;
    case alloc::Op::kRmsNorm:
      t = ggml_rms_norm(ctx, src(0), alloc::kRmsNormEps);
      break;
    case alloc::Op::kSoftMax:
      t = ggml_soft_max(ctx, src(0));
      break;
    case alloc::Op::kMulMat: {
      // The program's [ne0, ne1] tensors are ggml's [ne0, 1, 1, ne1]: multiplied as the 2-D matrices they are, and
      // the [M, N] product given the program's layout back (reshapes: views, nothing placed of their own).
      ggml_tensor* a = src(0);
      ggml_tensor* b = src(1);
      ggml_tensor* mm = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, a, a->ne[0], ggml_nelements(a) / a->ne[0]),
                                     ggml_reshape_2d(ctx, b, b->ne[0], ggml_nelements(b) / b->ne[0]));
      t = ggml_reshape_4d(ctx, mm, m->ne[0], 1, 1, m->ne[3]);
      if (m->output) ggml_set_output(mm);  // the product's own bytes are the output (ggml frees a view's source)
      break;
    }
    case alloc::Op::kTranspose: {
      // ggml_permute swaps dimensions 0 and 3 of the program's [ne0, 1, 1, ne1] as it stands; ggml_transpose swaps
      // the two of its 2-D reshape. Either is a view that is not contiguous, which ggml_cont copies out in order
      // (the 2-D copy is given the program's layout back by a reshape).
      ggml_tensor* a = src(0);
      ggml_tensor* c =
          ggml_cont(ctx, spec.permute ? ggml_permute(ctx, a, 3, 1, 2, 0)
                                      : ggml_transpose(ctx, ggml_reshape_2d(ctx, a, a->ne[0], ggml_nelements(a) / a->ne[0])));
      t = spec.permute ? c : ggml_reshape_4d(ctx, c, m->ne[0], 1, 1, m->ne[3]);
      if (m->output && t != c) ggml_set_output(c);  // as for mul_mat: the copy's own bytes are the output
      break;
    }
    case alloc::Op::kGetRows: {
      // ggml_get_rows picks rows of dimension 1, so the program's [ne0, 1, 1, ne1] is read as its 2-D [ne0, ne1];
      // the rows come from an int32 input, placed with the graph and set once it is placed (UploadRows), as
      // llama.cpp places and sets its token and KV-cache indices.
      ggml_tensor* a = src(0);
      std::vector<int32_t> rows(alloc::kMaxRows);
      RowsOf(spec, a->ne[3], rows.data());
      ggml_tensor* idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, m->ne[3]);
      ggml_set_input(idx);
      ggml_format_name(idx, "g%d.t%d.rows", g, i);
      inst.rows.emplace_back(idx, std::move(rows));
      ggml_tensor* got = ggml_get_rows(ctx, ggml_reshape_2d(ctx, a, a->ne[0], a->ne[3]), idx);
      t = ggml_reshape_4d(ctx, got, m->ne[0], 1, 1, m->ne[3]);
      if (m->output) ggml_set_output(got);  // as for mul_mat: the rows' own bytes are the output
      break;
    }
    case alloc::Op::kRope: {
      // ggml_rope_ext reads the program's [ne0, 1, 1, ne1] as [ne0, heads, tokens] (head size, heads, tokens, as
      // llama.cpp's Q and K), one position per token from an int32 input placed with the graph and set once placed
      // (UploadRows, like get_rows' index); no YaRN (freq_scale 1, ext_factor 0, attn_factor 1), no frequency factors.
      ggml_tensor* a = src(0);
      const alloc::RopeParams& r = spec.rope;
      std::vector<int32_t> positions = PositionsOf(spec);
      ggml_tensor* idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, static_cast<int64_t>(positions.size()));
      ggml_set_input(idx);
      ggml_format_name(idx, "g%d.t%d.positions", g, i);
      inst.rows.emplace_back(idx, std::move(positions));
      ggml_tensor* turned = ggml_rope_ext(ctx, ggml_reshape_3d(ctx, a, a->ne[0], r.heads, ggml_nrows(a) / r.heads), idx,
                                          nullptr, r.n_dims, r.mode, 0, alloc::kRopeFreqBase, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
      ggml_format_name(turned, "g%d.t%d.rope", g, i);
      t = ggml_reshape_4d(ctx, turned, m->ne[0], 1, 1, m->ne[3]);
      if (m->output) ggml_set_output(turned);  // as for mul_mat: the rope's own bytes are the output
      break;
    }
    case alloc::Op::kSetRows: {
      // ggml_set_rows writes rows of dimension 1, so the destination and the rows are read as their 2-D [ne0, ne1]
      // and [ne0, n]; the destination rows come from an index input placed with the graph and set once placed
      // (UploadRows). int32, which ggml.h allows beside llama.cpp's int64: the host buffer types align to 4 bytes
      // (HostTypeFor), and the kernel loads an int64 index in place (UBSan misaligned-address in
      // ggml_compute_forward_set_rows_impl at the first fuzzing of an int64 index, 2026-11-27). The result is a view of
      // the destination, as the program's is.
      ggml_tensor* a = src(0);
      ggml_tensor* b = src(1);
      if (!LIFELINE_GGML_HAS_SET_ROWS || !LIFELINE_GGML_SET_ROWS_I32 ||
          (b->type == GGML_TYPE_F16 && !LIFELINE_GGML_SET_ROWS_F16)) {
        // This tree's ggml_set_rows asserts against it (none at all, int64 indices only, float32 rows only): a view of
        // the destination stands in for the result, and the graph is refused before it is placed.
        inst.unsupported = std::string("this ggml's ggml_set_rows does not take ") +
                           (!LIFELINE_GGML_HAS_SET_ROWS ? "anything (it has none)"
                            : !LIFELINE_GGML_SET_ROWS_I32 ? "int32 row indices"
                                                           : "float16 source rows");
        t = ggml_view_tensor(ctx, a);
        break;
      }
      std::vector<int32_t> rows(alloc::kMaxRows);
      SetRowsOf(spec, b->ne[3], a->ne[3], rows.data());
      rows.resize(static_cast<size_t>(b->ne[3]));
      ggml_tensor* idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, b->ne[3]);
      ggml_set_input(idx);
      ggml_format_name(idx, "g%d.t%d.rows", g, i);
      inst.rows.emplace_back(idx, std::move(rows));
#if LIFELINE_GGML_HAS_SET_ROWS
      ggml_tensor* set = ggml_set_rows(ctx, ggml_reshape_2d(ctx, a, a->ne[0], a->ne[3]),
                                       ggml_reshape_2d(ctx, b, b->ne[0], b->ne[3]), idx);
#else
      ggml_tensor* set = nullptr;  // refused above
#endif
      ggml_format_name(set, "g%d.t%d.set_rows", g, i);
      t = ggml_reshape_4d(ctx, set, m->ne[0], 1, 1, m->ne[3]);
      break;
    }
    case alloc::Op::kConvDw: {
      // One channel, one image: the kernel [KW, 1, 1, KH] read as ggml's [KW, KH, 1, 1] and the input [W, 1, 1, H] as
      // [W, H, 1, 1]; dilation 1. The result [W_out, H_out, 1, 1], of the input's type, read back as the program's.
      ggml_tensor* a = src(0);
      ggml_tensor* b = src(1);
#if LIFELINE_GGML_HAS_CONV_2D_DW_DIRECT
      ggml_tensor* conv = ggml_conv_2d_dw_direct(ctx, ggml_reshape_4d(ctx, a, a->ne[0], a->ne[3], 1, 1),
                                                 ggml_reshape_4d(ctx, b, b->ne[0], b->ne[3], 1, 1), spec.conv.stride,
                                                 spec.conv.stride, spec.conv.pad, spec.conv.pad, 1, 1);
      ggml_format_name(conv, "g%d.t%d.conv_2d_dw", g, i);
      t = ggml_reshape_4d(ctx, conv, m->ne[0], 1, 1, m->ne[3]);
      if (m->output) ggml_set_output(conv);  // as for mul_mat: the convolution's own bytes are the output
#else
      // The tree lacks it (AllocatorRules::draws_conv is false there, so only a hand-written program gets here): a view
      // of the input stands in, and the graph is refused before it is placed.
      inst.unsupported = "this ggml has no ggml_conv_2d_dw_direct";
      t = ggml_view_tensor(ctx, b);
#endif
      break;
    }
  }
  ggml_format_name(t, "g%d.t%d", g, i);
  if (m->output) ggml_set_output(t);
  // Guard ggml-set-output-view-src-freed: ggml_set_output of a view marks the view alone in ggml before ggml-org/ggml
  // d727fbbd (whisper.cpp 1.9.1's copy among them), so gallocr frees the view's source after its last reader and
  // reuses its bytes under an output. The user's way out, and the fix: the source is marked an output too.
  if (m->output && t->view_src != nullptr && (t->view_src->flags & GGML_TENSOR_FLAG_OUTPUT) == 0 &&
      GuardHolds(Guard::kGgmlSetOutputViewSrcFreed, [&] {
        return std::string(t->name) + ", an output, views " + t->view_src->name + ", which ggml_set_output left " +
               "without the output flag; " + t->view_src->name + " is marked an output too";
      })) {
    ggml_set_output(t->view_src);
  }
  inst.t[i] = t;
  return t;
}

// The program's tensors of graph g take the (host) addresses of what ggml gave them; those whose bytes
// (through ggml's view chain: in-place results, ggml_cpy's destination) lie in a buffer of allocator id `id`
// (a gallocr's or a scheduler's) are `owner`'s.
void GgmlGraphAdapter::Mirror(int g, const Instance& inst, int id, const void* owner) {
  for (int i = 0; i < book_.size(g); ++i) {
    ggml_tensor* t = inst.t[i];
    if (t == nullptr) continue;
    Tensor* m = book_.tensor(g, i);
    m->data = HostAddress(t);
    const ggml_tensor* root = t;
    while (root->view_src != nullptr) root = root->view_src;
    m->owner = root->buffer != nullptr && AllocatorOf(root->buffer) == id ? owner : nullptr;
  }
}

// The program's tensors of graph g by the ggml tensor that stands for each in the build. A program tensor that
// Make gives the program's layout back by a reshape (mul_mat, get_rows, a 2-D transpose, rope, set_rows) stands
// for the node that computes it, the reshape's source (InGgmlOrder says why).
std::unordered_map<const ggml_tensor*, alloc::Tensor*> GgmlGraphAdapter::MirrorOf(const Instance& inst, int g) {
  std::unordered_map<const ggml_tensor*, Tensor*> back;
  for (int i = 0; i < book_.size(g); ++i) {
    const ggml_tensor* t = inst.t[i];
    if (t == nullptr) continue;
    const alloc::Op op = book_.spec(g, i).op;
    if (t->op == GGML_OP_RESHAPE &&
        (op == alloc::Op::kMulMat || op == alloc::Op::kGetRows || op == alloc::Op::kTranspose || op == alloc::Op::kRope ||
         op == alloc::Op::kSetRows || op == alloc::Op::kConvDw)) {
      t = t->src[0];
    }
    back[t] = book_.tensor(g, i);
  }
  return back;
}

// The program's graph with its nodes in the order ggml runs them (lifetimes depend on it).
//
// A program tensor that Make gives the program's layout back by a reshape takes the place of the node that
// computes it, the reshape's source (MirrorOf): ggml-vulkan's graph_optimize moves computing nodes forward and
// leaves reshapes (no compute) where they were, so the reshape's place can come after a node that the computed
// bytes were already read by (seen: a get_rows run before a mul that the reshape's place put first, which made the
// no-overlap oracle see two live tensors in the same bytes where ggml ran them one after the other, with right
// outputs).
alloc::Graph GgmlGraphAdapter::InGgmlOrder(const Instance& inst, const alloc::Graph& mirror, int g) {
  const std::unordered_map<const ggml_tensor*, Tensor*> back = MirrorOf(inst, g);
  alloc::Graph out;
  out.leafs = mirror.leafs;
  for (int i = 0; i < ggml_graph_n_nodes(inst.graph); ++i) {
    auto it = back.find(ggml_graph_node(inst.graph, i));
    if (it != back.end()) out.nodes.push_back(it->second);
  }
  LIFELINE_CHECK(out.nodes.size() == mirror.nodes.size(),
                 "ggml built " + std::to_string(out.nodes.size()) + " nodes of the program's " +
                     std::to_string(mirror.nodes.size()) + " for g" + std::to_string(g));
  return out;
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

void GgmlGraphAdapter::Release() {
  for (ggml_gallocr_t& a : galloc_) {
    ggml_gallocr_free(a);
    a = nullptr;
  }
  placed_.clear();
  weights_placed_.clear();
  for (LastPlacement& last : last_) last = LastPlacement();
  versions_.clear();
  placed_by_.clear();
  placed_split_.clear();
  instances_.clear();
  book_.Clear();
}

}  // namespace lifeline::graphs::internal
