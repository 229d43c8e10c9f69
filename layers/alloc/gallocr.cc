#include "layers/alloc/gallocr.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <iterator>
#include <tuple>
#include <utility>

#include "core/bugs.h"
#include "core/check.h"
#include "core/sanitizer.h"

namespace lifeline::alloc {
namespace {

std::atomic<int64_t> g_live_buffer_bytes{0};

size_t AlignUp(size_t n, size_t alignment) { return (n + alignment - 1) & ~(alignment - 1); }

// ggml's dynamic tensor allocator, in planning mode: offsets only, no memory.
class FreeList {
 public:
  FreeList(size_t alignment, size_t max_size) : alignment_(alignment), max_size_(max_size) {
    blocks_.push_back({0, max_size});
  }

  // Best fit; fails when no free block is large enough within max_size.
  Status Alloc(size_t size, size_t* offset) {
    size = AlignUp(size, alignment_);
    size_t best = blocks_.size();
    for (size_t i = 0; i < blocks_.size(); ++i) {
      if (blocks_[i].size >= size && (best == blocks_.size() || blocks_[i].size < blocks_[best].size)) best = i;
    }
    if (best == blocks_.size()) {
      return ResourceExhausted("not enough space in a buffer of at most " + std::to_string(max_size_) +
                               " bytes for " + std::to_string(size) + " more bytes");
    }
    *offset = blocks_[best].offset;
    blocks_[best].offset += size;
    blocks_[best].size -= size;
    if (blocks_[best].size == 0) blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
    high_ = std::max(high_, *offset + size);
    return Status::Ok();
  }

  void Free(size_t offset, size_t size) {
    size = AlignUp(size, alignment_);
    auto it = std::lower_bound(blocks_.begin(), blocks_.end(), offset,
                               [](const Block& b, size_t off) { return b.offset < off; });
    it = blocks_.insert(it, {offset, size});
    // Merge with the next and the previous block when adjacent.
    if (it + 1 != blocks_.end() && it->offset + it->size == (it + 1)->offset) {
      it->size += (it + 1)->size;
      blocks_.erase(it + 1);
    }
    if (it != blocks_.begin() && (it - 1)->offset + (it - 1)->size == it->offset) {
      (it - 1)->size += it->size;
      blocks_.erase(it);
    }
  }

  size_t high() const { return high_; }

 private:
  struct Block {
    size_t offset;
    size_t size;
  };
  size_t alignment_;
  size_t max_size_;
  std::vector<Block> blocks_;
  size_t high_ = 0;
};

// Per-tensor planning state (ggml's hash_node).
struct PlanEntry {
  int n_children = 0;
  int n_views = 0;
  bool allocated = false;  // holds planned memory now
  bool pinned = false;     // an output views this tensor's bytes: never freed, never reused
  int buffer_id = 0;
  size_t offset = 0;  // 0 until allocated, as in a freshly reset ggml hash entry
};

// The planning entries by tensor, as ggml keeps them in a hash set sized once per graph: entries live in a
// deque (a reference stays valid while others are added, as the walk needs), found through an index sorted
// by address. A handful of allocations per plan, where a hash map took one per tensor, which under ASan
// cost more than the planning itself (issue 15).
class PlanEntries {
 public:
  PlanEntry& operator[](const Tensor* t) {
    auto it = std::lower_bound(index_.begin(), index_.end(), t,
                               [](const std::pair<const Tensor*, size_t>& e, const Tensor* k) { return e.first < k; });
    if (it == index_.end() || it->first != t) {
      it = index_.insert(it, {t, entries_.size()});
      entries_.emplace_back();
    }
    return entries_[it->second];
  }

