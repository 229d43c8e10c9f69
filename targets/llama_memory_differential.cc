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
// Campaigns per memory kind: LIFELINE_LLAMA_MODEL=<llama|gemma2|mamba|jamba> makes every mutated input a program on
// that model (the custom mutator below sets the input's last byte, the decoder's first draw: the model is that
// byte mod 4), so a job explores one kind while every input it keeps or crashes on decodes to the same program
// without the variable. (Returning -1 from LLVMFuzzerTestOneInput does not keep such inputs out with this
// toolchain's libFuzzer: a 20-s job kept 374 of 642 inputs on other models, measured 2026-12-07.)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "core/check.h"
#include "core/guards.h"
#include "harness/programs/common/libfuzzer_program.h"
#include "harness/programs/llama/codec.h"
#include "harness/programs/llama/executor.h"
#include "harness/programs/llama/upstream/llama_runtime.h"

namespace {

// The model kind LIFELINE_LLAMA_MODEL names, read once; an unknown name stops the process (status 2) with the
// names it knows: a typo must not fuzz every kind instead.
std::optional<lifeline::llama::ModelKind> OnlyModel() {
  static const std::optional<lifeline::llama::ModelKind> only = [] {
    std::optional<lifeline::llama::ModelKind> out;
    const char* env = std::getenv("LIFELINE_LLAMA_MODEL");
    if (env == nullptr || *env == '\0') return out;
    std::string known;
    for (int k = 0; k <= static_cast<int>(lifeline::llama::ModelKind::kMaxValue); ++k) {
      if (std::strcmp(env, lifeline::llama::kModelNames[k]) == 0) out = static_cast<lifeline::llama::ModelKind>(k);
      known += std::string(k ? ", " : "") + lifeline::llama::kModelNames[k];
    }
    if (!out) {
      std::fprintf(stderr, "lifeline: unknown model '%s' in LIFELINE_LLAMA_MODEL; known models: %s\n", env,
                   known.c_str());
      std::exit(2);
    }
    return out;
  }();
  return only;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lifeline::BeginGuardedInput();
  const lifeline::llama::Program program = lifeline::llama::Decode(data, size);

  std::string error;
  auto rt = lifeline::llama::MakeLlamaRuntime(program.params, &error);
  LIFELINE_CHECK(rt != nullptr, "context oracle: " + error + " (" + lifeline::llama::Describe(program.params) + ")");
  lifeline::llama::Execute(program, *rt);
  return 0;
}

// libFuzzer's own mutations, then (LIFELINE_LLAMA_MODEL) the model byte. LLVMFuzzerMutate is weak: the lanes link
// this file without libFuzzer's driver too, where nothing calls the mutator.
static_assert(static_cast<int>(lifeline::llama::ModelKind::kMaxValue) == 3, "the model is the last byte mod 4");
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) __attribute__((weak));
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int /*seed*/) {
  size = LLVMFuzzerMutate(data, size, max_size);
  if (const std::optional<lifeline::llama::ModelKind> only = OnlyModel(); only && size > 0)
    data[size - 1] = static_cast<uint8_t>((data[size - 1] & ~3u) | static_cast<unsigned>(*only));
  return size;
}

LIFELINE_TARGET_CODEC(lifeline::llama::MakeCodec())
LIFELINE_LIBFUZZER_PROGRAM_VERBS()
