// The byte formats of the two runtime programs (targets runtime_encoder_lifetime and
// runtime_buffer_reclaim): bytes -> a bounded sequence of ops, each legal for the model state at that
// point (model.h). Both decoders are file formats (golden tests in tests/runtime/decoder_test.cc):
// changing how bytes map to ops rewrites every file in corpus/runtime_*/ and the runtime reproducers.
//
// Encoder lifetime: frames over three 256-float buffers — transient pools pushed and drained, contexts
// created under pools, set_encode_threads, compute (encode n_cb shares on the encode threads, submit, wait),
// contexts destroyed.
// Buffer reclaim: buffers created (a small share with an invalid size, predicted INVALID_ARGUMENT),
// written, used by dispatches, read and destroyed (optionally with the purge workaround), capture
// switched on and off.
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
inline constexpr int kMaxEncodeThreads = 8;  // n_cb in [1, 8]: upstream's GGML_METAL_MAX_COMMAND_BUFFERS
inline constexpr int kMaxFrameOps = 8;
inline constexpr int kReclaimSlots = 6;
inline constexpr uint32_t kMaxReclaimFloats = 1024;

// A dispatch as decoded: buffer operands are slot numbers. The kernels are the runtime's
// (layers/runtime/device.h: fill, add, scale, copy).
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
  // The state the model found the op's object in (the model's StateOf), for `lifeline coverage --states`.
  const char* state = nullptr;
};
using EncoderProgram = std::vector<EncoderOp>;

// The ops' names as traces and a program's JSON (codec.h) write them, in kind order.
extern const char* const kEncoderOpNames[static_cast<int>(EncoderOpKind::kMaxValue) + 1];

EncoderProgram DecodeEncoder(const uint8_t* data, size_t size);
// The id form (what the reducer edits, codec.h, and Encode takes): `context` names the index of the op that
// created the context instead of its slot, so deleting ops leaves the others meaning what they meant.
// Dispatch operands stay buffer numbers (the three buffers always exist).
EncoderProgram ToIds(const EncoderProgram& program);
bool SameOp(const EncoderOp& a, const EncoderOp& b);
// Encoding: the input whose decoding, in id form, is `target`; throws programs::Unencodable naming the
// first op that cannot be written.
std::vector<uint8_t> Encode(const EncoderProgram& target);
std::string Describe(const EncoderOp& op);
std::string Describe(const EncoderProgram& program);

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
  uint32_t floats = 1;   // kCreate; 0 is the invalid request
  uint8_t seed = 0;      // kWrite
  bool purge = false;    // kDestroy
  Dispatch dispatch;     // kDispatch (n already clamped to the smallest operand)
  StatusCode expect = StatusCode::kOk;
  // The state the model found the op's object in (the model's StateOf), for `lifeline coverage --states`.
  const char* state = nullptr;
};
using ReclaimProgram = std::vector<ReclaimOp>;

extern const char* const kReclaimOpNames[static_cast<int>(ReclaimOpKind::kMaxValue) + 1];

ReclaimProgram DecodeReclaim(const uint8_t* data, size_t size);
// The id form: `slot` and a dispatch's operands name the index of the op that created the buffer instead of
// its slot (a create names itself). Operands a kernel does not read are not compared.
ReclaimProgram ToIds(const ReclaimProgram& program);
bool SameOp(const ReclaimOp& a, const ReclaimOp& b);
std::vector<uint8_t> Encode(const ReclaimProgram& target);
std::string Describe(const ReclaimOp& op);
std::string Describe(const ReclaimProgram& program);

// The values a kWrite of `seed` puts at element `i`: small integers and halves, exact through any chain
// of adds and scales by the decoded values in kMaxOps ops.
float Pattern(uint32_t seed, uint32_t i);

}  // namespace lifeline::rtprog
