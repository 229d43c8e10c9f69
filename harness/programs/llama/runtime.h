// What the llama-runtime executor drives: one context of a runtime with llama.h's memory API. The upstream
// implementation is upstream/llama_runtime.h (llama.cpp as shipped, on the tiny models of llama_models.h).
#pragma once

#include <cstddef>
#include <cstdint>
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
  // llama_decode's return; `auto_positions`: the batch without positions (llama_batch.pos NULL).
  virtual int Decode(const std::vector<Token>& batch, bool auto_positions) = 0;
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
  virtual std::vector<uint8_t> SaveSeq(int seq, std::string* error) = 0;
  virtual size_t LoadSeq(const std::vector<uint8_t>& state, int seq) = 0;  // llama_state_seq_set_data's return
  virtual std::vector<uint8_t> SaveAll(std::string* error) = 0;
  virtual bool LoadAll(const std::vector<uint8_t>& state) = 0;
  virtual void SetThreads(int n) = 0;
  // Whether the context's abort callback (llama_set_abort_callback) answers true: from the next graph node on.
  virtual void SetAbort(bool abort) = 0;
  // The logits of every token of a fresh context that decodes `history` ((token, pos), in order) on one
  // sequence from an empty memory, with this context's model, cache types and flash attention.
  virtual std::vector<std::vector<float>> Fresh(const std::vector<std::pair<int, int>>& history) = 0;
};

}  // namespace lifeline::llama
