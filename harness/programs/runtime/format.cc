// The runtime programs' decoders: how bytes become ops. Every choice goes through the models (model.h).
#include "harness/programs/runtime/format.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>

#include "harness/programs/common/decode.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/runtime/model.h"

namespace lifeline::rtprog {
namespace {

using runtime::Kernel;

constexpr float kScaleValues[] = {2.0f, -1.0f, 3.0f, 0.5f};
constexpr const char* kEncoderOpNames[] = {"push-pool", "drain-pool", "create-context", "set-threads", "compute",
                                           "destroy-context"};
constexpr const char* kReclaimOpNames[] = {"create", "write", "dispatch", "read", "destroy", "capture-on",
                                           "capture-off"};
// One create in 64 asks for an invalid size: the high bits of the two bytes a create's size is drawn
// from, which the size itself (their value modulo kMaxReclaimFloats) never reads.
constexpr uint32_t kInvalidCreate = 63;

// `slots` are the live buffers; `floats` their sizes. n stays within every operand the kernel reads.
Dispatch DecodeDispatch(FuzzedDataProvider& fdp, const std::vector<uint8_t>& slots, const uint32_t* floats) {
  Dispatch d;
  d.kernel = static_cast<Kernel>(fdp.ConsumeIntegralInRange<int>(0, static_cast<int>(Kernel::kMaxValue)));
  d.out = programs::PickFrom(fdp, slots);
  d.a = programs::PickFrom(fdp, slots);
  d.b = programs::PickFrom(fdp, slots);
  uint32_t limit = floats[d.out];
  if (d.kernel != Kernel::kFill) limit = std::min(limit, floats[d.a]);
  if (d.kernel == Kernel::kAdd) limit = std::min(limit, floats[d.b]);
  d.n = fdp.ConsumeIntegralInRange<uint32_t>(0, limit);
  d.value = d.kernel == Kernel::kFill ? Pattern(fdp.ConsumeIntegral<uint8_t>(), 0)
                                      : kScaleValues[fdp.ConsumeIntegralInRange<int>(0, 3)];
  return d;
}

std::string Describe(const Dispatch& d, char prefix) {
  std::string s = std::string(runtime::KernelName(d.kernel)) + " " + prefix + std::to_string(d.out) + " <-";
  if (d.kernel != Kernel::kFill) s += " " + std::string(1, prefix) + std::to_string(d.a);
  if (d.kernel == Kernel::kAdd) s += " " + std::string(1, prefix) + std::to_string(d.b);
  s += " n=" + std::to_string(d.n);
  if (d.kernel == Kernel::kFill || d.kernel == Kernel::kScale) {
    char v[32];
    std::snprintf(v, sizeof v, " value=%g", static_cast<double>(d.value));
    s += v;
  }
  return s;
}

std::string Prediction(StatusCode expect) {
  return expect == StatusCode::kOk ? "" : " -> " + std::string(StatusCodeName(expect));
}

}  // namespace

float Pattern(uint32_t seed, uint32_t i) { return (static_cast<float>((seed * 31 + i * 7) % 97) - 48.0f) * 0.5f; }

// ---- encoder lifetime -----------------------------------------------------------------------------------

EncoderProgram DecodeEncoder(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  EncoderModel m;
  const uint32_t floats[kEncoderBuffers] = {kEncoderFloats, kEncoderFloats, kEncoderFloats};
  const std::vector<uint8_t> buffers = {0, 1, 2};
  return programs::DecodeOps<EncoderOp>(fdp, kMaxOps, m, [&](EncoderOp& op) {
    switch (op.kind) {
      case EncoderOpKind::kPushPool:
      case EncoderOpKind::kDrainPool: break;
      case EncoderOpKind::kCreateContext:
        op.context = static_cast<uint8_t>(m.FreeSlot());
        op.n_cb = fdp.ConsumeIntegralInRange<int>(1, kMaxEncodeThreads);
        break;
      case EncoderOpKind::kSetThreads:
        op.context = programs::PickFrom(fdp, m.Live());
        op.n_cb = fdp.ConsumeIntegralInRange<int>(0, kMaxEncodeThreads);
        break;
      case EncoderOpKind::kCompute: {
        op.context = programs::PickFrom(fdp, m.Live());
        int n = fdp.ConsumeIntegralInRange<int>(0, kMaxFrameOps);
        for (int k = 0; k < n; ++k) op.frame.push_back(DecodeDispatch(fdp, buffers, floats));
        break;
      }
      case EncoderOpKind::kDestroyContext: op.context = programs::PickFrom(fdp, m.Live()); break;
    }
    m.Apply(op);
  });
}

std::string Describe(const EncoderOp& op) {
  std::string s = programs::NameOf(kEncoderOpNames, op.kind);
  const std::string ctx = " ctx" + std::to_string(op.context);
  switch (op.kind) {
    case EncoderOpKind::kPushPool:
    case EncoderOpKind::kDrainPool: break;
    case EncoderOpKind::kCreateContext: s += " n_cb=" + std::to_string(op.n_cb) + " ->" + ctx; break;
    case EncoderOpKind::kSetThreads: s += ctx + " n_cb=" + std::to_string(op.n_cb); break;
    case EncoderOpKind::kCompute:
      s += ctx + " [";
      for (size_t i = 0; i < op.frame.size(); ++i) s += (i ? "; " : "") + Describe(op.frame[i], 'b');
      s += "]";
      break;
    case EncoderOpKind::kDestroyContext: s += ctx; break;
  }
  return s + Prediction(op.expect);
}

std::string Describe(const EncoderProgram& program) { return programs::DescribeNumbered(program); }

// ---- buffer reclaim -------------------------------------------------------------------------------------

ReclaimProgram DecodeReclaim(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  ReclaimModel m;
  return programs::DecodeOps<ReclaimOp>(fdp, kMaxOps, m, [&](ReclaimOp& op) {
    switch (op.kind) {
      case ReclaimOpKind::kCreate: {
        op.slot = static_cast<uint8_t>(m.FreeSlot());
        const uint32_t drawn = fdp.ConsumeIntegral<uint16_t>();
        op.floats = drawn / kMaxReclaimFloats == kInvalidCreate ? 0 : 1 + drawn % kMaxReclaimFloats;
        break;
      }
      case ReclaimOpKind::kWrite:
        op.slot = programs::PickFrom(fdp, m.Live());
        op.seed = fdp.ConsumeIntegral<uint8_t>();
        break;
      case ReclaimOpKind::kDispatch: op.dispatch = DecodeDispatch(fdp, m.Live(), m.floats); break;
      case ReclaimOpKind::kRead: op.slot = programs::PickFrom(fdp, m.Live()); break;
      case ReclaimOpKind::kDestroy:
        op.slot = programs::PickFrom(fdp, m.Live());
        op.purge = fdp.ConsumeBool();
        break;
      case ReclaimOpKind::kCaptureOn:
      case ReclaimOpKind::kCaptureOff: break;
    }
    m.Apply(op);
  });
}

std::string Describe(const ReclaimOp& op) {
  std::string s = programs::NameOf(kReclaimOpNames, op.kind);
  const std::string slot = " s" + std::to_string(op.slot);
  switch (op.kind) {
    case ReclaimOpKind::kCreate: s += " " + std::to_string(op.floats) + " floats ->" + slot; break;
    case ReclaimOpKind::kWrite: s += slot + " seed=" + std::to_string(op.seed); break;
    case ReclaimOpKind::kDispatch: s += " " + Describe(op.dispatch, 's'); break;
    case ReclaimOpKind::kRead: s += slot; break;
    case ReclaimOpKind::kDestroy: s += slot + (op.purge ? " then purge" : ""); break;
    default: break;
  }
  return s + Prediction(op.expect);
}

std::string Describe(const ReclaimProgram& program) { return programs::DescribeNumbered(program); }

}  // namespace lifeline::rtprog
