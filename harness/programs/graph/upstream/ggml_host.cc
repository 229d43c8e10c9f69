// The host side both upstream graph adapters share (ggml_graph_adapter.h): host buffer types with the
// program's alignments, ggml's CPU backend with the harness's log and abort hooks and its thread pools, the
// sizing graph.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <sched.h>

#include "ggml-cpu.h"
#include "core/check.h"
#include "core/guards.h"
#include "core/upstream_hooks.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/graph/upstream/ggml_graph_adapter.h"

namespace lifeline::graphs::internal {
namespace {

using alloc::Tensor;

constexpr size_t kBlockAlignment = 64;                       // host blocks; >= every program alignment
constexpr size_t kMinAlignment = sizeof(float);              // see HostTypeFor

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

// ---- the CPU backend's thread pools -------------------------------------------------------------------
//
// One ggml thread pool per thread count, made on first use and kept for the process, as llama.cpp keeps its
// pools: without one ggml starts and joins n - 1 threads for every compute, which under ASan (a fake stack per
// thread) cost the fuzz lane about 10x its exec/s. poll = 0: between computes the workers sleep on the pool's
// condition variable instead of spinning on a core the next input needs.
//
// Guard ggml-cpu-threadpool-graph-count-shift: ggml_graph_compute_kickoff (ggml-cpu.c) keeps a pool's count of
// computed graphs in the bits above GGML_THREADPOOL_N_THREADS_BITS (16) of an int, `((n_graph + 1) << 16) |
// n_threads`, so a pool's 32,768th compute shifts 32768 into the sign bit: undefined behaviour, which UBSan
// reports and which ended every fuzzing process after a few thousand inputs. Every compute the CPU backend runs
// for the harness (the adapters', the fresh-allocator oracle's, a scheduler's CPU splits: all on Cpu()) passes
// through CountedCompute, which counts them per pool; with the guard on, a pool that has computed kPoolRenewAt
// graphs is replaced by a fresh one (its count starts at 0 again) before the next compute. Unguarded, the pools
// live for the process, as before.
constexpr uint32_t kPoolRenewAt = 16384;  // half of 32,768; in the fuzz lane 7 renewals in 10,917 inputs

struct CpuPool {
  ggml_threadpool_t pool = nullptr;
  uint32_t computes = 0;  // graphs computed on it: what ggml keeps in n_graph >> 16
  int size = 0;           // its threads
};
CpuPool g_pools[kMaxCpuThreads + 1];  // one per thread count
CpuPool g_shared_pool;                // Program::shared_pool: one for every count
CpuPool* g_current = nullptr;         // the pool SetCpuThreads set last (null: 1 thread, no pool)
ggml_status (*g_ggml_cpu_compute)(ggml_backend_t, ggml_cgraph*) = nullptr;  // ggml's own graph_compute

// ggml's threads wait for each other in ggml_barrier (ggml-cpu.c) by spinning, never yielding: more threads
// than CPUs, and a thread that has arrived holds a CPU until the scheduler preempts it while the threads it
// waits for cannot run. On a 2-CPU machine a 4-thread compute then takes milliseconds per node: 93% of the
// ggml_graph_topology fuzz job's time was that spin (perf, 2026-11-25; 61 exec/s). llama.cpp never asks for
// more threads than cores either. So a program's compute runs on min(its threads, the CPUs this process may
// run on) threads, and on at least 2 when it asks for 2 or more, so that a program with a thread pool gets
// one everywhere (repro/ggml-cpu-threadpool-graph-count-shift). The values do not depend on it (every op of
// the programs is elementwise; each row is computed once, by whichever thread); which thread computes which
// rows does. LIFELINE_TRACE=1 says when a compute runs on fewer threads than its program asks for.
int AvailableCpus() {
  static const int cpus = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof set, &set) == 0 ? std::max(1, CPU_COUNT(&set)) : 1;
  }();
  return cpus;
}
int CpuThreadsToRun(int requested) {
  const int n = std::min(requested, std::max(2, AvailableCpus()));
  static bool told[kMaxCpuThreads + 1] = {};
  if (n != requested && !told[requested] && programs::TraceRequested()) {
    told[requested] = true;
    std::fprintf(stderr, "lifeline: ggml's CPU backend runs %d threads where the program asks for %d (%d CPUs "
                         "available; ggml_host.cc, CpuThreadsToRun)\n", n, requested, AvailableCpus());
  }
  return n;
}

