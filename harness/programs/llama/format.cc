// The llama-runtime programs' decoder: how bytes become a context's parameters and ops. Every choice goes
// through the model (model.h), which says what is legal now and predicts each op's outcome.
#include "harness/programs/llama/format.h"

#include <algorithm>
#include <iterator>

#include "harness/programs/common/decode.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/llama/model.h"

namespace lifeline::llama {
namespace {

using programs::Source;
using programs::Unencodable;

ContextParams DecodeParams(Source& src, const ContextParams& want) {
  ContextParams p;
  p.model = static_cast<ModelKind>(
      src.Int<int>(0, static_cast<int>(ModelKind::kMaxValue), [&] { return static_cast<int>(want.model); }));
  p.n_seq_max = src.Int<int>(1, kMaxSeqs, [&] { return want.n_seq_max; });
  p.kv_unified = src.Bool([&] { return want.kv_unified; });
  static const std::vector<int> kUbatch = {1, 2, 4, 8, 32};
  p.n_ubatch = programs::PickFrom(src, kUbatch, [&] { return want.n_ubatch; });
  p.n_batch = p.n_ubatch * src.Int<int>(1, 4, [&] {
    if (want.n_batch % want.n_ubatch != 0) throw Unencodable("n_batch is not a multiple of n_ubatch");
    return want.n_batch / want.n_ubatch;
  });
  p.flash_attn = static_cast<FlashAttn>(src.Int<int>(0, 2, [&] { return static_cast<int>(want.flash_attn); }));
  p.type_k = src.Bool([&] { return want.type_k == CacheType::kQ8_0; }) ? CacheType::kQ8_0 : CacheType::kF16;
  // A quantized V cache needs flash attention (llama_init_from_model refuses it otherwise).
  if (p.flash_attn == FlashAttn::kOn)
    p.type_v = src.Bool([&] { return want.type_v == CacheType::kQ8_0; }) ? CacheType::kQ8_0 : CacheType::kF16;
  p.n_threads = src.Int<int>(1, 2, [&] { return want.n_threads; });
  return p;
}

int DecodeSeq(Source& src, const Model& m, int want, bool any) {
  if (any) return src.Int<int>(-1, m.n_seqs() - 1, [&] { return want; });
  return src.Int<int>(0, m.n_seqs() - 1, [&] { return want; });
}

// A position operand: open (-1) or one in [0, the largest next position + 2].
int DecodePos(Source& src, const Model& m, int want) {
  int top = 0;
  for (int s = 0; s < m.n_seqs(); ++s) top = std::max(top, m.Next(s));
  return src.Int<int>(-1, top + 2, [&] {
    if (want > top + 2) throw Unencodable("a position past the memory's next one + 2");
    return want;
  });
}

// A position range [p0, p1): p0, then p1.
void DecodeRange(Source& src, const Model& m, const Op& want, Op& op) {
  op.p0 = DecodePos(src, m, want.p0);
  op.p1 = DecodePos(src, m, want.p1);
}

// A load's slot: one that holds a state of its kind.
int DecodeLoadSlot(Source& src, const Model& m, int want, bool whole) {
  std::vector<int> slots;
  for (int i = 0; i < kStateSlots; ++i)
    if (m.SlotHolds(i, whole)) slots.push_back(i);
  return programs::PickFrom(src, slots, [&] { return want; });
}

// A save's slot and form, in one draw: form * kStateSlots + slot (values below kStateSlots, the buffer form, read
// as they did when a save drew its slot alone, and a sequence's values below 2 * kStateSlots as they did before
// the device form, so inputs written then decode alike). A whole context's state has no device form.
void DecodeSave(Source& src, const Op& want, Op& op, bool whole) {
  const StateForm most = whole ? StateForm::kFile : StateForm::kMaxValue;
  const int v = src.Int<int>(0, kStateSlots * (static_cast<int>(most) + 1) - 1, [&] {
    return static_cast<int>(want.form) * kStateSlots + want.slot;
  });
  op.slot = v % kStateSlots;
  op.form = static_cast<StateForm>(v / kStateSlots);
}

// A load's form is its slot's; a file load draws its tokens_out (NULL only for a sequence's file).
void DecodeLoadForm(Source& src, const Model& m, const Op& want, Op& op, bool whole) {
  op.form = m.SlotForm(op.slot);
  if (op.form != StateForm::kFile) return;
  const int most = static_cast<int>(whole ? TokensOut::kShort : TokensOut::kCountOnly);
  op.tokens_out = static_cast<TokensOut>(src.Int<int>(0, most, [&] { return static_cast<int>(want.tokens_out); }));
}

Program Run(Source& src, const Program* target) {
  static const Program kNoTarget{};
  const Program& want_p = target ? *target : kNoTarget;
  Program prog;
  prog.params = DecodeParams(src, want_p.params);
  Model m(prog.params);
  const bool unified = prog.params.kv_unified || !HasAttention(prog.params.model);
  prog.ops = programs::DecodeOps<Op>(src, kMaxOps, m, [&](Op& op, const Op& want, size_t) {
    switch (op.kind) {
      case OpKind::kDecode: {
        const int full = (1 << m.n_seqs()) - 1;
        op.seqs = static_cast<uint8_t>(src.Int<int>(1, full, [&] { return want.seqs; }));
        // Mostly short batches (a turn, a token), sometimes a prompt up to kMaxSteps: a long batch costs a graph
        // per ubatch and a fresh decode of the whole history, and most of what the memory does shows at a few.
        op.steps = src.Bool([&] { return want.steps > kShortSteps; })
                       ? src.Int<int>(kShortSteps + 1, kMaxSteps, [&] { return want.steps; })
                       : src.Int<int>(1, kShortSteps, [&] { return want.steps; });
        // One token in several sequences: the unified attention cache only (a cell with several sequences).
        if (unified && !HasRecurrent(prog.params.model) && (op.seqs & (op.seqs - 1)))
          op.shared = src.Bool([&] { return want.shared; });
        op.all_logits = src.Bool([&] { return want.all_logits; });
        op.token_seed = src.Full<uint8_t>([&] { return want.token_seed; });
        {
          // Flaws are rare: 8 of 32 values (values below 16 read as they did when there were 16, so inputs
          // written then decode alike; 7 and 8, once none, are the last two).
          const int f = src.Int<int>(0, 31, [&] { return static_cast<int>(want.flaw); });
          op.flaw = f <= static_cast<int>(Flaw::kMaxValue) ? static_cast<Flaw>(f) : Flaw::kNone;
        }
        if (op.flaw == Flaw::kGetOne) {  // llama_batch_get_one's batch: sequence 0 only, its last token's logits
          if (want.flaw == Flaw::kGetOne && (want.seqs != 1 || want.shared || want.all_logits))
            throw Unencodable("a get-one decode is on sequence 0 alone, not shared, logits on the last token");
          op.seqs = 1;
          op.shared = false;
          op.all_logits = false;
        }
        m.Decode(op);
        break;
      }
      case OpKind::kSeqRm:
        op.seq = DecodeSeq(src, m, want.seq, true);
        DecodeRange(src, m, want, op);
        m.SeqRm(op);
        break;
      case OpKind::kSeqCp:
        op.seq = DecodeSeq(src, m, want.seq, false);
        op.seq_dst = DecodeSeq(src, m, want.seq_dst, false);
        DecodeRange(src, m, want, op);
        m.SeqCp(op);
        break;
      case OpKind::kSeqKeep:
        op.seq = DecodeSeq(src, m, want.seq, false);
        m.SeqKeep(op);
        break;
      case OpKind::kSeqAdd:
      case OpKind::kSeqDiv:
        op.seq = DecodeSeq(src, m, want.seq, false);
        DecodeRange(src, m, want, op);
        op.delta = op.kind == OpKind::kSeqAdd ? src.Int<int>(-8, 8, [&] { return want.delta; })
                                              : src.Int<int>(2, 4, [&] { return want.delta; });
        m.SeqShift(op);
        break;
      case OpKind::kClear:
        op.data = src.Bool([&] { return want.data; });
        m.Clear(op);
        break;
      case OpKind::kSaveSeq:
        op.seq = DecodeSeq(src, m, want.seq, false);
        DecodeSave(src, want, op, false);
        m.SaveSeq(op);
        break;
      case OpKind::kLoadSeq:
        op.slot = DecodeLoadSlot(src, m, want.slot, false);
        op.seq = DecodeSeq(src, m, want.seq, false);
        DecodeLoadForm(src, m, want, op, false);
        m.LoadSeq(op);
        break;
      case OpKind::kSaveAll:
        DecodeSave(src, want, op, true);
        m.SaveAll(op);
        break;
      case OpKind::kLoadAll:
        op.slot = DecodeLoadSlot(src, m, want.slot, true);
        DecodeLoadForm(src, m, want, op, true);
        m.LoadAll(op);
        break;
      case OpKind::kSetThreads:
        op.n_threads = src.Int<int>(1, 2, [&] { return want.n_threads; });
        break;
    }
  }, target ? &target->ops : nullptr);
  return prog;
}

}  // namespace

const char* const kModelNames[] = {"llama", "gemma2", "mamba", "jamba"};
const char* const kOpNames[] = {"decode",   "seq-rm",   "seq-cp",   "seq-keep", "seq-add",  "seq-div",
                                "clear",    "save-seq", "load-seq", "save-all", "load-all", "set-threads"};

Program Decode(const uint8_t* data, size_t size) {
  Source src(data, size);
  return Run(src, nullptr);
}

bool SameOp(const Op& a, const Op& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case OpKind::kDecode:
      return a.seqs == b.seqs && a.steps == b.steps && a.shared == b.shared && a.all_logits == b.all_logits &&
             a.token_seed == b.token_seed && a.flaw == b.flaw;
    case OpKind::kSeqRm: return a.seq == b.seq && a.p0 == b.p0 && a.p1 == b.p1;
    case OpKind::kSeqCp: return a.seq == b.seq && a.seq_dst == b.seq_dst && a.p0 == b.p0 && a.p1 == b.p1;
    case OpKind::kSeqKeep: return a.seq == b.seq;
    case OpKind::kSeqAdd:
    case OpKind::kSeqDiv: return a.seq == b.seq && a.p0 == b.p0 && a.p1 == b.p1 && a.delta == b.delta;
    case OpKind::kClear: return a.data == b.data;
    case OpKind::kSaveSeq: return a.seq == b.seq && a.slot == b.slot && a.form == b.form;
    case OpKind::kLoadSeq: return a.seq == b.seq && a.slot == b.slot && a.tokens_out == b.tokens_out;
    case OpKind::kSaveAll: return a.slot == b.slot && a.form == b.form;
    case OpKind::kLoadAll: return a.slot == b.slot && a.tokens_out == b.tokens_out;
    case OpKind::kSetThreads: return a.n_threads == b.n_threads;
  }
  return false;
}

