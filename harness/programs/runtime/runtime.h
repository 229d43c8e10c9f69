// The compute runtime under test, seen through the runtime programs' vocabulary: the one interface both
// runtime executors (executor.h) drive. Buffers and contexts live in numbered slots; the runtime keeps
// the stack of transient pools (the autorelease-pool analog) of the calling thread. Implementations,
// each in its own file:
//   standin/lifeline_runtime.cc   layers/runtime on the Vulkan device (where metal-edesc-autorelease,
//                                 metal-encode-async-block and igl-capture-retains-buffers are modelled)
//
// Besides the operations, a runtime exposes what the oracles observe (harness/oracles/runtime_oracles.h):
// the validation layer's messages, the live Vulkan objects counted in its create and destroy paths, the
// live pass descriptors, and what its live buffer wrappers account for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "harness/programs/runtime/format.h"
#include "layers/runtime/device.h"

namespace lifeline::rtprog {

class ComputeRuntime {
 public:
  virtual ~ComputeRuntime() = default;

  // ---- buffers (slots 0 .. kReclaimSlots - 1) ----
  // A zero-filled buffer of `floats` floats in `slot`; INVALID_ARGUMENT for a size the runtime refuses.
  virtual Status CreateBuffer(int slot, uint32_t floats) = 0;
  // Destroys the buffer's wrapper; `purge` then runs the purge workaround (free the bytes, keep the object).
  virtual void DestroyBuffer(int slot, bool purge) = 0;
  // The host view of the buffer's memory.
  virtual float* Data(int slot) = 0;

  // ---- frames ----
  virtual void PushPool() = 0;
  virtual void DrainPool() = 0;
  virtual Status CreateContext(int slot, int n_cb) = 0;
  virtual Status SetEncodeThreads(int slot, int n_cb) = 0;
  // Encodes `frame` (buffer operands are buffer slots) on the context's n_cb threads, submits, waits.
  virtual Status Compute(int slot, const std::vector<Dispatch>& frame) = 0;
  virtual void DestroyContext(int slot) = 0;

  // ---- the debug capture registry ----
  virtual void SetCapture(bool on) = 0;
  virtual bool CaptureEnabled() const = 0;
  // Forgets what capture recorded (between iterations), without freeing anything a wrapper still uses.
  virtual void ClearCapture() = 0;

  // ---- what the oracles observe ----
  virtual std::vector<std::string> TakeValidationMessages() = 0;
  virtual runtime::ObjectCounts Objects() const = 0;
  virtual int64_t LivePassDescriptors() const = 0;
  struct Wrappers {
    int64_t buffers = 0;
    int64_t bytes = 0;
  };
  virtual Wrappers LiveWrappers() const = 0;
};

}  // namespace lifeline::rtprog
