#include "harness/programs/llama/upstream/llama_models.h"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "gguf.h"
#include "llama.h"

namespace lifeline::llama {
namespace {

constexpr uint32_t kEmbd = 64, kHeads = 2, kHeadsKv = 1, kFf = 128, kLayers = 2;

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Weights in [-0.25, 0.25) from the tensor's name and the element's index; Mamba's A (ssm_a) negative, as
// its state must decay.
struct Counts {
  unsigned long long params = 0, bytes = 0;
};

void SetTensorData(ggml_tensor* t, void* ud) {
  Counts* counts = static_cast<Counts*>(ud);
  counts->params += static_cast<unsigned long long>(ggml_nelements(t));
  counts->bytes += ggml_nbytes(t);
  uint64_t h = 1469598103934665603ull;
  for (const char* c = t->name; *c; ++c) h = (h ^ static_cast<uint8_t>(*c)) * 1099511628211ull;
  const bool negative = std::strstr(t->name, "ssm_a") != nullptr;
  const int64_t n = ggml_nelements(t);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const float u = static_cast<float>(Mix(h + static_cast<uint64_t>(i)) >> 40) / static_cast<float>(1 << 24);
    v[i] = negative ? -(0.1f + u) : (u - 0.5f) * 0.5f;
  }
  if (t->type == GGML_TYPE_F32) {
    ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
  } else {
    std::vector<ggml_fp16_t> h16(n);
    for (int64_t i = 0; i < n; ++i) h16[i] = ggml_fp32_to_fp16(v[i]);
    ggml_backend_tensor_set(t, h16.data(), 0, ggml_nbytes(t));
  }
}

void SetU32(gguf_context* g, const std::string& arch, const char* key, uint32_t v) {
  gguf_set_val_u32(g, (arch + key).c_str(), v);
}

llama_model* Build(ModelKind kind, std::string* error, Counts* counts) {
  const std::string arch = kModelNames[static_cast<int>(kind)];
  gguf_context* g = gguf_init_empty();
  gguf_set_val_str(g, "general.architecture", arch.c_str());
  gguf_set_val_str(g, "tokenizer.ggml.model", "no_vocab");
  SetU32(g, arch, ".vocab_size", kVocab);
  SetU32(g, arch, ".context_length", 4096);
  SetU32(g, arch, ".embedding_length", kEmbd);
  SetU32(g, arch, ".block_count", kLayers);
  SetU32(g, arch, ".feed_forward_length", kFf);
  gguf_set_val_f32(g, (arch + ".attention.layer_norm_rms_epsilon").c_str(), 1e-5f);
  if (kind == ModelKind::kJamba) {
    // Layer 0 attention, layer 1 recurrent: llama_model_jamba marks a layer recurrent by head_count_kv == 0
    // (and takes the head size from layer 0's heads, as test-llama-archs.cpp lays it out).
    const uint32_t heads[kLayers] = {kHeads, 0}, kv[kLayers] = {kHeadsKv, 0};
    gguf_set_arr_data(g, (arch + ".attention.head_count").c_str(), GGUF_TYPE_UINT32, heads, kLayers);
    gguf_set_arr_data(g, (arch + ".attention.head_count_kv").c_str(), GGUF_TYPE_UINT32, kv, kLayers);
  } else if (kind != ModelKind::kMamba) {
    SetU32(g, arch, ".attention.head_count", kHeads);
    SetU32(g, arch, ".attention.head_count_kv", kHeadsKv);
  } else {
    SetU32(g, arch, ".attention.head_count", 0);
  }
  if (kind == ModelKind::kGemma2) SetU32(g, arch, ".attention.sliding_window", 8);  // model.h kSlidingWindow
  if (kind == ModelKind::kMamba || kind == ModelKind::kJamba) {
    SetU32(g, arch, ".ssm.conv_kernel", 4);
    SetU32(g, arch, ".ssm.inner_size", 2 * kEmbd);  // jamba: only an expansion factor of 2
    SetU32(g, arch, ".ssm.state_size", 16);
    SetU32(g, arch, ".ssm.time_step_rank", 4);
  }
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_init_from_user(g, SetTensorData, counts, mp);
  gguf_free(g);
  if (model == nullptr) *error = "llama_model_init_from_user refused the tiny " + arch + " model's metadata";
  return model;
}

}  // namespace

namespace {
std::mutex models_mu;
llama_model* models[static_cast<int>(ModelKind::kMaxValue) + 1] = {};
std::string errors[static_cast<int>(ModelKind::kMaxValue) + 1];
Counts counts[static_cast<int>(ModelKind::kMaxValue) + 1];
}  // namespace

llama_model* TinyModel(ModelKind kind, std::string* error) {
  std::lock_guard<std::mutex> lock(models_mu);
  const int k = static_cast<int>(kind);
  if (models[k] == nullptr && errors[k].empty()) models[k] = Build(kind, &errors[k], &counts[k]);
  if (models[k] == nullptr) *error = errors[k];
  return models[k];
}

void TinyModelSize(ModelKind kind, unsigned long long* params, unsigned long long* bytes) {
  std::lock_guard<std::mutex> lock(models_mu);
  *params = counts[static_cast<int>(kind)].params;
  *bytes = counts[static_cast<int>(kind)].bytes;
}

void FreeTinyModels() {
  std::lock_guard<std::mutex> lock(models_mu);
  for (llama_model*& m : models) {
    if (m != nullptr) llama_model_free(m);
    m = nullptr;
  }
}

}  // namespace lifeline::llama
