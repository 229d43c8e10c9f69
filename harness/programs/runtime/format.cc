// The runtime programs' decoders: how bytes become ops. Every choice goes through the models (model.h).
#include "harness/programs/runtime/format.h"

#include <algorithm>
#include <cstdio>

#include "harness/programs/common/decode.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/runtime/model.h"

namespace lifeline::rtprog {

const char* const kEncoderOpNames[] = {"push-pool", "drain-pool", "create-context", "set-threads", "compute",
                                      "destroy-context"};
const char* const kReclaimOpNames[] = {"create", "write", "dispatch", "read", "destroy", "capture-on",
                                      "capture-off"};

namespace {

using programs::Source;
using programs::Unencodable;
using runtime::Kernel;

constexpr float kScaleValues[] = {2.0f, -1.0f, 3.0f, 0.5f};
// One create in 64 asks for an invalid size: the high bits of the two bytes a create's size is drawn
// from, which the size itself (their value modulo kMaxReclaimFloats) never reads.
constexpr uint32_t kInvalidCreate = 63;

// `slots` are the live buffers; `floats` their sizes. n stays within every operand the kernel reads.
// Encoding: `want` is the target's dispatch and `slot_of` gives the slot of each of its operands.
template <typename SlotOf>
Dispatch DecodeDispatch(Source& src, const std::vector<uint8_t>& slots, const uint32_t* floats, const Dispatch& want,
                        SlotOf&& slot_of) {
  Dispatch d;
  d.kernel = static_cast<Kernel>(src.Int<int>(0, static_cast<int>(Kernel::kMaxValue), [&] { return static_cast<int>(want.kernel); }));
  d.out = programs::PickFrom(src, slots, [&] { return slot_of(want.out); });
  // The operands a kernel does not read are drawn all the same; encoding draws the first live slot there.
  d.a = programs::PickFrom(src, slots, [&] { return want.kernel == Kernel::kFill ? slots[0] : slot_of(want.a); });
  d.b = programs::PickFrom(src, slots, [&] { return want.kernel != Kernel::kAdd ? slots[0] : slot_of(want.b); });
  uint32_t limit = floats[d.out];
  if (d.kernel != Kernel::kFill) limit = std::min(limit, floats[d.a]);
  if (d.kernel == Kernel::kAdd) limit = std::min(limit, floats[d.b]);
  d.n = src.Int<uint32_t>(0, limit, [&] { return want.n; });
  if (d.kernel == Kernel::kFill) {
    d.value = Pattern(src.Full<uint8_t>([&] {
      for (int b = 0; b < 256; ++b)
        if (Pattern(static_cast<uint32_t>(b), 0) == want.value) return static_cast<uint8_t>(b);
      throw Unencodable("a fill value no pattern starts with");
    }), 0);
  } else {
    d.value = kScaleValues[src.Int<int>(0, 3, [&] {
      if (want.kernel != Kernel::kScale) return 0;  // drawn for add and copy too, and never read
      for (int i = 0; i < 4; ++i)
        if (kScaleValues[i] == want.value) return i;
      throw Unencodable("a scale value the format does not have");
    })];
  }
  return d;
}

bool SameDispatch(const Dispatch& x, const Dispatch& y) {
  // A fill reads no operand and a scale or copy no second one: those slots are drawn but mean nothing.
  return x.kernel == y.kernel && x.out == y.out && (x.kernel == Kernel::kFill || x.a == y.a) &&
         (x.kernel != Kernel::kAdd || x.b == y.b) && x.n == y.n &&
         ((x.kernel != Kernel::kFill && x.kernel != Kernel::kScale) || x.value == y.value);
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

namespace {

// Both directions: decoding when `target` is null, else encoding it (its id form) into `src`.
EncoderProgram RunEncoder(Source& src, const EncoderProgram* target) {
  EncoderModel m;
  programs::SlotBook contexts;  // encoding: the context each create op made
  const uint32_t floats[kEncoderBuffers] = {kEncoderFloats, kEncoderFloats, kEncoderFloats};
  const std::vector<uint8_t> buffers = {0, 1, 2};
  auto context = [&](const EncoderOp& want) {
    return programs::PickFrom(src, m.Live(), [&] { return static_cast<uint8_t>(contexts.SlotOf(want.context)); });
  };
  return programs::DecodeOps<EncoderOp>(src, kMaxOps, m, [&](EncoderOp& op, const EncoderOp& want, size_t i) {
    switch (op.kind) {
      case EncoderOpKind::kPushPool:
      case EncoderOpKind::kDrainPool: break;
      case EncoderOpKind::kCreateContext:
        op.context = static_cast<uint8_t>(m.FreeSlot());
        op.n_cb = src.Int<int>(1, kMaxEncodeThreads, [&] { return want.n_cb; });
        if (src.encoding()) contexts.Made(i, op.context);
        break;
      case EncoderOpKind::kSetThreads:
        op.context = context(want);
        op.n_cb = src.Int<int>(0, kMaxEncodeThreads, [&] { return want.n_cb; });
        break;
      case EncoderOpKind::kCompute: {
        op.context = context(want);
        int n = src.Int<int>(0, kMaxFrameOps, [&] { return static_cast<int>(want.frame.size()); });
        for (int k = 0; k < n; ++k) {
          op.frame.push_back(DecodeDispatch(src, buffers, floats, src.encoding() ? want.frame[k] : Dispatch{},
                                            [](uint8_t b) { return b; }));
        }
        break;
      }
      case EncoderOpKind::kDestroyContext:
        op.context = context(want);
        if (src.encoding()) contexts.Freed(op.context);
        break;
    }
    m.Apply(op);
  }, target);
}

}  // namespace

EncoderProgram DecodeEncoder(const uint8_t* data, size_t size) {
  Source src(data, size);
  return RunEncoder(src, nullptr);
}

EncoderProgram ToIds(const EncoderProgram& program) {
  EncoderProgram out = program;
  programs::SlotBook contexts;
  for (size_t i = 0; i < program.size(); ++i) {
    const EncoderOp& op = program[i];
    if (op.kind == EncoderOpKind::kCreateContext) {
      contexts.Made(i, op.context);
      out[i].context = static_cast<uint8_t>(i);
    } else if (op.kind != EncoderOpKind::kPushPool && op.kind != EncoderOpKind::kDrainPool) {
      out[i].context = static_cast<uint8_t>(contexts.Maker(op.context));
      if (op.kind == EncoderOpKind::kDestroyContext) contexts.Freed(op.context);
    }
  }
  return out;
}

bool SameOp(const EncoderOp& a, const EncoderOp& b) {
  if (a.kind != b.kind || a.context != b.context) return false;
  if (a.kind == EncoderOpKind::kCreateContext || a.kind == EncoderOpKind::kSetThreads) return a.n_cb == b.n_cb;
  if (a.kind != EncoderOpKind::kCompute) return true;
  if (a.frame.size() != b.frame.size()) return false;
  for (size_t k = 0; k < a.frame.size(); ++k)
    if (!SameDispatch(a.frame[k], b.frame[k])) return false;
  return true;
}

std::vector<uint8_t> Encode(const EncoderProgram& target) {
  return programs::EncodeChecked(
      target, [&](Source& src) { RunEncoder(src, &target); },
      [](const std::vector<uint8_t>& b) { return ToIds(DecodeEncoder(b.data(), b.size())); },
      [](const EncoderOp& a, const EncoderOp& b) { return SameOp(a, b); });
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

namespace {

// Both directions: decoding when `target` is null, else encoding it (its id form) into `src`.
ReclaimProgram RunReclaim(Source& src, const ReclaimProgram* target) {
  ReclaimModel m;
  programs::SlotBook buffers;  // encoding: the buffer each create op made
  auto slot_of = [&](uint8_t maker) { return static_cast<uint8_t>(buffers.SlotOf(maker)); };
  auto live = [&](const ReclaimOp& want) { return programs::PickFrom(src, m.Live(), [&] { return slot_of(want.slot); }); };
  return programs::DecodeOps<ReclaimOp>(src, kMaxOps, m, [&](ReclaimOp& op, const ReclaimOp& want, size_t i) {
    switch (op.kind) {
      case ReclaimOpKind::kCreate: {
        op.slot = static_cast<uint8_t>(m.FreeSlot());
        const uint32_t drawn = src.Full<uint16_t>([&] {
          if (want.floats > kMaxReclaimFloats) throw Unencodable("a buffer larger than the format's");
          return static_cast<uint16_t>(want.floats == 0 ? kInvalidCreate * kMaxReclaimFloats : want.floats - 1);
        });
        op.floats = drawn / kMaxReclaimFloats == kInvalidCreate ? 0 : 1 + drawn % kMaxReclaimFloats;
        if (src.encoding() && op.floats != 0) buffers.Made(i, op.slot);
        break;
      }
      case ReclaimOpKind::kWrite:
        op.slot = live(want);
        op.seed = src.Full<uint8_t>([&] { return want.seed; });
        break;
      case ReclaimOpKind::kDispatch: op.dispatch = DecodeDispatch(src, m.Live(), m.floats, want.dispatch, slot_of); break;
      case ReclaimOpKind::kRead: op.slot = live(want); break;
      case ReclaimOpKind::kDestroy:
        op.slot = live(want);
        op.purge = src.Bool([&] { return want.purge; });
        if (src.encoding()) buffers.Freed(op.slot);
        break;
      case ReclaimOpKind::kCaptureOn:
      case ReclaimOpKind::kCaptureOff: break;
    }
    m.Apply(op);
  }, target);
}

}  // namespace

ReclaimProgram DecodeReclaim(const uint8_t* data, size_t size) {
  Source src(data, size);
  return RunReclaim(src, nullptr);
}

ReclaimProgram ToIds(const ReclaimProgram& program) {
  ReclaimProgram out = program;
  programs::SlotBook buffers;
  auto id = [&](uint8_t slot) { return static_cast<uint8_t>(buffers.Maker(slot)); };
  for (size_t i = 0; i < program.size(); ++i) {
    const ReclaimOp& op = program[i];
    ReclaimOp& o = out[i];
    switch (op.kind) {
      case ReclaimOpKind::kCreate:
        if (op.floats != 0) buffers.Made(i, op.slot);
        o.slot = static_cast<uint8_t>(i);
        break;
      case ReclaimOpKind::kDispatch:
        o.dispatch.out = id(op.dispatch.out);
        o.dispatch.a = id(op.dispatch.a);
        o.dispatch.b = id(op.dispatch.b);
        break;
      case ReclaimOpKind::kWrite:
      case ReclaimOpKind::kRead: o.slot = id(op.slot); break;
      case ReclaimOpKind::kDestroy:
        o.slot = id(op.slot);
        buffers.Freed(op.slot);
        break;
      default: break;
    }
  }
  return out;
}

bool SameOp(const ReclaimOp& a, const ReclaimOp& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case ReclaimOpKind::kCreate: return a.floats == b.floats;
    case ReclaimOpKind::kWrite: return a.slot == b.slot && a.seed == b.seed;
    case ReclaimOpKind::kDispatch: return SameDispatch(a.dispatch, b.dispatch);
    case ReclaimOpKind::kRead: return a.slot == b.slot;
    case ReclaimOpKind::kDestroy: return a.slot == b.slot && a.purge == b.purge;
    default: return true;
  }
}

std::vector<uint8_t> Encode(const ReclaimProgram& target) {
  return programs::EncodeChecked(
      target, [&](Source& src) { RunReclaim(src, &target); },
      [](const std::vector<uint8_t>& b) { return ToIds(DecodeReclaim(b.data(), b.size())); },
      [](const ReclaimOp& a, const ReclaimOp& b) { return SameOp(a, b); });
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