 private:
  std::vector<std::pair<const Tensor*, size_t>> index_;
  std::deque<PlanEntry> entries_;
};

}  // namespace

struct GraphAllocator::Plan {
  std::vector<uint64_t> fingerprint;
  std::vector<TensorPlacement> nodes;
  std::vector<TensorPlacement> leafs;
  std::unordered_map<const Tensor*, TensorPlacement> by_tensor;
  std::vector<size_t> needed;  // bytes per buffer
};

namespace {

// What a plan depends on: per tensor its op, type, shape, flags, whether it already holds memory that is
// not ours, and where its sources and view source sit in the graph. Equal fingerprints, same plan.
std::vector<uint64_t> Fingerprint(const Graph& g, const void* self) {
  // Position of each tensor in nodes then leafs (the last one for a tensor listed twice), sorted by address:
  // two allocations per fingerprint instead of a hash node per tensor (issue 15).
  std::vector<std::pair<const Tensor*, uint64_t>> pos;
  pos.reserve(g.nodes.size() + g.leafs.size());
  uint64_t n = 0;
  for (const Tensor* t : g.nodes) pos.emplace_back(t, n++);
  for (const Tensor* t : g.leafs) pos.emplace_back(t, n++);
  std::sort(pos.begin(), pos.end());
  auto where = [&](const Tensor* t) -> uint64_t {
    if (t == nullptr) return UINT64_MAX;
    auto it = std::upper_bound(pos.begin(), pos.end(), std::make_pair(t, UINT64_MAX));
    return it == pos.begin() || std::prev(it)->first != t ? UINT64_MAX - 1 : std::prev(it)->second;
  };
  std::vector<uint64_t> f{g.nodes.size(), g.leafs.size()};
  f.reserve(2 + (g.nodes.size() + g.leafs.size()) * (1 + kMaxDims + 2 + kMaxSrc));
  auto add = [&](const Tensor* t) {
    // Views never own memory; whether one has been pointed at its source yet changes nothing.
    bool external = !t->is_view() && t->data != nullptr && t->owner != self;
    f.push_back(static_cast<uint64_t>(t->op) | static_cast<uint64_t>(t->type) << 8 | uint64_t{t->input} << 16 |
                uint64_t{t->output} << 17 | uint64_t{external} << 18);
    for (int64_t d : t->ne) f.push_back(static_cast<uint64_t>(d));
    f.push_back(where(t->view_src));
    f.push_back(t->view_offs);
    for (const Tensor* s : t->src) f.push_back(where(s));
  };
  for (const Tensor* t : g.nodes) add(t);
  for (const Tensor* t : g.leafs) add(t);
  return f;
}

}  // namespace

GraphAllocator::GraphAllocator(std::vector<BufferSpec> specs) {
  for (const BufferSpec& s : specs) buffers_.push_back(Buffer{s, nullptr, 0});
}

GraphAllocator::~GraphAllocator() {
  for (Buffer& b : buffers_) {
    if (b.block) {
      san::MarkAlive(b.block.get(), b.size, true);
      g_live_buffer_bytes.fetch_sub(static_cast<int64_t>(b.size));
    }
  }
}

StatusOr<std::unique_ptr<GraphAllocator>> GraphAllocator::Create(std::vector<BufferSpec> buffers) {
  if (buffers.empty()) return InvalidArgument("an allocator needs at least one buffer");
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferSpec& s = buffers[i];
    if (s.alignment == 0 || (s.alignment & (s.alignment - 1)) != 0 || s.alignment > 4096) {
      return InvalidArgument("buffer " + std::to_string(i) + ": alignment " + std::to_string(s.alignment) +
                             " is not a power of two in [1, 4096]");
    }
    if (s.max_size == 0) return InvalidArgument("buffer " + std::to_string(i) + ": max_size is 0");
  }
  return std::unique_ptr<GraphAllocator>(new GraphAllocator(std::move(buffers)));
}

int64_t GraphAllocator::live_buffer_bytes() { return g_live_buffer_bytes.load(); }

const TensorPlacement* GraphAllocator::placement_of(const Tensor* t) const {
  if (!plan_) return nullptr;
  auto it = plan_->by_tensor.find(t);
  return it == plan_->by_tensor.end() ? nullptr : &it->second;
}

