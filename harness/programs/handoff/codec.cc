#include "harness/programs/handoff/codec.h"

#include <string>
#include <vector>

#include "harness/programs/common/json.h"
#include "harness/programs/handoff/format.h"

namespace lifeline::handoff {
namespace {

using programs::Get;
using programs::GetOr;
using programs::Json;
using programs::Unencodable;

// Bytes as a JSON string when they are valid UTF-8 (nlohmann rejects anything else), else as numbers.
void PutBytes(Json& j, const char* key, const std::string& bytes) {
  try {
    j[key] = Json(bytes);
    (void)j[key].dump();
  } catch (const nlohmann::json::exception&) {
    j.erase(key);
    std::vector<int> numbers;
    for (unsigned char b : bytes) numbers.push_back(b);
    j[std::string(key) + "_bytes"] = numbers;
  }
}

std::string GetBytes(const Json& j, const char* key) {
  const std::string raw = std::string(key) + "_bytes";
  if (!j.contains(raw)) return Get<std::string>(j, key);
  std::string out;
  for (int b : Get<std::vector<int>>(j, raw.c_str())) {
    if (b < 0 || b > 255) throw Unencodable("'" + raw + "' holds bytes 0..255");
    out += static_cast<char>(b);
  }
  return out;
}

class HandoffCodec : public programs::Codec {
 public:
  std::string Decode(const uint8_t* data, size_t size) const override {
    const Program p = ToIds(handoff::Decode(data, size));
    Json j = {{"format", "handoff"}, {"ops", Json::array()}};
    for (size_t i = 0; i < p.size(); ++i) {
      const Op& op = p[i];
      Json o = {{"id", i}, {"op", kOpNames[static_cast<int>(op.kind)]}};
      Json model = Json::object();
      switch (op.kind) {
        case OpKind::kBind:
        case OpKind::kRebind:
          if (op.kind == OpKind::kRebind) o["slot"] = op.slot;
          o["multilingual"] = op.multilingual;
          if (op.expect == StatusCode::kOk) model["slot"] = op.expect_slot;
          break;
        case OpKind::kSubmitAsync:
        case OpKind::kSubmitSync:
          o["slot"] = op.slot;
          PutBytes(o, "language", op.language);
          o["audio"] = op.audio;
          o["threads"] = op.n_threads;
          o["translate"] = op.translate;
          if (op.expect == StatusCode::kOk) PutBytes(model, "sees", op.expect_language);
          if (op.kind == OpKind::kSubmitAsync && op.expect == StatusCode::kOk) model["job_id"] = op.job;
          break;
        default:
          o["job"] = programs::RefText(op.job);
          if (op.kind == OpKind::kJoin && op.expect_cancelled) model["cancelled"] = true;
          break;
      }
      if (op.expect != StatusCode::kOk) model["expect"] = StatusCodeName(op.expect);
      if (op.state != nullptr) model["state"] = op.state;
      if (!model.empty()) o["model"] = model;
      j["ops"].push_back(o);
    }
    return programs::ProgramText(j);
  }

  std::vector<uint8_t> Encode(const std::string& text) const override {
    const Json j = programs::ParseProgram(text, "handoff");
    Program target(j["ops"].size());
    programs::OpIds ids;
    programs::ReadOps(j, ids, [&](const Json& o, size_t i) {
      Op& op = target[i];
      op.kind = programs::GetNamed<OpKind>(o, "op", kOpNames);
      switch (op.kind) {
        case OpKind::kBind:
        case OpKind::kRebind:
          if (op.kind == OpKind::kRebind) op.slot = Get<uint8_t>(o, "slot");
          op.multilingual = Get<bool>(o, "multilingual");
          break;
        case OpKind::kSubmitAsync:
        case OpKind::kSubmitSync:
          op.slot = Get<uint8_t>(o, "slot");
          op.language = GetBytes(o, "language");
          op.audio = GetOr<std::vector<float>>(o, "audio", {});
          op.n_threads = Get<int>(o, "threads");
          op.translate = GetOr<bool>(o, "translate", false);
          break;
        default: op.job = static_cast<uint32_t>(programs::GetRef(o, "job", ids, i)); break;
      }
    });
    return handoff::Encode(target);
  }
};

}  // namespace

std::unique_ptr<programs::Codec> MakeCodec() { return std::make_unique<HandoffCodec>(); }

}  // namespace lifeline::handoff
