// GgmlGraphAdapter's scheduler path (ggml_graph_adapter.h, SplitsCpuMarks): which graphs go to a
// ggml_backend_sched, and how they are placed there, with the guards of the findings that reach it.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/guards.h"
#include "harness/programs/graph/upstream/ggml_graph_adapter.h"

namespace lifeline::graphs::internal {

using alloc::Tensor;

// Allocator k is about to plan or place: what it placed before may move (a gallocr's or a scheduler's reserve
// frees and reallocates its buffers as it needs). With split graphs, a later build must not view those tensors:
// ggml_backend_sched's backend assignment reads a viewed tensor's buffer, which may be freed by then. (The model
// never lets a placement view them: Model::AllocLegal; only plans may, and a plan of a view of an unplaced tensor
// is what the program means.) Without split graphs gallocr reads no such buffer, and placements stay as they are.
void GgmlGraphAdapter::ForgetPlacementsBy(int k) {
  last_[k] = LastPlacement();  // allocator k acts again: what it placed last is no longer its last act
  if (!SplitsCpuMarks()) return;
  for (auto& [key, t] : placed_) {
    auto by = placed_by_.find(key.first);
    if (by != placed_by_.end() && by->second == k) t = nullptr;
  }
}

// The graphs whose bytes graph g's reachable leaf views read, through views of views too (Model::ViewedGraphs).
std::vector<int> GgmlGraphAdapter::ViewedGraphs(int g) const {
  auto sources = [&](int h) {
    std::vector<int> out;
    StatusOr<alloc::Graph> graph = alloc::BuildGraph(book_.Outputs(h));
    if (!graph.ok()) return out;
    for (const Tensor* leaf : graph->leafs) {
      const int x = book_.spec(h, book_.IndexOf(h, leaf)).external_graph;
      if (x >= 0) out.push_back(x);
    }
    return out;
  };
  std::vector<int> out;
  std::vector<int> stack = sources(g);
  while (!stack.empty()) {
    const int h = stack.back();
    stack.pop_back();
    if (std::find(out.begin(), out.end(), h) != out.end()) continue;
    out.push_back(h);
    for (int x : sources(h)) stack.push_back(x);
  }
  return out;
}

// As Model::Split decides it: every graph of a Program::scheduled program, a reachable op marked `cpu`, or bytes
// read from a graph last placed split.
bool GgmlGraphAdapter::Split(int g) const {
  if (!SplitsCpuMarks()) return false;
  if (scheduled_) return true;
  StatusOr<alloc::Graph> graph = alloc::BuildGraph(book_.Outputs(g));
  if (graph.ok()) {
    for (const Tensor* t : graph->nodes) {
      if (book_.spec(g, book_.IndexOf(g, t)).cpu) return true;
    }
  }
  for (int h : ViewedGraphs(g)) {
    auto it = placed_split_.find(h);
    if (it != placed_split_.end() && it->second) return true;
  }
  return false;
}

// Allocator k's scheduler, reset, with graph g's ops marked `cpu` (built as `inst`) on the CPU backend; the
// scheduler gives the others to the first backend that supports them, and views their source's.
//
// Plain leafs (no memory, not inputs) go to the first backend explicitly: the scheduler gives a backend to
// inputs (the CPU) and to tensors with memory (their buffer's), and leaves such a leaf without one when nothing
// else assigns it, which gallocr then asserts on (GGML_ASSERT(buffer_id >= 0) in ggml_gallocr_allocate_node,
// seen from corpus/ggml_graph_topology/5b8149e6...: a leaf read only through a view). llama.cpp's graphs have
// no such leafs: every leaf is a weight with memory or an input.
ggml_backend_sched_t GgmlGraphAdapter::SchedulerFor(int k, int g, const Instance& inst) {
  ggml_backend_sched_t sched = Scheduler(k);
  ggml_backend_sched_reset(sched);
  for (int i = 0; i < book_.size(g); ++i) {
    const ggml_tensor* t = inst.t[i];
    if (t == nullptr) continue;
    if (book_.spec(g, i).cpu) {
      ggml_backend_sched_set_tensor_backend(sched, inst.t[i], Cpu());
    } else if (t->op == GGML_OP_NONE && t->view_src == nullptr && t->data == nullptr &&
               (t->flags & GGML_TENSOR_FLAG_INPUT) == 0) {
      ggml_backend_sched_set_tensor_backend(sched, inst.t[i], ggml_backend_sched_get_backend(sched, 0));
    }
  }
  return sched;
}

// ggml_backend_sched_alloc_graph of graph g's build `inst` by allocator k's scheduler (it plans as it needs).
//
// Guard ggml-sched-inplace-writer-backend: the scheduler can give an op that writes into another tensor's
// memory (an in-place result: a view that is not a view op) a backend that cannot reach that memory: it copies
// a split's inputs in but never its results out (llama.cpp PR #28075 and #27311, both open). The CPU backend
// then computes through ggml-vulkan's device address, and a pinned writer alone does not help: its result, read
// by the next split, gets its input copy in the wrong backend's buffer (seen on repro/ggml-sched-inplace-writer-
// backend). The guard takes the user's way out: the graph is placed again with every tensor on the first backend
// (still through the scheduler), so nothing crosses backends.
//
// The gallocr findings reach the scheduler too: its gallocr keeps a plan on ggml_gallocr_needs_realloc's word, as
// allocator k's does. Their guards cannot see the scheduler's own graph (its split copies included), so they
// act on the program's, through a shadow of what the scheduler planned last: when that plan would be kept and
// a leaf does not fit its record (ggml-gallocr-leaf-records-unchecked), a view node meets an owned record
// (ggml-gallocr-view-node-owned-record), or a node's sources or output flag moved by position
// (ggml-gallocr-stale-plan-rewired-edges), the scheduler reserves the graph first (a new build is placed:
// planning rewires a build's sources to the scheduler's copies).
Status GgmlGraphAdapter::PlaceSplit(int k, int g, Instance** placed, const std::string& what) {
  GallocrShadow& shadow = sched_shadow_[k];
  const std::string planned_by = ", which allocator " + std::to_string(k) + "'s scheduler planned last; it reserves "
                                 "the graph first";
  bool replan = false;
  if (!shadow.planned.empty() && !shadow.NeedsRealloc((*placed)->graph)) {
    // The leaf-record and view-node findings reach the scheduler's gallocr as well, on a plan it keeps.
    const ggml_tensor* t = nullptr;
    switch (shadow.FirstFault((*placed)->graph, &t)) {
      case PlanFault::kLeafRecord:
        replan = GuardHolds(Guard::kGgmlGallocrLeafRecordsUnchecked, [&] {
          return "leaf " + std::string(t->name) + " of " + what + " does not fit its record in " + shadow.planned +
                 planned_by;
        });
        break;
      case PlanFault::kViewNodeOwnedRecord:
        replan = GuardHolds(Guard::kGgmlGallocrViewNodeOwnedRecord, [&] {
          return "view " + std::string(t->name) + " of " + what + " has an owned record in " + shadow.planned +
                 planned_by;
        });
        break;
      case PlanFault::kNone:
        break;
    }
  }
  const int rewired = replan || shadow.planned.empty() ? -1 : shadow.FirstRewiredNode((*placed)->graph);
  if (rewired >= 0) {
    replan = GuardHolds(Guard::kGgmlGallocrStalePlanRewiredEdges, [&] {
      return "node " + std::string(ggml_graph_node((*placed)->graph, rewired)->name) + " of " + what +
             " has other sources or output flag than node " + std::to_string(rewired) + " of " + shadow.planned +
             planned_by;
    });
  }
  if (replan) {
    if (!ggml_backend_sched_reserve(SchedulerFor(k, g, **placed), (*placed)->graph)) {
      return ResourceExhausted("ggml_backend_sched_reserve of " + what + " failed");
    }
    *placed = Build(g);
  }
  shadow.Planned((*placed)->graph, what);  // before the scheduler rewires and reorders the build
  // Every other placement is split alone first, as llama.cpp's graph_reserve(split_only) counts a graph's splits
  // ("Split graph without allocating it", ggml-backend.h): on a build of its own, since splitting rewires a
  // build's sources to the scheduler's copies. The placement's own split must then count as many.
  int split_only = -1;
  // (A ggml whose ggml-backend.h has no ggml_backend_sched_split_graph: no split alone, every placement as it comes.)
  if (LIFELINE_GGML_HAS_BACKEND_SCHED_SPLIT_GRAPH && ++sched_placements_ % 2 == 0) {
    Instance& probe = *Build(g);
    ggml_backend_sched_t sched = SchedulerFor(k, g, probe);
#if LIFELINE_GGML_HAS_BACKEND_SCHED_SPLIT_GRAPH
    ggml_backend_sched_split_graph(sched, probe.graph);
#endif
    split_only = ggml_backend_sched_get_n_splits(sched);
  }
  Instance& inst = **placed;
  ggml_backend_sched_t sched = SchedulerFor(k, g, inst);
  if (!ggml_backend_sched_alloc_graph(sched, inst.graph)) {
    return ResourceExhausted("ggml_backend_sched_alloc_graph of " + what + " failed");
  }
  LIFELINE_CHECK(split_only < 0 || ggml_backend_sched_get_n_splits(sched) == split_only,
                 "ggml_backend_sched: " + what + " placed in " + std::to_string(ggml_backend_sched_get_n_splits(sched)) +
                     " splits, but ggml_backend_sched_split_graph of the same graph with the same assignments made " +
                     std::to_string(split_only));
  // Guard ggml-sched-split-graph-hides-backend-change: ggml_backend_sched_split_graph keeps the backends it assigned
  // as the ones the next ggml_backend_sched_alloc_graph compares with (it swaps node_backend_ids into
  // prev_node_backend_ids) although it planned nothing. So when the split alone above assigned this graph's nodes as
  // this placement does, but the scheduler's gallocr last planned them on other backends, alloc_graph sees no change,
  // ggml_gallocr_alloc_graph keeps that plan, and a node lands in another backend's buffer (the backend then reads
  // that buffer's context as its own: heap-buffer-overflow in ggml_vk_tensor_subbuffer). The user's way out, as
  // llama.cpp reserves again after its split-only probes: reserve the graph, then place a new build.
  // What held when the scheduler placed the build that the checks below look at (NoteUpstream).
  std::vector<std::string> held;
  if (split_only >= 0) held.push_back("after ggml_backend_sched_split_graph of the same graph");
  if (rewired >= 0 && !replan) held.push_back("edges changed since the plan");
  if (split_only >= 0) {
    const ggml_tensor* misplaced = InForeignBuffer(k, sched, inst);
    if (misplaced != nullptr && GuardHolds(Guard::kGgmlSchedSplitGraphHidesBackendChange, [&] {
          ggml_backend_t b = ggml_backend_sched_get_tensor_backend(sched, const_cast<ggml_tensor*>(misplaced));
          return std::string(misplaced->name) + " of " + what + " lies in a " +
                 ggml_backend_buft_name(ggml_backend_buffer_get_type(misplaced->buffer)) +
                 " buffer, but the scheduler gave it " + ggml_backend_name(b) +
                 ": ggml_backend_sched_split_graph before it hid the change of backends from alloc_graph; the graph " +
                 "is reserved and placed again";
        })) {
      Instance& reserved = *Build(g);
      if (!ggml_backend_sched_reserve(SchedulerFor(k, g, reserved), reserved.graph)) {
        return ResourceExhausted("ggml_backend_sched_reserve of " + what + " failed");
      }
      Instance& again = *(*placed = Build(g));
      shadow.Planned(again.graph, what);
      sched = SchedulerFor(k, g, again);
      if (!ggml_backend_sched_alloc_graph(sched, again.graph)) {
        return ResourceExhausted("ggml_backend_sched_alloc_graph of " + what + " after its reserve failed");
      }
      held = {"after ggml_backend_sched_reserve"};
    }
  }
  const ggml_tensor* writer = nullptr;
  for (int i = 0; i < ggml_graph_n_nodes((*placed)->graph) && writer == nullptr; ++i) {
    const ggml_tensor* t = ggml_graph_node((*placed)->graph, i);
    if (t->view_src == nullptr || t->view_src->buffer == nullptr || IsViewOp(t->op)) continue;
    if (!ggml_backend_supports_buft(ggml_backend_sched_get_tensor_backend(sched, const_cast<ggml_tensor*>(t)),
                                    t->view_src->buffer->buft)) {
      writer = t;
    }
  }
  if (writer != nullptr && GuardHolds(Guard::kGgmlSchedInplaceWriterBackend, [&] {
        return std::string(writer->name) + " of " + what + " writes into " + writer->view_src->name +
               ", which lies in a " + ggml_backend_buft_name(writer->view_src->buffer->buft) +
               " buffer, but the scheduler gave it " +
               ggml_backend_name(ggml_backend_sched_get_tensor_backend(sched, const_cast<ggml_tensor*>(writer))) +
               ", which cannot reach it; the graph is placed again with every tensor on " +
               ggml_backend_name(ggml_backend_sched_get_backend(sched, 0));
      })) {
    // The scheduler has rewired the build's sources to its input copies: a new build is placed.
    Instance& again = *(*placed = Build(g));
    ggml_backend_sched_reset(sched);
    ggml_backend_t first = ggml_backend_sched_get_backend(sched, 0);
    for (int i = 0; i < ggml_graph_n_nodes(again.graph); ++i) {
      ggml_backend_sched_set_tensor_backend(sched, ggml_graph_node(again.graph, i), first);
    }
    for (ggml_tensor* t : again.t) {
      if (t != nullptr && t->op == GGML_OP_NONE && t->view_src == nullptr && t->data == nullptr) {
        ggml_backend_sched_set_tensor_backend(sched, t, first);
      }
    }
    if (!ggml_backend_sched_alloc_graph(sched, again.graph)) {
      return ResourceExhausted("ggml_backend_sched_alloc_graph of " + what + " on one backend failed");
    }
    held.push_back("every node on one backend");  // after ggml_backend_sched_reset: an earlier split still counts
  }
  NoteUpstream(**placed, "ggml_backend_sched_alloc_graph", std::move(held));
  CheckSchedulerAnswers(k, sched, **placed, what);
  return NoTensorWithoutMemory(g, **placed);
}

// The first leaf or node of `inst`'s graph that scheduler k placed (its own bytes, in one of the scheduler's buffers)
// in a buffer whose type is not the one get_buffer_type reports for the tensor's backend; null when there is none (or
// the tensor has no backend: CheckSchedulerAnswers says so for the program's tensors). The build's own helpers count
// too: a copy's destination is a leaf of the graph, not a program tensor, and ggml-vulkan reads its buffer alike.
// A ggml whose ggml-backend.h has no ggml_backend_sched_get_buffer_type has no answer to compare with: none found.
const ggml_tensor* GgmlGraphAdapter::InForeignBuffer(int k, ggml_backend_sched_t sched, const Instance& inst) {
#if !LIFELINE_GGML_HAS_BACKEND_SCHED_GET_BUFFER_TYPE
  (void)k, (void)sched, (void)inst;
  return nullptr;
#else
  for (int leafs = 1; leafs >= 0; --leafs) {
    const int n = leafs ? inst.graph->n_leafs : ggml_graph_n_nodes(inst.graph);
    for (int i = 0; i < n; ++i) {
      ggml_tensor* t = leafs ? inst.graph->leafs[i] : ggml_graph_node(inst.graph, i);
      if (t->view_src != nullptr || t->buffer == nullptr || AllocatorOf(t->buffer) != SchedulerId(k)) continue;
      ggml_backend_t b = ggml_backend_sched_get_tensor_backend(sched, t);
      if (b != nullptr && ggml_backend_buffer_get_type(t->buffer) != ggml_backend_sched_get_buffer_type(sched, b)) {
        return t;
      }
    }
  }
  return nullptr;
#endif
}

// Where each node of a placed split graph (`executed`, the program's tensors in the order the scheduler runs them)
// reads each of its sources, for the no-overlap oracle: where the node runs, unless its backend cannot use the
// buffer the source's bytes lie in. Then it reads the scheduler's copy of the source on its backend, made once,
// when the first split on that backend that reads the source starts (ggml_backend_sched_split_graph makes one copy
// per source and backend; the later splits read it too), and the original's bytes are free for reuse after that:
// the original is read just before that split's first node (its position less one).
// A split is taken to start where the run of nodes on one backend that holds its first reader starts (view ops
// aside: the split pass skips them). The scheduler may start a split inside such a run too, later: the oracle
// then ends such an original's life early, which can hide an overlap but never report one that is not there.
oracles::ReadAt GgmlGraphAdapter::SplitReads(ggml_backend_sched_t sched, const Instance& inst,
                                             const alloc::Graph& executed, int g) {
  std::unordered_map<const Tensor*, ggml_tensor*> ggml_of;
  for (const auto& [t, mirror] : MirrorOf(inst, g)) ggml_of[mirror] = const_cast<ggml_tensor*>(t);
  std::map<std::pair<ggml_backend_t, const Tensor*>, int> copied_at;  // (backend, source) -> where it is copied
  std::map<std::pair<int, const Tensor*>, int> read_at;               // (node, source) -> where it is read
  ggml_backend_t run = nullptr;
  int run_start = 0;
  for (int i = 0; i < static_cast<int>(executed.nodes.size()); ++i) {
    auto it = ggml_of.find(executed.nodes[i]);
    if (it == ggml_of.end() || IsViewOp(it->second->op)) continue;
    ggml_backend_t backend = ggml_backend_sched_get_tensor_backend(sched, it->second);
    if (backend == nullptr) continue;
    if (backend != run) {
      run = backend;
      run_start = i;
    }
    for (const Tensor* src : executed.nodes[i]->src) {
      auto s = ggml_of.find(src);
      if (s == ggml_of.end()) continue;
      const ggml_tensor* root = s->second->view_src != nullptr ? s->second->view_src : s->second;
      if (root->buffer == nullptr || ggml_backend_supports_buft(backend, ggml_backend_buffer_get_type(root->buffer))) {
        continue;
      }
      read_at[{i, src}] = copied_at.emplace(std::make_pair(backend, src), run_start - 1).first->second;
    }
  }
  return [read_at = std::move(read_at)](int i, const Tensor* src) {
    auto it = read_at.find({i, src});
    return it == read_at.end() ? i : it->second;
  };
}

// What the scheduler says of the graph it has just placed (ggml-backend.h's queries), against what it did:
// get_n_backends is the 2 it was made with and get_n_copies 1 (it was made without pipeline parallelism); every
// leaf and node of the build it placed (its own bytes, in one of its buffers) lies in a buffer of the type
// get_buffer_type reports for the tensor's backend (InForeignBuffer); every such program tensor has a backend and a
// buffer no larger than the get_buffer_size it reports for that backend; and
// get_n_splits is at least the number of runs of nodes on one backend in the order it runs them (view ops
// aside: the split pass skips them).
void GgmlGraphAdapter::CheckSchedulerAnswers(int k, ggml_backend_sched_t sched, const Instance& inst,
                                             const std::string& what) {
  const std::string of = "ggml_backend_sched, after placing " + what + ": ";
  LIFELINE_CHECK(ggml_backend_sched_get_n_backends(sched) == 2,
                 of + "get_n_backends says " + std::to_string(ggml_backend_sched_get_n_backends(sched)) + ", not 2");
  LIFELINE_CHECK(ggml_backend_sched_get_n_copies(sched) == 1,
                 of + "get_n_copies says " + std::to_string(ggml_backend_sched_get_n_copies(sched)) + ", not 1");
  int runs = 0;
  ggml_backend_t last = nullptr;
  for (int i = 0; i < ggml_graph_n_nodes(inst.graph); ++i) {
    ggml_tensor* n = ggml_graph_node(inst.graph, i);
    if (IsViewOp(n->op)) continue;
    ggml_backend_t b = ggml_backend_sched_get_tensor_backend(sched, n);
    if (b != last) ++runs;
    last = b;
  }
  const int splits = ggml_backend_sched_get_n_splits(sched);
  LIFELINE_CHECK(splits >= runs, of + "get_n_splits says " + std::to_string(splits) + ", but its nodes run on " +
                                     std::to_string(runs) + " stretches of one backend each");
#if LIFELINE_GGML_HAS_BACKEND_SCHED_GET_BUFFER_TYPE  // InForeignBuffer finds none without it
  const ggml_tensor* foreign = InForeignBuffer(k, sched, inst);
  if (foreign != nullptr) {
    ggml_backend_t b = ggml_backend_sched_get_tensor_backend(sched, const_cast<ggml_tensor*>(foreign));
    LIFELINE_CHECK(foreign == nullptr, of + std::string(foreign->name) + " lies in a " +
                                           ggml_backend_buft_name(ggml_backend_buffer_get_type(foreign->buffer)) +
                                           " buffer, but get_buffer_type says " + ggml_backend_name(b) + "'s is " +
                                           ggml_backend_buft_name(ggml_backend_sched_get_buffer_type(sched, b)));
  }
#endif
  for (ggml_tensor* t : inst.t) {
    if (t == nullptr || t->view_src != nullptr || t->buffer == nullptr || AllocatorOf(t->buffer) != SchedulerId(k))
      continue;
    ggml_backend_t b = ggml_backend_sched_get_tensor_backend(sched, t);
    LIFELINE_CHECK(b != nullptr, of + std::string(t->name) + " lies in its buffer but has no backend");
    const size_t size = ggml_backend_buffer_get_size(t->buffer);
    const size_t said = ggml_backend_sched_get_buffer_size(sched, b);
    LIFELINE_CHECK(size <= said, of + std::string(t->name) + " lies in a buffer of " + std::to_string(size) +
                                     " bytes, but get_buffer_size says " + ggml_backend_name(b) + "'s are " +
                                     std::to_string(said));
  }
}

}  // namespace lifeline::graphs::internal