Status GraphAllocator::PlanGraph(const Graph& graph, const std::vector<int>& node_ids,
                                 const std::vector<int>& leaf_ids, std::unique_ptr<Plan>* out) {
  if (!node_ids.empty() && node_ids.size() != graph.nodes.size()) {
    return InvalidArgument("node_buffer_ids has " + std::to_string(node_ids.size()) + " entries for " +
                           std::to_string(graph.nodes.size()) + " nodes");
  }
  if (!leaf_ids.empty() && leaf_ids.size() != graph.leafs.size()) {
    return InvalidArgument("leaf_buffer_ids has " + std::to_string(leaf_ids.size()) + " entries for " +
                           std::to_string(graph.leafs.size()) + " leafs");
  }
  for (int id : node_ids) {
    if (id < 0 || static_cast<size_t>(id) >= buffers_.size()) return InvalidArgument("buffer id " + std::to_string(id) + " does not exist");
  }
  for (int id : leaf_ids) {
    if (id < 0 || static_cast<size_t>(id) >= buffers_.size()) return InvalidArgument("buffer id " + std::to_string(id) + " does not exist");
  }
  auto node_buffer = [&](size_t i) { return node_ids.empty() ? 0 : node_ids[i]; };
  auto leaf_buffer = [&](size_t i) { return leaf_ids.empty() ? 0 : leaf_ids[i]; };

  std::vector<FreeList> free_lists;
  for (const Buffer& b : buffers_) free_lists.emplace_back(b.spec.alignment, b.spec.max_size);
  PlanEntries entry;
  auto external = [&](const Tensor* t) { return t->data != nullptr && t->owner != this; };
  auto allocated = [&](const Tensor* t) { return external(t) || entry[t].allocated; };

  Status status;
  auto allocate = [&](Tensor* t, int buffer_id) {
    if (!status.ok() || t->is_view() || allocated(t)) return;
    PlanEntry& e = entry[t];
    if (OpCanInplace(t->op)) {
      for (Tensor* p : t->src) {
        if (p == nullptr || external(p) || p->input || p->output || p->nbytes() != t->nbytes() || p->type != t->type) continue;
        PlanEntry& pe = entry[p];
        // ggml also reuses across buffer ids here; a result stays in the buffer it was assigned.
        if (pe.n_children != 1 || pe.n_views != 0 || pe.pinned || pe.buffer_id != buffer_id) continue;
        if (p->is_view()) {
          Tensor* vs = p->view_src;
          PlanEntry& ve = entry[vs];
          if (external(vs) || !ve.allocated || ve.n_views != 1 || ve.n_children != 0 || ve.pinned ||
              ve.buffer_id != buffer_id || p->view_offs != 0 ||
              vs->nbytes() != t->nbytes() || vs->output || vs->input) {
            continue;
          }
          e.allocated = true;
          e.buffer_id = ve.buffer_id;
          e.offset = ve.offset;
          ve.allocated = false;  // the memory now belongs to t
          return;
        }
        if (!pe.allocated) continue;
        e.allocated = true;
        e.buffer_id = pe.buffer_id;
        e.offset = pe.offset;
        pe.allocated = false;
        return;
      }
    }
    size_t offset = 0;
    status = free_lists[buffer_id].Alloc(t->nbytes(), &offset);
    if (!status.ok()) return;
    e.allocated = true;
    e.buffer_id = buffer_id;
    e.offset = offset;
  };
  auto release = [&](Tensor* t) {
    PlanEntry& e = entry[t];
    if (t->output || e.pinned || external(t) || !e.allocated) return;  // graph outputs are never freed
    free_lists[e.buffer_id].Free(e.offset, t->nbytes());
    e.allocated = false;
  };

  // An output that is a view (an in-place result, a reshape) keeps the bytes of the tensor it views:
  // ggml checks the output flag of the tensor being freed only, so without this an output view's source
  // is freed after its last reader and its bytes are reused while the output is still wanted.
  auto pin = [&](const Tensor* t) {
    if (t->output && t->is_view()) entry[t->root()].pinned = true;
  };
  for (const Tensor* t : graph.nodes) pin(t);
  for (const Tensor* t : graph.leafs) pin(t);
  // Count consumers and views; place explicit inputs first so nothing is planned over them.
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Tensor* node = graph.nodes[i];
    if (node->is_view()) entry[node->view_src].n_views += 1;
    if (node->input) allocate(node, node_buffer(i));
    for (Tensor* s : node->src) {
      if (s == nullptr) continue;
      entry[s].n_children += 1;
      if (s->input) allocate(s, node_buffer(i));
    }
  }
  // Every leaf is filled by the caller before anything runs, so every leaf is placed before the walk
  // (ggml places only input-flagged leafs early and the rest at first use, where a leaf can land on the
  // bytes of a node that is freed later in the walk but still unread when the caller fills the leaf).
  for (size_t i = 0; i < graph.leafs.size(); ++i) allocate(graph.leafs[i], leaf_buffer(i));
  // Walk the nodes: sources, then the node, then free sources whose last consumer this was.
  for (size_t i = 0; i < graph.nodes.size() && status.ok(); ++i) {
    Tensor* node = graph.nodes[i];
    for (Tensor* s : node->src) {
      if (s != nullptr) allocate(s, node_buffer(i));
    }
    allocate(node, node_buffer(i));
    for (Tensor* s : node->src) {
      if (s == nullptr) continue;
      PlanEntry& pe = entry[s];
      pe.n_children -= 1;
      if (pe.n_children != 0 || pe.n_views != 0) continue;
      if (s->is_view()) {
        PlanEntry& ve = entry[s->view_src];
        ve.n_views -= 1;
        if (ve.n_views == 0 && ve.n_children == 0) release(s->view_src);
      } else {
        release(s);
      }
    }
  }
  if (!status.ok()) return status;

  auto plan = std::make_unique<Plan>();
  plan->fingerprint = Fingerprint(graph, this);
  auto record = [&](const Tensor* t) {
    const PlanEntry& e = entry[t];
    TensorPlacement p;
    if (!t->is_view() && !external(t)) {
      p = TensorPlacement{e.buffer_id, e.offset, AlignUp(t->nbytes(), buffers_[e.buffer_id].spec.alignment)};
    }
    return p;
  };
  for (Tensor* t : graph.nodes) {
    plan->nodes.push_back(record(t));
    plan->by_tensor[t] = plan->nodes.back();
  }
  for (Tensor* t : graph.leafs) {
    TensorPlacement p;
    if (Reintroduced(Bug::kGallocrViewLeafOffset)) {
      // BUG(gallocr-view-leaf-offset): whisper.cpp #1959, before ggml-alloc fix 906c73b2. Every leaf's
      // record copies its planning entry, including leafs that are views of tensors outside this graph
      // or that already hold data: those were never placed here, so they get buffer 0, offset 0.
      const PlanEntry& e = entry[t];
      p = TensorPlacement{e.buffer_id, e.offset, AlignUp(t->nbytes(), buffers_[e.buffer_id].spec.alignment)};
    } else {
      // The fix: view leafs and leafs with data are not ours.
      p = record(t);
    }
    plan->leafs.push_back(p);
    plan->by_tensor[t] = p;
  }
  for (FreeList& f : free_lists) plan->needed.push_back(f.high());
  *out = std::move(plan);
  return Status::Ok();
}

