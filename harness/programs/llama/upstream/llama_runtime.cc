#include "harness/programs/llama/upstream/llama_runtime.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "core/check.h"
#include "core/guards.h"
#include "harness/programs/llama/upstream/llama_models.h"
#include "llama.h"

namespace lifeline::llama {
namespace {

llama_context_params ParamsOf(const ContextParams& p, bool fresh) {
  llama_context_params c = llama_context_default_params();
  c.n_seq_max = fresh ? 1 : static_cast<uint32_t>(p.n_seq_max);
  c.kv_unified = fresh ? true : p.kv_unified;
  c.n_ctx = c.kv_unified ? 256 : 256 * c.n_seq_max;  // model.h kCellsPerStream per stream
  c.n_batch = fresh ? 256 : static_cast<uint32_t>(p.n_batch);
  c.n_ubatch = fresh ? 256 : static_cast<uint32_t>(p.n_ubatch);
  c.flash_attn_type = p.flash_attn == FlashAttn::kOn    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                      : p.flash_attn == FlashAttn::kOff ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                        : LLAMA_FLASH_ATTN_TYPE_AUTO;
  c.type_k = p.type_k == CacheType::kQ8_0 ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
  c.type_v = p.type_v == CacheType::kQ8_0 ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
  c.n_threads = c.n_threads_batch = fresh ? 1 : p.n_threads;
  c.swa_full = p.swa_full;
  c.no_perf = true;
  // llama_init_from_model reserves an output per sequence (output_reserve(n_seq_max)) against a limit of n_batch
  // outputs and asserts instead of refusing when n_seq_max > n_batch. The workaround: room for n_seq_max outputs.
  // A llama.h without n_outputs_max (cmake/LifelineLlama.cmake: LIFELINE_LLAMA_NO_N_OUTPUTS_MAX: b8179 and
  // the older trees measured) has no such limit: its output buffer takes max(n_outputs, n_seq_max).
#if !LIFELINE_LLAMA_NO_N_OUTPUTS_MAX
  if (!fresh && c.n_seq_max > c.n_batch &&
      GuardHolds(Guard::kLlamaContextSeqMaxOverBatchAbort, [&] {
        return "n_seq_max " + std::to_string(c.n_seq_max) + " > n_batch " + std::to_string(c.n_batch) +
               ": n_outputs_max set to n_seq_max";
      })) {
    c.n_outputs_max = c.n_seq_max;
  }
#endif
  return c;
}

// The fresh contexts of the differential oracle, one per (model, type_k, type_v, flash attention), kept for the
// process and freed at its exit with the models (before LeakSanitizer's check, which runs after every handler
// registered later than its own), so that a leak inside llama_free or llama_model_free is still reported.
std::map<std::tuple<int, int, int, int>, llama_context*>* fresh_contexts = nullptr;

// The programs' contexts, kept across inputs with the same parameters (a server's slots live as long): making
// one cost more than the decodes of an average program (a scheduler, its 15 MB split context zeroed, the KV
// buffers), and tests nothing a reused one does not, since llama_init_from_model's path is the same each time.
// A context comes back with llama_memory_clear(data) and is checked empty before its next program: a reused
// context must be one a fresh one cannot be told apart from (llama.h: llama_memory_clear clears the memory
// contents). The least recently used beyond kPooled is freed.
constexpr size_t kPooled = 8;
struct Pooled {
  std::string key;  // Describe(ContextParams)
  llama_context* ctx;
};
std::vector<Pooled>* pooled_contexts = nullptr;  // most recently returned last

// The session files of the state ops: one per slot, in a directory of the program's own, made on its first file op
// and removed with its files when the program's runtime is destroyed (RemoveStateDir), so that parallel jobs never
// share one and a process that ends without its exit handlers (a crash, a death test's child) leaves at most the
// files of the program it was running. Only the program's thread makes and removes them.
std::string* state_dir = nullptr;

std::string SlotFile(int slot) {
  if (state_dir == nullptr) {
    std::string error;
    state_dir = new std::string(MakePrivateDir(&error));
    LIFELINE_PRECONDITION(!state_dir->empty(), "llama runtime: no folder for session files: " + error);
  }
  return *state_dir + "/slot" + std::to_string(slot) + ".session";
}

void RemoveStateDir() {
  if (state_dir == nullptr) return;
  for (int slot = 0; slot < kStateSlots; ++slot) std::remove(SlotFile(slot).c_str());
  rmdir(state_dir->c_str());
  delete state_dir;
  state_dir = nullptr;
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void FreeAtExit() {
  RemoveStateDir();
  if (fresh_contexts != nullptr) {
    for (auto& [key, ctx] : *fresh_contexts) llama_free(ctx);
    delete fresh_contexts;
    fresh_contexts = nullptr;
  }
  if (pooled_contexts != nullptr) {
    for (Pooled& p : *pooled_contexts) llama_free(p.ctx);
    delete pooled_contexts;
    pooled_contexts = nullptr;
  }
  FreeTinyModels();
  llama_backend_free();
}

void Quiet(ggml_log_level, const char*, void*) {}

void InitOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llama_log_set(Quiet, nullptr);
    llama_backend_init();
    std::atexit(FreeAtExit);
  });
}

