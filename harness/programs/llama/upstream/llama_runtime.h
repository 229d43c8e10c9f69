// llama.cpp's runtime as the llama-runtime executor drives it (runtime.h): one llama_context on a tiny model
// (llama_models.h) with the program's parameters, its memory through llama.h's llama_memory_* API, its state
// through llama_state_*; the fresh contexts of the differential oracle are kept per (model, cache types, flash
// attention) for the process and cleared before each use.
#pragma once

#include <memory>
#include <string>

#include "harness/programs/llama/runtime.h"

namespace lifeline::llama {

// nullptr with why in `error` when the tree's llama.cpp cannot make the model or the context.
std::unique_ptr<Runtime> MakeLlamaRuntime(const ContextParams& params, std::string* error);

}  // namespace lifeline::llama
