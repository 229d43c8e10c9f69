// What the llama-runtime programs' memory must hold, from the model's own state only: the cells of the
// attention cache (their positions, sequences, tokens, and what each cell attended to when it was made), the
// recurrent state of each sequence (the tokens it has taken in), and the saved states. From these it predicts
// what the API returns (llama_decode's code, seq_rm's bool, a restore's size, seq_pos_min/max) and which
// outputs a fresh context can reproduce: the differential oracle (executor.h) compares only those.
//
// Modelled from llama.h's contracts and, where llama.h is silent, from what the pinned tree's code does (read
// there; a rule that contradicts llama.h is a finding, stepped around by a guard in the executor instead):
// - a batch is refused (-1) when a token is outside the vocabulary, a sequence's positions in it do not start
//   right after that sequence's last position in the memory (Y = X + 1) or are not continuous, or sequences
//   that share a token hold different spans (llama_batch_allocr::init);
// - a decode that finds no room returns 1 (a cell per new token, n_ctx_seq cells per stream);
// - seq_rm of a recurrent sequence that would erase part of its state returns false (no rollback snapshots:
//   n_rs_seq is 0), and so does the hybrid memory;
// - seq_cp of a recurrent state replaces the destination whatever the range (a state is whole);
// - seq_cp shares cells within a stream (one position per cell: seq_add on one sequence moves the cells it
//   shares with another), a restored sequence gets new cells with the saved positions.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "harness/programs/llama/format.h"

namespace lifeline::llama {

// Which memory a model kind has.
bool HasAttention(ModelKind kind);   // a KV cache (llama, gemma2, jamba)
bool HasRecurrent(ModelKind kind);   // a recurrent state (mamba, jamba)
bool HasSlidingWindow(ModelKind kind);
inline constexpr int kCellsPerStream = 256;  // llama.cpp pads n_ctx to 256; the programs ask for 256 per stream
inline constexpr int kSlidingWindow = 8;     // gemma2's window in the tiny model

class Model {
 public:
  explicit Model(const ContextParams& params);

  bool Legal(OpKind kind) const;

  // Predictions and effects, applied to the model's state. Decode fills in positions of `tokens`.
  struct Placed {
    int token;
    uint8_t seqs;
    int pos;
    bool logits;
  };
  std::vector<Placed> Place(const Op& op) const;
  // The op's tokens as the llama_decode calls that submit them: at most n_batch tokens each (llama.h: n_batch
  // is the most a call may submit; llama_decode asserts it).
  std::vector<std::vector<Placed>> Chunks(const Op& op) const;
  // One llama_decode call: its predicted return, and its tokens in the memory when 0. `aborted`: the abort
  // callback stops the call's first ubatch, so a call the checks and the room let through returns 2 and leaves
  // the memory as it was (llama.h: the ubatches processed remain, and the first was not).
  int DecodeChunk(const std::vector<Placed>& chunk, bool aborted = false);
  // Every call of the op, up to the first that does not return 0 (with Flaw::kAbort, the first call):
  // op.expect_ret is that one's return.
  void Decode(Op& op);
  void SeqRm(Op& op);
  void SeqCp(Op& op);
  // The positions in seq_cp's range whose cells of `op.seq` are already in `op.seq_dst` (a shared prompt, a
  // second copy): llama_kv_cells::seq_add asserts the cell does not hold the sequence yet. Empty when none, or
  // when the memory has no attention cache. `rest` gets the range's other positions that hold cells of op.seq.
  std::vector<int> SeqCpShared(const Op& op, std::vector<int>* rest) const;
  void SeqKeep(Op& op);
  void SeqShift(Op& op);  // kSeqAdd, kSeqDiv
  // Whether a seq_add/seq_div reaches a cell of the attention cache: llama_kv_cells marks it shifted, even by 0
  // (a seq_div of position 0), and the next decode shifts K.
  bool ShiftTouchesCells(const Op& op) const;
  // Whether a seq_add moves a recurrent state below position 0.
  bool ShiftsStateBelowZero(const Op& op) const;
  void Clear(Op& op);
  void SaveSeq(Op& op);
  void LoadSeq(Op& op);
  void SaveAll(Op& op);
  void LoadAll(Op& op);