std::vector<uint8_t> Encode(const Program& target) {
  Source src = Source::Encoder();
  Run(src, &target);
  std::vector<uint8_t> bytes = src.Bytes();
  const Program back = Decode(bytes.data(), bytes.size());
  if (Describe(back.params) != Describe(target.params))
    throw Unencodable("the parameters decode as `" + Describe(back.params) + "`");
  programs::CheckRoundTrip(back.ops, target.ops, SameOp);
  return bytes;
}

std::vector<BatchToken> TokensOf(const Op& op) {
  std::vector<BatchToken> out;
  for (int step = 0; step < op.steps; ++step) {
    if (op.shared) {
      out.push_back({(op.token_seed + 7 * step) % kVocab, op.seqs, op.all_logits || step == op.steps - 1});
      continue;
    }
    for (int s = 0; s < kMaxSeqs; ++s)
      if ((op.seqs >> s) & 1)
        out.push_back({(op.token_seed + 7 * step + 13 * s) % kVocab, static_cast<uint8_t>(1u << s),
                       op.all_logits || step == op.steps - 1});
  }
  return out;
}

std::string Describe(const ContextParams& p) {
  static const char* const kFa[] = {"auto", "off", "on"};
  return std::string("context model=") + kModelNames[static_cast<int>(p.model)] + " n_seq_max=" +
         std::to_string(p.n_seq_max) + (p.kv_unified ? " unified" : " per-sequence") + " n_ubatch=" +
         std::to_string(p.n_ubatch) + " n_batch=" + std::to_string(p.n_batch) + " flash_attn=" +
         kFa[static_cast<int>(p.flash_attn)] + " type_k=" + (p.type_k == CacheType::kQ8_0 ? "q8_0" : "f16") +
         " type_v=" + (p.type_v == CacheType::kQ8_0 ? "q8_0" : "f16") + " threads=" + std::to_string(p.n_threads);
}

