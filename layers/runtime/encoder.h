// Frames of compute work on layers/runtime: transient pools, pass descriptors, and a `Context` that
// encodes one frame into `n_cb` command buffers on the process's encode threads, submits them and waits.
//
// TransientPool is the autorelease-pool analog: a thread-local stack of pools; a convenience constructor
// (`PassDescriptor::Create`) hands back an object owned by the innermost pool (+0), which the pool
// releases when it drains; `PassDescriptor::New` returns an object the caller owns (+1). Descriptors are
// refcounted (`Retain`/`Release`).
//
// The documented bugs of this layer (repro/metal-edesc-autorelease/, repro/metal-encode-async-block/) sit
// beside their fixes in `Context`:
//   metal-edesc-autorelease    (whisper.cpp #2452; llama.cpp #9698 cause, #9718 fix) Create() keeps a
//                              borrowed pointer to a descriptor made by the convenience constructor while
//                              the caller's pool is active; the pool drains before the first frame, and
//                              the encode path reads freed memory. Fixed: the context owns its descriptor
//                              (New, released in the destructor).
//   metal-encode-async-block   (llama.cpp #9698 cause, #9747 fix) SetEncodeThreads() stores a non-owning
//                              view of a lambda that lives in its own stack frame; worker threads call it
//                              later. Fixed: an owning copy, replaced and freed properly. As upstream, the
//                              fixed callback reads the context's `n_cb_` when it runs; the buggy one
//                              captured `n_cb` (and the context pointer) when it was made.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "layers/runtime/buffer.h"
#include "layers/runtime/device.h"

namespace lifeline::runtime {

inline constexpr int kMaxEncodeThreads = 8;
inline constexpr int kMaxFrameOps = 64;

// Drains (releases everything registered) when popped or destroyed. Strictly nested per thread.
class TransientPool {
 public:
  TransientPool();
  ~TransientPool();
  TransientPool(const TransientPool&) = delete;
  TransientPool& operator=(const TransientPool&) = delete;
  static int Depth();  // pools on this thread's stack
  // Registers `object` with the innermost pool, which calls `release(object)` when it drains; false
  // (nothing registered) when there is no pool.
  static bool Autorelease(void* object, void (*release)(void*));
  size_t size() const { return objects_.size(); }

 private:
  struct Entry {
    void* object;
    void (*release)(void*);
  };
  std::vector<Entry> objects_;
  TransientPool* outer_;
};

enum class DispatchType : uint8_t { kSerial, kConcurrent };

// What a compute pass needs to know: whether dispatches may overlap (kSerial puts a barrier between
// dependent dispatches) and a label. Refcounted, and deliberately not polymorphic: a read of a freed
// descriptor must reach ASan as the heap-use-after-free it is, not UBSan's vptr check first.
class PassDescriptor {
 public:
  // +0: owned by the innermost TransientPool; nullptr when no pool is active.
  static PassDescriptor* Create(DispatchType type);
  // +1: owned by the caller.
  static PassDescriptor* New(DispatchType type);
  void Retain();
  void Release();
  int refs() const { return refs_; }
  DispatchType dispatch_type() const { return dispatch_type_; }
  const std::string& label() const { return label_; }
  static int64_t Live();  // descriptors alive in the process

 private:
  explicit PassDescriptor(DispatchType type);
  ~PassDescriptor();
  int refs_ = 1;
  DispatchType dispatch_type_;
  std::string label_;
};

// One dispatch: out = kernel(a, b, value) over the first `n` floats.
struct FrameOp {
  Kernel kernel = Kernel::kFill;
  Buffer* a = nullptr;  // kAdd, kScale, kCopy
  Buffer* b = nullptr;  // kAdd
  Buffer* out = nullptr;
  uint32_t n = 0;
  float value = 0;
};

// How the context holds its pass descriptor. kOwned is the fix; kBorrowed is metal-edesc-autorelease
// (forced when that bug is re-introduced); kCopiedNeverReleased is the reporter's alternative without the
// matching release, kept so a test can show LeakSanitizer catches it.
enum class DescriptorOwnership : uint8_t { kOwned, kBorrowed, kCopiedNeverReleased };

class Context {
 public:
  // Validates `n_cb` (1..kMaxEncodeThreads). With `kBorrowed` (or metal-edesc-autorelease) a
  // TransientPool must be active on this thread: FAILED_PRECONDITION otherwise.
  static StatusOr<std::unique_ptr<Context>> Create(Device* device, int n_cb,
                                                   DescriptorOwnership ownership = DescriptorOwnership::kOwned);
  ~Context();

  // Replaces the stored encode callback and the per-thread command pools. As upstream's set_n_cb does
  // (`MIN(n_cb, GGML_METAL_MAX_COMMAND_BUFFERS)`), a count above kMaxEncodeThreads is clamped to it;
  // below 1 is INVALID_ARGUMENT. The fixed callback reads the clamped `n_cb_` when it runs; the
  // re-introduced one captured the raw argument, so with it a clamped count would also encode the wrong
  // shares (PositiveEncodeCallback.ReadsTheClampedThreadCountWhenItRuns pins the fixed behaviour).
  Status SetEncodeThreads(int n_cb);
  int n_cb() const { return n_cb_; }

  // Encodes `ops` (at most kMaxFrameOps; every buffer large enough for its `n`) into n_cb command
  // buffers through the stored callback, on the process's encode threads (up to kMaxEncodeThreads,
  // started on first use and kept), submits them in order, waits for the fence and returns. Each share
  // is a contiguous run of the ops. Bad ops are INVALID_ARGUMENT before anything is recorded.
  Status Compute(const std::vector<FrameOp>& ops);

 private:
  Context(Device* device) : device_(device) {}
  // Per encode thread: a command pool and a descriptor pool (both externally synchronized).
  struct Pools {
    std::vector<VkCommandPool> command;
    std::vector<VkDescriptorPool> descriptor;
  };
  void EncodeShare(int cb_index, int n_cb);
  void EncodeThrough(int cb_index);  // one share, through the stored callback (on an encode thread)
  Status MakePools(int n, Pools* pools);
  void DestroyPools(Pools* pools);

  Device* device_;
  PassDescriptor* descriptor_ = nullptr;
  DescriptorOwnership ownership_ = DescriptorOwnership::kOwned;
  int n_cb_ = 0;
  // The stored callback: owned (fix) or a non-owning view (metal-encode-async-block).
  std::unique_ptr<std::function<void(int)>> encode_owned_;
  struct CallbackRef {
    const void* object = nullptr;
    void (*call)(const void* object, int cb_index) = nullptr;
  } encode_ref_;
  Pools pools_;
  std::vector<VkCommandBuffer> command_buffers_;
  std::vector<Status> worker_status_;
  const std::vector<FrameOp>* frame_ = nullptr;
};

}  // namespace lifeline::runtime