llama_context* FreshContext(const ContextParams& p) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (fresh_contexts == nullptr) fresh_contexts = new std::map<std::tuple<int, int, int, int>, llama_context*>();
  const auto key = std::make_tuple(static_cast<int>(p.model), static_cast<int>(p.type_k),
                                   static_cast<int>(p.type_v), static_cast<int>(p.flash_attn));
  auto it = fresh_contexts->find(key);
  if (it != fresh_contexts->end()) return it->second;
  std::string error;
  llama_model* model = TinyModel(p.model, &error);
  llama_context* ctx = model ? llama_init_from_model(model, ParamsOf(p, true)) : nullptr;
  (*fresh_contexts)[key] = ctx;
  return ctx;
}

void Return(const std::string& key, llama_context* ctx);

class LlamaRuntime : public Runtime {
 public:
  LlamaRuntime(const ContextParams& p, llama_model* model, llama_context* ctx)
      : p_(p), model_(model), ctx_(ctx), mem_(llama_get_memory(ctx)) {
    llama_set_abort_callback(ctx_, &AbortNow, &abort_);
  }
  ~LlamaRuntime() override {
    llama_set_abort_callback(ctx_, nullptr, nullptr);
    RemoveStateDir();  // a program's session files end with it (a later program saves its own first)
    Return(Describe(p_), ctx_);
  }

  int Decode(const std::vector<Token>& batch, BatchForm form) override {
    if (form == BatchForm::kGetOne) {
      std::vector<llama_token> tokens;
      for (const Token& t : batch) tokens.push_back(t.token);
      return llama_decode(ctx_, llama_batch_get_one(tokens.data(), static_cast<int32_t>(tokens.size())));
    }
    llama_batch b = llama_batch_init(static_cast<int32_t>(batch.size()), 0, kMaxSeqs);
    for (size_t i = 0; i < batch.size(); ++i) {
      b.token[i] = batch[i].token;
      b.pos[i] = batch[i].pos;
      b.n_seq_id[i] = 0;
      for (int s = 0; s < kMaxSeqs; ++s)
        if ((batch[i].seqs >> s) & 1) b.seq_id[i][b.n_seq_id[i]++] = s;
      if (batch[i].seqs == 0) b.seq_id[i][b.n_seq_id[i]++] = -1;
      b.logits[i] = batch[i].logits;
    }
    b.n_tokens = static_cast<int32_t>(batch.size());
    llama_pos* const pos = b.pos;
    if (form == BatchForm::kNoPositions) b.pos = nullptr;
    const int ret = llama_decode(ctx_, b);
    b.pos = pos;
    llama_batch_free(b);
    return ret;
  }
  const float* Logits(int i) override { return llama_get_logits_ith(ctx_, i); }
  int n_vocab() const override { return llama_vocab_n_tokens(llama_model_get_vocab(model_)); }
  bool SeqRm(int seq, int p0, int p1) override { return llama_memory_seq_rm(mem_, seq, p0, p1); }
  void SeqCp(int src, int dst, int p0, int p1) override { llama_memory_seq_cp(mem_, src, dst, p0, p1); }
  void SeqKeep(int seq) override { llama_memory_seq_keep(mem_, seq); }
  void SeqAdd(int seq, int p0, int p1, int d) override { llama_memory_seq_add(mem_, seq, p0, p1, d); }
  void SeqDiv(int seq, int p0, int p1, int d) override { llama_memory_seq_div(mem_, seq, p0, p1, d); }
  void Clear(bool data) override { llama_memory_clear(mem_, data); }
  int PosMin(int seq) override { return llama_memory_seq_pos_min(mem_, seq); }
  int PosMax(int seq) override { return llama_memory_seq_pos_max(mem_, seq); }

