// What the llama-runtime executor drives: one context of a runtime with llama.h's memory API. The upstream
// implementation is upstream/llama_runtime.h (llama.cpp as shipped, on the tiny models of llama_models.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/programs/llama/format.h"

namespace lifeline::llama {

class Runtime {
 public:
  struct Token {
    int token;
    uint8_t seqs;  // 0: sequence -1
    int pos;
    bool logits;
  };
  virtual ~Runtime() = default;
  // How a batch goes to llama_decode: every field filled, without positions (llama_batch.pos NULL), or as
  // llama_batch_get_one makes it (the tokens alone: the Token's seqs and logits are not passed).
  enum class BatchForm { kFull, kNoPositions, kGetOne };
  virtual int Decode(const std::vector<Token>& batch, BatchForm form) = 0;  // llama_decode's return
  // A second context of this one's model and parameters, on a thread of its own: made, `tokens` decoded on its
  // sequence 0 from position 0 in one call, the last token's logits copied, then freed with llama_free while
  // `meanwhile` runs on the calling thread (started once the side's decode has returned). The logits, or an
  // error naming the call that failed.
  virtual std::vector<float> Beside(const std::vector<int>& tokens, const std::function<void()>& meanwhile,
                                    std::string* error) = 0;
  virtual const float* Logits(int batch_index) = 0;         // llama_get_logits_ith; nullptr when it has none
  virtual int n_vocab() const = 0;
  virtual bool SeqRm(int seq, int p0, int p1) = 0;
  virtual void SeqCp(int src, int dst, int p0, int p1) = 0;
  virtual void SeqKeep(int seq) = 0;
  virtual void SeqAdd(int seq, int p0, int p1, int delta) = 0;
  virtual void SeqDiv(int seq, int p0, int p1, int d) = 0;
  virtual void Clear(bool data) = 0;
  virtual int PosMin(int seq) = 0;
  virtual int PosMax(int seq) = 0;
  // A sequence's or the whole context's state: the bytes, or an error naming the call that disagreed
  // (get_size against get_data's length).
  // `device`: llama_state_seq_get_size_ext / get_data_ext / set_data_ext with LLAMA_STATE_SEQ_FLAGS_ON_DEVICE (the
  // tensor data stays in the context; the bytes are the rest). A tree without that flag makes the buffer form's
  // calls instead (HasDeviceStates).
  virtual std::vector<uint8_t> SaveSeq(int seq, bool device, std::string* error) = 0;
  virtual size_t LoadSeq(const std::vector<uint8_t>& state, int seq, bool device) = 0;  // set_data's return
  virtual bool HasDeviceStates() const = 0;
  virtual std::vector<uint8_t> SaveAll(std::string* error) = 0;
  virtual bool LoadAll(const std::vector<uint8_t>& state) = 0;
  // Session files, one per slot in a directory of the process's own: the save's return (llama_state_seq_save_file:
  // bytes; llama_state_save_file: 1 true, 0 false) and the file's bytes as written, read back.
  virtual size_t SaveSeqFile(int slot, int seq, const std::vector<int>& tokens, std::vector<uint8_t>* file) = 0;
  virtual size_t SaveAllFile(int slot, const std::vector<int>& tokens, std::vector<uint8_t>* file) = 0;
  struct FileLoad {
    bool made = true;   // false: the call is not made (tokens_out NULL where llama.h does not allow it)
    size_t ret = 0;     // llama_state_seq_load_file: bytes; llama_state_load_file: 1 true, 0 false
    size_t count = 0;   // *n_token_count_out (left 0 when the call does not set it)
    std::vector<int> tokens;  // tokens_out, as far as count says
  };
  // tokens_out with room for `n_saved` tokens, one less (kShort), or NULL (kCountOnly).
  virtual FileLoad LoadSeqFile(int slot, int seq, TokensOut mode, size_t n_saved) = 0;
  virtual FileLoad LoadAllFile(int slot, TokensOut mode, size_t n_saved) = 0;
  // The oracle's own test: a byte of the slot's file flipped, `from_end` bytes before its end.
  virtual void FlipFileByte(int slot, size_t from_end) = 0;
  virtual void SetThreads(int n) = 0;
  // Whether the context's abort callback (llama_set_abort_callback) answers true: from the next graph node on.
  virtual void SetAbort(bool abort) = 0;
  // The logits of every token of a fresh context that decodes `history` ((token, pos), in order) on one
  // sequence from an empty memory, with this context's model, cache types and flash attention.
  virtual std::vector<std::vector<float>> Fresh(const std::vector<std::pair<int, int>>& history) = 0;
};

}  // namespace lifeline::llama
