// GgmlGraphAdapter (ggml_graph_adapter.h): what the upstream graph adapters share, on gallocr: its allocators,
// plans and placements with the guards of the findings they meet, and the placement as the oracles read it. A
// graph's build is ggml_graph_build.cc, its compute under the oracles ggml_graph_compute.cc, the fresh-allocator
// differentials ggml_fresh_gallocr.cc; the scheduler path of split graphs is ggml_graph_split.cc, the host side
// ggml_host.cc.
#include "harness/programs/graph/upstream/ggml_graph_adapter.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/guards.h"
#include "harness/programs/graph/upstream/gallocr_sizing.h"

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

// Guard ggml-gallocr-hash-set-external-view-src (gallocr_sizing.h): planning `graph` looks up more distinct tensors
// than the hash set that ggml_gallocr_reserve_n_impl sizes for it has slots; a graph big enough is planned first.
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

namespace {

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

int GgmlGraphAdapter::FirstOfType(int k, int b) const {
  for (int i = 0; i < b; ++i) {
    if (bufts_[k][i] == bufts_[k][b]) return i;
  }
  return b;
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