Status GraphAllocator::Reserve(const Graph& graph, const std::vector<int>& node_buffer_ids,
                               const std::vector<int>& leaf_buffer_ids) {
  std::unique_ptr<Plan> plan;
  LIFELINE_RETURN_IF_ERROR(PlanGraph(graph, node_buffer_ids, leaf_buffer_ids, &plan));
  for (size_t i = 0; i < buffers_.size(); ++i) {
    Buffer& b = buffers_[i];
    if (plan->needed[i] <= b.size) continue;
    // Grow: the old block goes away, and with it whatever earlier graphs had placed there.
    if (b.block) {
      san::MarkAlive(b.block.get(), b.size, true);
      g_live_buffer_bytes.fetch_sub(static_cast<int64_t>(b.size));
    }
    b.size = plan->needed[i];
    b.block.reset(new uint8_t[b.size]);
    g_live_buffer_bytes.fetch_add(static_cast<int64_t>(b.size));
    san::MarkDead(b.block.get(), b.size);
  }
  plan_ = std::move(plan);
  return Status::Ok();
}

Status GraphAllocator::InitTensor(Tensor* t, const TensorPlacement& p, const char* kind) {
  bool ours_to_place = t->data == nullptr || t->owner == this;
  if (t->is_view()) {
    // ggml_gallocr_init_tensor: assert(tensor_alloc->offset == SIZE_MAX) for a view it initialises.
    // Always on here.
    LIFELINE_CHECK(!ours_to_place || p.offset == kNotOwned,
                   std::string("gallocr: ") + kind + " " + t->name + " is a view of " + t->view_src->name +
                       " but its plan record places it at buffer " + std::to_string(p.buffer_id) + " offset " +
                       std::to_string(p.offset) + " (a view owns no memory; the record must be 'not owned')");
    const Tensor* vs = t->view_src;
    if (vs->data == nullptr) {
      return FailedPrecondition("view " + t->name + " of " + vs->name + ": the source has no memory (reserved but never allocated?)");
    }
    // Unlike ggml (which initialises a view once), a view follows its source every time: the source may
    // have been re-placed by a re-plan or may have gained or lost memory of its own since.
    t->data = static_cast<uint8_t*>(vs->data) + t->view_offs;
    t->owner = vs->owner;
    return Status::Ok();
  }
  if (!ours_to_place) return Status::Ok();  // external memory
  LIFELINE_CHECK(p.offset != kNotOwned && p.buffer_id >= 0,
                 std::string("gallocr: ") + kind + " " + t->name + " needs memory but its plan record owns none");
  const Buffer& b = buffers_[p.buffer_id];
  LIFELINE_CHECK(p.offset + t->nbytes() <= b.size && t->nbytes() <= p.size_max,
                 "gallocr: " + t->name + " (" + std::to_string(t->nbytes()) + " bytes at offset " +
                     std::to_string(p.offset) + ") does not fit its plan record or buffer");
  t->data = b.block.get() + p.offset;
  t->owner = this;
  san::MarkAlive(t->data, t->nbytes(), false);
  return Status::Ok();
}

