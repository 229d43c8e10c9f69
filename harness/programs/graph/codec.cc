#include "harness/programs/graph/codec.h"

#include <cmath>
#include <string>
#include <vector>

#include "harness/programs/common/json.h"

namespace lifeline::graphs {
namespace {

using alloc::DType;
using alloc::Op;
using programs::Get;
using programs::GetOr;
using programs::GetRef;
using programs::Json;
using programs::RefText;
using programs::Unencodable;

const char* TypeName(DType t) { return t == DType::kF16 ? "f16" : "f32"; }

DType TypeOf(const Json& op) {
  const std::string t = Get<std::string>(op, "type");
  if (t != "f32" && t != "f16") throw Unencodable("'type' is \"" + t + "\", not f32 or f16");
  return t == "f16" ? DType::kF16 : DType::kF32;
}

Json Ref(int id) { return id < 0 ? Json(nullptr) : Json(RefText(static_cast<size_t>(id))); }

// One step in id form as JSON.
Json StepJson(const Step& s, size_t i) {
  Json j = {{"id", i}, {"op", kStepNames[static_cast<int>(s.kind)]}};
  Json model = Json::object();
  const TensorSpec& t = s.tensor;
  if (AddsTensor(s.kind) && s.kind != StepKind::kGrow && s.graph >= 0) j["graph"] = Ref(s.graph);
  switch (s.kind) {
    case StepKind::kLeaf:
      j["type"] = TypeName(t.type);
      j["ne"] = {t.ne[0], t.ne[1]};
      j["input"] = t.input;
      j["preallocated"] = t.preallocated;
      break;
    case StepKind::kUnary:
      j["fn"] = t.op == Op::kScale ? "scale" : "neg";
      j["src"] = Ref(t.src[0]);
      if (t.op == Op::kScale) j["param"] = t.param;
      j["inplace"] = t.inplace;
      j["cpu"] = t.cpu;
      break;
    case StepKind::kBinary:
      j["fn"] = t.op == Op::kAdd ? "add" : "mul";
      j["src"] = {Ref(t.src[0]), Ref(t.src[1])};
      j["inplace"] = t.inplace;
      j["cpu"] = t.cpu;
      break;
    case StepKind::kCopy:
      j["src"] = Ref(t.src[0]);
      j["type"] = TypeName(t.type);
      j["cpu"] = t.cpu;
      break;
    case StepKind::kConcat: j["src"] = {Ref(t.src[0]), Ref(t.src[1])}; break;
    case StepKind::kView:
      j["src"] = Ref(t.src[0]);
      if (t.op == Op::kReshape) {
        j["reshape"] = true;
      } else {
        j["n"] = t.ne[0];
        j["offset"] = t.view_offset;
      }
      break;
    case StepKind::kViewExternal: j["of"] = Ref(t.external_tensor); break;
    case StepKind::kRowOp:
      j["fn"] = alloc::OpName(t.op);
      j["src"] = Ref(t.src[0]);
      break;
    case StepKind::kMatMul: j["src"] = {Ref(t.src[0]), Ref(t.src[1])}; break;
    case StepKind::kTranspose:
      j["src"] = Ref(t.src[0]);
      j["via"] = t.permute ? "permute" : "transpose";
      break;
    case StepKind::kGetRows:
      j["src"] = Ref(t.src[0]);
      j["n"] = t.ne[1];
      j["first"] = t.rows_first;
      j["step"] = t.rows_step;
      break;
    case StepKind::kRope:
      j["src"] = Ref(t.src[0]);
      j["mode"] = t.rope.mode == alloc::kRopeNeox ? "neox" : "normal";
      j["n_dims"] = t.rope.n_dims;
      j["heads"] = t.rope.heads;
      j["positions"] = {t.rope.pos_first, t.rope.pos_step};
      break;
    case StepKind::kSetRows:  // "src": [destination, rows]
      j["src"] = {Ref(t.src[0]), Ref(t.src[1])};
      j["first"] = t.rows_first;
      j["step"] = t.rows_step;
      break;
    case StepKind::kConvDw:  // "src": [kernel, input]
      j["src"] = {Ref(t.src[0]), Ref(t.src[1])};
      j["stride"] = t.conv.stride;
      j["pad"] = t.conv.pad;
      break;
    case StepKind::kMarkOutput:  // of the open graph, or of a sealed one (a toggle with no leaf to toggle)
      j["tensor"] = Ref(s.tensor_index);
      if (s.graph >= 0) j["graph"] = Ref(s.graph);
      break;
    case StepKind::kSeal:
      if (s.tensor_index >= 0) model["output"] = Ref(s.tensor_index);
      break;
    case StepKind::kReserve:
    case StepKind::kAlloc:
    case StepKind::kMeasure:
      j["graph"] = Ref(s.graph);
      j["allocator"] = s.allocator;
      break;
    case StepKind::kRewire:
      j["graph"] = Ref(s.graph);
      j["tensor"] = Ref(s.tensor_index);
      j["slot"] = s.slot;
      j["to"] = Ref(s.new_src);
      break;
    case StepKind::kGrow:
      j["graph"] = Ref(s.graph);
      j["of"] = Ref(t.src[0]);
      break;
    case StepKind::kTogglePrealloc:
      j["graph"] = Ref(s.graph);
      j["tensor"] = Ref(s.tensor_index);
      model["preallocated"] = t.preallocated;
      break;
  }
  if (s.expect != StatusCode::kOk) model["expect"] = StatusCodeName(s.expect);
  if (s.state != nullptr) model["state"] = s.state;
  if (!model.empty()) j["model"] = model;
  return j;
}

bool Flag(const Json& op, const char* key) { return GetOr<bool>(op, key, false); }

// One step in id form (positions) from JSON; what the decoder derives (shapes of derived tensors, the
// model) is left for it.
Step StepFrom(const Json& j, const programs::OpIds& ids, size_t at) {
  Step s;
  s.kind = programs::GetNamed<StepKind>(j, "op", kStepNames);
  s.graph = -1;  // set below where the op names one
  auto ref = [&](const char* key) { return static_cast<int>(GetRef(j, key, ids, at)); };
  auto pair = [&](const char* key) {
    const Json v = Get<Json>(j, key);
    if (!v.is_array() || v.size() != 2) throw Unencodable(std::string("'") + key + "' is a pair of references");
    Json a = {{"x", v[0]}}, b = {{"x", v[1]}};
    return std::pair<int, int>(static_cast<int>(GetRef(a, "x", ids, at)), static_cast<int>(GetRef(b, "x", ids, at)));
  };
  TensorSpec& t = s.tensor;
  t.cpu = Flag(j, "cpu");
  t.inplace = Flag(j, "inplace");
  switch (s.kind) {
    case StepKind::kLeaf: {
      t.type = TypeOf(j);
      const auto ne = Get<std::vector<int64_t>>(j, "ne");
      if (ne.size() != 2) throw Unencodable("'ne' has two extents");
      t.ne[0] = ne[0];
      t.ne[1] = ne[1];
      t.input = Flag(j, "input");
      t.preallocated = Flag(j, "preallocated");
      break;
    }
    case StepKind::kUnary: {
      const std::string fn = Get<std::string>(j, "fn");
      if (fn != "scale" && fn != "neg") throw Unencodable("'fn' of a unary op is scale or neg");
      t.op = fn == "scale" ? Op::kScale : Op::kNeg;
      t.src[0] = ref("src");
      if (t.op == Op::kScale) t.param = Get<float>(j, "param");
      break;
    }
    case StepKind::kBinary: {
      const std::string fn = Get<std::string>(j, "fn");
      if (fn != "add" && fn != "mul") throw Unencodable("'fn' of a binary op is add or mul");
      t.op = fn == "add" ? Op::kAdd : Op::kMul;
      std::tie(t.src[0], t.src[1]) = pair("src");
      break;
    }
    case StepKind::kCopy:
      t.op = Op::kCopy;
      t.src[0] = ref("src");
      t.type = TypeOf(j);
      break;
    case StepKind::kConcat:
      t.op = Op::kConcat;
      std::tie(t.src[0], t.src[1]) = pair("src");
      break;
    case StepKind::kView:
      t.src[0] = ref("src");
      if (Flag(j, "reshape")) {
        t.op = Op::kReshape;
      } else {
        t.op = Op::kView;
        t.ne[0] = Get<int64_t>(j, "n");
        t.view_offset = Get<int64_t>(j, "offset");
      }
      break;
    case StepKind::kViewExternal: t.external_tensor = ref("of"); break;
    case StepKind::kMarkOutput:
      s.tensor_index = ref("tensor");
      // A toggle with no leaf to toggle marks a sealed graph's last tensor instead (format_steps.cc): its "graph"
      // is a seal before it. An open graph's mark names a seal after it, or none.
      if (j.contains("graph") && j["graph"].is_string()) {
        try {
          s.graph = ref("graph");
        } catch (const Unencodable&) {
          s.graph = -1;
        }
      }
      break;
    case StepKind::kSeal: break;
    case StepKind::kReserve:
    case StepKind::kAlloc:
    case StepKind::kMeasure:
      s.graph = ref("graph");
      s.allocator = Get<int>(j, "allocator");
      break;
    case StepKind::kRewire:
      s.graph = ref("graph");
      s.tensor_index = ref("tensor");
      s.slot = Get<int>(j, "slot");
      s.new_src = ref("to");
      break;
    case StepKind::kGrow:
      s.graph = ref("graph");
      t.op = Op::kNeg;
      t.src[0] = ref("of");
      t.output = true;
      break;
    case StepKind::kTogglePrealloc:
      s.graph = ref("graph");
      s.tensor_index = ref("tensor");
      break;
    case StepKind::kRowOp: {
      const std::string fn = Get<std::string>(j, "fn");
      if (fn != "rms_norm" && fn != "soft_max") throw Unencodable("'fn' of a row op is rms_norm or soft_max, not \"" + fn + "\"");
      t.op = fn == "rms_norm" ? Op::kRmsNorm : Op::kSoftMax;
      t.src[0] = ref("src");
      break;
    }
    case StepKind::kMatMul:
      t.op = Op::kMulMat;
      std::tie(t.src[0], t.src[1]) = pair("src");
      break;
    case StepKind::kTranspose: {
      const std::string via = Get<std::string>(j, "via");
      if (via != "permute" && via != "transpose") {
        throw Unencodable("'via' of a transpose is permute or transpose, not \"" + via + "\"");
      }
      t.op = Op::kTranspose;
      t.src[0] = ref("src");
      t.permute = via == "permute";
      break;
    }
    case StepKind::kGetRows:
      t.op = Op::kGetRows;
      t.type = DType::kF32;
      t.src[0] = ref("src");
      t.ne[1] = Get<int64_t>(j, "n");
      t.rows_first = Get<int>(j, "first");
      t.rows_step = Get<int>(j, "step");
      break;
    case StepKind::kRope: {
      const std::string mode = Get<std::string>(j, "mode");
      if (mode != "normal" && mode != "neox") throw Unencodable("'mode' of a rope is normal or neox, not \"" + mode + "\"");
      t.op = Op::kRope;
      t.src[0] = ref("src");
      t.rope.mode = mode == "neox" ? alloc::kRopeNeox : alloc::kRopeNormal;
      t.rope.n_dims = Get<int>(j, "n_dims");
      t.rope.heads = Get<int>(j, "heads");
      const auto positions = Get<std::vector<int>>(j, "positions");
      if (positions.size() != 2) throw Unencodable("'positions' of a rope is [first, step]");
      t.rope.pos_first = positions[0];
      t.rope.pos_step = positions[1];
      break;
    }
    case StepKind::kSetRows:
      t.op = Op::kSetRows;
      t.inplace = true;  // always: the result is its destination's bytes
      std::tie(t.src[0], t.src[1]) = pair("src");
      t.rows_first = Get<int>(j, "first");
      t.rows_step = Get<int>(j, "step");
      break;
    case StepKind::kConvDw:
      t.op = Op::kConvDw;
      std::tie(t.src[0], t.src[1]) = pair("src");
      t.conv.stride = Get<int>(j, "stride");
      t.conv.pad = Get<int>(j, "pad");
      break;
  }
  return s;
}

class GraphCodec : public programs::Codec {
 public:
  explicit GraphCodec(const AllocatorRules& rules) : rules_(rules) {}