  std::vector<uint8_t> SaveSeq(int seq, bool device, std::string* error) override {
    device = device && HasDeviceStates();
    std::vector<uint8_t> out(device ? llama_state_seq_get_size_ext(ctx_, seq, kOnDevice)
                                    : llama_state_seq_get_size(ctx_, seq));
    const size_t n = device ? llama_state_seq_get_data_ext(ctx_, out.data(), out.size(), seq, kOnDevice)
                            : llama_state_seq_get_data(ctx_, out.data(), out.size(), seq);
    if (n != out.size())
      *error = std::string(device ? "llama_state_seq_get_data_ext(ON_DEVICE)" : "llama_state_seq_get_data") +
               " wrote " + std::to_string(n) + " bytes, its get_size said " + std::to_string(out.size());
    return out;
  }
  size_t LoadSeq(const std::vector<uint8_t>& state, int seq, bool device) override {
    if (device && HasDeviceStates())
      return llama_state_seq_set_data_ext(ctx_, state.data(), state.size(), seq, kOnDevice);
    return llama_state_seq_set_data(ctx_, state.data(), state.size(), seq);
  }
  // LLAMA_STATE_SEQ_FLAGS_ON_DEVICE is a macro of llama.h: a tree without it (b8179 and older) has no device form.
#ifdef LLAMA_STATE_SEQ_FLAGS_ON_DEVICE
  static constexpr llama_state_seq_flags kOnDevice = LLAMA_STATE_SEQ_FLAGS_ON_DEVICE;
  bool HasDeviceStates() const override { return true; }
#else
  static constexpr uint32_t kOnDevice = 0;
  bool HasDeviceStates() const override { return false; }
#endif
  std::vector<uint8_t> SaveAll(std::string* error) override {
    std::vector<uint8_t> out(llama_state_get_size(ctx_));
    const size_t n = llama_state_get_data(ctx_, out.data(), out.size());
    if (n != out.size())
      *error = "llama_state_get_data wrote " + std::to_string(n) + " bytes, llama_state_get_size said " +
               std::to_string(out.size());
    return out;
  }
  bool LoadAll(const std::vector<uint8_t>& state) override {
    return llama_state_set_data(ctx_, state.data(), state.size()) == state.size();
  }
  size_t SaveSeqFile(int slot, int seq, const std::vector<int>& tokens, std::vector<uint8_t>* file) override {
    const std::string path = SlotFile(slot);
    const std::vector<llama_token> t(tokens.begin(), tokens.end());
    const size_t ret = llama_state_seq_save_file(ctx_, path.c_str(), seq, t.data(), t.size());
    *file = ReadFile(path);
    return ret;
  }
  size_t SaveAllFile(int slot, const std::vector<int>& tokens, std::vector<uint8_t>* file) override {
    const std::string path = SlotFile(slot);
    const std::vector<llama_token> t(tokens.begin(), tokens.end());
    const bool ok = llama_state_save_file(ctx_, path.c_str(), t.data(), t.size());
    *file = ReadFile(path);
    return ok ? 1 : 0;
  }
  FileLoad LoadSeqFile(int slot, int seq, TokensOut mode, size_t n_saved) override {
#ifdef LIFELINE_LLAMA_NO_LOAD_FILE_COUNT_ONLY
    if (mode == TokensOut::kCountOnly) {
      FileLoad none;
      none.made = false;
      return none;
    }
#endif
    return LoadFile(mode, n_saved, [&](llama_token* out, size_t cap, size_t* count) {
      return llama_state_seq_load_file(ctx_, SlotFile(slot).c_str(), seq, out, cap, count);
    });
  }
  FileLoad LoadAllFile(int slot, TokensOut mode, size_t n_saved) override {
    return LoadFile(mode, n_saved, [&](llama_token* out, size_t cap, size_t* count) -> size_t {
      return llama_state_load_file(ctx_, SlotFile(slot).c_str(), out, cap, count) ? 1 : 0;
    });
  }
  void FlipFileByte(int slot, size_t from_end) override {
    std::fstream f(SlotFile(slot), std::ios::binary | std::ios::in | std::ios::out);
    f.seekg(0, std::ios::end);
    const std::streamoff at = static_cast<std::streamoff>(f.tellg()) - static_cast<std::streamoff>(from_end);
    char c = 0;
    f.seekg(at);
    f.get(c);
    f.seekp(at);
    f.put(static_cast<char>(c ^ 0x40));
  }
  std::vector<float> Beside(const std::vector<int>& tokens, const std::function<void()>& meanwhile,
                            std::string* error) override {
    std::vector<float> out;
    std::promise<void> decoded;
    std::thread side([&] {
      llama_context_params c = ParamsOf(p_, false);
      c.n_batch = std::max<uint32_t>(c.n_batch, static_cast<uint32_t>(tokens.size()));  // one call
      llama_context* ctx = llama_init_from_model(model_, c);
      if (ctx == nullptr) {
        *error = "llama_init_from_model returned NULL";
        decoded.set_value();
        return;
      }
      std::vector<llama_token> t(tokens.begin(), tokens.end());
      llama_batch b = llama_batch_init(static_cast<int32_t>(t.size()), 0, 1);
      for (size_t i = 0; i < t.size(); ++i) {
        b.token[i] = t[i];
        b.pos[i] = static_cast<llama_pos>(i);
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i + 1 == t.size();
      }
      b.n_tokens = static_cast<int32_t>(t.size());
      const int ret = llama_decode(ctx, b);
      llama_batch_free(b);
      if (ret != 0) {
        *error = "llama_decode returned " + std::to_string(ret);
      } else {
        const float* l = llama_get_logits_ith(ctx, -1);
        out.assign(l, l + n_vocab());
      }
      decoded.set_value();
      llama_free(ctx);  // while the program's context decodes
    });
    decoded.get_future().wait();
    meanwhile();
    side.join();
    return out;
  }
  void SetThreads(int n) override { llama_set_n_threads(ctx_, n, n); }
  void SetAbort(bool abort) override { abort_.store(abort); }