namespace {
// " file" and, for a load, its tokens_out when it is not room for every token; " device".
std::string FormOf(const Op& op) {
  if (op.form == StateForm::kDevice) return " device";
  if (op.form != StateForm::kFile) return "";
  const bool load = op.kind == OpKind::kLoadSeq || op.kind == OpKind::kLoadAll;
  if (!load || op.tokens_out == TokensOut::kExact) return " file";
  return op.tokens_out == TokensOut::kShort ? " file tokens_out=short" : " file tokens_out=null";
}
std::string LoadResult(const Op& op) {
  return op.expect_ret == 1 ? " -> restored" : op.expect_ret == 2 ? " -> counted" : " -> refused";
}
}  // namespace

std::string Describe(const Op& op) {
  std::string out = programs::NameOf(kOpNames, op.kind);
  auto range = [&] { return " [" + std::to_string(op.p0) + ", " + std::to_string(op.p1) + ")"; };
  switch (op.kind) {
    case OpKind::kDecode: {
      static const char* const kFlaw[] = {"", " flaw=gap", " flaw=behind", " flaw=bad-token", " abort", " flaw=bad-seq",
                                          " auto-positions", " get-one", " beside"};
      static_assert(std::size(kFlaw) == static_cast<size_t>(Flaw::kMaxValue) + 1, "kFlaw: one per Flaw");
      static const char kHex[] = "0123456789abcdef";
      out += std::string(" seqs=0x") + kHex[op.seqs & 15] + " steps=" + std::to_string(op.steps) +
             (op.shared ? " shared" : "") + (op.all_logits ? " all-logits" : "") + " tokens@" +
             std::to_string(op.token_seed) + kFlaw[static_cast<int>(op.flaw)] + " -> " + std::to_string(op.expect_ret);
      break;
    }
    case OpKind::kSeqRm: out += " seq=" + std::to_string(op.seq) + range() + " -> " + (op.expect_ret ? "true" : "false"); break;
    case OpKind::kSeqCp: out += " " + std::to_string(op.seq) + "->" + std::to_string(op.seq_dst) + range(); break;
    case OpKind::kSeqKeep: out += " seq=" + std::to_string(op.seq); break;
    case OpKind::kSeqAdd:
    case OpKind::kSeqDiv: out += " seq=" + std::to_string(op.seq) + range() + " by " + std::to_string(op.delta); break;
    case OpKind::kClear: out += op.data ? " data" : " meta"; break;
    case OpKind::kSaveSeq: out += " seq=" + std::to_string(op.seq) + " slot=" + std::to_string(op.slot) + FormOf(op); break;
    case OpKind::kLoadSeq:
      out += " slot=" + std::to_string(op.slot) + " seq=" + std::to_string(op.seq) + FormOf(op) + LoadResult(op);
      break;
    case OpKind::kSaveAll: out += " slot=" + std::to_string(op.slot) + FormOf(op); break;
    case OpKind::kLoadAll: out += " slot=" + std::to_string(op.slot) + FormOf(op) + LoadResult(op); break;
    case OpKind::kSetThreads: out += " n=" + std::to_string(op.n_threads); break;
  }
  return out;
}

std::string Describe(const Program& program) {
  return Describe(program.params) + "\n" + programs::DescribeNumbered(program.ops);
}

}  // namespace lifeline::llama
