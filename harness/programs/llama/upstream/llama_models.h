// The tiny models the llama-runtime programs run, one per memory kind of llama.cpp (format.h ModelKind),
// built in-process from GGUF metadata through llama.h's llama_model_init_from_user (as upstream's
// tests/test-llama-archs.cpp does), never downloaded: 2 layers, n_embd 64, 2 heads of 32 (1 KV head), a
// vocabulary of 64 tokens without a tokenizer ("no_vocab"), F32 weights drawn from a hash of each tensor's
// name and index. Each is built once per process, on first use, and kept. A llama.cpp without
// llama_model_init_from_user (LIFELINE_LLAMA_MODEL_FILE) loads the same metadata and the tensors its
// architectures require, with the same values, from a GGUF file written and removed in a private temporary
// folder (llama_models.cc: the optional tensors init_from_user also creates are not in it).
#pragma once

#include <string>

#include "harness/programs/llama/format.h"

struct llama_model;

namespace lifeline::llama {

// The model of `kind`, or nullptr with why in `error` (the tree's llama.cpp refused its metadata).
llama_model* TinyModel(ModelKind kind, std::string* error);
// The parameters and bytes of the weights the build set (llama_model_n_params counts only what a file loads).
void TinyModelSize(ModelKind kind, unsigned long long* params, unsigned long long* bytes);
// Frees every model built (at the process's exit: upstream/llama_runtime.cc).
void FreeTinyModels();
// A new private folder under $TMPDIR (else /tmp), lifeline-llama-XXXXXX: its path, or "" with why in `error`.
// For the model files here and the session files of upstream/llama_runtime.cc.
std::string MakePrivateDir(std::string* error);

}  // namespace lifeline::llama
