// GgmlVulkanAdapter (see ggml_vulkan_adapter.h).
#include "harness/programs/graph/upstream/ggml_vulkan_adapter.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ggml-vulkan.h"
#include "core/check.h"
#include "core/guards.h"
#include "harness/programs/graph/upstream/ggml_graph_adapter.h"
#include "harness/programs/graph/upstream/vulkan_hooks.h"

namespace lifeline::graphs {
namespace {

using alloc::Tensor;
using internal::GgmlGraphAdapter;
using internal::Instance;

// The validation and accounting errors since the last look ("<message id>: <text>", one per line), or "".
std::string TakeVulkanErrors() {
  std::string out;
  for (const std::string& e : vkhooks::TakeErrors()) out += (out.empty() ? "" : "\n      ") + e;
  return out;
}

// A scheduler's graph size: the program's graph, the copies it makes between backends, and room to spare.
constexpr size_t kSchedGraphSize = 4 * internal::kGraphSize;

// The largest Vulkan buffer an input may make (gallocr's buffers hold at most a graph's tensors: a few KiB).
constexpr size_t kMaxMirroredBytes = 1 << 20;

void ReadWhole(ggml_backend_buffer_t b, uint8_t* host);

// ggml-vulkan's device 0, found once per process: the instance goes through the hooks (validation on), the
// device is created and its first backend freed again, so what the device keeps for good is not counted
// against the first input. No device, no validation layer, no hooks: the target cannot run its oracles, and
// says so.
ggml_backend_buffer_type_t VulkanType() {
  static ggml_backend_buffer_type_t type = [] {
    internal::Cpu();  // ggml's log and abort hooks first
    setenv("GGML_VK_VISIBLE_DEVICES", "0", /*overwrite=*/0);
    // ggml_backend_vk_reg catches what creating the instance throws; ggml_backend_vk_get_device_count would not.
    const bool registered = ggml_backend_vk_reg() != nullptr;
    const std::string why = vkhooks::InstanceError();
    LIFELINE_CHECK(why.empty(), "ggml-vulkan's instance: " + why);
    LIFELINE_CHECK(registered, "ggml-vulkan could not create its Vulkan instance: no Vulkan ICD (Debian: "
                               "mesa-vulkan-drivers gives lavapipe), or VK_ICD_FILENAMES names none");
    const int devices = ggml_backend_vk_get_device_count();
    LIFELINE_CHECK(vkhooks::Active(), "ggml-vulkan did not call vkGetInstanceProcAddr through the hooks "
                                      "(harness/programs/graph/upstream/vulkan_hooks.h): no Vulkan oracle would run");
    LIFELINE_CHECK(devices > 0, "ggml-vulkan found no Vulkan device (GGML_VK_VISIBLE_DEVICES=" +
                                    std::string(std::getenv("GGML_VK_VISIBLE_DEVICES")) +
                                    "; Debian: mesa-vulkan-drivers gives lavapipe)");
    ggml_backend_t warm = ggml_backend_vk_init(0);
    LIFELINE_CHECK(warm != nullptr, "ggml_backend_vk_init(0) failed");
    ggml_backend_free(warm);
    // ggml-vulkan reads and writes device-local memory through one staging buffer of the device's, grown to
    // the largest transfer so far and kept, and through command buffers its queues keep: made here, once,
    // at the largest size an input can ask for (kMaxMirroredBytes), they are the device's from the start.
    ggml_backend_buffer_t big = ggml_backend_buft_alloc_buffer(ggml_backend_vk_buffer_type(0), kMaxMirroredBytes);
    LIFELINE_CHECK(big != nullptr, "ggml-vulkan could not allocate " + std::to_string(kMaxMirroredBytes) + " bytes");
    ggml_backend_buffer_clear(big, 0xff);
    std::vector<uint8_t> host(kMaxMirroredBytes);
    ReadWhole(big, host.data());
    ggml_backend_buffer_free(big);
    const std::string errors = TakeVulkanErrors();
    LIFELINE_CHECK(errors.empty(), "Vulkan validation while ggml-vulkan set up its device: " + errors);
    return ggml_backend_vk_buffer_type(0);
  }();
  return type;
}

// ---- ggml-vulkan's buffer type, allocation observed -------------------------------------------------

// A buffer ggml-vulkan made, with its host copy.
struct Mirrored {
  ggml_backend_buffer_t buffer;
  uint8_t* host;
  size_t size;
  int allocator;  // the allocator id of the observed type that made it: k, or SchedulerId(k)
};

struct ObservedType {
  ggml_backend_buffer_type buft;  // ggml-vulkan's iface (alloc_buffer excepted), context and device
  int allocator;
};

std::vector<ObservedType*> g_types;       // the observed types of the running input's adapter
std::vector<Mirrored> g_mirrored;         // every live buffer ggml-vulkan made for the running input
void (*g_vk_free_buffer)(ggml_backend_buffer_t) = nullptr;

size_t MirrorAlignment() { return std::max<size_t>(64, ggml_backend_buft_get_alignment(VulkanType())); }

void FreeMirrored(ggml_backend_buffer_t b) {
  for (size_t i = 0; i < g_mirrored.size(); ++i) {
    if (g_mirrored[i].buffer != b) continue;
    std::free(g_mirrored[i].host);
    g_mirrored.erase(g_mirrored.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  g_vk_free_buffer(b);
}

// A buffer of ggml-vulkan's own making, 0xff in device memory and in its host copy, freed through FreeMirrored.
ggml_backend_buffer_t MakeMirrored(ggml_backend_buffer_type_t buft, size_t size, int allocator) {
  ggml_backend_buffer_type_t vk = VulkanType();
  LIFELINE_CHECK(size <= kMaxMirroredBytes, "gallocr asked ggml-vulkan for a buffer of " + std::to_string(size) +
                                                " bytes, more than the device's staging was sized for (" +
                                                std::to_string(kMaxMirroredBytes) + ")");
  ggml_backend_buffer_t b = vk->iface.alloc_buffer(buft, size);
  if (b == nullptr) return nullptr;
  ggml_backend_buffer_clear(b, 0xff);
  const size_t alignment = MirrorAlignment();
  const size_t n = std::max<size_t>(alignment, (size + alignment - 1) / alignment * alignment);
  auto* host = static_cast<uint8_t*>(std::aligned_alloc(alignment, n));
  LIFELINE_CHECK(host != nullptr, "no host memory for the copy of a Vulkan buffer of " + std::to_string(size) + " bytes");
  std::memset(host, 0xff, n);
  g_vk_free_buffer = b->iface.free_buffer;
  b->iface.free_buffer = FreeMirrored;
  g_mirrored.push_back({b, host, size, allocator});
  return b;
}

ggml_backend_buffer_t ObservedAlloc(ggml_backend_buffer_type_t buft, size_t size) {
  int allocator = -1;
  for (const ObservedType* t : g_types) {
    if (&t->buft == buft) allocator = t->allocator;
  }
  return MakeMirrored(buft, size, allocator);
}

const Mirrored* FindMirrored(ggml_backend_buffer_t b) {
  for (const Mirrored& m : g_mirrored) {
    if (m.buffer == b) return &m;
  }
  return nullptr;
}

// Reads all of `b` into `host`, through a byte tensor spanning the buffer.
void ReadWhole(ggml_backend_buffer_t b, uint8_t* host) {
  const size_t size = ggml_backend_buffer_get_size(b);
  ggml_init_params params{ggml_tensor_overhead(), nullptr, /*no_alloc=*/true};
  ggml_context* ctx = ggml_init(params);
  ggml_tensor* all = ggml_new_tensor_1d(ctx, GGML_TYPE_I8, static_cast<int64_t>(size));
  LIFELINE_CHECK(ggml_backend_tensor_alloc(b, all, ggml_backend_buffer_get_base(b)) == GGML_STATUS_SUCCESS,
                 "a byte tensor over a whole Vulkan buffer could not be placed");
  ggml_backend_tensor_get(all, host, 0, size);
  ggml_free(ctx);
}

class GgmlVulkanAdapter final : public GgmlGraphAdapter {
 public:
  GgmlVulkanAdapter() {
    VulkanType();
    const std::string left = TakeVulkanErrors();
    LIFELINE_CHECK(left.empty(), "Vulkan validation errors from before this input: " + left);
    LIFELINE_CHECK(g_mirrored.empty(), std::to_string(g_mirrored.size()) + " Vulkan buffers of an earlier input are alive");
    before_ = vkhooks::Live();
    mark_ = vkhooks::Mark();
    backend_ = ggml_backend_vk_init(0);
    LIFELINE_CHECK(backend_ != nullptr, "ggml_backend_vk_init(0) failed");
    for (int id = 0; id < 2 * kAllocators; ++id) {  // the gallocrs' (k), then the schedulers' (SchedulerId(k))
      types_[id].buft = *VulkanType();
      types_[id].buft.iface.alloc_buffer = ObservedAlloc;
      types_[id].allocator = id;
      g_types.push_back(&types_[id]);
    }
  }
  ~GgmlVulkanAdapter() override {
    Release();
    FreeOwnBuffers();
    g_types.clear();
  }

 protected:
  ggml_backend_buffer_type_t BufferTypeFor(int k, const alloc::BufferSpec&) override { return &types_[k].buft; }

  void BindPreallocated(ggml_tensor* t, int g, int i) override {
    const Tensor* m = book().tensor(g, i);
    ggml_backend_buffer_t& b = preallocated_[{g, i}];
    if (b == nullptr) b = ggml_backend_buft_alloc_buffer(VulkanType(), ggml_nbytes(t));
    LIFELINE_CHECK(b != nullptr, "no Vulkan buffer for pre-allocated leaf " + m->name);
    LIFELINE_CHECK(ggml_backend_tensor_alloc(b, t, ggml_backend_buffer_get_base(b)) == GGML_STATUS_SUCCESS,
                   "placing pre-allocated leaf " + m->name + " in its own Vulkan buffer failed");
    // The book's bytes are what the leaf holds: its host copy is the book's memory itself (PreallocatedHost).
    ggml_backend_tensor_set(t, m->data, 0, ggml_nbytes(t));
  }

  bool SplitsCpuMarks() const override { return true; }

  // ggml-vulkan binds a tensor whose offset is not a multiple of minStorageBufferOffsetAlignment from the
  // aligned-down offset (ggml_vk_tensor_subbuffer: the misalignment goes to the shader as a push constant),
  // while its barrier tracker (ggml_vk_build_graph, overlaps_unsynced) compares the tensors' own ranges.
  // Whether, in `graph`'s order, a later dispatch's tensor and an earlier one's (at least one of them written)
  // share only bytes of such a descriptor prefix: the pair synchronization validation reports as a hazard,
  // which ggml does not synchronize. `*pair` names the two.
  bool DescriptorOnlyOverlap(ggml_cgraph* graph, std::string* pair) const {
    const size_t align = ggml_backend_buft_get_alignment(VulkanType());
    struct Access {
      const ggml_tensor* t;
      const void* buffer;
      size_t desc, lo, hi;  // descriptor start, tensor [lo, hi)
      bool write;
    };
    auto access = [&](const ggml_tensor* t, bool write, std::vector<Access>* out) {
      if (t == nullptr || t->buffer == nullptr || internal::IsHostBuffer(t->buffer) || t->data == nullptr) return;
      const size_t lo = static_cast<size_t>(static_cast<const uint8_t*>(t->data) -
                                            static_cast<const uint8_t*>(ggml_backend_buffer_get_base(t->buffer)));
      size_t desc = lo & ~(align - 1);  // as ggml_vk_descriptor_offset
      while ((lo - desc) % ggml_type_size(t->type) != 0 && desc >= align) desc -= align;
      out->push_back({t, t->buffer, desc, lo, lo + ggml_nbytes(t), write});
    };
    std::vector<std::vector<Access>> nodes;
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
      const ggml_tensor* n = ggml_graph_node(graph, i);
      if (n->op == GGML_OP_NONE || internal::IsViewOp(n->op)) continue;  // no dispatch
      std::vector<Access> a;
      access(n, true, &a);
      for (const ggml_tensor* src : n->src) access(src, false, &a);
      nodes.push_back(std::move(a));
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (size_t j = i + 1; j < nodes.size(); ++j) {
        for (const Access& x : nodes[i]) {
          for (const Access& y : nodes[j]) {
            if (x.buffer != y.buffer || (!x.write && !y.write)) continue;
            const bool tensors = x.lo < y.hi && y.lo < x.hi;
            const bool descriptors = x.desc < y.hi && y.desc < x.hi;
            if (descriptors && !tensors) {
              *pair = std::string(y.write ? "writing " : "reading ") + y.t->name + " after a dispatch " +
                      (x.write ? "writing " : "reading ") + x.t->name + " (bound from byte " + std::to_string(x.desc) +
                      " for bytes " + std::to_string(x.lo) + ".." + std::to_string(x.hi) + ")";
              return true;
            }
          }
        }
      }
    }
    return false;
  }

  // Allocator k's scheduler: ggml-vulkan first, ggml's CPU backend last (as ggml_backend_sched requires), each
  // with a buffer type of this adapter's: ggml-vulkan's observed, and a host type.
  ggml_backend_sched_t Scheduler(int k) override {
    if (sched_[k] == nullptr) {
      ggml_backend_t backends[2] = {backend_, internal::Cpu()};
      alloc::BufferSpec host;
      host.alignment = 32;
      host.max_size = kMaxMirroredBytes;
      ggml_backend_buffer_type_t bufts[2] = {&types_[SchedulerId(k)].buft, &HostTypeFor(SchedulerId(k), host)->buft};
      sched_[k] = ggml_backend_sched_new(backends, bufts, 2, kSchedGraphSize, /*parallel=*/false,
                                         /*op_offload=*/false);
      LIFELINE_CHECK(sched_[k] != nullptr, "ggml_backend_sched_new failed");
      if (GuardOn(Guard::kGgmlGallocrHashSetExternalViewSrc)) SizeSchedulerHashSet(sched_[k]);
    }
    return sched_[k];
  }

  // The scheduler's own gallocr sizes its hash set from the graph it plans, not counting the tensors that leaf
  // views read from outside it, as the direct path's gallocr does (ggml-gallocr-hash-set-external-view-src,
  // whose guard sizes that one before each plan that would overflow). The scheduler's gallocr is out of reach,
  // so it is sized once, when the scheduler is made, by a worst-case reserve as llama.cpp makes one: a graph of
  // leafs that have memory (nothing is placed), which grows the set for good.
  static void SizeSchedulerHashSet(ggml_backend_sched_t sched) {
    internal::SizingGraph sizing(kSchedGraphSize / 2);
    for (ggml_tensor* t : sizing.leafs) ggml_backend_sched_set_tensor_backend(sched, t, internal::Cpu());
    LIFELINE_CHECK(ggml_backend_sched_reserve(sched, sizing.graph), "ggml_backend_sched_reserve of the sizing graph failed");
  }

  void* HostAddress(const ggml_tensor* t) override {
    ggml_backend_buffer_t b = t->buffer;
    LIFELINE_CHECK(b != nullptr, std::string(t->name) + " has memory but no buffer");
    if (internal::IsHostBuffer(b)) return t->data;  // a scheduler's CPU side
    const size_t offset = static_cast<size_t>(static_cast<const uint8_t*>(t->data) -
                                              static_cast<const uint8_t*>(ggml_backend_buffer_get_base(b)));
    if (uint8_t* host = PreallocatedHost(b)) return host + offset;
    const Mirrored* m = FindMirrored(b);
    LIFELINE_CHECK(m != nullptr, std::string(t->name) + " lies in a Vulkan buffer the adapter never saw made");
    return m->host + offset;
  }

  int AllocatorOf(ggml_backend_buffer_t b) override {
    if (internal::IsHostBuffer(b)) return internal::HostAllocatorOf(b);
    const Mirrored* m = FindMirrored(b);
    return m != nullptr ? m->allocator : -1;
  }

  std::vector<oracles::BufferExtent> Extents(int k) override {
    std::vector<oracles::BufferExtent> extents = internal::HostExtents(k);  // a scheduler's CPU side
    const size_t alignment = ggml_backend_buft_get_alignment(VulkanType());
    for (const Mirrored& m : g_mirrored) {
      if (m.allocator == k && m.size > 0) extents.push_back({m.host, m.size, alignment});
    }
    return extents;
  }

  void Upload(ggml_tensor* leaf, const Tensor* m) override { ggml_backend_tensor_set(leaf, m->data, 0, ggml_nbytes(leaf)); }

  void Compute(ggml_cgraph* graph, const std::string& what, ggml_backend_sched_t sched) override {
    // Guard ggml-vk-descriptor-range-untracked: one submission per node when two dispatches' descriptor
    // ranges overlap where their tensors do not (see DescriptorOnlyOverlap).
    std::string pair;
    const bool one_by_one = DescriptorOnlyOverlap(graph, &pair) &&
                            GuardHolds(Guard::kGgmlVkDescriptorRangeUntracked, [&] {
                              return pair + " in " + what + ": ggml-vulkan puts no barrier between them, and " +
                                     "synchronization validation takes the whole range as accessed; each node is " +
                                     "computed in a submission of its own";
                            });
    ggml_status st = GGML_STATUS_SUCCESS;
    if (sched != nullptr) {
      // With an eval callback that wants every node, the scheduler computes one node per submission.
      if (one_by_one) ggml_backend_sched_set_eval_callback(sched, [](ggml_tensor*, bool, void*) { return true; }, nullptr);
      // As llama.cpp computes (llama_context::graph_compute, then a synchronize before reading outputs) on every
      // other build; ggml_backend_sched_graph_compute on the rest.
      if (++sched_computes_ % 2 == 0) {
        st = ggml_backend_sched_graph_compute_async(sched, graph);
        ggml_backend_sched_synchronize(sched);
      } else {
        st = ggml_backend_sched_graph_compute(sched, graph);
      }
      if (one_by_one) ggml_backend_sched_set_eval_callback(sched, nullptr, nullptr);
    } else if (one_by_one) {
      for (int i = 0; i < ggml_graph_n_nodes(graph) && st == GGML_STATUS_SUCCESS; ++i) {
        ggml_cgraph node = ggml_graph_view(graph, i, i + 1);
        st = ggml_backend_graph_compute(backend_, &node);
      }
    } else {
      st = ggml_backend_graph_compute(backend_, graph);
    }
    LIFELINE_CHECK(st == GGML_STATUS_SUCCESS, std::string(sched != nullptr ? "ggml_backend_sched_graph_compute"
                                                                           : "ggml_backend_graph_compute") +
                                                  " of " + what + " on Vulkan returned " + ggml_status_to_string(st));
    for (const Mirrored& m : g_mirrored) ReadWhole(m.buffer, m.host);
    for (const auto& [leaf, b] : preallocated_) {
      if (uint8_t* host = PreallocatedHost(b)) ReadWhole(b, host);
    }
    const std::string errors = TakeVulkanErrors();
    LIFELINE_CHECK(errors.empty(), "Vulkan validation oracle: computing " + what + " on ggml-vulkan: " + errors);
  }

  // ggml-vulkan's scale computes x * s + 0 (the shader's bias term), so a zero scaled by a negative factor
  // comes out +0.0 where ggml's CPU backend and the reference give -0.0: equal numbers, different bits.
  oracles::Equality OutputEquality() const override { return oracles::Equality::kZeroSignFree; }

  Status Refuse(const Instance& inst, const std::string& what) override {
    for (int i = 0; i < ggml_graph_n_nodes(inst.graph); ++i) {
      const ggml_tensor* t = ggml_graph_node(inst.graph, i);
      LIFELINE_RETURN_IF_ERROR(RefuseOddRope(t, what));
      // AllocatorRules::refuses_f16_rope: the shader glslang made of it is invalid SPIR-V (format.h).
      if (t->op == GGML_OP_ROPE && t->src[0]->type == GGML_TYPE_F16) {
        return Unimplemented(std::string(t->name) + " of " + what + ": ggml-vulkan's rope of float16 is refused here: " +
                             "Debian's glslang compiles its shader to invalid SPIR-V (KhronosGroup/glslang#3616)");
      }
      // Guard ggml-vk-mul-mat-misaligned-src: ggml-vulkan claims the mul_mat, then binds its sources without
      // misalignment support (ggml_vk_tensor_subbuffer, allow_misalign false) and aborts on a source that does not
      // start at a multiple of minStorageBufferOffsetAlignment (the buffer type's alignment, which every placed
      // tensor keeps): a view at an offset that is not one. soft_max's push constants carry no offset either and it
      // aborts the same way (init_pushconst_tensor_offsets: ggml-org/llama.cpp#22516's assert); the guard steps
      // around both. Decided from the views' offsets, before placement.
      // A ggml-vulkan that binds a unary op's source without an offset (LIFELINE_GGML_VK_UNARY_NO_OFFSET, ggml 0.15
      // and before) asserts there alike (init_pushconst_tensor_offsets): the same finding, in one more op.
      if (t->op == GGML_OP_MUL_MAT || t->op == GGML_OP_SOFT_MAX ||
          (LIFELINE_GGML_VK_UNARY_NO_OFFSET && t->op == GGML_OP_UNARY)) {
        const size_t align = ggml_backend_buft_get_alignment(VulkanType());
        for (const ggml_tensor* s : {t->src[0], t->src[1]}) {
          if (s == nullptr) continue;
          const size_t offs = s->view_src != nullptr ? s->view_offs : 0;
          if (offs % align != 0 && GuardHolds(Guard::kGgmlVkMulMatMisalignedSrc, [&] {
                return std::string(t->name) + " of " + what + " (" + ggml_op_desc(t) + ") reads " + s->name + ", a view " +
                       std::to_string(offs) + " bytes into its tensor (not a multiple of " + std::to_string(align) +
                       "): ggml-vulkan would abort binding it; refused before it is placed";
              })) {
            return Unimplemented(std::string(t->name) + " of " + what + ": ggml-vulkan aborts on a " + ggml_op_desc(t) +
                                 " source at a misaligned offset (guard ggml-vk-mul-mat-misaligned-src)");
          }
        }
      }
      if (ggml_backend_supports_op(backend_, t)) continue;
      std::string types = ggml_type_name(t->src[0]->type);
      if (t->src[1] != nullptr) types += std::string(", ") + ggml_type_name(t->src[1]->type);
      return Unimplemented(std::string(t->name) + " of " + what + ": ggml-vulkan does not support " + ggml_op_desc(t) +
                           " on " + types + " -> " + ggml_type_name(t->type));
    }
    return Status::Ok();
  }

  void CheckReleased() override {
    FreeOwnBuffers();
    LIFELINE_CHECK(g_mirrored.empty(), std::to_string(g_mirrored.size()) +
                                           " Vulkan buffers made for this input's allocators are still alive");
    const std::string errors = TakeVulkanErrors();
    LIFELINE_CHECK(errors.empty(), "Vulkan validation oracle: freeing the input's buffers and backend: " + errors);
    // What the device keeps for good (its pipelines, its queues' command buffers, its staging buffer, sized by
    // the warm-up) may stay; nothing else the input made may.
    const std::string left = vkhooks::AliveSince(mark_);
    LIFELINE_CHECK(left.empty(), "Vulkan accounting oracle: after the input freed its allocators, buffers and "
                                 "backend, what it made is still alive: " + left);
    const vkhooks::Counts after = vkhooks::Live();
    LIFELINE_CHECK(after[vkhooks::Kind::kDevice] == before_[vkhooks::Kind::kDevice] &&
                       after[vkhooks::Kind::kInstance] == before_[vkhooks::Kind::kInstance],
                   "Vulkan accounting oracle: the input changed the number of devices or instances: " +
                       after.DiffFrom(before_));
  }

 private:
  // The book's bytes of the pre-allocated leaf whose Vulkan buffer is `b` (null: `b` is no such buffer, or the
  // leaf has lost its memory since; the buffer is kept for when it regains it). The book moves those bytes
  // when the leaf loses and regains its memory, and its tensor's `data` follows them.
  uint8_t* PreallocatedHost(ggml_backend_buffer_t b) const {
    for (const auto& [leaf, own] : preallocated_) {
      if (own == b) {
        return book().preallocated(leaf.first, leaf.second) ? static_cast<uint8_t*>(book().tensor(leaf.first, leaf.second)->data)
                                                            : nullptr;
      }
    }
    return nullptr;
  }

  void FreeOwnBuffers() {
    for (ggml_backend_sched_t& sched : sched_) {
      if (sched != nullptr) ggml_backend_sched_free(sched);
      sched = nullptr;
    }
    for (auto& [leaf, b] : preallocated_) ggml_backend_buffer_free(b);
    preallocated_.clear();
    if (backend_ != nullptr) ggml_backend_free(backend_);
    backend_ = nullptr;
  }

  ggml_backend_t backend_ = nullptr;
  vkhooks::Counts before_;
  uint64_t mark_ = 0;
  ObservedType types_[2 * kAllocators];
  ggml_backend_sched_t sched_[kAllocators] = {};
  int sched_computes_ = 0;  // Compute with a scheduler: every other one through compute_async + synchronize
  std::map<std::pair<int, int>, ggml_backend_buffer_t> preallocated_;  // (graph, leaf) -> its own Vulkan buffer
};

// AllocatorRules::backend_refuses for ggml-vulkan: whether its device says no (ggml_backend_dev_supports_op) to a
// node of the kind GgmlGraphAdapter::Make builds for `op` from sources of types a and b into `out`, asked once per
// combination on small contiguous tensors. A version of ggml-vulkan takes ops and types another does not, and the
// model predicts the refusal of such a graph from this answer instead of from what the pinned version takes.
bool VulkanRefuses(alloc::Op op, alloc::DType out, alloc::DType a, alloc::DType b) {
  static std::map<int, bool> answers;
  const int key = static_cast<int>(op) * 8 + static_cast<int>(out) * 4 + static_cast<int>(a) * 2 + static_cast<int>(b);
  if (auto it = answers.find(key); it != answers.end()) return it->second;
  VulkanType();  // the device, set up once
  ggml_backend_dev_t dev = ggml_backend_reg_dev_get(ggml_backend_vk_reg(), 0);
  ggml_init_params params{16 * ggml_tensor_overhead(), nullptr, /*no_alloc=*/true};
  ggml_context* ctx = ggml_init(params);
  auto type = [](alloc::DType d) { return d == alloc::DType::kF16 ? GGML_TYPE_F16 : GGML_TYPE_F32; };
  ggml_tensor* x = ggml_new_tensor_4d(ctx, type(a), 4, 1, 1, 4);
  ggml_tensor* y = ggml_new_tensor_4d(ctx, type(b), 4, 1, 1, 4);
  ggml_tensor* rows = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4);
  std::vector<ggml_tensor*> nodes;  // the compute nodes Make builds for the op (views need no support)
  switch (op) {
    case alloc::Op::kScale: nodes = {ggml_scale(ctx, x, 2.0f)}; break;
    case alloc::Op::kNeg: nodes = {ggml_neg(ctx, x)}; break;
    case alloc::Op::kAdd: nodes = {ggml_add(ctx, x, y)}; break;
    case alloc::Op::kMul: nodes = {ggml_mul(ctx, x, y)}; break;
    case alloc::Op::kCopy: nodes = {ggml_cpy(ctx, x, ggml_new_tensor(ctx, type(out), GGML_MAX_DIMS, x->ne))}; break;
    case alloc::Op::kConcat: nodes = {ggml_concat(ctx, x, y, 3)}; break;
    case alloc::Op::kRmsNorm: nodes = {ggml_rms_norm(ctx, x, alloc::kRmsNormEps)}; break;
    case alloc::Op::kSoftMax: nodes = {ggml_soft_max(ctx, x)}; break;
    case alloc::Op::kMulMat:
      nodes = {ggml_mul_mat(ctx, ggml_reshape_2d(ctx, x, 4, 4), ggml_reshape_2d(ctx, y, 4, 4))};
      break;
    case alloc::Op::kTranspose: nodes = {ggml_cont(ctx, ggml_transpose(ctx, ggml_reshape_2d(ctx, x, 4, 4)))}; break;
    case alloc::Op::kGetRows: nodes = {ggml_get_rows(ctx, ggml_reshape_2d(ctx, x, 4, 4), rows)}; break;
    case alloc::Op::kRope:
      nodes = {ggml_rope_ext(ctx, ggml_reshape_3d(ctx, x, 4, 1, 4), rows, nullptr, 2, alloc::kRopeNormal, 0,
                             alloc::kRopeFreqBase, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f)};
      break;
    default: break;  // leafs and views; set_rows: AllocatorRules::refuses_set_rows (what the tree's ggml.c takes)
  }
  bool refused = false;
  for (ggml_tensor* n : nodes) refused = refused || !ggml_backend_dev_supports_op(dev, n);
  ggml_free(ctx);
  answers.emplace(key, refused);
  return refused;
}

}  // namespace

AllocatorRules GgmlVulkanTargetRules() {
  AllocatorRules rules = GgmlVulkanRules();
  rules.backend_refuses = &VulkanRefuses;
  rules.misaligned_unary_too = LIFELINE_GGML_VK_UNARY_NO_OFFSET != 0;
  return rules;
}

std::unique_ptr<AllocatorAdapter> MakeGgmlVulkanAdapter() { return std::make_unique<GgmlVulkanAdapter>(); }

}  // namespace lifeline::graphs
