#include "harness/programs/runtime/codec.h"

#include <string>
#include <vector>

#include "harness/programs/common/json.h"
#include "harness/programs/runtime/format.h"

namespace lifeline::rtprog {
namespace {

using programs::Get;
using programs::GetOr;
using programs::Json;
using programs::OpIds;
using programs::RefText;
using programs::Unencodable;
using runtime::Kernel;

constexpr int kKernels = static_cast<int>(Kernel::kMaxValue) + 1;

// A dispatch; `buffer(b)` writes an operand (a number or a reference).
template <typename Buffer>
Json DispatchJson(const Dispatch& d, Buffer&& buffer) {
  Json j = {{"kernel", runtime::KernelName(d.kernel)}, {"out", buffer(d.out)}};
  if (d.kernel != Kernel::kFill) j["a"] = buffer(d.a);
  if (d.kernel == Kernel::kAdd) j["b"] = buffer(d.b);
  j["n"] = d.n;
  if (d.kernel == Kernel::kFill || d.kernel == Kernel::kScale) j["value"] = d.value;
  return j;
}

// `buffer(json, key)` reads an operand.
template <typename Buffer>
Dispatch DispatchFrom(const Json& j, Buffer&& buffer) {
  Dispatch d;
  d.kernel = programs::GetNamedBy<Kernel>(j, "kernel", kKernels, [](Kernel k) { return std::string(runtime::KernelName(k)); });
  d.out = buffer(j, "out");
  if (d.kernel != Kernel::kFill) d.a = buffer(j, "a");
  if (d.kernel == Kernel::kAdd) d.b = buffer(j, "b");
  d.n = Get<uint32_t>(j, "n");
  if (d.kernel == Kernel::kFill || d.kernel == Kernel::kScale) d.value = Get<float>(j, "value");
  return d;
}

// An op's "model": its predicted status where it must fail, and the state it found (model.h).
void PutModel(Json& o, StatusCode expect, const char* state) {
  if (expect != StatusCode::kOk) o["model"]["expect"] = StatusCodeName(expect);
  if (state != nullptr) o["model"]["state"] = state;
}

class EncoderCodec : public programs::Codec {
 public:
  std::string Decode(const uint8_t* data, size_t size) const override {
    const EncoderProgram p = ToIds(DecodeEncoder(data, size));
    Json j = {{"format", "runtime-encoder"}, {"ops", Json::array()}};
    auto number = [](uint8_t b) { return static_cast<int>(b); };
    for (size_t i = 0; i < p.size(); ++i) {
      const EncoderOp& op = p[i];
      Json o = {{"id", i}, {"op", kEncoderOpNames[static_cast<int>(op.kind)]}};
      switch (op.kind) {
        case EncoderOpKind::kCreateContext: o["n_cb"] = op.n_cb; break;
        case EncoderOpKind::kSetThreads:
          o["context"] = RefText(op.context);
          o["n_cb"] = op.n_cb;
          break;
        case EncoderOpKind::kCompute:
          o["context"] = RefText(op.context);
          o["frame"] = Json::array();
          for (const Dispatch& d : op.frame) o["frame"].push_back(DispatchJson(d, number));
          break;
        case EncoderOpKind::kDestroyContext: o["context"] = RefText(op.context); break;
        default: break;
      }
      PutModel(o, op.expect, op.state);
      j["ops"].push_back(o);
    }
    return programs::ProgramText(j);
  }

  std::vector<uint8_t> Encode(const std::string& text) const override {
    const Json j = programs::ParseProgram(text, "runtime-encoder");
    EncoderProgram target(j["ops"].size());
    OpIds ids;
    programs::ReadOps(j, ids, [&](const Json& o, size_t i) {
      EncoderOp& op = target[i];
      op.kind = programs::GetNamed<EncoderOpKind>(o, "op", kEncoderOpNames);
      if (op.kind == EncoderOpKind::kCreateContext) op.context = static_cast<uint8_t>(i);
      if (op.kind == EncoderOpKind::kSetThreads || op.kind == EncoderOpKind::kCompute ||
          op.kind == EncoderOpKind::kDestroyContext)
        op.context = static_cast<uint8_t>(programs::GetRef(o, "context", ids, i));
      if (op.kind == EncoderOpKind::kCreateContext || op.kind == EncoderOpKind::kSetThreads) op.n_cb = Get<int>(o, "n_cb");
      if (op.kind == EncoderOpKind::kCompute) {
        for (const Json& d : Get<Json>(o, "frame"))
          op.frame.push_back(DispatchFrom(d, [](const Json& dj, const char* key) { return Get<uint8_t>(dj, key); }));
      }
    });
    return rtprog::Encode(target);
  }
};

class ReclaimCodec : public programs::Codec {
 public:
  std::string Decode(const uint8_t* data, size_t size) const override {
    const ReclaimProgram p = ToIds(DecodeReclaim(data, size));
    Json j = {{"format", "runtime-reclaim"}, {"ops", Json::array()}};
    auto ref = [](uint8_t op) { return RefText(op); };
    for (size_t i = 0; i < p.size(); ++i) {
      const ReclaimOp& op = p[i];
      Json o = {{"id", i}, {"op", kReclaimOpNames[static_cast<int>(op.kind)]}};
      switch (op.kind) {
        case ReclaimOpKind::kCreate: o["floats"] = op.floats; break;
        case ReclaimOpKind::kWrite:
          o["buffer"] = ref(op.slot);
          o["seed"] = op.seed;
          break;
        case ReclaimOpKind::kDispatch: o["dispatch"] = DispatchJson(op.dispatch, ref); break;
        case ReclaimOpKind::kRead: o["buffer"] = ref(op.slot); break;
        case ReclaimOpKind::kDestroy:
          o["buffer"] = ref(op.slot);
          o["purge"] = op.purge;
          break;
        default: break;
      }
      PutModel(o, op.expect, op.state);
      j["ops"].push_back(o);
    }
    return programs::ProgramText(j);
  }

  std::vector<uint8_t> Encode(const std::string& text) const override {
    const Json j = programs::ParseProgram(text, "runtime-reclaim");
    ReclaimProgram target(j["ops"].size());
    OpIds ids;
    programs::ReadOps(j, ids, [&](const Json& o, size_t i) {
      ReclaimOp& op = target[i];
      op.kind = programs::GetNamed<ReclaimOpKind>(o, "op", kReclaimOpNames);
      auto buffer = [&](const Json& oj, const char* key) { return static_cast<uint8_t>(programs::GetRef(oj, key, ids, i)); };
      switch (op.kind) {
        case ReclaimOpKind::kCreate:
          op.slot = static_cast<uint8_t>(i);
          op.floats = Get<uint32_t>(o, "floats");
          break;
        case ReclaimOpKind::kWrite:
          op.slot = buffer(o, "buffer");
          op.seed = Get<uint8_t>(o, "seed");
          break;
        case ReclaimOpKind::kDispatch: op.dispatch = DispatchFrom(Get<Json>(o, "dispatch"), buffer); break;
        case ReclaimOpKind::kRead: op.slot = buffer(o, "buffer"); break;
        case ReclaimOpKind::kDestroy:
          op.slot = buffer(o, "buffer");
          op.purge = GetOr<bool>(o, "purge", false);
          break;
        default: break;
      }
    });
    return rtprog::Encode(target);
  }
};

}  // namespace

std::unique_ptr<programs::Codec> MakeEncoderCodec() { return std::make_unique<EncoderCodec>(); }
std::unique_ptr<programs::Codec> MakeReclaimCodec() { return std::make_unique<ReclaimCodec>(); }

}  // namespace lifeline::rtprog