ggml_threadpool_t NewPool(int n) {
  ggml_threadpool_params params = ggml_threadpool_params_default(n);
  params.poll = 0;
  ggml_threadpool_t pool = ggml_threadpool_new(&params);
  LIFELINE_CHECK(pool != nullptr, "ggml_threadpool_new(" + std::to_string(n) + " threads) failed");
  return pool;
}

ggml_status CountedCompute(ggml_backend_t backend, ggml_cgraph* graph) {
  if (g_current != nullptr) {  // 1 thread without a shared pool: ggml makes (and frees) one for this compute alone
    CpuPool& p = *g_current;
    if (p.computes >= kPoolRenewAt && GuardHolds(Guard::kGgmlCpuThreadpoolGraphCountShift, [&] {
          return "the " + std::to_string(p.size) + "-thread pool has computed " + std::to_string(p.computes) +
                 " graphs; ggml_graph_compute_kickoff's `(n_graph + 1) << 16` overflows an int at 32,768: a fresh "
                 "pool takes its place";
        })) {
      ggml_threadpool_t old = p.pool;
      p.pool = NewPool(p.size);
      p.computes = 0;
      ggml_backend_cpu_set_threadpool(backend, p.pool);  // pauses the old pool, which is then free to go
      ggml_threadpool_free(old);
    }
    ++p.computes;
  }
  return g_ggml_cpu_compute(backend, graph);
}

// LIFELINE_GGML_POOL_COMPUTES=<n> (0 to 1000000, default 0): each thread pool the harness makes first computes
// a one-node graph (scale of 4 floats) n times on the CPU backend, as the graphs a long-lived process (a
// server decoding token after token) has computed on its pool before; those computes count like any other
// (CountedCompute). repro/ggml-cpu-threadpool-graph-count-shift/ runs with 32767, so that the program's first
// compute on a pool is its 32,768th. A value that is not such a count exits 2.
uint32_t PoolComputesFromEnvironment() {
  static const uint32_t n = [] {
    constexpr unsigned long kMax = 1000000;
    const char* text = std::getenv("LIFELINE_GGML_POOL_COMPUTES");
    if (text == nullptr || *text == '\0') return uint32_t{0};
    char* end = nullptr;
    errno = 0;
    const unsigned long v = std::strtoul(text, &end, 10);
    if (*text < '0' || *text > '9' || *end != '\0' || errno != 0 || v > kMax) {
      std::fprintf(stderr, "lifeline: LIFELINE_GGML_POOL_COMPUTES='%s' is not a count of computes (0 to %lu)\n",
                   text, kMax);
      std::fflush(stderr);
      std::_Exit(2);
    }
    return static_cast<uint32_t>(v);
  }();
  return n;
}

void AgePool(uint32_t computes) {
  ggml_init_params params{};
  params.mem_size = ggml_tensor_overhead() * 2 + ggml_graph_overhead_custom(1, false) + 256;
  params.no_alloc = false;  // the tensors' bytes in the context: no backend buffer
  ggml_context* ctx = ggml_init(params);
  LIFELINE_CHECK(ctx != nullptr, "ggml_init failed");
  ggml_tensor* x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
  std::memset(x->data, 0, ggml_nbytes(x));
  ggml_cgraph* graph = ggml_new_graph_custom(ctx, 1, false);
  ggml_build_forward_expand(graph, ggml_scale(ctx, x, 0.5f));
  for (uint32_t i = 0; i < computes; ++i) {
    ggml_status st = ggml_backend_graph_compute(Cpu(), graph);
    LIFELINE_CHECK(st == GGML_STATUS_SUCCESS, "LIFELINE_GGML_POOL_COMPUTES: compute " + std::to_string(i + 1) +
                                                  " returned " + ggml_status_to_string(st));
  }
  ggml_free(ctx);
}

}  // namespace