  std::string Decode(const uint8_t* data, size_t size) const override {
    const Program p = ToIds(graphs::Decode(data, size, rules_));
    Json j = {{"format", "graph"}, {"allocators", Json::array()}, {"ops", Json::array()}};
    for (const AllocatorSpec& a : p.allocators) {
      Json buffers = Json::array();
      for (const alloc::BufferSpec& b : a.buffers) buffers.push_back(b.alignment);
      j["allocators"].push_back({{"buffers", buffers}, {"threads", a.cpu_threads}});
    }
    if (p.weights) j["weights"] = true;
    if (p.shared_pool) j["shared_pool"] = true;
    if (p.reuse) j["reuse"] = true;
    if (p.chunked) j["chunked"] = true;
    if (p.unplanned_allocs) j["unplanned_allocs"] = true;
    if (p.scheduled) j["scheduled"] = true;
    for (size_t i = 0; i < p.steps.size(); ++i) j["ops"].push_back(StepJson(p.steps[i], i));
    return programs::ProgramText(j);
  }

  std::vector<uint8_t> Encode(const std::string& text) const override {
    const Json j = programs::ParseProgram(text, "graph");
    Program target;
    const Json allocators = Get<Json>(j, "allocators");
    if (!allocators.is_array() || allocators.size() != kAllocators) throw Unencodable("'allocators' lists two allocators");
    for (int k = 0; k < kAllocators; ++k) {
      for (size_t align : Get<std::vector<size_t>>(allocators[k], "buffers")) {
        if (align == 0 || (align & (align - 1)) != 0) throw Unencodable("a buffer alignment is a power of two");
        target.allocators[k].buffers.push_back(alloc::BufferSpec{align});
      }
      target.allocators[k].cpu_threads = Get<int>(allocators[k], "threads");
    }
    target.weights = programs::GetOr<bool>(j, "weights", false);
    target.shared_pool = programs::GetOr<bool>(j, "shared_pool", false);
    target.reuse = programs::GetOr<bool>(j, "reuse", false);
    target.chunked = programs::GetOr<bool>(j, "chunked", false);
    target.unplanned_allocs = programs::GetOr<bool>(j, "unplanned_allocs", false);
    target.scheduled = programs::GetOr<bool>(j, "scheduled", false);
    programs::OpIds ids;
    target.steps.resize(j["ops"].size());
    programs::ReadOps(j, ids, [&](const Json& op, size_t i) {
      target.steps[i] = StepFrom(op, ids, i);
      // A tensor is named by the op that made it, a graph by its seal: an op's own position.
      if (AddsTensor(target.steps[i].kind)) target.steps[i].tensor_index = static_cast<int>(i);
      if (target.steps[i].kind == StepKind::kSeal) target.steps[i].graph = static_cast<int>(i);
    });
    // Build steps name the seal of their graph: the first seal after them (decided by the order).
    int seal = -1;
    for (size_t i = target.steps.size(); i-- > 0;) {
      Step& s = target.steps[i];
      if (s.kind == StepKind::kSeal) seal = static_cast<int>(i);
      if ((AddsTensor(s.kind) && s.kind != StepKind::kGrow) || (s.kind == StepKind::kMarkOutput && s.graph < 0))
        s.graph = seal;
    }
    return graphs::Encode(target, rules_);
  }

 private:
  const AllocatorRules rules_;
};

}  // namespace

std::unique_ptr<programs::Codec> MakeCodec(const AllocatorRules& rules) { return std::make_unique<GraphCodec>(rules); }

}  // namespace lifeline::graphs
