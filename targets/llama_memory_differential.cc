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
// Campaigns per memory kind: LIFELINE_LLAMA_MODEL=<llama|gemma2|mamba|jamba> decodes every input as a program on
// that model (the input's last byte, the decoder's first draw, read as that kind: the model is that byte mod 4).
// The inputs and crashes of such a job replay with the same variable; without it they decode to the model their
// last byte names. (Two ways that keep inputs self-describing failed here, 2026-12-07: returning -1 kept 374 of
// 642 inputs of other kinds in a 20-s job with this toolchain's libFuzzer, and a custom mutator that sets the byte
// turns off libFuzzer's length control for every job of the target: "lim: 4096" from the first inputs, where a job
// of this target starts at 45 bytes and grows.)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

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

static_assert(static_cast<int>(lifeline::llama::ModelKind::kMaxValue) == 3, "the model is the last byte mod 4");

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lifeline::BeginGuardedInput();
  std::vector<uint8_t> forced;
  if (const std::optional<lifeline::llama::ModelKind> only = OnlyModel(); only && size > 0) {
    forced.assign(data, data + size);
    forced.back() = static_cast<uint8_t>((forced.back() & ~3u) | static_cast<unsigned>(*only));
    data = forced.data();
  }
  const lifeline::llama::Program program = lifeline::llama::Decode(data, size);

  std::string error;
  auto rt = lifeline::llama::MakeLlamaRuntime(program.params, &error);
  LIFELINE_CHECK(rt != nullptr, "context oracle: " + error + " (" + lifeline::llama::Describe(program.params) + ")");
  lifeline::llama::Execute(program, *rt);
  return 0;
}

LIFELINE_TARGET_CODEC(lifeline::llama::MakeCodec())
LIFELINE_LIBFUZZER_PROGRAM_VERBS()