  // The fresh context decodes the history in calls of its n_batch (256): an attention history fits one (a stream
  // holds 256 cells), a recurrent state's may be longer.
  std::vector<std::vector<float>> Fresh(const std::vector<std::pair<int, int>>& history) override {
    std::vector<std::vector<float>> out;
    llama_context* fresh = FreshContext(p_);
    if (fresh == nullptr) return out;
    llama_memory_clear(llama_get_memory(fresh), true);
    const int nv = n_vocab();
    constexpr size_t kCall = 256;
    llama_batch b = llama_batch_init(static_cast<int32_t>(kCall), 0, 1);
    for (size_t at = 0; at < history.size(); at += kCall) {
      const size_t n = std::min(kCall, history.size() - at);
      for (size_t i = 0; i < n; ++i) {
        b.token[i] = history[at + i].first;
        b.pos[i] = history[at + i].second;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = true;
      }
      b.n_tokens = static_cast<int32_t>(n);
      if (llama_decode(fresh, b) != 0) break;
      for (size_t i = 0; i < n; ++i) {
        const float* l = llama_get_logits_ith(fresh, static_cast<int32_t>(i));
        out.emplace_back(l, l + nv);
      }
    }
    llama_batch_free(b);
    return out;
  }

 private:
  ContextParams p_;
  llama_model* model_;
  llama_context* ctx_;
  llama_memory_t mem_;
  std::atomic<bool> abort_{false};  // read by the CPU backend's first compute thread, before each graph node

