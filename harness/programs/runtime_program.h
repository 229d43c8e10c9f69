// The op programs of the two runtime targets. Both decoders are file formats (golden tests in
// tests/runtime_program_test.cc); both executors check every op against a CPU model and the device's own
// accounting, and fail on any validation-layer message.
//
// Encoder lifetime (runtime_encoder_lifetime): frames over three 256-float buffers — TransientPools pushed
// and drained, contexts created under pools, set_encode_threads, compute (encode on n_cb worker threads,
// submit, wait), contexts destroyed. Oracles: every buffer equals the CPU reference after each frame; live
// command and descriptor pools equal the sum of n_cb over live contexts; no fence outlives a frame; no
// validation message; at the end no object and no pass descriptor is left.
//
// Buffer reclaim (runtime_buffer_reclaim): buffers created, written, used by dispatches, read and destroyed
// (optionally with the purge workaround), capture switched on and off. Oracle after every op: live
// VkBuffer and VkDeviceMemory objects and bytes equal what the live Buffer wrappers account for (bytes
// first, then objects); values equal the CPU model; no validation message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "layers/runtime/device.h"

namespace lifeline::rtprog {

inline constexpr size_t kMaxOps = 24;
inline constexpr int kEncoderBuffers = 3;
inline constexpr uint32_t kEncoderFloats = 256;
inline constexpr int kMaxPoolDepth = 3;
inline constexpr int kMaxContexts = 3;
inline constexpr int kMaxFrameOps = 8;
inline constexpr int kReclaimSlots = 6;
inline constexpr uint32_t kMaxReclaimFloats = 1024;

// A dispatch as decoded: buffer operands are slot numbers.
struct Dispatch {
  runtime::Kernel kernel = runtime::Kernel::kFill;
  uint8_t a = 0, b = 0, out = 0;
  uint32_t n = 0;
  float value = 0;
};

// ---- encoder lifetime -----------------------------------------------------------------------------------

enum class EncoderOpKind : uint8_t {
  kPushPool,        // a TransientPool on this thread
  kDrainPool,       // drain the innermost pool
  kCreateContext,   // Context::Create(n_cb) while a pool is active -> lowest free context slot
  kSetThreads,      // context.SetEncodeThreads(n_cb); 0 is invalid (predicted INVALID_ARGUMENT)
  kCompute,         // context.Compute(frame)
  kDestroyContext,
  kMaxValue = kDestroyContext,
};

struct EncoderOp {
  EncoderOpKind kind = EncoderOpKind::kPushPool;
  uint8_t context = 0;   // slot
  int n_cb = 1;          // kCreateContext, kSetThreads
  std::vector<Dispatch> frame;  // kCompute
  StatusCode expect = StatusCode::kOk;
};
using EncoderProgram = std::vector<EncoderOp>;

EncoderProgram DecodeEncoder(const uint8_t* data, size_t size);
std::string Describe(const EncoderOp& op);
std::string Describe(const EncoderProgram& program);
void Execute(const EncoderProgram& program);

// ---- buffer reclaim -------------------------------------------------------------------------------------

enum class ReclaimOpKind : uint8_t {
  kCreate,      // Buffer::Create(floats * 4) -> lowest free slot
  kWrite,       // host writes a pattern
  kDispatch,    // one dispatch on the iteration's context
  kRead,        // host reads and compares with the model
  kDestroy,     // destroy the wrapper; `purge` runs the purge workaround right after
  kCaptureOn,
  kCaptureOff,
  kMaxValue = kCaptureOff,
};

struct ReclaimOp {
  ReclaimOpKind kind = ReclaimOpKind::kCreate;
  uint8_t slot = 0;
  uint32_t floats = 1;   // kCreate
  uint8_t seed = 0;      // kWrite
  bool purge = false;    // kDestroy
  Dispatch dispatch;     // kDispatch (n already clamped to the smallest operand)
};
using ReclaimProgram = std::vector<ReclaimOp>;

ReclaimProgram DecodeReclaim(const uint8_t* data, size_t size);
std::string Describe(const ReclaimOp& op);
std::string Describe(const ReclaimProgram& program);
void Execute(const ReclaimProgram& program);

}  // namespace lifeline::rtprog
