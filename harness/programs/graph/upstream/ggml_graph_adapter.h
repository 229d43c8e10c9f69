// GgmlGraphAdapter: what the two upstream adapters share (ggml_adapter.h: host buffers and the CPU backend;
// ggml_vulkan_adapter.h: the Vulkan backend's buffers and compute). Both drive the same gallocr the same way
// (builds, plans, placements, the guards of the upstream-open findings, the plan shadow) and check the same
// oracles; they differ only in where tensors live and which backend computes them, which the hooks below
// say. Private to the two adapters.
//
// The oracles read a placement through the program's tensors (graph_book.h): `data` is a host address of
// the tensor's bytes. On host buffers that is ggml's own address; a backend whose memory the host cannot
// address keeps a host copy per buffer (HostAddress), brought up to date after every compute.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "harness/oracles/alloc_oracles.h"
#include "harness/programs/graph/allocator.h"
#include "harness/programs/graph/graph_book.h"
#include "harness/programs/graph/upstream/gallocr_shadow.h"

namespace lifeline::graphs::internal {

inline constexpr size_t kGraphSize = 4 * kMaxTensorsPerGraph + 16;  // program tensors, ggml_cpy destinations
// The host buffer type of the weights (Program::weights; HostTypeFor's allocator id, no allocator's) and its
// alignment, ggml's CPU buffer alignment (TENSOR_ALIGNMENT).
inline constexpr int kWeightsAllocator = -2;
inline constexpr size_t kWeightsAlignment = 32;

// ggml's CPU backend, once per process; ggml's log and abort hooks installed with it.
ggml_backend_t Cpu();
// The CPU backend's threads for the computes that follow (1..kMaxCpuThreads): above 1, a ggml thread pool of that
// many threads (ggml's own, not OpenMP), one per count, kept for the process; with guard
// ggml-cpu-threadpool-graph-count-shift on, replaced by a fresh one after 16,384 computes (ggml_host.cc).
// At most max(2, the CPUs this process may run on) threads run: ggml's barrier spins (ggml_host.cc, CpuThreadsToRun).
// LIFELINE_GGML_POOL_COMPUTES=<n>: each pool first computes a one-node graph n times when it is made.
// `shared`: one pool of the most threads a compute may run for every count instead (Program::shared_pool), with
// ggml_backend_cpu_set_n_threads saying how many of them this compute uses.
void SetCpuThreads(int requested, bool shared = false);

// A host buffer type with the program's alignment: blocks of this file, counted, NaN-filled.
struct HostBufferType {
  ggml_backend_buffer_type buft;  // buft.context points back here
  int allocator;
  size_t alignment;
  size_t max_size;
  std::string name;
};
// The host buffers not yet freed and their bytes; whether `b` is one; its block; the allocator id of its type
// (-1: not a host buffer); the live ones of allocator id `allocator`, as the placement oracles see them.
const std::vector<ggml_backend_buffer_t>& HostBuffers();
int64_t HostLiveBytes();
bool IsHostBuffer(ggml_backend_buffer_t b);
void* HostBase(ggml_backend_buffer_t b);
int HostAllocatorOf(ggml_backend_buffer_t b);
std::vector<oracles::BufferExtent> HostExtents(int allocator);

// ggml_gallocr_alloc_graph logs (at debug level) when ggml_gallocr_needs_realloc found its plan stale; the
// adapter checks its own prediction (GallocrShadow) against it. Forget what was logged; whether it was since.
void ForgetGallocrLog();
bool GallocrLoggedRealloc();

// Whether `op` only views its source (no dispatch, no memory of its own).
inline bool IsViewOp(ggml_op op) {
  return op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}

// A graph of `n` one-float leafs with memory of their own (nothing to place): planning it grows a gallocr's
// hash set to hold n keys, for good (what llama.cpp's worst-case reserve does by the way).
struct SizingGraph {
  explicit SizingGraph(size_t n);
  ~SizingGraph();
  SizingGraph(const SizingGraph&) = delete;
  SizingGraph& operator=(const SizingGraph&) = delete;
  ggml_context* ctx = nullptr;
  ggml_cgraph* graph = nullptr;
  std::vector<ggml_tensor*> leafs;
};

// One build of a program graph in ggml.
struct Instance {
  ggml_context* ctx = nullptr;
  ggml_cgraph* graph = nullptr;
  std::vector<ggml_tensor*> t;  // per program tensor; null when not reachable from the outputs
  // Program::weights: the build's pre-allocated leafs, in a context of their own (weights_ctx, program tensor
  // index of each in weight_index) placed by ggml_backend_alloc_ctx_tensors* or a ggml_tallocr into `weights`
  // (PlaceWeights).
  ggml_context* weights_ctx = nullptr;
  std::vector<int> weight_index;
  ggml_backend_buffer_t weights = nullptr;
  // The build's get_rows, rope and set_rows: each index tensor (an int32 input) and the rows or positions it is to
  // hold once placed (UploadRows).
  std::vector<std::pair<ggml_tensor*, std::vector<int32_t>>> rows;
  // An op of the program this ggml tree's API does not take (a set_rows its ggml_set_rows asserts against), built
  // as a stand-in of its shape so the graph can be planned; AllocAndCompute refuses the graph with this reason,
  // as the model predicts (AllocatorRules::refuses_set_rows).
  std::string unsupported;
  ~Instance();
};

class GgmlGraphAdapter : public AllocatorAdapter {
 public:
  ~GgmlGraphAdapter() override;

