// The byte format of the llama-runtime programs (target llama_memory_differential): bytes -> one context's
// parameters (which tiny model, n_seq_max, kv_unified, n_ubatch, n_batch, flash attention, K/V cache types,
// threads), then a bounded sequence of what llama.cpp's users do to that context: decode batches on any
// sequences, edit the memory (seq_rm/cp/keep/add/div, clear), save and restore a sequence's or the whole
// context's state, change the thread counts. Each op is drawn among the kinds legal for the model (model.h)
// and carries the model's prediction of its outcome.
//
// This decoder is a file format. Every corpus file and reproducer is read through it; changing how bytes map
// to ops silently rewrites all of them. tests/llama/decoder_test.cc pins it (golden test).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lifeline::llama {

inline constexpr size_t kMaxOps = 24;
inline constexpr int kMaxSeqs = 4;        // n_seq_max is drawn from [1, kMaxSeqs]
inline constexpr int kMaxSteps = 80;      // a decode's steps: one token per sequence of its set per step
inline constexpr int kShortSteps = 8;     // a short decode's most steps (long ones are drawn apart, format.cc)
inline constexpr int kStateSlots = 3;     // saved states a program keeps (sequence or whole context)
inline constexpr int kVocab = 64;         // the tiny models' vocabulary (upstream/llama_models.h)

// The memory kinds of llama.cpp, one tiny model each (upstream/llama_models.h).
enum class ModelKind : uint8_t {
  kLlama,   // llama: llama_kv_cache
  kGemma2,  // gemma2: llama_kv_cache_iswa (a sliding window on every other layer)
  kMamba,   // mamba: llama_memory_recurrent
  kJamba,   // jamba: llama_memory_hybrid (one recurrent layer, one attention layer)
  kMaxValue = kJamba,
};
extern const char* const kModelNames[static_cast<int>(ModelKind::kMaxValue) + 1];

enum class CacheType : uint8_t { kF16, kQ8_0 };
enum class FlashAttn : uint8_t { kAuto, kOff, kOn };

struct ContextParams {
  ModelKind model = ModelKind::kLlama;
  int n_seq_max = 1;
  bool kv_unified = true;
  int n_ubatch = 8;
  int n_batch = 8;          // >= n_ubatch
  FlashAttn flash_attn = FlashAttn::kAuto;
  CacheType type_k = CacheType::kF16;
  CacheType type_v = CacheType::kF16;  // Q8_0 only with flash attention on (llama.cpp refuses it without)
  int n_threads = 1;
  bool swa_full = true;     // always: the iswa cache can shift only when full (llama_kv_cache_iswa::get_can_shift)
};

enum class OpKind : uint8_t {
  kDecode,         // llama_decode of a batch built from steps x sequences
  kSeqRm,          // llama_memory_seq_rm
  kSeqCp,          // llama_memory_seq_cp
  kSeqKeep,        // llama_memory_seq_keep
  kSeqAdd,         // llama_memory_seq_add (drawn where llama_memory_can_shift)
  kSeqDiv,         // llama_memory_seq_div (likewise)
  kClear,          // llama_memory_clear
  kSaveSeq,        // llama_state_seq_get_size + llama_state_seq_get_data into a slot (or llama_state_seq_save_file)
  kLoadSeq,        // llama_state_seq_set_data from a slot into a sequence (or llama_state_seq_load_file)
  kSaveAll,        // llama_state_get_size + llama_state_get_data into a slot (or llama_state_save_file)
  kLoadAll,        // llama_state_set_data from a slot (or llama_state_load_file)
  kSetThreads,     // llama_set_n_threads
  kMaxValue = kSetThreads,
};

// How a decode departs from a well-formed one: a batch the checks of llama_decode must refuse (gap, behind,
// bad token, a token on sequence -1), a decode its abort callback stops (llama_set_abort_callback: the callback
// answers true from the first graph node of the op's first llama_decode call, which must then return 2 with its
// unfinished ubatch out of the memory; the op's later calls are not made), or batches without positions
// (llama_batch.pos NULL, as llama_batch_get_one's are: llama_decode places each token after its first sequence's
// last position in the memory, which must be where the program's positions are), or llama_batch_get_one's batches
// themselves (kGetOne: only the tokens; positions, sequence ids and output flags NULL, which llama_decode fills:
// sequence 0, after its last position, an output for the last token of each call; the decoder makes such an op's
// set sequence 0 alone, not shared, logits on the last), or a decode with a second context beside it (kBeside:
// another context of the same model and parameters, made on a thread of its own, decodes the op's first 64 tokens on its
// sequence 0 from position 0 and is freed with llama_free while this context decodes the op; its last logits are
// compared with a fresh decode of those tokens).
enum class Flaw : uint8_t {
  kNone, kGap, kBehind, kBadToken, kAbort, kBadSeq, kAutoPositions, kGetOne, kBeside, kMaxValue = kBeside
};