  // The memory's contract per sequence: seq_pos_min and seq_pos_max as llama.h defines them (-1: empty).
  int PosMax(int seq) const;
  std::optional<int> PosMin(int seq) const;  // nullopt: not predicted (the iswa cache reuses masked cells)
  // The tokens and positions a fresh context must decode, in order, to reproduce the logits of a token of
  // `seq` at position `pos` that the memory holds now; nullopt when the memory's content for it is not what
  // a fresh decode makes (a cell made beside tokens since removed, shifted relative to them, or divided).
  std::optional<std::vector<std::pair<int, int>>> Reference(int seq, int pos) const;

  // The sliding-window cache of `seq` may lack cells the base cache holds (reused, or left out of a restored state).
  bool SwaUnknown(int seq) const { return mem_.swa_unknown[seq]; }
  const ContextParams& params() const { return params_; }
  int n_seqs() const { return params_.n_seq_max; }
  bool SlotHolds(int slot, bool whole) const;
  bool SlotEmpty(int slot) const;  // a saved sequence without attention cells
  StateForm SlotForm(int slot) const { return saved_[slot].form; }
  // The tokens a program keeps of a sequence, as a session file stores them: its attention cells' tokens in
  // position order, or (a recurrent memory alone) every token its state took in. A whole context's file stores
  // sequence 0's.
  std::vector<int> Prompt(int seq) const;
  // Where a file load stops before the memory, its return (op.expect_ret): tokens_out short of the file's
  // tokens (0, refused) or NULL (2, counted); nullopt when it goes on to the state.
  std::optional<int> FileLoadStop(const Op& op) const;
  // Whether a sequence's restore (kLoadSeq) finds no room for the saved cells once the destination is removed.
  bool RestoreRefused(const Op& op) const;
  // The tokens the file in `slot` holds (empty for a buffer).
  const std::vector<int>& SlotTokens(int slot) const { return saved_[slot].tokens; }
  // The next position of `seq` (PosMax + 1).
  int Next(int seq) const { return PosMax(seq) + 1; }

 private:
  struct Cell {
    int pos;
    uint8_t seqs;
    int token;
    // What the cell attended to when it was made: (token, position relative to the cell), sorted.
    std::vector<std::pair<int, int>> birth;
  };
  struct Recurrent {
    bool present = false;
    int pos = -1;
    std::vector<int> tokens;  // every token the state has taken in
  };
  struct Memory {
    std::vector<Cell> cells;
    Recurrent recr[kMaxSeqs];
    // Sequences whose recurrent states are one cell of llama_memory_recurrent share a group: seq_cp makes the
    // destination share the source's cell (until either decodes, which copies it), so a seq_add or seq_div of
    // one moves them all, and a seq_rm of one leaves the others.
    int group[kMaxSeqs] = {0, 1, 2, 3};
    int next_group = kMaxSeqs;
    bool swa_unknown[kMaxSeqs] = {};  // iswa: pos_min and the outputs no longer predicted
  };
  struct Saved {
    bool used = false;
    bool whole = false;
    Memory mem;  // whole: everything; a sequence: its cells (seqs = bit 0) and recurrent state in recr[0]
    StateForm form = StateForm::kBuffer;
    std::vector<int> tokens;  // a file's tokens (Prompt)
    int device_seq = -1;      // kDevice: the sequence whose device copy the state reads (the context's per-sequence set)
  };


  int RawPosMin(int seq) const;
  void Unshare(int seq) { mem_.group[seq] = mem_.next_group++; }  // PosMin from the model's cells, whatever the cache reuses
  int Stream(int seq) const { return params_.kv_unified ? 0 : seq; }
  int CellsIn(int stream) const;
  std::vector<std::pair<int, int>> Visible(int seq, int pos) const;

  ContextParams params_;
  Memory mem_;
  Saved saved_[kStateSlots];
};

}  // namespace lifeline::llama
