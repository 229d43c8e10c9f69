// The llama-runtime programs as JSON (harness/programs/common/codec.h): what `lifeline reduce` edits and
// `lifeline export` (cli/lifeline/exporters/llama_c.py) writes as C on llama.h.
//
//   {"format": "llama", "arch": "llama", "n_seq_max": 2, "kv_unified": false, "n_ubatch": 8, "n_batch": 16,
//    "flash_attn": "auto", "type_k": "f16", "type_v": "f16", "threads": 1,
//    "ops": [{"id": 0, "op": "decode", "seqs": [0, 1], "steps": 4, ..., "model": {"expect": 0, ...}}, ...]}
//
// The header is the context's parameters (format.h ContextParams; "arch" is the tiny model's kind, kModelNames).
// Operands by op (the table kOperands in codec.cc, one entry per OpKind):
//   decode: seqs (the sequence ids of the set), steps, shared, all_logits, tokens (the token seed), flaw
//           ("none", "gap", "behind", "bad-token", ...: kFlawNames, one name per Flaw);
//   seq-rm: seq (-1: every sequence), p0, p1; seq-cp: seq, dst, p0, p1; seq-keep: seq;
//   seq-add, seq-div: seq, p0, p1, delta; clear: data; save-seq, load-seq: seq, slot; save-all, load-all: slot;
//   set-threads: threads.
// No op names another op's object (sequences and slots are numbers), so ops delete freely.
// "model" (output only) holds the prediction: "expect" (decode: llama_decode's return, 0, 1 or -1; seq-rm:
// its bool; load-seq, load-all: "restored" or "refused"), and "state": the memory kind and whether the
// sequence the op touches holds tokens, as the model has it before the op (`<memory>/<empty|holding>`; memory:
// kv, kv-iswa, recurrent, hybrid; the sequence: decode's set, seq-rm's, seq-cp's source, seq-keep's,
// seq-add/div's, save-seq's, load-seq's destination; seq-rm of -1 and the ops of no sequence (clear,
// save-all, load-all, set-threads): any sequence). harness/programs/llama/states.txt lists the pairs.
#pragma once

#include <memory>

#include "harness/programs/common/codec.h"

namespace lifeline::llama {

std::unique_ptr<programs::Codec> MakeCodec();

}  // namespace lifeline::llama
