#include "harness/programs/llama/codec.h"

#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "harness/programs/common/json.h"
#include "harness/programs/llama/format.h"
#include "harness/programs/llama/model.h"

namespace lifeline::llama {
namespace {

using programs::Get;
using programs::GetOr;
using programs::Json;
using programs::Unencodable;

// One name per Flaw, in the enum's order: a new flaw fails to compile until it is named here.
const char* const kFlawNames[] = {"none",    "gap",            "behind",  "bad-token", "abort",
                                  "bad-seq", "auto-positions", "get-one", "beside"};
static_assert(std::size(kFlawNames) == static_cast<size_t>(Flaw::kMaxValue) + 1,
              "kFlawNames: one name per llama::Flaw (format.h)");
const char* const kFlashAttnNames[] = {"auto", "off", "on"};
const char* const kFormNames[] = {"buffer", "file", "device"};
static_assert(std::size(kFormNames) == static_cast<size_t>(StateForm::kMaxValue) + 1, "kFormNames: one per StateForm");
const char* const kTokensOutNames[] = {"exact", "short", "null"};
static_assert(std::size(kTokensOutNames) == static_cast<size_t>(TokensOut::kMaxValue) + 1,
              "kTokensOutNames: one per TokensOut");
const char* const kCacheTypeNames[] = {"f16", "q8_0"};
// The memory each model kind has, as an op's state names it.
const char* const kMemoryNames[] = {"kv", "kv-iswa", "recurrent", "hybrid"};
static_assert(std::size(kMemoryNames) == static_cast<size_t>(ModelKind::kMaxValue) + 1,
              "kMemoryNames: one per llama::ModelKind");

// An operand: how it is written into an op's JSON and read back into an Op.
struct Operand {
  const char* key;
  std::function<Json(const Op&)> put;
  std::function<void(const Json&, Op&)> get;
};

Operand Int(const char* key, int Op::*field) {
  return {key, [=](const Op& op) { return Json(op.*field); }, [=](const Json& o, Op& op) { op.*field = Get<int>(o, key); }};
}
Operand Bool(const char* key, bool Op::*field) {
  return {key, [=](const Op& op) { return Json(op.*field); }, [=](const Json& o, Op& op) { op.*field = Get<bool>(o, key); }};
}
// decode's sequence set: the ids of the mask's bits, ascending.
Operand Seqs() {
  return {"seqs",
          [](const Op& op) {
            Json ids = Json::array();
            for (int s = 0; s < kMaxSeqs; ++s)
              if ((op.seqs >> s) & 1) ids.push_back(s);
            return ids;
          },
          [](const Json& o, Op& op) {
            op.seqs = 0;
            for (int s : Get<std::vector<int>>(o, "seqs")) {
              if (s < 0 || s >= kMaxSeqs) throw Unencodable("'seqs' holds sequence ids 0.." + std::to_string(kMaxSeqs - 1));
              op.seqs = static_cast<uint8_t>(op.seqs | (1u << s));
            }
          }};
}
Operand Tokens() {
  return {"tokens", [](const Op& op) { return Json(op.token_seed); },
          [](const Json& o, Op& op) {
            const int seed = Get<int>(o, "tokens");
            if (seed < 0 || seed > 255) throw Unencodable("'tokens' (the token seed) is 0..255");
            op.token_seed = static_cast<uint8_t>(seed);
          }};
}
Operand FlawOperand() {
  return {"flaw", [](const Op& op) { return Json(kFlawNames[static_cast<int>(op.flaw)]); },
          [](const Json& o, Op& op) {
            op.flaw = o.contains("flaw") ? programs::GetNamed<Flaw>(o, "flaw", kFlawNames) : Flaw::kNone;
          }};
}

// A save's form, written when it is not a buffer (absent: a buffer, as programs written before files read).
Operand FormOperand() {
  return {"form",
          [](const Op& op) { return op.form == StateForm::kBuffer ? Json() : Json(kFormNames[static_cast<int>(op.form)]); },
          [](const Json& o, Op& op) {
            op.form = o.contains("form") ? programs::GetNamed<StateForm>(o, "form", kFormNames) : StateForm::kBuffer;
          }};
}
// A file load's tokens_out, written when the load is from a file (its slot's form).
Operand TokensOutOperand() {
  return {"tokens_out",
          [](const Op& op) {
            return op.form == StateForm::kFile ? Json(kTokensOutNames[static_cast<int>(op.tokens_out)]) : Json();
          },
          [](const Json& o, Op& op) {
            op.tokens_out = o.contains("tokens_out") ? programs::GetNamed<TokensOut>(o, "tokens_out", kTokensOutNames)
                                                     : TokensOut::kExact;
          }};
}

// What "model": {"expect"} says of an op.
enum class Expect { kNothing, kReturn, kBool, kRestored };
// Which sequences an op's state looks at: `touches(op)`, a mask; 0 means any sequence.
using Touches = uint8_t (*)(const Op&);
uint8_t Any(const Op&) { return 0; }
uint8_t TheSeq(const Op& op) { return op.seq < 0 ? 0 : static_cast<uint8_t>(1u << op.seq); }
uint8_t TheSet(const Op& op) { return op.seqs; }

// One entry per OpKind, in the enum's order: its operands, the model's step (nullptr: the model keeps no state
// for it), what its "expect" says and the sequences its state looks at.
struct OpEntry {
  OpKind kind;
  std::vector<Operand> operands;
  void (Model::*apply)(Op&);
  Expect expect;
  Touches touches;
};

const std::vector<OpEntry>& Table() {
  static const std::vector<OpEntry> table = [] {
    const Operand seq = Int("seq", &Op::seq), p0 = Int("p0", &Op::p0), p1 = Int("p1", &Op::p1),
                  slot = Int("slot", &Op::slot);
    std::vector<OpEntry> t = {
        {OpKind::kDecode,
         {Seqs(), Int("steps", &Op::steps), Bool("shared", &Op::shared), Bool("all_logits", &Op::all_logits),
          Tokens(), FlawOperand()},
         &Model::Decode, Expect::kReturn, TheSet},
        {OpKind::kSeqRm, {seq, p0, p1}, &Model::SeqRm, Expect::kBool, TheSeq},
        {OpKind::kSeqCp, {seq, Int("dst", &Op::seq_dst), p0, p1}, &Model::SeqCp, Expect::kNothing, TheSeq},
        {OpKind::kSeqKeep, {seq}, &Model::SeqKeep, Expect::kNothing, TheSeq},
        {OpKind::kSeqAdd, {seq, p0, p1, Int("delta", &Op::delta)}, &Model::SeqShift, Expect::kNothing, TheSeq},
        {OpKind::kSeqDiv, {seq, p0, p1, Int("delta", &Op::delta)}, &Model::SeqShift, Expect::kNothing, TheSeq},
        {OpKind::kClear, {Bool("data", &Op::data)}, &Model::Clear, Expect::kNothing, Any},
        {OpKind::kSaveSeq, {seq, slot, FormOperand()}, &Model::SaveSeq, Expect::kNothing, TheSeq},
        {OpKind::kLoadSeq, {slot, seq, TokensOutOperand()}, &Model::LoadSeq, Expect::kRestored, TheSeq},
        {OpKind::kSaveAll, {slot, FormOperand()}, &Model::SaveAll, Expect::kNothing, Any},
        {OpKind::kLoadAll, {slot, TokensOutOperand()}, &Model::LoadAll, Expect::kRestored, Any},
        {OpKind::kSetThreads, {Int("threads", &Op::n_threads)}, nullptr, Expect::kNothing, Any},
    };
    LIFELINE_PRECONDITION(t.size() == static_cast<size_t>(OpKind::kMaxValue) + 1, "llama codec: one entry per OpKind");
    for (size_t i = 0; i < t.size(); ++i)
      LIFELINE_PRECONDITION(static_cast<size_t>(t[i].kind) == i, "llama codec: the table is in OpKind's order");
    return t;
  }();
  return table;
}

Json ExpectOf(Expect e, const Op& op) {
  switch (e) {
    case Expect::kReturn: return Json(op.expect_ret);
    case Expect::kBool: return Json(op.expect_ret != 0);
    case Expect::kRestored: return Json(op.expect_ret == 1 ? "restored" : op.expect_ret == 2 ? "counted" : "refused");
    case Expect::kNothing: break;
  }
  return Json();
}

// `<memory>/<empty|holding>` of the sequences `mask` names (0: any), before the op.
std::string StateOf(const Model& m, uint8_t mask) {
  bool holding = false;
  for (int s = 0; s < m.n_seqs(); ++s)
    if ((mask == 0 || ((mask >> s) & 1)) && m.PosMax(s) >= 0) holding = true;
  return std::string(kMemoryNames[static_cast<int>(m.params().model)]) + (holding ? "/holding" : "/empty");
}

void PutParams(Json& j, const ContextParams& p) {
  j["arch"] = kModelNames[static_cast<int>(p.model)];
  j["n_seq_max"] = p.n_seq_max;
  j["kv_unified"] = p.kv_unified;
  j["n_ubatch"] = p.n_ubatch;
  j["n_batch"] = p.n_batch;
  j["flash_attn"] = kFlashAttnNames[static_cast<int>(p.flash_attn)];
  j["type_k"] = kCacheTypeNames[static_cast<int>(p.type_k)];
  j["type_v"] = kCacheTypeNames[static_cast<int>(p.type_v)];
  j["threads"] = p.n_threads;
}

ContextParams ParamsFrom(const Json& j) {
  ContextParams p;
  p.model = programs::GetNamed<ModelKind>(j, "arch", kModelNames);
  p.n_seq_max = Get<int>(j, "n_seq_max");
  p.kv_unified = Get<bool>(j, "kv_unified");
  p.n_ubatch = Get<int>(j, "n_ubatch");
  p.n_batch = Get<int>(j, "n_batch");
  p.flash_attn = j.contains("flash_attn") ? programs::GetNamed<FlashAttn>(j, "flash_attn", kFlashAttnNames)
                                          : FlashAttn::kAuto;
  p.type_k = j.contains("type_k") ? programs::GetNamed<CacheType>(j, "type_k", kCacheTypeNames) : CacheType::kF16;
  p.type_v = j.contains("type_v") ? programs::GetNamed<CacheType>(j, "type_v", kCacheTypeNames) : CacheType::kF16;
  p.n_threads = GetOr<int>(j, "threads", 1);
  return p;
}

class LlamaCodec : public programs::Codec {
 public:
  std::string Decode(const uint8_t* data, size_t size) const override {
    const Program p = llama::Decode(data, size);
    Json j = {{"format", "llama"}};
    PutParams(j, p.params);
    j["ops"] = Json::array();
    Model m(p.params);  // replayed for each op's state, as the decoder ran it
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const OpEntry& e = Table()[static_cast<size_t>(p.ops[i].kind)];
      Json o = {{"id", i}, {"op", kOpNames[static_cast<int>(e.kind)]}};
      for (const Operand& x : e.operands) {
        Json v = x.put(p.ops[i]);
        if (!v.is_null()) o[x.key] = std::move(v);
      }
      Json model = Json::object();
      if (e.expect != Expect::kNothing) model["expect"] = ExpectOf(e.expect, p.ops[i]);
      model["state"] = StateOf(m, e.touches(p.ops[i]));
      o["model"] = model;
      j["ops"].push_back(o);
      Op replayed = p.ops[i];
      if (e.apply != nullptr) (m.*e.apply)(replayed);
    }
    return programs::ProgramText(j);
  }

  std::vector<uint8_t> Encode(const std::string& text) const override {
    const Json j = programs::ParseProgram(text, "llama");
    Program target;
    target.params = ParamsFrom(j);
    target.ops.resize(j["ops"].size());
    programs::OpIds ids;
    programs::ReadOps(j, ids, [&](const Json& o, size_t i) {
      Op& op = target.ops[i];
      op.kind = programs::GetNamed<OpKind>(o, "op", kOpNames);
      for (const Operand& x : Table()[static_cast<size_t>(op.kind)].operands) x.get(o, op);
    });
    return llama::Encode(target);
  }
};

}  // namespace

std::unique_ptr<programs::Codec> MakeCodec() { return std::make_unique<LlamaCodec>(); }

}  // namespace lifeline::llama