  Status CreateAllocator(int k, const AllocatorSpec& spec) override;
  Status AddTensor(int g, const TensorSpec& spec) override { ++versions_[g]; return book_.AddTensor(g, spec); }
  Status SetOutput(int g, int t) override { ++versions_[g]; return book_.SetOutput(g, t); }
  Status Rewire(int g, int node, int slot, int new_src) override {
    ++versions_[g];
    return book_.Rewire(g, node, slot, new_src);
  }
  Status SetPreallocated(int g, int t, bool on) override;
  void Configure(const Program& program) override {
    weights_ = program.weights && PlacesWeights();
    shared_pool_ = program.shared_pool;
    reuse_ = program.reuse;
    chunked_ = program.chunked;
    scheduled_ = program.scheduled;
  }
  Status Reserve(int k, int g) override;
  Status Measure(int k, int g) override;
  Status AllocAndCompute(int k, int g) override;
  void Teardown() override;

 protected:
  GgmlGraphAdapter();

  // ---- where tensors live and what computes them ------------------------------------------------------
  // The buffer type of allocator k for a program buffer (types repeated within an allocator share its
  // allocator in gallocr).
  virtual ggml_backend_buffer_type_t BufferTypeFor(int k, const alloc::BufferSpec& spec) = 0;
  // Graph g's pre-allocated leaf i, built as `t`: memory from outside every allocator, holding the book's
  // bytes (book().tensor(g, i)->data).
  virtual void BindPreallocated(ggml_tensor* t, int g, int i) = 0;
  // The host address of `t`'s bytes (t has memory).
  virtual void* HostAddress(const ggml_tensor* t) = 0;
  // The allocator (0..kAllocators-1) whose buffer `b` is, or -1.
  virtual int AllocatorOf(ggml_backend_buffer_t b) = 0;
  // Allocator k's live buffers, as the oracles see them (host addresses).
  virtual std::vector<oracles::BufferExtent> Extents(int k) = 0;
  // `leaf`'s host bytes were just written (FillLeaf): make the tensor hold them.
  virtual void Upload(ggml_tensor* leaf, const alloc::Tensor* m) = 0;
  // Computes `graph` (through `sched` when it is not null, which has placed it); afterwards every host copy
  // equals the backend's memory.
  virtual void Compute(ggml_cgraph* graph, const std::string& what, ggml_backend_sched_t sched) = 0;
  // A graph this backend cannot compute, refused before anything is placed (Ok: go on).
  virtual Status Refuse(const Instance& inst, const std::string& what) = 0;
  // Guard ggml-cpu-rope-odd-row-overflow, for every adapter whose graphs ggml's CPU backend computes (ggml-vulkan's
  // too: its fresh-allocator differential): Unimplemented for a rope of rows of odd length while the guard holds.
  static Status RefuseOddRope(const ggml_tensor* t, const std::string& what);
  // Frees what the backend's adapter holds itself and checks that everything the input made is gone (called
  // after Release(), before the host buffers' baseline is checked).
  virtual void CheckReleased() = 0;
  // How this backend's outputs compare with the reference's and the CPU backend's.
  virtual oracles::Equality OutputEquality() const { return oracles::Equality::kBits; }
  // Split graphs (AllocatorRules::splits_cpu_marks): a graph with a reachable op marked `cpu`, or reading bytes
  // of a graph whose last placement was split, or any graph of a Program::scheduled program, is placed and
  // computed by Scheduler(k), a ggml_backend_sched over this adapter's backend and ggml's CPU backend, instead of
  // allocator k's gallocr. Scheduler(k)'s buffers belong to allocator id SchedulerId(k) (AllocatorOf, Extents);
  // Compute gets the scheduler to compute with.
  virtual bool SplitsCpuMarks() const { return false; }
  // Whether this adapter places pre-allocated leafs as weights when the program asks (Program::weights).
  virtual bool PlacesWeights() const { return false; }
  virtual ggml_backend_sched_t Scheduler(int /*k*/) { return nullptr; }
  static constexpr int SchedulerId(int k) { return kAllocators + k; }

  // Frees every gallocr and build; the book's graphs go too.
  void Release();
  const GraphBook& book() const { return book_; }
  // One host buffer type per (allocator, alignment); allocator -1: the fresh-allocator oracle's; kWeightsAllocator:
  // the weights'.
  HostBufferType* HostTypeFor(int k, const alloc::BufferSpec& spec);

