#include "harness/programs/runtime_program.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "core/check.h"
#include "harness/programs/op_trace.h"
#include "layers/runtime/buffer.h"
#include "layers/runtime/encoder.h"

namespace lifeline::rtprog {
namespace {

using runtime::Buffer;
using runtime::Context;
using runtime::Device;
using runtime::Kernel;
using runtime::ObjectCounts;

constexpr float kScaleValues[] = {2.0f, -1.0f, 3.0f, 0.5f};
constexpr const char* kEncoderOpNames[] = {"push-pool", "drain-pool", "create-context", "set-threads", "compute",
                                           "destroy-context"};
constexpr const char* kReclaimOpNames[] = {"create", "write", "dispatch", "read", "destroy", "capture-on",
                                           "capture-off"};

// Small integers and halves: exact through any chain of adds and scales by kScaleValues in 24 ops.
float Pattern(uint32_t seed, uint32_t i) { return (static_cast<float>((seed * 31 + i * 7) % 97) - 48.0f) * 0.5f; }

Dispatch DecodeDispatch(FuzzedDataProvider& fdp, const std::vector<uint8_t>& slots, const std::vector<uint32_t>& floats) {
  Dispatch d;
  d.kernel = static_cast<Kernel>(fdp.ConsumeIntegralInRange<int>(0, static_cast<int>(Kernel::kMaxValue)));
  auto pick = [&] { return slots[fdp.ConsumeIntegralInRange<size_t>(0, slots.size() - 1)]; };
  d.out = pick();
  d.a = pick();
  d.b = pick();
  uint32_t limit = floats[d.out];
  if (d.kernel != Kernel::kFill) limit = std::min(limit, floats[d.a]);
  if (d.kernel == Kernel::kAdd) limit = std::min(limit, floats[d.b]);
  d.n = fdp.ConsumeIntegralInRange<uint32_t>(0, limit);
  d.value = d.kernel == Kernel::kFill ? Pattern(fdp.ConsumeIntegral<uint8_t>(), 0)
                                      : kScaleValues[fdp.ConsumeIntegralInRange<int>(0, 3)];
  return d;
}

// The CPU reference of one dispatch over `model` (one float vector per slot).
void Apply(const Dispatch& d, std::vector<std::vector<float>>& model) {
  // Read the inputs first: out may alias a or b.
  std::vector<float> a = model[d.a], b = model[d.b];
  std::vector<float>& out = model[d.out];
  for (uint32_t i = 0; i < d.n; ++i) {
    switch (d.kernel) {
      case Kernel::kFill: out[i] = d.value; break;
      case Kernel::kAdd: out[i] = a[i] + b[i]; break;
      case Kernel::kScale: out[i] = a[i] * d.value; break;
      case Kernel::kCopy: out[i] = a[i]; break;
    }
  }
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

Device* GetDevice() {
  auto device = Device::Get();
  LIFELINE_PRECONDITION(device.ok(), "no Vulkan device for the runtime targets: " + device.status().ToString());
  return device.value();
}

// Any message of the validation layer fails the op that caused it.
void CheckValidation(Device* device, const std::string& where) {
  std::vector<std::string> errors = device->TakeValidationErrors();
  if (errors.empty()) return;
  std::string all;
  for (const auto& e : errors) all += "\n    " + e;
  LIFELINE_CHECK(false, where + "validation layer: " + std::to_string(errors.size()) + " message(s):" + all);
}

void CheckValues(const Buffer& buffer, const std::vector<float>& model, const std::string& what) {
  for (size_t i = 0; i < model.size(); ++i) {
    LIFELINE_CHECK(buffer.data()[i] == model[i], what + " element " + std::to_string(i) + " is " +
                                                      std::to_string(buffer.data()[i]) + ", the CPU reference " +
                                                      std::to_string(model[i]));
  }
}

template <typename Program>
void MaybePrintTrace(const Program& program) {
  if (TraceRequested()) RenderOps<Program>(&program, program.size(), stderr);
}

}  // namespace

// ---- encoder lifetime -----------------------------------------------------------------------------------

EncoderProgram DecodeEncoder(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  int depth = 0;
  bool alive[kMaxContexts] = {};
  const std::vector<uint8_t> buffers = {0, 1, 2};
  const std::vector<uint32_t> floats(kEncoderBuffers, kEncoderFloats);
  EncoderProgram program;
  for (size_t i = 0; i < kMaxOps && fdp.remaining_bytes() > 0; ++i) {
    std::vector<uint8_t> live;
    int free_slot = -1;
    for (int c = 0; c < kMaxContexts; ++c) {
      if (alive[c]) live.push_back(static_cast<uint8_t>(c));
      else if (free_slot < 0) free_slot = c;
    }
    std::vector<EncoderOpKind> legal;
    if (depth < kMaxPoolDepth) legal.push_back(EncoderOpKind::kPushPool);
    if (depth > 0) legal.push_back(EncoderOpKind::kDrainPool);
    if (depth > 0 && free_slot >= 0) legal.push_back(EncoderOpKind::kCreateContext);
    if (!live.empty()) {
      legal.push_back(EncoderOpKind::kSetThreads);
      legal.push_back(EncoderOpKind::kCompute);
      legal.push_back(EncoderOpKind::kDestroyContext);
    }
    EncoderOp op;
    op.kind = legal[fdp.ConsumeIntegralInRange<size_t>(0, legal.size() - 1)];
    switch (op.kind) {
      case EncoderOpKind::kPushPool: ++depth; break;
      case EncoderOpKind::kDrainPool: --depth; break;
      case EncoderOpKind::kCreateContext:
        op.context = static_cast<uint8_t>(free_slot);
        op.n_cb = fdp.ConsumeIntegralInRange<int>(1, runtime::kMaxEncodeThreads);
        alive[free_slot] = true;
        break;
      case EncoderOpKind::kSetThreads:
        op.context = live[fdp.ConsumeIntegralInRange<size_t>(0, live.size() - 1)];
        op.n_cb = fdp.ConsumeIntegralInRange<int>(0, runtime::kMaxEncodeThreads);
        if (op.n_cb == 0) op.expect = StatusCode::kInvalidArgument;
        break;
      case EncoderOpKind::kCompute: {
        op.context = live[fdp.ConsumeIntegralInRange<size_t>(0, live.size() - 1)];
        int n = fdp.ConsumeIntegralInRange<int>(0, kMaxFrameOps);
        for (int k = 0; k < n; ++k) op.frame.push_back(DecodeDispatch(fdp, buffers, floats));
        break;
      }
      case EncoderOpKind::kDestroyContext:
        op.context = live[fdp.ConsumeIntegralInRange<size_t>(0, live.size() - 1)];
        alive[op.context] = false;
        break;
    }
    program.push_back(std::move(op));
  }
  return program;
}

std::string Describe(const EncoderOp& op) {
  std::string s = kEncoderOpNames[static_cast<int>(op.kind)];
  switch (op.kind) {
    case EncoderOpKind::kPushPool:
    case EncoderOpKind::kDrainPool: break;
    case EncoderOpKind::kCreateContext: s += " n_cb=" + std::to_string(op.n_cb) + " -> ctx" + std::to_string(op.context); break;
    case EncoderOpKind::kSetThreads: s += " ctx" + std::to_string(op.context) + " n_cb=" + std::to_string(op.n_cb); break;
    case EncoderOpKind::kCompute:
      s += " ctx" + std::to_string(op.context) + " [";
      for (size_t i = 0; i < op.frame.size(); ++i) s += (i ? "; " : "") + Describe(op.frame[i], 'b');
      s += "]";
      break;
    case EncoderOpKind::kDestroyContext: s += " ctx" + std::to_string(op.context); break;
  }
  if (op.expect != StatusCode::kOk) s += "  (" + std::string(StatusCodeName(op.expect)) + ")";
  return s;
}

std::string Describe(const EncoderProgram& program) {
  return DescribeNumbered(program);
}

void Execute(const EncoderProgram& program) {
  MaybePrintTrace(program);
  Device* device = GetDevice();
  CheckValidation(device, "before the program: ");
  const ObjectCounts base = device->Counts();
  const int64_t base_descriptors = runtime::PassDescriptor::Live();
  OpTraceScope trace(&program, program.size(), &RenderOps<EncoderProgram>);

  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<std::vector<float>> model(kEncoderBuffers, std::vector<float>(kEncoderFloats, 0.0f));
  for (int b = 0; b < kEncoderBuffers; ++b) {
    auto buffer = Buffer::Create(device, kEncoderFloats * sizeof(float));
    LIFELINE_CHECK(buffer.ok(), "creating the frame buffers: " + buffer.status().ToString());
    buffers.push_back(std::move(buffer.value()));
  }
  std::vector<std::unique_ptr<runtime::TransientPool>> pools;
  std::unique_ptr<Context> contexts[kMaxContexts];
  int n_cb[kMaxContexts] = {};

  for (size_t i = 0; i < program.size(); ++i) {
    trace.set_op(i);
    const EncoderOp& op = program[i];
    const std::string where = "op " + std::to_string(i) + " (" + Describe(op) + "): ";
    Status status;
    switch (op.kind) {
      case EncoderOpKind::kPushPool: pools.push_back(std::make_unique<runtime::TransientPool>()); break;
      case EncoderOpKind::kDrainPool: pools.pop_back(); break;
      case EncoderOpKind::kCreateContext: {
        auto ctx = Context::Create(device, op.n_cb);
        status = ctx.status();
        if (ctx.ok()) {
          contexts[op.context] = std::move(ctx.value());
          n_cb[op.context] = op.n_cb;
        }
        break;
      }
      case EncoderOpKind::kSetThreads:
        status = contexts[op.context]->SetEncodeThreads(op.n_cb);
        if (status.ok()) n_cb[op.context] = op.n_cb;
        break;
      case EncoderOpKind::kCompute: {
        std::vector<runtime::FrameOp> frame;
        for (const Dispatch& d : op.frame)
          frame.push_back({d.kernel, buffers[d.a].get(), buffers[d.b].get(), buffers[d.out].get(), d.n, d.value});
        status = contexts[op.context]->Compute(frame);
        if (status.ok()) {
          for (const Dispatch& d : op.frame) Apply(d, model);
          for (int b = 0; b < kEncoderBuffers; ++b) CheckValues(*buffers[b], model[b], where + "value oracle: b" + std::to_string(b));
        }
        break;
      }
      case EncoderOpKind::kDestroyContext:
        contexts[op.context].reset();
        n_cb[op.context] = 0;
        break;
    }
    LIFELINE_CHECK(status.code() == op.expect, where + "returned " + status.ToString() + ", the model expects " +
                                                   std::string(StatusCodeName(op.expect)));
    CheckValidation(device, where);
    ObjectCounts now = device->Counts();
    int64_t pools_expected = 0;
    for (int c = 0; c < kMaxContexts; ++c) pools_expected += n_cb[c];
    LIFELINE_CHECK(now.command_pools - base.command_pools == pools_expected &&
                       now.descriptor_pools - base.descriptor_pools == pools_expected && now.fences == base.fences,
                   where + "object accounting: " + now.ToString() + "; the live contexts account for " +
                       std::to_string(pools_expected) + " command and descriptor pools and no fence beyond " +
                       base.ToString());
  }
  trace.set_op(program.size());
  for (auto& c : contexts) c.reset();
  while (!pools.empty()) pools.pop_back();
  buffers.clear();
  CheckValidation(device, "teardown: ");
  LIFELINE_CHECK(device->Counts() == base, "teardown: objects left: " + device->Counts().ToString() + " (before: " +
                                               base.ToString() + ")");
  LIFELINE_CHECK(runtime::PassDescriptor::Live() == base_descriptors,
                 "teardown: " + std::to_string(runtime::PassDescriptor::Live() - base_descriptors) +
                     " pass descriptors left with every pool drained and every context destroyed");
}

// ---- buffer reclaim -------------------------------------------------------------------------------------

ReclaimProgram DecodeReclaim(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  bool alive[kReclaimSlots] = {};
  std::vector<uint32_t> floats(kReclaimSlots, 0);
  bool capture = false;
  ReclaimProgram program;
  for (size_t i = 0; i < kMaxOps && fdp.remaining_bytes() > 0; ++i) {
    std::vector<uint8_t> live;
    int free_slot = -1;
    for (int s = 0; s < kReclaimSlots; ++s) {
      if (alive[s]) live.push_back(static_cast<uint8_t>(s));
      else if (free_slot < 0) free_slot = s;
    }
    std::vector<ReclaimOpKind> legal;
    if (free_slot >= 0) legal.push_back(ReclaimOpKind::kCreate);
    if (!live.empty()) {
      legal.push_back(ReclaimOpKind::kWrite);
      legal.push_back(ReclaimOpKind::kDispatch);
      legal.push_back(ReclaimOpKind::kRead);
      legal.push_back(ReclaimOpKind::kDestroy);
    }
    legal.push_back(capture ? ReclaimOpKind::kCaptureOff : ReclaimOpKind::kCaptureOn);
    ReclaimOp op;
    op.kind = legal[fdp.ConsumeIntegralInRange<size_t>(0, legal.size() - 1)];
    auto pick = [&] { return live[fdp.ConsumeIntegralInRange<size_t>(0, live.size() - 1)]; };
    switch (op.kind) {
      case ReclaimOpKind::kCreate:
        op.slot = static_cast<uint8_t>(free_slot);
        op.floats = fdp.ConsumeIntegralInRange<uint32_t>(1, kMaxReclaimFloats);
        alive[free_slot] = true;
        floats[free_slot] = op.floats;
        break;
      case ReclaimOpKind::kWrite:
        op.slot = pick();
        op.seed = fdp.ConsumeIntegral<uint8_t>();
        break;
      case ReclaimOpKind::kDispatch: op.dispatch = DecodeDispatch(fdp, live, floats); break;
      case ReclaimOpKind::kRead: op.slot = pick(); break;
      case ReclaimOpKind::kDestroy:
        op.slot = pick();
        op.purge = fdp.ConsumeBool();
        alive[op.slot] = false;
        break;
      case ReclaimOpKind::kCaptureOn: capture = true; break;
      case ReclaimOpKind::kCaptureOff: capture = false; break;
    }
    program.push_back(op);
  }
  return program;
}

std::string Describe(const ReclaimOp& op) {
  std::string s = kReclaimOpNames[static_cast<int>(op.kind)];
  switch (op.kind) {
    case ReclaimOpKind::kCreate: s += " " + std::to_string(op.floats) + " floats -> s" + std::to_string(op.slot); break;
    case ReclaimOpKind::kWrite: s += " s" + std::to_string(op.slot) + " seed=" + std::to_string(op.seed); break;
    case ReclaimOpKind::kDispatch: s += " " + Describe(op.dispatch, 's'); break;
    case ReclaimOpKind::kRead: s += " s" + std::to_string(op.slot); break;
    case ReclaimOpKind::kDestroy: s += " s" + std::to_string(op.slot) + (op.purge ? " then purge" : ""); break;
    default: break;
  }
  return s;
}

std::string Describe(const ReclaimProgram& program) {
  return DescribeNumbered(program);
}

void Execute(const ReclaimProgram& program) {
  MaybePrintTrace(program);
  Device* device = GetDevice();
  CheckValidation(device, "before the program: ");
  LIFELINE_PRECONDITION(!runtime::CaptureEnabled(), "capture was left on by an earlier iteration");
  const ObjectCounts base = device->Counts();
  const runtime::WrapperCounts base_wrappers = runtime::GetWrapperCounts();
  auto context = Context::Create(device, 1);
  LIFELINE_CHECK(context.ok(), "creating the iteration's context: " + context.status().ToString());
  OpTraceScope trace(&program, program.size(), &RenderOps<ReclaimProgram>);

  std::unique_ptr<Buffer> slots[kReclaimSlots];
  std::vector<std::vector<float>> model(kReclaimSlots);
  for (size_t i = 0; i < program.size(); ++i) {
    trace.set_op(i);
    const ReclaimOp& op = program[i];
    const std::string where = "op " + std::to_string(i) + " (" + Describe(op) + "): ";
    switch (op.kind) {
      case ReclaimOpKind::kCreate: {
        auto b = Buffer::Create(device, op.floats * sizeof(float));
        LIFELINE_CHECK(b.ok(), where + b.status().ToString());
        slots[op.slot] = std::move(b.value());
        model[op.slot].assign(op.floats, 0.0f);
        break;
      }
      case ReclaimOpKind::kWrite:
        for (uint32_t k = 0; k < model[op.slot].size(); ++k) {
          model[op.slot][k] = Pattern(op.seed, k);
          slots[op.slot]->data()[k] = model[op.slot][k];
        }
        break;
      case ReclaimOpKind::kDispatch: {
        const Dispatch& d = op.dispatch;
        std::vector<runtime::FrameOp> frame = {
            {d.kernel, slots[d.a].get(), slots[d.b].get(), slots[d.out].get(), d.n, d.value}};
        Status s = context.value()->Compute(frame);
        LIFELINE_CHECK(s.ok(), where + s.ToString());
        Apply(d, model);
        CheckValues(*slots[d.out], model[d.out], where + "value oracle: s" + std::to_string(d.out));
        break;
      }
      case ReclaimOpKind::kRead: CheckValues(*slots[op.slot], model[op.slot], where + "value oracle"); break;
      case ReclaimOpKind::kDestroy:
        slots[op.slot].reset();
        if (op.purge) runtime::PurgeCapture();  // the reporter's workaround, right after the destructor
        break;
      case ReclaimOpKind::kCaptureOn: runtime::SetCaptureEnabled(true); break;
      case ReclaimOpKind::kCaptureOff: runtime::SetCaptureEnabled(false); break;
    }
    CheckValidation(device, where);
    // The accounting oracle: live backing objects and bytes equal what live wrappers account for.
    ObjectCounts now = device->Counts();
    runtime::WrapperCounts w = runtime::GetWrapperCounts();
    const int64_t wrappers = w.wrappers - base_wrappers.wrappers, bytes = w.bytes - base_wrappers.bytes;
    const std::string state = now.ToString() + " alive beyond the start (" + base.ToString() + "); live Buffer wrappers account for " +
                              std::to_string(wrappers) + " buffers, " + std::to_string(bytes) + " B";
    LIFELINE_CHECK(now.memory_bytes - base.memory_bytes == bytes,
                   where + "accounting oracle (bytes): backing memory outlives its wrappers: " + state);
    LIFELINE_CHECK(now.buffers - base.buffers == wrappers && now.memories - base.memories <= wrappers,
                   where + "accounting oracle (objects): backing objects outlive their wrappers: " + state);
  }
  trace.set_op(program.size());
  for (auto& s : slots) s.reset();
  runtime::SetCaptureEnabled(false);
  runtime::ClearCapture();
  context.value().reset();
  CheckValidation(device, "teardown: ");
  LIFELINE_CHECK(device->Counts() == base, "teardown: objects left: " + device->Counts().ToString() + " (before: " +
                                               base.ToString() + ")");
}

}  // namespace lifeline::rtprog
