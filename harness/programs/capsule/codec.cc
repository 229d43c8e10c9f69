#include "harness/programs/capsule/codec.h"

#include <string>
#include <vector>

#include "harness/programs/common/json.h"

namespace lifeline::capsule {
namespace {

using interop::DType;
using interop::Layout;
using interop::Malformed;
using programs::Get;
using programs::GetOr;
using programs::Json;
using programs::RefText;
using programs::Unencodable;

constexpr int kOps = static_cast<int>(OpKind::kMaxValue) + 1;
constexpr const char* kVia[] = {"__dlpack__", "to_dlpack"};

// kOpNames with a peer's "numpy-" as "peer-": JSON names the acting peer apart.
std::string JsonName(OpKind k) {
  std::string n = kOpNames[static_cast<int>(k)];
  return n.rfind("numpy-", 0) == 0 ? "peer-" + n.substr(6) : n;
}

bool HasPeer(OpKind k) {
  return k == OpKind::kCreateArray || k == OpKind::kPeerFromTensor || k == OpKind::kPeerFromCapsule ||
         k == OpKind::kPeerFromArray || k == OpKind::kPeerMalformed;
}

class CapsuleCodec : public programs::Codec {
 public:
  explicit CapsuleCodec(const Peers& peers) : peers_(peers) {}

  std::string Decode(const uint8_t* data, size_t size) const override {
    const Program p = ToIds(capsule::Decode(data, size, peers_));
    Json names = Json::array();
    for (const PeerRules* r : peers_) names.push_back(r->name);
    Json j = {{"format", "capsule"}, {"peers", names}, {"ops", Json::array()}};
    for (size_t i = 0; i < p.size(); ++i) {
      const Op& op = p[i];
      Json o = {{"id", i}, {"op", JsonName(op.kind)}};
      if (HasPeer(op.kind) && peers_.size() > 1) o["peer"] = peers_[op.peer]->name;
      if (HasSource(op.kind)) o["src"] = RefText(op.src);
      switch (op.kind) {
        case OpKind::kCreateTensor:
        case OpKind::kCreateArray:
          o["dtype"] = std::string(interop::DTypeName(op.dtype));
          o["shape"] = op.shape;
          o["layout"] = std::string(interop::LayoutName(op.layout));
          o["seed"] = op.seed;
          o["readonly"] = op.readonly;
          if (op.kind == OpKind::kCreateArray && peers_[op.peer]->flavors) o["flavor"] = std::string(FlavorName(op.flavor));
          if (op.export_args != ExportArgs::kNone) o["export_args"] = std::string(ExportArgsName(op.export_args));
          break;
        case OpKind::kExportArray: o["via"] = kVia[op.via]; break;
        case OpKind::kImportFromTensor:
        case OpKind::kImportFromArray: o["contiguous"] = op.contiguous; break;
        case OpKind::kMalformed:
        case OpKind::kPeerMalformed: o["kind"] = std::string(interop::MalformedName(op.malformed)); break;
        default: break;
      }
      if (!op.expect_error.empty()) o["model"]["raises"] = op.expect_error;
      if (op.state != nullptr) o["model"]["state"] = op.state;
      j["ops"].push_back(o);
    }
    return programs::ProgramText(j);
  }

  std::vector<uint8_t> Encode(const std::string& text) const override {
    const Json j = programs::ParseProgram(text, "capsule");
    Program target(j["ops"].size());
    programs::OpIds ids;
    programs::ReadOps(j, ids, [&](const Json& o, size_t i) {
      Op& op = target[i];
      op.kind = programs::GetNamedBy<OpKind>(o, "op", kOps, JsonName);
      if (HasPeer(op.kind) && peers_.size() > 1) {
        const std::string name = Get<std::string>(o, "peer");
        size_t k = 0;
        while (k < peers_.size() && name != peers_[k]->name) ++k;
        if (k == peers_.size()) throw Unencodable("'peer' is \"" + name + "\", not a peer of this target");
        op.peer = static_cast<uint8_t>(k);
      }
      if (HasSource(op.kind)) {
        const size_t maker = programs::GetRef(o, "src", ids, i);
        op.src = static_cast<uint8_t>(maker);
        if (op.kind == OpKind::kRead || op.kind == OpKind::kDrop) {
          if (!HasDest(target[maker].kind)) throw Unencodable("'src' names an op that makes no object");
          op.slot_kind = DestKind(target[maker].kind);
        }
      }
      if (HasDest(op.kind)) op.dst = static_cast<uint8_t>(i);
      switch (op.kind) {
        case OpKind::kCreateTensor:
        case OpKind::kCreateArray: {
          auto dtype = interop::DTypeFromName(Get<std::string>(o, "dtype"));
          auto layout = interop::LayoutFromName(Get<std::string>(o, "layout"));
          if (!dtype) throw Unencodable("'dtype' names no dtype of this format");
          if (!layout) throw Unencodable("'layout' names no layout of this format");
          op.dtype = *dtype;
          op.layout = *layout;
          op.shape = Get<std::vector<int64_t>>(o, "shape");
          op.seed = Get<uint8_t>(o, "seed");
          op.readonly = GetOr<bool>(o, "readonly", false);
          if (o.contains("flavor")) {
            op.flavor = programs::GetNamedBy<Flavor>(o, "flavor", static_cast<int>(Flavor::kMaxValue) + 1,
                                                     [](Flavor f) { return std::string(FlavorName(f)); });
          }
          if (o.contains("export_args")) {
            auto args = ExportArgsFromName(Get<std::string>(o, "export_args"));
            if (!args) throw Unencodable("'export_args' names no export arguments of this format");
            op.export_args = *args;
          }
          break;
        }
        case OpKind::kExportArray:
          op.via = static_cast<uint8_t>(programs::GetNamed<int>(o, "via", kVia));
          break;
        case OpKind::kImportFromTensor:
        case OpKind::kImportFromArray: op.contiguous = GetOr<bool>(o, "contiguous", false); break;
        case OpKind::kMalformed:
        case OpKind::kPeerMalformed: {
          auto kind = interop::MalformedFromName(Get<std::string>(o, "kind"));
          if (!kind) throw Unencodable("'kind' names no malformed capsule of this format");
          op.malformed = *kind;
          break;
        }
        default: break;
      }
    });
    return capsule::Encode(target, peers_);
  }

 private:
  const Peers peers_;
};

}  // namespace

std::unique_ptr<programs::Codec> MakeCodec(const Peers& peers) { return std::make_unique<CapsuleCodec>(peers); }

}  // namespace lifeline::capsule