 private:
  Status ReserveN(int k, ggml_cgraph* graph, const std::string& what);
  Status Place(int k, int g, Instance& inst, const std::string& what, int* rewired);
  // Names, for a failing check's report (SetUpstreamContext), the upstream `call` that placed `inst` and what held
  // when it ran: `held` plus, from the build itself, an output view whose source ggml left without the output flag
  // (ggml_set_output before ggml-org/ggml d727fbbd marked only the view).
  static void NoteUpstream(const Instance& inst, const std::string& call, std::vector<std::string> held);
  ggml_tensor* Source(int h, int i, bool detached, ggml_context* ctx);
  Instance* Build(int g, bool detached = false);
  void PlaceWeights(Instance& inst, int g);
  static void UploadRows(const Instance& inst);
  ggml_backend_buffer_t PlaceWithTallocr(const std::vector<ggml_tensor*>& w, const std::string& what);
  Status Recompute(int k, int g, const std::vector<alloc::Tensor*>& outputs);
  void FillAndCompute(int k, int g, Instance& inst, const alloc::Graph& placed, bool split,
                      const std::vector<alloc::Tensor*>& outputs, const std::string& what, bool reused = false);
  ggml_tensor* Make(Instance& inst, int g, int i, bool detached);
  void Mirror(int g, const Instance& inst, int id, const void* owner);
  bool Split(int g) const;
  std::vector<int> ViewedGraphs(int g) const;
  ggml_backend_sched_t SchedulerFor(int k, int g, const Instance& inst);
  Status PlaceSplit(int k, int g, Instance** inst, const std::string& what);
  Status NoTensorWithoutMemory(int g, const Instance& inst) const;
  void CheckSchedulerAnswers(int k, ggml_backend_sched_t sched, const Instance& inst, const std::string& what);
  const ggml_tensor* InForeignBuffer(int k, ggml_backend_sched_t sched, const Instance& inst);
  void ForgetPlacementsBy(int k);
  std::unordered_map<const ggml_tensor*, alloc::Tensor*> MirrorOf(const Instance& inst, int g);
  alloc::Graph InGgmlOrder(const Instance& inst, const alloc::Graph& mirror, int g);
  oracles::ReadAt SplitReads(ggml_backend_sched_t sched, const Instance& inst, const alloc::Graph& executed, int g);
  Status CompareWithFreshAllocator(int g, const Instance& inst);
  Status CheckMeasuredSizes(int k, ggml_cgraph* graph, const std::vector<size_t>& sizes, const std::string& what);
  oracles::Equality EqualityFor(int g) const;
  // The first gallocr buffer of allocator k with buffer b's type (gallocr gives both one buffer).
  int FirstOfType(int k, int b) const;

  int64_t baseline_;
  bool weights_ = false;  // Program::weights, where PlacesWeights()
  bool shared_pool_ = false;  // Program::shared_pool
  bool reuse_ = false;        // Program::reuse
  bool scheduled_ = false;    // Program::scheduled (where SplitsCpuMarks)
  bool chunked_ = false;      // Program::chunked
  // Program::reuse: what allocator k placed last, while that is its last act (ForgetPlacementsBy forgets it).
  struct LastPlacement {
    int g = -1;
    uint64_t version = 0;
    Instance* inst = nullptr;
    alloc::Graph placed;
    bool split = false;
  };
  LastPlacement last_[kAllocators];
  std::map<int, uint64_t> versions_;  // graph -> edits so far (Program::reuse)
  GraphBook book_;
  ggml_gallocr_t galloc_[kAllocators] = {};
  int nbuf_[kAllocators] = {};
  std::vector<ggml_backend_buffer_type_t> bufts_[kAllocators];  // per gallocr buffer
  int cpu_threads_[kAllocators] = {1, 1};  // AllocatorSpec::cpu_threads: every compute of a graph k placed
  std::vector<int> ids_[kAllocators];       // node and leaf buffer ids for ggml_gallocr_reserve_n
  GallocrShadow shadow_[kAllocators];       // what each allocator's plan holds (the guards' view)
  GallocrShadow sched_shadow_[kAllocators];  // the program's graph each scheduler planned last
  std::vector<std::unique_ptr<HostBufferType>> host_types_;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::map<std::pair<int, int>, ggml_tensor*> placed_;  // (graph, tensor) -> ggml tensor of its latest placement
  bool plan_kept_ = false;     // Place: the last ggml_gallocr_alloc_graph placed on the plan it had (no re-plan)
  int sched_placements_ = 0;  // PlaceSplit: every other one is split alone first (ggml_backend_sched_split_graph)
  std::map<std::pair<int, int>, ggml_tensor*> weights_placed_;  // (graph, leaf) -> its weight (Program::weights)
  std::map<int, bool> placed_split_;                    // graph -> whether its latest placement was split
  std::map<int, int> placed_by_;                        // graph -> the allocator of its latest placement
};

}  // namespace lifeline::graphs::internal
