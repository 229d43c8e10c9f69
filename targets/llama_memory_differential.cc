// llama_memory_differential: llama.cpp's runtime as its users drive it — one context with the program's
// parameters on a tiny model of one memory kind (KV cache, sliding-window KV cache, recurrent, hybrid), batches
// on any sequences, the memory API, state save and restore — against the memory's contract.
//
// Property: after any history of operations,
// 1. every return the model predicts is what llama.h returned: llama_decode's code (0, 1 for no memory slot,
//    -1 for a batch it must refuse), llama_memory_seq_rm's bool, llama_state_seq_set_data's size (the saved
//    size, or 0 where the memory has no room), llama_state_set_data on the context's own state;
// 2. llama_memory_seq_pos_min/max of every sequence are what the model's cells say;
// 3. the differential oracle: the logits the context returns for a token equal, within Tolerance() of
//    harness/programs/llama/executor.h, the logits of a fresh context that decodes that sequence's surviving
//    tokens at their positions from an empty memory, wherever the model says the memory holds what such a decode
//    makes (harness/programs/llama/model.h Reference: no cell made beside tokens since removed or moved
//    relative to it);
// plus ASan/UBSan and TSan on llama.cpp and ggml, and LeakSanitizer at exit.
// Program: harness/programs/llama/; implementation: harness/programs/llama/upstream/llama_runtime.h.
// Out of scope: what the tiny models generate (random weights); the sampler, tokenizer and GGUF loading.
// Replay: build/<lane>/targets/llama_memory_differential FILE|DIR
// Program as JSON: build/fuzz/targets/llama_memory_differential --program decode FILE | encode JSON OUT
// (harness/programs/llama/codec.h; the fuzz lane builds the codec, libfuzzer_program.h serves it there).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/check.h"
#include "core/guards.h"
#include "harness/programs/common/libfuzzer_program.h"
#include "harness/programs/llama/codec.h"
#include "harness/programs/llama/executor.h"
#include "harness/programs/llama/upstream/llama_runtime.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lifeline::BeginGuardedInput();
  const lifeline::llama::Program program = lifeline::llama::Decode(data, size);
  std::string error;
  auto rt = lifeline::llama::MakeLlamaRuntime(program.params, &error);
  LIFELINE_CHECK(rt != nullptr, "context oracle: " + error + " (" + lifeline::llama::Describe(program.params) + ")");
  lifeline::llama::Execute(program, *rt);
  return 0;
}

LIFELINE_TARGET_CODEC(lifeline::llama::MakeCodec())
LIFELINE_LIBFUZZER_PROGRAM_VERBS()