  static bool AbortNow(void* data) { return static_cast<std::atomic<bool>*>(data)->load(); }

  // tokens_out never a null pointer but for kCountOnly (an empty buffer's data() may be one, which would ask for
  // the count alone): room for one more than the capacity passed.
  template <typename Call>
  static FileLoad LoadFile(TokensOut mode, size_t n_saved, Call&& call) {
    const size_t cap = mode == TokensOut::kShort && n_saved > 0 ? n_saved - 1 : n_saved;
    std::vector<llama_token> out(cap + 1, -1);
    FileLoad r;
    r.ret = call(mode == TokensOut::kCountOnly ? nullptr : out.data(), cap, &r.count);
    if (mode != TokensOut::kCountOnly) r.tokens.assign(out.begin(), out.begin() + std::min(r.count, cap));
    return r;
  }
};

void Return(const std::string& key, llama_context* ctx) {
  llama_memory_clear(llama_get_memory(ctx), true);
  if (pooled_contexts == nullptr) pooled_contexts = new std::vector<Pooled>();
  pooled_contexts->push_back({key, ctx});
  if (pooled_contexts->size() > kPooled) {
    llama_free(pooled_contexts->front().ctx);
    pooled_contexts->erase(pooled_contexts->begin());
  }
}

// A pooled context with these parameters, or nullptr.
llama_context* Take(const std::string& key) {
  if (pooled_contexts == nullptr) return nullptr;
  for (auto it = pooled_contexts->rbegin(); it != pooled_contexts->rend(); ++it) {
    if (it->key != key) continue;
    llama_context* ctx = it->ctx;
    pooled_contexts->erase(std::next(it).base());
    return ctx;
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<Runtime> MakeLlamaRuntime(const ContextParams& params, std::string* error) {
  InitOnce();
  llama_model* model = TinyModel(params.model, error);
  if (model == nullptr) return nullptr;
  const std::string key = Describe(params);
  if (llama_context* ctx = Take(key)) {
    // What the last program changed beside the memory: the thread counts (kSetThreads).
    llama_set_n_threads(ctx, params.n_threads, params.n_threads);
    llama_memory_t mem = llama_get_memory(ctx);
    for (int s = 0; s < params.n_seq_max; ++s) {
      if (llama_memory_seq_pos_max(mem, s) == -1) continue;
      *error = "a context reused after llama_memory_clear(data=true) still holds sequence " + std::to_string(s) +
               " up to position " + std::to_string(llama_memory_seq_pos_max(mem, s));
      llama_free(ctx);
      return nullptr;
    }
    return std::make_unique<LlamaRuntime>(params, model, ctx);
  }
  llama_context* ctx = llama_init_from_model(model, ParamsOf(params, false));
  if (ctx == nullptr) {
    *error = std::string("llama_init_from_model refused a context of the tiny ") +
             kModelNames[static_cast<int>(params.model)] + " model";
    return nullptr;
  }
  return std::make_unique<LlamaRuntime>(params, model, ctx);
}

}  // namespace lifeline::llama
