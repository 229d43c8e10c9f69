#include "harness/programs/llama/upstream/llama_models.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
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

// The values of tensor `t` (its name and shape), counted in `counts`.
std::vector<float> Values(const ggml_tensor* t, Counts* counts) {
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
  return v;
}

#if !LIFELINE_LLAMA_MODEL_FILE
void SetTensorData(ggml_tensor* t, void* ud) {
  const std::vector<float> v = Values(t, static_cast<Counts*>(ud));
  const int64_t n = ggml_nelements(t);
  if (t->type == GGML_TYPE_F32) {
    ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
  } else {
    std::vector<ggml_fp16_t> h16(n);
    for (int64_t i = 0; i < n; ++i) h16[i] = ggml_fp32_to_fp16(v[i]);
    ggml_backend_tensor_set(t, h16.data(), 0, ggml_nbytes(t));
  }
}
#else
// A tree without llama_model_init_from_user (cmake/LifelineLlama.cmake: LIFELINE_LLAMA_MODEL_FILE) loads the model
// from a GGUF file with the same metadata and, for each tensor the file holds, the same F32 values. The file holds
// the tensors that the four architectures' loaders require (llama.cpp 2025-09 to 2026-09 alike) and output.weight
// where they take one; init_from_user also creates every optional tensor a tree knows (biases, scales), so its
// models hold more weights than these and compute other values.
void AddTensors(ModelKind kind, ggml_context* ctx, gguf_context* g, Counts* counts) {
  constexpr int64_t kInner = 2 * kEmbd, kState = 16, kRank = 4, kConv = 4, kKv = kEmbd / kHeads * kHeadsKv;
  auto add = [&](const std::string& name, int64_t ne0, int64_t ne1) {
    ggml_tensor* t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ne0, ne1);
    ggml_set_name(t, name.c_str());
    const std::vector<float> v = Values(t, counts);
    std::memcpy(t->data, v.data(), ggml_nbytes(t));
    gguf_add_tensor(g, t);
  };
  add("token_embd.weight", kEmbd, kVocab);
  add("output_norm.weight", kEmbd, 1);
  if (kind != ModelKind::kGemma2) add("output.weight", kEmbd, kVocab);
  for (uint32_t i = 0; i < kLayers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    add(b + "attn_norm.weight", kEmbd, 1);
    if (kind == ModelKind::kMamba || (kind == ModelKind::kJamba && i == 1)) {
      add(b + "ssm_in.weight", kEmbd, 2 * kInner);
      add(b + "ssm_conv1d.weight", kConv, kInner);
      add(b + "ssm_conv1d.bias", kInner, 1);
      add(b + "ssm_x.weight", kInner, kRank + 2 * kState);
      add(b + "ssm_dt.weight", kRank, kInner);
      add(b + "ssm_dt.bias", kInner, 1);
      add(b + "ssm_a", kState, kInner);
      add(b + "ssm_d", kInner, 1);
      add(b + "ssm_out.weight", kInner, kEmbd);
      if (kind == ModelKind::kJamba) {
        add(b + "ssm_dt_norm.weight", kRank, 1);
        add(b + "ssm_b_norm.weight", kState, 1);
        add(b + "ssm_c_norm.weight", kState, 1);
      }
    } else {
      add(b + "attn_q.weight", kEmbd, kEmbd);
      add(b + "attn_k.weight", kEmbd, kKv);
      add(b + "attn_v.weight", kEmbd, kKv);
      add(b + "attn_output.weight", kEmbd, kEmbd);
    }
    if (kind == ModelKind::kMamba) continue;
    if (kind == ModelKind::kGemma2) add(b + "post_attention_norm.weight", kEmbd, 1);
    add(b + "ffn_norm.weight", kEmbd, 1);
    add(b + "ffn_gate.weight", kEmbd, kFf);
    add(b + "ffn_up.weight", kEmbd, kFf);
    add(b + "ffn_down.weight", kFf, kEmbd);
    if (kind == ModelKind::kGemma2) add(b + "post_ffw_norm.weight", kEmbd, 1);
  }
}

// Writes the metadata and the tensors to a file in a private temporary folder, loads it, and removes both.
llama_model* LoadFromFile(ModelKind kind, gguf_context* g, llama_model_params mp, std::string* error,
                          Counts* counts) {
  ggml_init_params ip = {/*mem_size=*/4u << 20, /*mem_buffer=*/nullptr, /*no_alloc=*/false};
  ggml_context* ctx = ggml_init(ip);
  AddTensors(kind, ctx, g, counts);
  const std::string dir = MakePrivateDir(error);
  llama_model* model = nullptr;
  if (!dir.empty()) {
    const std::string path = dir + "/" + kModelNames[static_cast<int>(kind)] + ".gguf";
    if (!gguf_write_to_file(g, path.c_str(), /*only_meta=*/false)) {
      *error = "gguf_write_to_file(" + path + ") failed";
    } else {
      model = llama_model_load_from_file(path.c_str(), mp);  // mapped or read: either outlives the file's name
      if (model == nullptr) *error = "llama_model_load_from_file refused the tiny model's file " + path;
    }
    std::remove(path.c_str());
    rmdir(dir.c_str());
  }
  ggml_free(ctx);
  return model;
}
#endif

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
#if LIFELINE_LLAMA_MODEL_FILE
  llama_model* model = LoadFromFile(kind, g, mp, error, counts);
#else
  llama_model* model = llama_model_init_from_user(g, SetTensorData, counts, mp);
  if (model == nullptr) *error = "llama_model_init_from_user refused the tiny " + arch + " model's metadata";
#endif
  gguf_free(g);
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

std::string MakePrivateDir(std::string* error) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/lifeline-llama-XXXXXX";
  if (mkdtemp(dir.data()) != nullptr) return dir;
  *error = "mkdtemp(" + dir + ") failed: " + std::strerror(errno);
  return "";
}

void FreeTinyModels() {
  std::lock_guard<std::mutex> lock(models_mu);
  for (llama_model*& m : models) {
    if (m != nullptr) llama_model_free(m);
    m = nullptr;
  }
}

}  // namespace lifeline::llama