// Where a saved state lives: a buffer (llama_state_*get_data / set_data) or a session file with the saved
// sequence's tokens ahead of the state (llama_state_seq_save_file / load_file, llama_state_save_file / load_file).
// A sequence's state may also stay on the context's backend (kDevice: llama_state_seq_get_data_ext /
// set_data_ext with LLAMA_STATE_SEQ_FLAGS_ON_DEVICE, which keep the tensor data in buffers of the context, one set
// per saved sequence id, and the rest in the host buffer; llama.h: getting such a state for a sequence
// "invalidates all prior states gotten for that seq_id with this flag", so a load never takes one of those).
// A load takes the form its slot was saved in.
enum class StateForm : uint8_t { kBuffer, kFile, kDevice, kMaxValue = kDevice };
// A file load's tokens_out: room for every saved token, one token less (the load is refused before it touches
// the memory), or NULL (llama_state_seq_load_file only: "only the token count is reported", nothing loaded).
enum class TokensOut : uint8_t { kExact, kShort, kCountOnly, kMaxValue = kCountOnly };

struct Op {
  OpKind kind = OpKind::kDecode;
  // Operands.
  uint8_t seqs = 1;       // kDecode: the sequences (a bit mask, non-empty)
  int steps = 1;          // kDecode
  bool shared = false;    // kDecode: one token per step in every sequence of the set, else one per sequence
  bool all_logits = false;  // kDecode: logits for every token, else the last of each sequence
  uint8_t token_seed = 0;   // kDecode: the tokens: (token_seed + 7 * step + 13 * seq) mod kVocab
  Flaw flaw = Flaw::kNone;  // kDecode
  int seq = 0;            // kSeqRm (may be -1: every sequence), kSeqKeep, kSeqAdd, kSeqDiv, kSaveSeq, kLoadSeq (dst)
  int seq_dst = 0;        // kSeqCp
  int p0 = -1, p1 = -1;   // kSeqRm, kSeqCp, kSeqAdd, kSeqDiv (negative: open end)
  int delta = 0;          // kSeqAdd: the shift; kSeqDiv: the divisor (> 1)
  bool data = false;      // kClear
  int slot = 0;           // kSave*, kLoad*
  StateForm form = StateForm::kBuffer;      // kSave* (drawn; kDevice for a sequence only), kLoad* (its slot's)
  TokensOut tokens_out = TokensOut::kExact;  // kLoad* of a file
  int n_threads = 1;      // kSetThreads
  // The model's predictions.
  int expect_ret = 0;       // kDecode: llama_decode's return (0, 1 no memory slot, 2 aborted, -1 invalid batch);
                            // kSeqRm: 1 true / 0 false; kLoad*: 1 restored / 0 refused / 2 counted (kCountOnly)
};

struct Program {
  ContextParams params;
  std::vector<Op> ops;
};

Program Decode(const uint8_t* data, size_t size);
// Encoding: the input whose decoding is `target`; throws programs::Unencodable naming what cannot be written.
std::vector<uint8_t> Encode(const Program& target);
bool SameOp(const Op& a, const Op& b);

extern const char* const kOpNames[static_cast<int>(OpKind::kMaxValue) + 1];
std::string Describe(const ContextParams& params);
std::string Describe(const Op& op);
// The parameters' line, then "#i <op>" per op.
std::string Describe(const Program& program);

// The tokens of a decode op, in batch order: for each step, for each sequence of the set (ascending), one
// token (one per step when shared), its sequences and whether it asks for logits. Positions come from the
// memory (model.h), so they are not part of the op.
struct BatchToken {
  int token = 0;
  uint8_t seqs = 0;
  bool logits = false;
};
std::vector<BatchToken> TokensOf(const Op& op);

}  // namespace lifeline::llama