Status GraphAllocator::AllocGraph(const Graph& graph) {
  if (!plan_ || plan_->fingerprint != Fingerprint(graph, this)) {
    if (buffers_.size() != 1) {
      return FailedPrecondition("the graph differs from the reserved one and this allocator has " +
                                std::to_string(buffers_.size()) + " buffers; reserve it first");
    }
    ++replans_;
    LIFELINE_RETURN_IF_ERROR(Reserve(graph));
  }
  // Everything dead, then what this graph places comes alive (bytes shared by tensors that reuse each
  // other's memory are alive for both).
  for (Buffer& b : buffers_) {
    if (b.block) san::MarkDead(b.block.get(), b.size);
  }
  // Leafs first, then nodes (the order in which whisper's encoder graph exposed the bug). A leaf view of
  // one of this graph's own nodes can only point at it once the node has its place: those wait.
  // (The node set is built only for graphs that have leaf views: this runs at every placement.)
  std::unordered_map<const Tensor*, bool> is_node;
  if (std::any_of(graph.leafs.begin(), graph.leafs.end(), [](const Tensor* l) { return l->is_view(); })) {
    for (const Tensor* n : graph.nodes) is_node[n] = true;
  }
  // A refused placement (a view whose source has no memory, found part-way through) leaves every tensor
  // of the graph as it was: ggml_gallocr_alloc_graph is all or nothing, it returns false only before it
  // touches a tensor (pinned ggml-alloc.c:1053-1067; its init_tensor loops follow, 1076-1095). Without the
  // rollback, the leafs placed before the refusal keep their addresses, and a later graph's view of one
  // of them is placed on bytes that no successful placement gave out or filled.
  std::vector<std::pair<void*, const void*>> before;
  before.reserve(graph.leafs.size() + graph.nodes.size());
  for (const Tensor* t : graph.leafs) before.emplace_back(t->data, t->owner);
  for (const Tensor* t : graph.nodes) before.emplace_back(t->data, t->owner);
  auto refused = [&](Status s) {
    size_t j = 0;
    for (Tensor* t : graph.leafs) std::tie(t->data, t->owner) = before[j++];
    for (Tensor* t : graph.nodes) std::tie(t->data, t->owner) = before[j++];
    for (Buffer& b : buffers_) {  // what this call made addressable is dead again
      if (b.block) san::MarkDead(b.block.get(), b.size);
    }
    return s;
  };
  std::vector<size_t> deferred;
  for (size_t i = 0; i < graph.leafs.size(); ++i) {
    const Tensor* leaf = graph.leafs[i];
    if (leaf->is_view() && is_node.count(leaf->view_src) != 0) {
      deferred.push_back(i);
      continue;
    }
    if (Status s = InitTensor(graph.leafs[i], plan_->leafs[i], "leaf"); !s.ok()) return refused(s);
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (Status s = InitTensor(graph.nodes[i], plan_->nodes[i], "node"); !s.ok()) return refused(s);
  }
  for (size_t i : deferred) {
    if (Status s = InitTensor(graph.leafs[i], plan_->leafs[i], "leaf"); !s.ok()) return refused(s);
  }
  return Status::Ok();
}

}  // namespace lifeline::alloc
