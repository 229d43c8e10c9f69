// The seeds of llama_memory_differential as programs (corpus/llama_memory_differential/ holds their encodings;
// decoder_test.cc checks that every one is there and writes them with LIFELINE_WRITE_SEEDS=<dir>). One per
// memory kind and per API area, each a few ops a user of llama.h would write.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/programs/llama/format.h"

namespace lifeline::llama {

inline Op DecodeOp(int seqs, int steps, int seed, bool shared = false, bool all_logits = false, Flaw flaw = Flaw::kNone) {
  Op op;
  op.kind = OpKind::kDecode;
  op.seqs = static_cast<uint8_t>(seqs);
  op.steps = steps;
  op.token_seed = static_cast<uint8_t>(seed);
  op.shared = shared;
  op.all_logits = all_logits;
  op.flaw = flaw;
  return op;
}
inline Op SeqOp(OpKind kind, int seq, int p0 = -1, int p1 = -1, int delta = 0, int seq_dst = 0) {
  Op op;
  op.kind = kind;
  op.seq = seq;
  op.p0 = p0;
  op.p1 = p1;
  op.delta = delta;
  op.seq_dst = seq_dst;
  return op;
}
inline Op SlotOp(OpKind kind, int slot, int seq = 0) {
  Op op;
  op.kind = kind;
  op.slot = slot;
  op.seq = seq;
  return op;
}
// A state op on a session file: a save (its form), or a load with its tokens_out.
inline Op FileOp(OpKind kind, int slot, int seq = 0, TokensOut tokens_out = TokensOut::kExact) {
  Op op = SlotOp(kind, slot, seq);
  op.form = StateForm::kFile;
  op.tokens_out = tokens_out;
  return op;
}
// A state op of a sequence whose tensor data stays on the context's backend (LLAMA_STATE_SEQ_FLAGS_ON_DEVICE).
inline Op DeviceOp(OpKind kind, int slot, int seq = 0) {
  Op op = SlotOp(kind, slot, seq);
  op.form = StateForm::kDevice;
  return op;
}
inline ContextParams Params(ModelKind model, int n_seq_max, int n_ubatch, int n_batch, bool unified = true,
                            FlashAttn fa = FlashAttn::kAuto, CacheType k = CacheType::kF16,
                            CacheType v = CacheType::kF16, int threads = 1) {
  ContextParams p;
  p.model = model;
  p.n_seq_max = n_seq_max;
  p.kv_unified = unified;
  p.n_ubatch = n_ubatch;
  p.n_batch = n_batch;
  p.flash_attn = fa;
  p.type_k = k;
  p.type_v = v;
  p.n_threads = threads;
  return p;
}

inline std::vector<std::pair<std::string, Program>> SeedPrograms() {
  std::vector<std::pair<std::string, Program>> out;
  // llama.cpp #17527's scenario: three sequences interleaved in one batch fill 210 of 256 cells, sequence 1 is
  // saved and removed (70 holes of one cell), and restored: its 70 cells exist only as holes.
  out.push_back({"restore-into-fragmented-cache",
                 {Params(ModelKind::kLlama, 3, 32, 128),
                  {DecodeOp(0b111, 70, 1), SlotOp(OpKind::kSaveSeq, 0, 1), SeqOp(OpKind::kSeqRm, 1),
                   SlotOp(OpKind::kLoadSeq, 0, 1), DecodeOp(0b010, 2, 9)}}});
  // A prompt, its tail removed and decoded again (a regenerate), then a context shift: the first tokens removed
  // and the rest moved back (llama.cpp's n_discard).
  out.push_back({"regenerate-and-context-shift",
                 {Params(ModelKind::kLlama, 1, 4, 8),
                  {DecodeOp(1, 12, 3, false, true), SeqOp(OpKind::kSeqRm, 0, 8), DecodeOp(1, 4, 40),
                   SeqOp(OpKind::kSeqRm, 0, 0, 4), SeqOp(OpKind::kSeqAdd, 0, 4, -1, -4), DecodeOp(1, 3, 5)}}});
  // A shared prompt: one batch whose tokens are in two sequences, then each continued; seq_cp and seq_keep.
  out.push_back({"shared-prompt-then-branches",
                 {Params(ModelKind::kLlama, 2, 8, 16, true, FlashAttn::kOn),
                  {DecodeOp(0b11, 6, 2, true), DecodeOp(0b01, 3, 11), DecodeOp(0b10, 3, 12),
                   SeqOp(OpKind::kSeqCp, 0, -1, -1, 0, 1), SeqOp(OpKind::kSeqKeep, 1), DecodeOp(0b10, 2, 7)}}});
  // Quantized K and V with flash attention; the whole context saved, cleared and restored; self-extend's divide.
  out.push_back({"q8-cache-state-roundtrip",
                 {Params(ModelKind::kLlama, 2, 2, 4, true, FlashAttn::kOn, CacheType::kQ8_0, CacheType::kQ8_0, 2),
                  {DecodeOp(0b11, 5, 21), SlotOp(OpKind::kSaveAll, 1), {OpKind::kClear}, SlotOp(OpKind::kLoadAll, 1),
                   DecodeOp(0b01, 2, 30), SeqOp(OpKind::kSeqDiv, 1, 0, -1, 2), DecodeOp(0b10, 1, 4)}}});
  // Per-sequence streams (kv_unified off): two sequences, one saved and restored into the other's stream.
  out.push_back({"per-sequence-streams",
                 {Params(ModelKind::kLlama, 2, 8, 8, false, FlashAttn::kOff),
                  {DecodeOp(0b11, 9, 17), SlotOp(OpKind::kSaveSeq, 2, 0), SlotOp(OpKind::kLoadSeq, 2, 1),
                   DecodeOp(0b11, 2, 50, false, false, Flaw::kGap), DecodeOp(0b10, 2, 51)}}});
  // The sliding-window cache (gemma2, window 8): past the window, then its tail removed and decoded again.
  out.push_back({"sliding-window-past-the-window",
                 {Params(ModelKind::kGemma2, 1, 4, 16),
                  {DecodeOp(1, 20, 6, false, true), SeqOp(OpKind::kSeqRm, 0, 15), DecodeOp(1, 3, 60)}}});
  // The recurrent state (mamba): a partial seq_rm refused, a copy, both continued, a state restored.
  out.push_back({"recurrent-copy-and-restore",
                 {Params(ModelKind::kMamba, 2, 4, 8),
                  {DecodeOp(0b01, 6, 8), SeqOp(OpKind::kSeqRm, 0, 3), SeqOp(OpKind::kSeqCp, 0, -1, -1, 0, 1),
                   DecodeOp(0b11, 2, 13), SlotOp(OpKind::kSaveSeq, 0, 1), SlotOp(OpKind::kLoadSeq, 0, 0),
                   DecodeOp(0b01, 1, 44, false, false, Flaw::kBadToken)}}});
  // A recurrent state that took in more tokens than a context has cells (320 against 256): the fresh context
  // decodes its history in calls of 256.
  out.push_back({"recurrent-longer-than-the-cache",
                 {Params(ModelKind::kMamba, 1, 32, 128),
                  {DecodeOp(1, 80, 1), DecodeOp(1, 80, 2), DecodeOp(1, 80, 3), DecodeOp(1, 80, 4)}}});
  // The hybrid memory (jamba): both kinds at once; a whole removal and a threads change between decodes.
  out.push_back({"hybrid-rm-and-threads",
                 {Params(ModelKind::kJamba, 2, 2, 6),
                  {DecodeOp(0b11, 4, 19, false, true), SeqOp(OpKind::kSeqRm, 1), {OpKind::kSetThreads},
                   DecodeOp(0b11, 3, 23), SeqOp(OpKind::kSeqRm, 0, 2, 5)}}});
  out.back().second.ops[2].n_threads = 2;
  // A decode stopped by the abort callback: a shared prompt, then a shared turn aborted (2, the memory as it
  // was: the token's every sequence), and both sequences continued from where they were.
  out.push_back({"abort-shared-turn",
                 {Params(ModelKind::kLlama, 2, 4, 8),
                  {DecodeOp(0b11, 5, 14, true), DecodeOp(0b11, 3, 15, true, false, Flaw::kAbort),
                   DecodeOp(0b10, 2, 16), DecodeOp(0b01, 2, 17)}}});
  // The recurrent state: a first prompt aborted (the sequence stays empty), a prompt, a turn aborted after it,
  // then the sequence continued.
  out.push_back({"abort-recurrent-turn",
                 {Params(ModelKind::kMamba, 1, 2, 4),
                  {DecodeOp(1, 3, 23, false, false, Flaw::kAbort), DecodeOp(1, 6, 24),
                   DecodeOp(1, 3, 25, false, false, Flaw::kAbort), DecodeOp(1, 2, 26)}}});
  // Batches without positions (llama_batch_get_one's kind: llama_decode places the tokens), one with a token on
  // sequence -1 (refused), then a shared turn without positions.
  out.push_back({"auto-positions-and-bad-seq",
                 {Params(ModelKind::kLlama, 2, 4, 8),
                  {DecodeOp(0b11, 4, 31, false, false, Flaw::kAutoPositions),
                   DecodeOp(0b01, 2, 32, false, false, Flaw::kBadSeq),
                   DecodeOp(0b11, 3, 33, true, true, Flaw::kAutoPositions)}}});
  // A sequence's session file on the hybrid memory (per-sequence streams): loaded into the other sequence with
  // tokens_out one token short (refused, nothing touched), NULL (the count only), then whole; both go on.
  out.push_back({"session-file-per-sequence",
                 {Params(ModelKind::kJamba, 2, 4, 8, false),
                  {DecodeOp(0b11, 5, 40), FileOp(OpKind::kSaveSeq, 0, 0),
                   FileOp(OpKind::kLoadSeq, 0, 1, TokensOut::kShort), FileOp(OpKind::kLoadSeq, 0, 1, TokensOut::kCountOnly),
                   FileOp(OpKind::kLoadSeq, 0, 1), DecodeOp(0b11, 2, 41)}}});
  // The whole context's session file on the sliding-window cache: saved past the window, cleared, a load with
  // tokens_out short refused, the load, and the sequence continued.
  out.push_back({"session-file-whole-context",
                 {Params(ModelKind::kGemma2, 1, 4, 16),
                  {DecodeOp(1, 12, 42), FileOp(OpKind::kSaveAll, 1), {OpKind::kClear},
                   FileOp(OpKind::kLoadAll, 1, 0, TokensOut::kShort), FileOp(OpKind::kLoadAll, 1), DecodeOp(1, 2, 43)}}});
  // Device states (llama_state_seq_get_data_ext / set_data_ext, ON_DEVICE): three sequences decoded together leave
  // sequence 1 in six one-cell runs; its device copy is restored, after two cells of sequence 0 took part of its
  // place, into other runs than the ones it was saved from (llama_io_read_device copies across run boundaries).
  out.push_back({"device-state-other-runs",
                 {Params(ModelKind::kLlama, 3, 4, 8),
                  {DecodeOp(0b111, 6, 44), DeviceOp(OpKind::kSaveSeq, 0, 1), SeqOp(OpKind::kSeqRm, 1),
                   DecodeOp(1, 2, 45), DeviceOp(OpKind::kLoadSeq, 0, 1), DecodeOp(0b10, 2, 46)}}});
  // On the hybrid memory: a second device save of sequence 0 invalidates the first (llama.h), and the second is
  // restored into sequence 1, which goes on.
  out.push_back({"device-state-saved-twice",
                 {Params(ModelKind::kJamba, 2, 4, 8, false),
                  {DecodeOp(0b11, 4, 47), DeviceOp(OpKind::kSaveSeq, 1, 0), DecodeOp(1, 2, 48),
                   DeviceOp(OpKind::kSaveSeq, 2, 0), DeviceOp(OpKind::kLoadSeq, 2, 1), DecodeOp(0b11, 2, 49)}}});
  // llama_batch_get_one's batches (tokens only; llama_decode fills sequence 0, the positions and one output per
  // call): six tokens in calls of four, then a turn with every field filled.
  out.push_back({"get-one-batches",
                 {Params(ModelKind::kLlama, 1, 2, 4),
                  {DecodeOp(1, 6, 50, false, false, Flaw::kGetOne), DecodeOp(1, 2, 51)}}});
  // A second context of the hybrid model decodes the op's tokens on another thread and is freed while the
  // program's context decodes them on two sequences.
  out.push_back({"decode-beside-another-context",
                 {Params(ModelKind::kJamba, 2, 4, 8, false),
                  {DecodeOp(0b11, 6, 52, false, false, Flaw::kBeside), DecodeOp(0b01, 3, 53)}}});
  return out;
}

}  // namespace lifeline::llama
