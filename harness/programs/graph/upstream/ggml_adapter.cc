// GgmlAdapter (see ggml_adapter.h): graph programs on upstream ggml's gallocr, host buffers, CPU backend; and
// GgmlGraphAdapter (ggml_graph_adapter.h), the part it shares with the Vulkan adapter.
#include "harness/programs/graph/upstream/ggml_adapter.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ggml-cpu.h"
#include "core/check.h"
#include "core/guards.h"
#include "core/upstream_hooks.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/graph/upstream/ggml_graph_adapter.h"
#include "layers/alloc/eval.h"

namespace lifeline::graphs {
namespace internal {
namespace {

using alloc::Tensor;

constexpr size_t kBlockAlignment = 64;                       // host blocks; >= every program alignment
constexpr size_t kMinAlignment = sizeof(float);              // see HostTypeFor
constexpr int kMaxBufferIds = 2 * kGraphSize;                // node/leaf buffer id arrays for reserve_n

// ---- host buffers with the program's alignment -----------------------------------------------------

struct HostBlock {
  uint8_t* base;
  size_t size;
};

int64_t g_live_bytes = 0;                      // bytes of host buffers not yet freed
std::vector<ggml_backend_buffer_t> g_live;     // those buffers

HostBlock* BlockOf(ggml_backend_buffer_t b) { return static_cast<HostBlock*>(b->context); }
HostBufferType* TypeOf(ggml_backend_buffer_type_t t) { return static_cast<HostBufferType*>(t->context); }

void HostFree(ggml_backend_buffer_t b) {
  HostBlock* block = BlockOf(b);
  g_live_bytes -= static_cast<int64_t>(block->size);
  for (size_t i = 0; i < g_live.size(); ++i) {
    if (g_live[i] == b) {
      g_live.erase(g_live.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  std::free(block->base);
  delete block;
}
void* HostGetBase(ggml_backend_buffer_t b) { return BlockOf(b)->base; }
void HostMemset(ggml_backend_buffer_t, ggml_tensor* t, uint8_t value, size_t offset, size_t size) {
  std::memset(static_cast<uint8_t*>(t->data) + offset, value, size);
}
void HostSet(ggml_backend_buffer_t, ggml_tensor* t, const void* data, size_t offset, size_t size) {
  std::memcpy(static_cast<uint8_t*>(t->data) + offset, data, size);
}
void HostGet(ggml_backend_buffer_t, const ggml_tensor* t, void* data, size_t offset, size_t size) {
  std::memcpy(data, static_cast<const uint8_t*>(t->data) + offset, size);
}
void HostClear(ggml_backend_buffer_t b, uint8_t value) { std::memset(BlockOf(b)->base, value, BlockOf(b)->size); }

const char* TypeName(ggml_backend_buffer_type_t t) { return TypeOf(t)->name.c_str(); }
size_t TypeAlignment(ggml_backend_buffer_type_t t) { return TypeOf(t)->alignment; }
size_t TypeMaxSize(ggml_backend_buffer_type_t t) { return TypeOf(t)->max_size; }
bool TypeIsHost(ggml_backend_buffer_type_t) { return true; }

ggml_backend_buffer_t TypeAlloc(ggml_backend_buffer_type_t t, size_t size) {
  size_t n = (size + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment;
  if (n == 0) n = kBlockAlignment;
  auto* base = static_cast<uint8_t*>(std::aligned_alloc(kBlockAlignment, n));
  if (base == nullptr) return nullptr;
  // NaN in both float types: a read of bytes no tensor wrote shows up in the outputs.
  std::memset(base, 0xff, n);
  ggml_backend_buffer_i iface{};
  iface.free_buffer = HostFree;
  iface.get_base = HostGetBase;
  iface.memset_tensor = HostMemset;
  iface.set_tensor = HostSet;
  iface.get_tensor = HostGet;
  iface.clear = HostClear;
  auto* block = new HostBlock{base, size};
  ggml_backend_buffer_t b = ggml_backend_buffer_init(t, iface, block, size);
  g_live_bytes += static_cast<int64_t>(size);
  g_live.push_back(b);
  return b;
}

// ggml's warnings and errors go to stderr; its debug and info lines ("reallocating buffers automatically")
// only with LIFELINE_TRACE, beside the program trace.
// ggml_gallocr_alloc_graph says at debug level when ggml_gallocr_needs_realloc found the plan stale (asserts,
// and with them these lines, are compiled into every build of ggml here): the adapter checks its own
// prediction (GallocrShadow) against it.
bool g_logged_needs_realloc = false;

void Log(ggml_log_level level, const char* text, void*) {
  static ggml_log_level last = GGML_LOG_LEVEL_NONE;
  if (level != GGML_LOG_LEVEL_CONT) last = level;
  if (std::strstr(text, "ggml_gallocr_alloc_graph: reallocating buffers automatically") != nullptr ||
      std::strstr(text, "ggml_gallocr_alloc_graph: cannot reallocate multi buffer graph") != nullptr) {
    g_logged_needs_realloc = true;
  }
  if (last >= GGML_LOG_LEVEL_WARN || programs::TraceRequested()) std::fputs(text, stderr);
}

}  // namespace

ggml_backend_t Cpu() {
  static ggml_backend_t cpu = [] {
    ggml_set_abort_callback(&::lifeline::internal::UpstreamAbort);
    ggml_log_set(&Log, nullptr);
    ggml_backend_t b = ggml_backend_cpu_init();
    LIFELINE_CHECK(b != nullptr, "ggml_backend_cpu_init failed");
    ggml_backend_cpu_set_n_threads(b, 1);  // deterministic, and the fuzzer's one core
    return b;
  }();
  return cpu;
}

const std::vector<ggml_backend_buffer_t>& HostBuffers() { return g_live; }
bool IsHostBuffer(ggml_backend_buffer_t b) { return b->buft->iface.get_name == TypeName; }
void* HostBase(ggml_backend_buffer_t b) { return BlockOf(b)->base; }

SizingGraph::SizingGraph(size_t n) {
  static float scratch = 0.0f;
  ggml_init_params params{};
  params.mem_size = ggml_tensor_overhead() * n + ggml_graph_overhead_custom(n, false);
  params.no_alloc = true;
  ctx = ggml_init(params);
  LIFELINE_CHECK(ctx != nullptr, "ggml_init failed");
  graph = ggml_new_graph_custom(ctx, n, false);
  for (size_t i = 0; i < n; ++i) {
    ggml_tensor* t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    t->data = &scratch;
    ggml_build_forward_expand(graph, t);
    leafs.push_back(t);
  }
}

SizingGraph::~SizingGraph() { ggml_free(ctx); }

Instance::~Instance() {
  if (ctx != nullptr) ggml_free(ctx);
}

// ---- GgmlGraphAdapter ------------------------------------------------------------------------------

GgmlGraphAdapter::GgmlGraphAdapter() : baseline_(g_live_bytes) { Cpu(); }
GgmlGraphAdapter::~GgmlGraphAdapter() { Release(); }

Status GgmlGraphAdapter::CreateAllocator(int k, const AllocatorSpec& spec) {
  std::vector<ggml_backend_buffer_type_t> bufts;
  for (const alloc::BufferSpec& b : spec.buffers) bufts.push_back(BufferTypeFor(k, b));
  galloc_[k] = ggml_gallocr_new_n(bufts.data(), static_cast<int>(bufts.size()));
  if (galloc_[k] == nullptr) return ResourceExhausted("ggml_gallocr_new_n returned null");
  nbuf_[k] = static_cast<int>(bufts.size());
  shadow_[k] = GallocrShadow();
  // Buffer ids as the layer adapter gives them: by position, round robin over the allocator's buffers.
  ids_[k].resize(kMaxBufferIds);
  for (int i = 0; i < kMaxBufferIds; ++i) ids_[k][i] = i % nbuf_[k];
  return Status::Ok();
}

Status GgmlGraphAdapter::SetPreallocated(int g, int t, bool on) {
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

// Allocator k is about to plan or place: what it placed before may move (a gallocr's or a scheduler's reserve
// frees and reallocates its buffers as it needs). With split graphs, a later build must not view those tensors:
// ggml_backend_sched's backend assignment reads a viewed tensor's buffer, which may be freed by then. (The model
// never lets a placement view them: Model::AllocLegal; only plans may, and a plan of a view of an unplaced tensor
// is what the program means.) Without split graphs gallocr reads no such buffer, and placements stay as they are.
void GgmlGraphAdapter::ForgetPlacementsBy(int k) {
  if (!SplitsCpuMarks()) return;
  for (auto& [key, t] : placed_) {
    auto by = placed_by_.find(key.first);
    if (by != placed_by_.end() && by->second == k) t = nullptr;
  }
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

// As Model::Split decides it: a reachable op marked `cpu`, or bytes read from a graph last placed split.
bool GgmlGraphAdapter::Split(int g) const {
  if (!SplitsCpuMarks()) return false;
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
  Instance& inst = **placed;
  ggml_backend_sched_t sched = SchedulerFor(k, g, inst);
  if (!ggml_backend_sched_alloc_graph(sched, inst.graph)) {
    return ResourceExhausted("ggml_backend_sched_alloc_graph of " + what + " failed");
  }
  const ggml_tensor* writer = nullptr;
  for (int i = 0; i < ggml_graph_n_nodes(inst.graph) && writer == nullptr; ++i) {
    const ggml_tensor* t = ggml_graph_node(inst.graph, i);
    if (t->view_src == nullptr || t->view_src->buffer == nullptr || t->op == GGML_OP_VIEW || t->op == GGML_OP_RESHAPE ||
        t->op == GGML_OP_PERMUTE || t->op == GGML_OP_TRANSPOSE) {
      continue;
    }
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
  }
  return NoTensorWithoutMemory(g, **placed);
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
  ForgetPlacementsBy(k);
  Instance* inst = Build(g);
  const std::string what = "g" + std::to_string(g);
  LIFELINE_RETURN_IF_ERROR(Refuse(*inst, what));
  const bool split = Split(g);
  ggml_backend_sched_t sched = split ? Scheduler(k) : nullptr;
  const void* owner = split ? static_cast<const void*>(sched) : galloc_[k];
  const int id = split ? SchedulerId(k) : k;
  alloc::Graph placed;
  if (split) {
    // The program's order, taken before placing: the scheduler hands each backend a view of the build's node
    // array, and ggml-vulkan's graph_optimize reorders it in place. The reference runs in the order the
    // program built (what the graph means); the backend in whatever order the optimizer chose.
    placed = InGgmlOrder(*inst, mirror.value(), g);
    LIFELINE_RETURN_IF_ERROR(PlaceSplit(k, g, &inst, what));
    Mirror(g, *inst, id, owner);
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
  }

  // The caller fills the allocator's leafs after alloc_graph, as whisper sets its inputs.
  for (Tensor* leaf : placed.leafs) {
    if (leaf->is_view() || leaf->owner != owner) continue;
    const int i = book_.IndexOf(g, leaf);
    FillLeaf(leaf, g, i);
    Upload(inst->t[i], leaf);
  }
  // A split graph runs in the scheduler's order, which ggml-backend.cpp keeps to itself (the Vulkan backend's
  // graph_optimize reorders each split); its liveness is not the program's, so the no-overlap oracle is left to
  // the gallocr path, and the value oracles see what an overlap would do.
  ComputeUnderOracles(placed, owner, Extents(id), outputs, [&] { Compute(inst->graph, what, sched); },
                      OutputEquality(), /*check_overlap=*/!split);
  placed_split_[g] = split;
  placed_by_[g] = k;
  LIFELINE_CHECK_OK(CompareWithFreshAllocator(g, *inst));
  for (int i = 0; i < book_.size(g); ++i) {
    if (inst->t[i] != nullptr) placed_[{g, i}] = inst->t[i];
  }
  return Status::Ok();
}

void GgmlGraphAdapter::Teardown() {
  Release();
  CheckReleased();  // frees what the backend's adapter holds itself (schedulers among it) first
  LIFELINE_CHECK(g_live_bytes == baseline_,
                 "baseline oracle: " + std::to_string(g_live_bytes - baseline_) +
                     " bytes of host buffers still held after every allocator was freed");
}

// One buffer type per (allocator, alignment): gallocr shares the allocator of repeated types.
// ggml's CPU kernels load elements in place (float, ggml_fp16_t), so a host buffer type aligns to at least
// 4 bytes: the layer's 1- and 2-byte alignments would only make every f32 read misaligned, which says
// nothing about gallocr (no real backend's buffers are aligned below their element size).
HostBufferType* GgmlGraphAdapter::HostTypeFor(int k, const alloc::BufferSpec& spec) {
  const size_t alignment = std::max<size_t>(spec.alignment, kMinAlignment);
  for (auto& t : host_types_) {
    if (t->allocator == k && t->alignment == alignment) return t.get();
  }
  auto t = std::make_unique<HostBufferType>();
  t->allocator = k;
  t->alignment = alignment;
  t->max_size = spec.max_size;
  t->name = "lifeline" + std::to_string(k) + "_align" + std::to_string(alignment);
  t->buft.iface.get_name = TypeName;
  t->buft.iface.alloc_buffer = TypeAlloc;
  t->buft.iface.get_alignment = TypeAlignment;
  t->buft.iface.get_max_size = TypeMaxSize;
  t->buft.iface.is_host = TypeIsHost;
  t->buft.device = ggml_backend_get_device(Cpu());
  t->buft.context = t.get();
  host_types_.push_back(std::move(t));
  return host_types_.back().get();
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
  if (!needs_realloc) {
    if (PlanIsStale(shadow, inst.graph, what, rewired)) {
      LIFELINE_RETURN_IF_ERROR(ReserveN(k, inst.graph, what));
      *rewired = -1;
    }
  } else if (nbuf_[k] == 1) {
    if (SizeHashSet(galloc_[k], shadow, inst.graph, ids_[k].data(), what)) {
      LIFELINE_RETURN_IF_ERROR(ReserveN(k, inst.graph, what));  // planned here, not by alloc_graph
      needs_realloc = false;
    } else {
      shadow.Planned(inst.graph, what);  // by alloc_graph's ggml_gallocr_reserve
    }
  }
  g_logged_needs_realloc = false;
  const bool allocated = ggml_gallocr_alloc_graph(galloc_[k], inst.graph);
  LIFELINE_CHECK(g_logged_needs_realloc == needs_realloc,
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
        t = ggml_new_tensor_4d(ctx, type, m->ne[0], m->ne[1], m->ne[2], m->ne[3]);
        if (book_.preallocated(g, i)) {
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
  }
  ggml_format_name(t, "g%d.t%d", g, i);
  if (m->output) ggml_set_output(t);
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

// The program's graph with its nodes in the order ggml runs them (lifetimes depend on it).
alloc::Graph GgmlGraphAdapter::InGgmlOrder(const Instance& inst, const alloc::Graph& mirror, int g) {
  std::unordered_map<const ggml_tensor*, Tensor*> back;
  for (int i = 0; i < book_.size(g); ++i) {
    if (inst.t[i] != nullptr) back[inst.t[i]] = book_.tensor(g, i);
  }
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
        if (!oracles::SameElement(placed, fresh_value, OutputEquality())) {
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
  placed_by_.clear();
  placed_split_.clear();
  instances_.clear();
  book_.Clear();
}

}  // namespace internal

// ---- the CPU adapter: host buffers of this file, ggml's CPU backend -----------------------------------

namespace {

using alloc::Tensor;
using internal::GgmlGraphAdapter;
using internal::HostBufferType;
using internal::Instance;

class GgmlAdapter final : public GgmlGraphAdapter {
 protected:
  ggml_backend_buffer_type_t BufferTypeFor(int k, const alloc::BufferSpec& spec) override {
    return &HostTypeFor(k, spec)->buft;
  }
  void BindPreallocated(ggml_tensor* t, int g, int i) override {
    t->data = book().tensor(g, i)->data;  // memory from outside, no backend buffer
  }
  void* HostAddress(const ggml_tensor* t) override { return t->data; }
  int AllocatorOf(ggml_backend_buffer_t b) override {
    return internal::IsHostBuffer(b) ? static_cast<HostBufferType*>(b->buft->context)->allocator : -1;
  }
  std::vector<oracles::BufferExtent> Extents(int k) override {
    std::vector<oracles::BufferExtent> extents;
    for (ggml_backend_buffer_t b : internal::HostBuffers()) {
      const HostBufferType* type = static_cast<HostBufferType*>(b->buft->context);
      if (type->allocator == k && b->size > 0) extents.push_back({static_cast<const uint8_t*>(internal::HostBase(b)), b->size, type->alignment});
    }
    return extents;
  }
  void Upload(ggml_tensor*, const Tensor*) override {}  // FillLeaf wrote the tensor's own bytes
  void Compute(ggml_cgraph* graph, const std::string& what, ggml_backend_sched_t) override {
    ggml_status st = ggml_backend_graph_compute(internal::Cpu(), graph);
    LIFELINE_CHECK(st == GGML_STATUS_SUCCESS,
                   "ggml_backend_graph_compute of " + what + " returned " + std::string(ggml_status_to_string(st)));
  }
  Status Refuse(const Instance& inst, const std::string& what) override {
    for (int i = 0; i < ggml_graph_n_nodes(inst.graph); ++i) {
      const ggml_tensor* t = ggml_graph_node(inst.graph, i);
      if (t->op == GGML_OP_SCALE && t->src[0]->type != GGML_TYPE_F32 &&
          GuardHolds(Guard::kGgmlCpuScaleF16Unsupported, [&] {
            return std::string(t->name) + " scales a " + ggml_type_name(t->src[0]->type) + " tensor: the CPU backend " +
                   "claims the op but aborts computing it; " + what + " is refused before it is placed";
          })) {
        return Unimplemented(std::string(t->name) + ": ggml's CPU backend cannot compute scale on " +
                             ggml_type_name(t->src[0]->type) + " (guard ggml-cpu-scale-f16-unsupported)");
      }
    }
    return Status::Ok();
  }
  void CheckReleased() override {}  // the host bytes: GgmlGraphAdapter::Teardown
};

}  // namespace

std::unique_ptr<AllocatorAdapter> MakeGgmlAdapter() { return std::make_unique<GgmlAdapter>(); }

AllocatorRules GgmlRules() {
  AllocatorRules rules;
  rules.refuses_f16_scale = GuardOn(Guard::kGgmlCpuScaleF16Unsupported);
  return rules;
}

}  // namespace lifeline::graphs