void ForgetGallocrLog() { g_logged_needs_realloc = false; }
bool GallocrLoggedRealloc() { return g_logged_needs_realloc; }

ggml_backend_t Cpu() {
  static ggml_backend_t cpu = [] {
#if LIFELINE_GGML_HAS_SET_ABORT_CALLBACK
    ggml_set_abort_callback(&::lifeline::internal::UpstreamAbort);
#else
    // An older ggml prints a GGML_ABORT's line itself, then its backtrace (through gdb, unless told not to), then
    // aborts: the signal gets the harness's report after ggml's line (cli/lifeline/crash.py reads both).
    setenv("GGML_NO_BACKTRACE", "1", /*overwrite=*/0);
    ::lifeline::internal::ReportAbortSignals();
#endif
    ggml_log_set(&Log, nullptr);
    ggml_backend_t b = ggml_backend_cpu_init();
    LIFELINE_CHECK(b != nullptr, "ggml_backend_cpu_init failed");
    ggml_backend_cpu_set_n_threads(b, 1);  // until a compute sets its allocator's (SetCpuThreads)
    // Every compute on this backend (ggml_backend_graph_compute, a scheduler's splits) calls iface.graph_compute:
    // counted per thread pool (CountedCompute) on its way to ggml's own.
    g_ggml_cpu_compute = b->iface.graph_compute;
    LIFELINE_CHECK(g_ggml_cpu_compute != nullptr, "ggml's CPU backend has no graph_compute");
    b->iface.graph_compute = CountedCompute;
    (void)PoolComputesFromEnvironment();  // a bad LIFELINE_GGML_POOL_COMPUTES exits 2 before anything computes
    return b;
  }();
  return cpu;
}

void SetCpuThreads(int requested, bool shared) {
  LIFELINE_CHECK(requested >= 1 && requested <= kMaxCpuThreads, "cpu threads " + std::to_string(requested) +
                                                                    " out of 1.." + std::to_string(kMaxCpuThreads));
  const int n = CpuThreadsToRun(requested);  // why: above CpuThreadsToRun
  // The pools and why they are kept, and guard ggml-cpu-threadpool-graph-count-shift: above CountedCompute.
  // Shared: one pool of the most threads any compute may run (ggml lets a compute use fewer: n_threads_cur).
  const int size = shared ? CpuThreadsToRun(kMaxCpuThreads) : n;
  CpuPool* p = shared ? &g_shared_pool : n > 1 ? &g_pools[n] : nullptr;
  const bool made = p != nullptr && p->pool == nullptr;
  if (made) *p = CpuPool{NewPool(size), 0, size};
  ggml_backend_cpu_set_threadpool(Cpu(), p != nullptr ? p->pool : nullptr);
  ggml_backend_cpu_set_n_threads(Cpu(), n);
  g_current = p;
  if (made) AgePool(PoolComputesFromEnvironment());
}

const std::vector<ggml_backend_buffer_t>& HostBuffers() { return g_live; }
int64_t HostLiveBytes() { return g_live_bytes; }
bool IsHostBuffer(ggml_backend_buffer_t b) { return b->buft->iface.get_name == TypeName; }
void* HostBase(ggml_backend_buffer_t b) { return BlockOf(b)->base; }

int HostAllocatorOf(ggml_backend_buffer_t b) { return IsHostBuffer(b) ? TypeOf(b->buft)->allocator : -1; }

std::vector<oracles::BufferExtent> HostExtents(int allocator) {
  std::vector<oracles::BufferExtent> extents;
  for (ggml_backend_buffer_t b : g_live) {
    const HostBufferType* type = TypeOf(b->buft);
    if (type->allocator == allocator && b->size > 0) extents.push_back({BlockOf(b)->base, b->size, type->alignment});
  }
  return extents;
}

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
  if (weights != nullptr) ggml_backend_buffer_free(weights);  // a multi-buffer frees its chunks
  if (weights_ctx != nullptr) ggml_free(weights_ctx);
  if (ctx != nullptr) ggml_free(ctx);
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

}  // namespace lifeline::graphs::internal
