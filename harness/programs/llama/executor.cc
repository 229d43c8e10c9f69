#include "harness/programs/llama/executor.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "core/check.h"
#include "core/guards.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/common/oracle.h"
#include "harness/programs/llama/model.h"

namespace lifeline::llama {

float Tolerance(const ContextParams& params) {
  // Justified in docs/upstream-llama.md, "Tolerance", with what the seeds measured: a fresh context splits the
  // history into other ubatches, so its matrix products sum in another order and, with an F16 cache, round
  // K and V at other points; Q8_0 quantizes each block of 32 to 1/127 of its largest value, and a K-shift
  // (seq_add) dequantizes, rotates and quantizes again.
  if (params.type_k == CacheType::kQ8_0 || params.type_v == CacheType::kQ8_0) return 0.08f;
  return 0.02f;
}

namespace {

// The largest |got - want| over the vocabulary, where it is, and the scale it is judged against: max(1, the
// largest |want|) (Tolerance is relative to it). A NaN in `got` counts as the largest.
struct Diff {
  float worst = 0.0f;
  float scale = 1.0f;
  int at = 0;
};
Diff LargestDiff(const float* got, const std::vector<float>& want, int n_vocab) {
  Diff d;
  for (int v = 0; v < n_vocab; ++v) d.scale = std::max(d.scale, std::fabs(want[v]));
  for (int v = 0; v < n_vocab; ++v) {
    const float x = std::fabs(got[v] - want[v]);
    if (std::isnan(x) || x > d.worst) {
      d.worst = x;
      d.at = v;
      if (std::isnan(x)) break;  // fails every tolerance
    }
  }
  return d;
}

// The tokens a context beside a decode (Flaw::kBeside) takes of the op's: at most this many (its 256 cells).
constexpr size_t kBesideTokens = 64;

using FreshLogits = std::vector<std::vector<std::vector<float>>>;  // per history, per token

// Where the fresh decodes run: on another thread under TSan, which is what sees two contexts of one model
// decoding at once; on the calling thread elsewhere, where the overlap shows no sanitizer anything and costs:
// 200 corpus inputs replayed in the fuzz lane (ASan+UBSan) took 30-39 s with the worker below against 23-27 s on
// the calling thread, 3 rounds in turns (not profiled further; both threads run the same instrumented code and
// bump the same coverage counters, which may be why).
#if defined(__SANITIZE_THREAD__)
constexpr bool kFreshOnAnotherThread = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kFreshOnAnotherThread = true;
#else
constexpr bool kFreshOnAnotherThread = false;
#endif
#else
constexpr bool kFreshOnAnotherThread = false;
#endif

// The thread the fresh decodes run on: one for the process, started on first use and never stopped (it waits for
// work between programs). A thread per op cost more than the decodes it ran: 37-46 s on the 200 inputs above
// against 25-29 s on the calling thread (ASan gives every new thread its stacks and fake stacks).
class FreshWorker {
 public:
  static FreshWorker& Get() {
    static FreshWorker* worker = new FreshWorker();  // never destroyed: its thread lives as long as the process
    return *worker;
  }
  std::future<FreshLogits> Submit(std::function<FreshLogits()> fn) {
    std::packaged_task<FreshLogits()> task(std::move(fn));
    std::future<FreshLogits> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return done;
  }

 private:
  FreshWorker() { std::thread([this] { Loop(); }).detach(); }
  void Loop() {
    for (;;) {
      std::packaged_task<FreshLogits()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !queue_.empty(); });
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<FreshLogits()>> queue_;
};

class Executor {
 public:
  Executor(const Program& program, Runtime& rt, bool corrupt) : program_(program), rt_(rt), model_(program.params),
                                                                 corrupt_(corrupt) {}
  ExecuteStats Run();

 private:
  void Step(const Op& op);
  void DecodeOp(const Op& op);
  bool SeqCp(const Op& op);
  void CheckPositions();
  // Session files: the save (its tokens: the model's prompt of the sequence), the file checked against the
  // buffer form of the same state saved right after it, and the load's return, count and tokens.
  void SaveFile(const Op& op);
  bool DeviceStateUsable() const;
  void DecodeCalls(const Op& op, std::vector<Model::Placed>& done, std::vector<std::vector<float>>& logits);
  void CheckFile(const Op& op);
  void LoadFile(const Op& op, Op& pred);
  // The differential oracle in two halves: the fresh decodes of an op's outputs start (under TSan on another
  // thread, kFreshOnAnotherThread), on the fresh context of the same model, and run while this thread goes on
  // with the program's next ops on the program's context (llama.h: contexts of one model may decode on different
  // threads at once, as upstream's tests/test-thread-safety.cpp does); the comparison waits for them, before the
  // next decode's own or at the end.
  void StartFresh(size_t op, const std::vector<Model::Placed>& placed, std::vector<std::vector<float>> logits);
  void FinishFresh();

  const Program& program_;
  Runtime& rt_;
  Model model_;
  bool corrupt_;
  std::vector<uint8_t> saved_[kStateSlots];
  // A file slot's: the save's return, the file as written, the tokens it was given.
  size_t file_ret_[kStateSlots] = {};
  std::vector<uint8_t> file_[kStateSlots];
  std::vector<int> file_tokens_[kStateSlots];
  ExecuteStats stats_;
  struct Pending {
    size_t op = 0;
    int seq = 0;
    std::vector<Model::Placed> placed;
    std::vector<std::vector<float>> logits;
    std::vector<std::pair<int, int>> history;
    int last = 0;  // the last output of the sequence in `placed`
  };
  std::vector<Pending> pending_;
  std::future<FreshLogits> fresh_;  // per pending_ entry
};

ExecuteStats Executor::Run() {
  programs::MaybePrintProgram(program_.ops, Describe(program_.params) + "\n");
  OpTraceScope trace(&program_.ops, program_.ops.size(), &programs::RenderOps<std::vector<Op>>);
  for (size_t i = 0; i < program_.ops.size(); ++i) {
    trace.set_op(i);
    Step(program_.ops[i]);
    CheckPositions();
  }
  trace.set_op(program_.ops.size());
  FinishFresh();
  return stats_;
}

void Executor::CheckPositions() {
  for (int s = 0; s < model_.n_seqs(); ++s) {
    int got = rt_.PosMax(s);
    // llama_kv_cache_iswa::seq_pos_max reads the SWA cache alone, which may lack the older cells the base cache
    // holds (a restored sequence's SWA part is its window: state_write leaves masked cells out). Once a seq_rm
    // takes the window away, seq_pos_max reads -1 ("the sequence is empty", llama.h) while the base cache still
    // holds the sequence's first positions, and a decode from position 0 would put a second cell at each. The
    // driver removes the rest of the sequence, as llama-server re-processes a prompt whose SWA data is gone.
    if (got == -1 && model_.PosMax(s) >= 0 && HasSlidingWindow(program_.params.model) && model_.SwaUnknown(s) &&
        GuardHolds(Guard::kLlamaIswaPosMaxIgnoresBaseCells, [&] {
          return "sequence " + std::to_string(s) + " reads empty with positions left in the base cache: removed";
        })) {
      SetUpstreamContext("llama_memory_seq_rm [the base cache's rest]");
      rt_.SeqRm(s, -1, -1);
      Op clear;
      clear.kind = OpKind::kSeqRm;
      clear.seq = s;
      model_.SeqRm(clear);
      got = rt_.PosMax(s);
    }
    LIFELINE_CHECK(got == model_.PosMax(s), "memory oracle: llama_memory_seq_pos_max(" + std::to_string(s) +
                                                ") returned " + std::to_string(got) + ", model predicted " +
                                                std::to_string(model_.PosMax(s)));
    if (const std::optional<int> min = model_.PosMin(s)) {
      const int got_min = rt_.PosMin(s);
      LIFELINE_CHECK(got_min == *min, "memory oracle: llama_memory_seq_pos_min(" + std::to_string(s) + ") returned " +
                                          std::to_string(got_min) + ", model predicted " + std::to_string(*min));
    }
  }
}

void Executor::Step(const Op& op) {
  // The executor's model predicts again from its own state: where a guard steps around a finding, the driver
  // does something other than the op, and this model follows what was done (the decoder's did not know).
  Op pred = op;
  switch (op.kind) {
    case OpKind::kDecode: DecodeOp(op); return;
    case OpKind::kSeqRm: {
      model_.SeqRm(pred);
      // llama.h: seq_id < 0 matches any sequence, and removing whole sequences never fails; the recurrent memory
      // (and so the hybrid one) checks (uint32_t) seq_id >= n_seq_max first and returns false for -1, before its
      // own branch for a negative id. The driver removes each sequence instead, where the model says it succeeds.
      if (op.seq < 0 && pred.expect_ret != 0 && HasRecurrent(program_.params.model) &&
          GuardHolds(Guard::kLlamaRecurrentSeqRmAnyRefused,
                     [] { return std::string("seq_rm(-1) on a recurrent memory: each sequence removed instead"); })) {
        SetUpstreamContext("llama_memory_seq_rm [per sequence]");
        bool all = true;
        for (int s = 0; s < model_.n_seqs(); ++s) all = rt_.SeqRm(s, op.p0, op.p1) && all;
        LIFELINE_CHECK(all, "status oracle: " + Describe(op) + " per sequence returned false");
        return;
      }
      SetUpstreamContext("llama_memory_seq_rm");
      const bool got = rt_.SeqRm(op.seq, op.p0, op.p1);
      LIFELINE_CHECK(got == (pred.expect_ret != 0), "status oracle: " + Describe(op) + " returned " +
                                                        (got ? "true" : "false"));
      return;
    }
    case OpKind::kSeqCp:
      if (SeqCp(op)) model_.SeqCp(pred);
      return;
    case OpKind::kSeqKeep:
      SetUpstreamContext("llama_memory_seq_keep");
      rt_.SeqKeep(op.seq);
      // llama.h: seq_keep removes all tokens that do not belong to the sequence. With a stream per sequence
      // (kv_unified off) llama_kv_cache::seq_keep walks only the sequence's own stream and leaves every other
      // sequence whole. The driver removes the others itself.
      if (!program_.params.kv_unified && HasAttention(program_.params.model) && model_.n_seqs() > 1 &&
          GuardHolds(Guard::kLlamaKvSeqKeepOtherStreams,
                     [] { return std::string("seq_keep with a stream per sequence: the other sequences removed"); })) {
        AddUpstreamCall("llama_memory_seq_rm [the other sequences]");
        for (int s = 0; s < model_.n_seqs(); ++s)
          if (s != op.seq) rt_.SeqRm(s, -1, -1);
      }
      model_.SeqKeep(pred);
      return;
    case OpKind::kSeqAdd:
    case OpKind::kSeqDiv:
      // A K-shift of a quantized K cache whose heads are not a multiple of 64 long (the tiny models' are 32)
      // dereferences the Hadamard rotation that was never made (llama_kv_cache::build_rope_shift, rot null): the
      // shift is refused, as a careful user without context shift would.
      if (program_.params.type_k == CacheType::kQ8_0 && model_.ShiftTouchesCells(op) &&
          GuardHolds(Guard::kLlamaKvShiftQuantizedKNullRotation,
                     [] { return std::string("a Q8_0 K cache with 32-wide heads would be K-shifted: not shifted"); }))
        return;
      // The KV cache frees a cell moved below position 0 (llama_kv_cells::pos_add); the recurrent memory keeps the
      // state there, where seq_pos_max no longer sees it (it starts from -1) and the next decode at 0 continues it.
      // The driver refuses such a shift.
      if (op.kind == OpKind::kSeqAdd && model_.ShiftsStateBelowZero(op) &&
          GuardHolds(Guard::kLlamaRecurrentShiftBelowZeroKept,
                     [] { return std::string("a recurrent state would be moved below position 0: not shifted"); }))
        return;
      SetUpstreamContext(op.kind == OpKind::kSeqAdd ? "llama_memory_seq_add" : "llama_memory_seq_div");
      if (op.kind == OpKind::kSeqAdd) rt_.SeqAdd(op.seq, op.p0, op.p1, op.delta);
      else rt_.SeqDiv(op.seq, op.p0, op.p1, op.delta);
      model_.SeqShift(pred);
      return;
    case OpKind::kClear: rt_.Clear(op.data); model_.Clear(pred); return;
    case OpKind::kSaveSeq:
    case OpKind::kSaveAll: {
      const bool seq = op.kind == OpKind::kSaveSeq;
      if (op.form == StateForm::kFile) SaveFile(op);
      const bool device = op.form == StateForm::kDevice && DeviceStateUsable();
      SetUpstreamContext(!seq ? "llama_state_get_data" : device ? "llama_state_seq_get_data_ext [ON_DEVICE]"
                                                                : "llama_state_seq_get_data");
      std::string error;
      saved_[op.slot] = seq ? rt_.SaveSeq(op.seq, device, &error) : rt_.SaveAll(&error);
      LIFELINE_CHECK(error.empty(), "state oracle: " + error);
      if (op.form == StateForm::kFile) CheckFile(op);
      if (corrupt_ && !device && saved_[op.slot].size() > 64) {
        // The oracle's own test: a byte of the saved K/V data flipped (past the headers, at the end).
        saved_[op.slot][saved_[op.slot].size() - 7] ^= 0x40;
        if (op.form == StateForm::kFile) rt_.FlipFileByte(op.slot, 7);
      }
      if (seq) model_.SaveSeq(pred); else model_.SaveAll(pred);
      return;
    }
    case OpKind::kLoadSeq: {
      // A saved sequence with no cells: llama_kv_cache::state_read skips a stream whose cell count is 0 before
      // state_read_meta's seq_rm of the destination, so the destination keeps its cells (the recurrent memory
      // empties it, as restoring an empty sequence should). The driver empties it first.
      if (HasAttention(program_.params.model) && model_.SlotEmpty(op.slot) && model_.PosMax(op.seq) >= 0 &&
          !model_.FileLoadStop(op) &&
          GuardHolds(Guard::kLlamaKvRestoreEmptySeqKeepsDestination, [&] {
            return "an empty sequence restored into sequence " + std::to_string(op.seq) + ": it is removed first";
          })) {
        SetUpstreamContext("llama_memory_seq_rm");
        rt_.SeqRm(op.seq, -1, -1);
      }
      if (op.form == StateForm::kFile) {
        LoadFile(op, pred);
        return;
      }
      const bool device = op.form == StateForm::kDevice && DeviceStateUsable();
      const char* const call = device ? "llama_state_seq_set_data_ext [ON_DEVICE]" : "llama_state_seq_set_data";
      // A device restore that fails (here: no room for the saved cells) aborts in llama_io_read_device's
      // destructor (GGML_ASSERT(buf_size == 0): the host bytes the failed read left unread) instead of returning 0
      // (llama.h: "Zero: Failed to load"). The driver makes what the refusal does, the destination removed.
      if (device && model_.RestoreRefused(op) &&
          GuardHolds(Guard::kLlamaStateDeviceRefusedRestoreAborts, [] {
            return std::string("a device restore without room would abort: the destination removed instead");
          })) {
        SetUpstreamContext("llama_memory_seq_rm [for the refused device restore]");
        rt_.SeqRm(op.seq, -1, -1);
        model_.LoadSeq(pred);
        LIFELINE_CHECK(pred.expect_ret == 0, "the model restores what it says has no room");
        return;
      }
      SetUpstreamContext(call);
      const size_t got = rt_.LoadSeq(saved_[op.slot], op.seq, device);
      model_.LoadSeq(pred);
      const size_t want = pred.expect_ret ? saved_[op.slot].size() : 0;
      LIFELINE_CHECK(got == want, "status oracle: " + Describe(op) + ": " + call + " returned " +
                                      std::to_string(got) + ", model predicted " + std::to_string(want) + " (the " +
                                      std::to_string(saved_[op.slot].size()) + " bytes saved)");
      return;
    }
    case OpKind::kLoadAll: {
      if (op.form == StateForm::kFile) {
        LoadFile(op, pred);
        return;
      }
      SetUpstreamContext("llama_state_set_data");
      const bool got = rt_.LoadAll(saved_[op.slot]);
      model_.LoadAll(pred);
      LIFELINE_CHECK(got, "status oracle: " + Describe(op) + ": llama_state_set_data refused the context's own state");
      return;
    }
    case OpKind::kSetThreads: rt_.SetThreads(op.n_threads); return;
  }
}

namespace {
constexpr size_t kFileHeader = 12;  // magic, version and the token count, a uint32 each (llama-context.cpp)
}  // namespace

// Whether a device-form save or load goes to llama.cpp as one (else the buffer form's calls: the tree has no
// LLAMA_STATE_SEQ_FLAGS_ON_DEVICE, or the guard below). With a quantized K or V cache, llama_io_write_device and
// llama_io_read_device view each range as size / ggml_element_size elements, which counts Q8_0 blocks (34 bytes
// for 32 elements), not elements: ggml_row_size asserts (ne % block size) with asserts on, and without them the
// views cover 1/32 of the data.
bool Executor::DeviceStateUsable() const {
  if (!rt_.HasDeviceStates()) return false;
  const bool quantized = program_.params.type_k != CacheType::kF16 || program_.params.type_v != CacheType::kF16;
  return !(quantized && HasAttention(program_.params.model) &&
           GuardHolds(Guard::kLlamaStateDeviceQuantizedCache, [] {
             return std::string("a device state of a quantized KV cache: the buffer form instead");
           }));
}

void Executor::SaveFile(const Op& op) {
  const bool seq = op.kind == OpKind::kSaveSeq;
  SetUpstreamContext(seq ? "llama_state_seq_save_file" : "llama_state_save_file");
  file_tokens_[op.slot] = model_.Prompt(seq ? op.seq : 0);
  file_ret_[op.slot] = seq ? rt_.SaveSeqFile(op.slot, op.seq, file_tokens_[op.slot], &file_[op.slot])
                           : rt_.SaveAllFile(op.slot, file_tokens_[op.slot], &file_[op.slot]);
}

void Executor::CheckFile(const Op& op) {
  const bool seq = op.kind == OpKind::kSaveSeq;
  const std::string call = seq ? "llama_state_seq_save_file" : "llama_state_save_file";
  const std::string buffer_call = seq ? "llama_state_seq_get_data" : "llama_state_get_data";
  SetUpstreamContext(call.c_str());
  const std::vector<uint8_t>& file = file_[op.slot];
  const std::vector<uint8_t>& state = saved_[op.slot];
  const std::vector<int>& tokens = file_tokens_[op.slot];
  if (seq) {
    LIFELINE_CHECK(file_ret_[op.slot] == file.size(), "state oracle: " + call + " returned " +
                                                          std::to_string(file_ret_[op.slot]) + ", the file it wrote has " +
                                                          std::to_string(file.size()) + " bytes");
  } else {
    LIFELINE_CHECK(file_ret_[op.slot] == 1, "state oracle: " + call + " returned false");
  }
  const size_t header = kFileHeader + 4 * tokens.size();
  LIFELINE_CHECK(file.size() >= header, "state oracle: " + call + " wrote " + std::to_string(file.size()) +
                                            " bytes, less than its header with " + std::to_string(tokens.size()) +
                                            " tokens (" + std::to_string(header) + ")");
  for (size_t i = 0; i < tokens.size(); ++i) {
    int32_t t = 0;
    std::memcpy(&t, file.data() + kFileHeader + 4 * i, 4);
    LIFELINE_CHECK(t == tokens[i], "state oracle: " + call + " stored token " + std::to_string(i) + " as " +
                                       std::to_string(t) + ", it was given " + std::to_string(tokens[i]));
  }
  // The state after the file's header is what the buffer form holds after a header of its own, if the tree has
  // one (the pinned llama.cpp writes a magic and the sequence id first, llama_context::state_seq_get_data; the
  // file form does not): the same bytes, at most kBufferHeader more in the buffer.
  constexpr size_t kBufferHeader = 16;
  const size_t n = file.size() - header;
  LIFELINE_CHECK(n <= state.size() && state.size() - n <= kBufferHeader,
                 "state oracle: " + call + " wrote " + std::to_string(n) + " bytes of state after its header, " +
                     buffer_call + " " + std::to_string(state.size()) + " for the same state");
  const auto diff = std::mismatch(file.begin() + static_cast<std::ptrdiff_t>(header), file.end(),
                                  state.end() - static_cast<std::ptrdiff_t>(n));
  LIFELINE_CHECK(diff.first == file.end(),
                 "state oracle: the state " + call + " wrote differs from " + buffer_call + "'s at byte " +
                     std::to_string(diff.first - file.begin() - static_cast<std::ptrdiff_t>(header)) + " of " +
                     std::to_string(n));
}

void Executor::LoadFile(const Op& op, Op& pred) {
  const bool seq = op.kind == OpKind::kLoadSeq;
  const std::string call = seq ? "llama_state_seq_load_file" : "llama_state_load_file";
  SetUpstreamContext(call.c_str());
  const std::vector<int>& tokens = file_tokens_[op.slot];
  const Runtime::FileLoad got = seq ? rt_.LoadSeqFile(op.slot, op.seq, op.tokens_out, tokens.size())
                                    : rt_.LoadAllFile(op.slot, op.tokens_out, tokens.size());
  if (seq) model_.LoadSeq(pred); else model_.LoadAll(pred);
  if (!got.made) return;  // a count-only load on a tree without it: nothing called, the model changed nothing
  // The returns: a sequence's load, the bytes of the file it read (all of them; with tokens_out NULL, where llama.h
  // says only that the count is reported, the pinned tree returns the 12 it read to learn it); the whole
  // context's, true or false.
  size_t want = pred.expect_ret == 0 ? 0 : 1;
  if (seq && pred.expect_ret == 1) want = file_[op.slot].size();
  if (seq && pred.expect_ret == 2) want = kFileHeader;
  LIFELINE_CHECK(got.ret == want, "status oracle: " + Describe(pred) + ": " + call + " returned " +
                                      std::to_string(got.ret) + ", model predicted " + std::to_string(want) + " (a file of " +
                                      std::to_string(file_[op.slot].size()) + " bytes, " + std::to_string(tokens.size()) +
                                      " tokens)");
  if (pred.expect_ret == 0) return;
  LIFELINE_CHECK(got.count == tokens.size(), "state oracle: " + call + " reported " + std::to_string(got.count) +
                                                 " tokens, the file holds " + std::to_string(tokens.size()));
  if (pred.expect_ret == 1)
    LIFELINE_CHECK(got.tokens == tokens, "state oracle: " + call + " gave back other tokens than were saved");
}

// seq_cp, or where some of the range's cells already hold the destination (llama_kv_cells::seq_add asserts it
// does not: guard llama-kv-seq-cp-onto-shared-cell-assert), a copy of each other position alone: the same cells
// end in the destination, as llama.h's "copy all tokens" says.
// Returns whether the copy was made (the model follows only then).
bool Executor::SeqCp(const Op& op) {
  std::vector<int> rest;
  const std::vector<int> shared = model_.SeqCpShared(op, &rest);
  bool mixed = false;  // a position with a cell in the destination and one not: no copy by positions avoids it
  for (int p : shared) mixed |= std::find(rest.begin(), rest.end(), p) != rest.end();
  if (!shared.empty() &&
      GuardHolds(Guard::kLlamaKvSeqCpOntoSharedCellAssert, [&] {
        return std::to_string(shared.size()) + " positions of sequence " + std::to_string(op.seq) +
               " in the range already hold sequence " + std::to_string(op.seq_dst) +
               (mixed ? ", some beside cells that do not: not copied"
                      : ": the other " + std::to_string(rest.size()) + " copied one by one");
      })) {
    if (mixed) return false;
    SetUpstreamContext("llama_memory_seq_cp [per position]");
    for (int p : rest) rt_.SeqCp(op.seq, op.seq_dst, p, p + 1);
    return true;
  }
  SetUpstreamContext("llama_memory_seq_cp");
  rt_.SeqCp(op.seq, op.seq_dst, op.p0, op.p1);
  return true;
}

// The op's tokens in calls of at most n_batch; each call's outputs copied (the next call overwrites them), and
// the differential oracle run once over the op's outputs: one fresh decode per sequence and op, not per call,
// whose history holds every earlier call's (a later call adds cells above their positions only).
void Executor::DecodeOp(const Op& op) {
  std::vector<Model::Placed> done;
  std::vector<std::vector<float>> logits;
  const size_t index = &op - program_.ops.data();
  if (op.flaw == Flaw::kBeside) {
    // Another context of the model decodes the op's first tokens on its own thread and is freed while this one
    // decodes the op (llama.h: contexts of one model may decode on different threads at once).
    std::vector<int> tokens;
    for (const BatchToken& t : TokensOf(op))
      if (tokens.size() < kBesideTokens) tokens.push_back(t.token);
    std::string error;
    const std::vector<float> side = rt_.Beside(tokens, [&] { DecodeCalls(op, done, logits); }, &error);
    LIFELINE_CHECK(error.empty(), "the context beside op #" + std::to_string(index) + ": " + error);
    FinishFresh();  // the fresh context is free again
    std::vector<std::pair<int, int>> history;
    for (size_t i = 0; i < tokens.size(); ++i) history.emplace_back(tokens[i], static_cast<int>(i));
    const std::vector<std::vector<float>> fresh = rt_.Fresh(history);
    LIFELINE_CHECK(fresh.size() == history.size(), "differential oracle: op #" + std::to_string(index) +
                                                       ": the fresh context decoded " + std::to_string(fresh.size()) +
                                                       " of the " + std::to_string(history.size()) + " tokens beside");
    const Diff d = LargestDiff(side.data(), fresh.back(), rt_.n_vocab());
    ++stats_.compared;
    stats_.worst = std::max(stats_.worst, d.worst / d.scale);
    LIFELINE_CHECK(d.worst <= Tolerance(program_.params) * d.scale,
                   "differential oracle: op #" + std::to_string(index) + ", the context beside it: logit " +
                       std::to_string(d.at) + " of its last token is " + std::to_string(side[d.at]) +
                       ", a fresh context that decoded the " + std::to_string(tokens.size()) + " tokens gives " +
                       std::to_string(fresh.back()[d.at]));
  } else {
    DecodeCalls(op, done, logits);
  }
  FinishFresh();
  if (!done.empty()) StartFresh(index, done, std::move(logits));
}

// The op's calls of llama_decode, each checked against the model; what they decoded and its outputs appended to
// `done` and `logits`.
void Executor::DecodeCalls(const Op& op, std::vector<Model::Placed>& done, std::vector<std::vector<float>>& logits) {
  for (const std::vector<Model::Placed>& chunk : model_.Chunks(op)) {
    std::vector<Runtime::Token> batch;
    batch.reserve(chunk.size());
    for (const Model::Placed& p : chunk) batch.push_back({p.token, p.seqs, p.pos, p.logits});
    // llama_batch_allocr checks tokens and sequence ids but not that positions are >= 0: a token at -1 goes into
    // the KV cache at the position that marks a cell empty (llama_kv_cells::seq_add asserts, pos[i] != -1). The
    // driver refuses such a batch itself, as llama_decode should.
    bool negative = false;
    for (const Model::Placed& p : chunk) negative |= p.pos < 0;
    if (negative && GuardHolds(Guard::kLlamaBatchNegativePosition, [&] {
          return "a token at position " + std::to_string(chunk.front().pos) + ": the batch is not submitted";
        })) {
      LIFELINE_CHECK(model_.DecodeChunk(chunk) == -1, "the model accepts a batch with a negative position");
      break;
    }
    // The op's first call only: the callback answers true from its first graph node on.
    bool abort = op.flaw == Flaw::kAbort && done.empty();
    bool shared = false;  // a token of the call in several sequences
    bool continued = false;  // a recurrent state the call continues
    for (const Model::Placed& p : chunk) {
      shared |= (p.seqs & (p.seqs - 1)) != 0;
      for (int s = 0; s < model_.n_seqs(); ++s) continued |= ((p.seqs >> s) & 1) && model_.PosMax(s) >= 0;
    }
    // llama_context::decode takes an aborted ubatch out of the memory with seq_rm(s, its first position, -1),
    // and the recurrent memory cannot take out the end of a state (no rollback snapshots, n_rs_seq 0: seq_rm
    // returns false), so the state keeps the ubatch's last position without its tokens. The driver does not
    // abort such a decode.
    if (abort && continued && HasRecurrent(program_.params.model) &&
        GuardHolds(Guard::kLlamaRecurrentAbortKeepsPosition, [] {
          return std::string("an abort would leave a recurrent state at positions it never took in: not aborted");
        }))
      abort = false;
    SetUpstreamContext(abort ? "llama_decode [aborted]" : "llama_decode");
    rt_.SetAbort(abort);
    const int got = rt_.Decode(batch, op.flaw == Flaw::kAutoPositions ? Runtime::BatchForm::kNoPositions
                                      : op.flaw == Flaw::kGetOne      ? Runtime::BatchForm::kGetOne
                                                                      : Runtime::BatchForm::kFull);
    rt_.SetAbort(false);
    // It finds the aborted ubatch's positions by each token's first sequence only (ubatch.seq_id[i][0]), so a
    // token in several sequences stays in the others, a cell whose K and V were never computed. The driver
    // removes them as llama_context::decode means to ("remove all positions of that ubatch").
    if (got == 2 && shared &&
        GuardHolds(Guard::kLlamaDecodeAbortKeepsSharedCells, [] {
          return std::string("an aborted decode of shared tokens: every sequence's new positions removed");
        })) {
      SetUpstreamContext("llama_memory_seq_rm [after the abort]");
      for (int s = 0; s < model_.n_seqs(); ++s) {
        int first = -1;
        for (const Model::Placed& p : chunk)
          if (first < 0 && ((p.seqs >> s) & 1)) first = p.pos;
        if (first >= 0) rt_.SeqRm(s, first, -1);
      }
    }
    const int want = model_.DecodeChunk(chunk, abort);
    LIFELINE_CHECK(got == want, "status oracle: " + Describe(op) + ": llama_decode of " +
                                    std::to_string(chunk.size()) + " tokens from position " +
                                    std::to_string(chunk.front().pos) + " returned " + std::to_string(got) +
                                    ", model predicted " + std::to_string(want));
    if (got != 0) break;
    for (size_t i = 0; i < chunk.size(); ++i) {
      done.push_back(chunk[i]);
      logits.emplace_back();
      if (!chunk[i].logits) continue;
      const float* l = rt_.Logits(static_cast<int>(i));
      LIFELINE_CHECK(l != nullptr, "llama_get_logits_ith(" + std::to_string(i) + ") returned no logits for a "
                                   "token that asked for them");
      logits.back().assign(l, l + rt_.n_vocab());
    }
  }
}

// The differential oracle: per sequence, one fresh decode of its history up to its last output (the model's
// Reference now, when the op has just run), and every output of the batch in that sequence compared with the
// fresh logits at the same position.
void Executor::StartFresh(size_t op, const std::vector<Model::Placed>& placed, std::vector<std::vector<float>> logits) {
  for (int s = 0; s < model_.n_seqs(); ++s) {
    int last = -1;
    for (size_t i = 0; i < placed.size(); ++i)
      if (placed[i].logits && ((placed[i].seqs >> s) & 1)) last = static_cast<int>(i);
    if (last < 0) continue;
    // A token in several sequences attends to its first one's cells (llama.cpp's mask): judged there only.
    if (placed[last].seqs & ((1u << s) - 1)) continue;
    std::optional<std::vector<std::pair<int, int>>> history = model_.Reference(s, placed[last].pos);
    if (!history) {
      for (const Model::Placed& p : placed) stats_.skipped += p.logits && ((p.seqs >> s) & 1);
      continue;
    }
    pending_.push_back({op, s, placed, {}, std::move(*history), last});
  }
  if (pending_.empty()) return;
  pending_.front().logits = std::move(logits);
  // pending_ stays as it is until FinishFresh has the job's result: the job reads the histories in place.
  auto job = [this] {
    FreshLogits out;
    for (const Pending& p : pending_) out.push_back(rt_.Fresh(p.history));
    return out;
  };
  if (!kFreshOnAnotherThread) {
    std::promise<FreshLogits> now;
    now.set_value(job());
    fresh_ = now.get_future();
    return;
  }
  fresh_ = FreshWorker::Get().Submit(std::move(job));
}

void Executor::FinishFresh() {
  if (pending_.empty()) return;
  const FreshLogits all = fresh_.get();
  const std::vector<std::vector<float>>& logits = pending_.front().logits;
  const float tol = Tolerance(program_.params);
  for (size_t k = 0; k < pending_.size(); ++k) {
    const Pending& pd = pending_[k];
    const int s = pd.seq, last = pd.last;
    const std::vector<Model::Placed>& placed = pd.placed;
    const std::vector<std::pair<int, int>>* history = &pd.history;
    const std::vector<std::vector<float>>& fresh = all[k];
    LIFELINE_CHECK(fresh.size() == history->size(), "differential oracle: op #" + std::to_string(pd.op) +
                                                        ": the fresh context decoded " + std::to_string(fresh.size()) +
                                                        " of " + std::to_string(history->size()) + " tokens");
    for (size_t i = 0; i < placed.size(); ++i) {
      if (!placed[i].logits || !((placed[i].seqs >> s) & 1)) continue;
      // The output's place in the history: by position (an attention memory), or the last token (a recurrent
      // one, whose history Reference renumbers from 0; the oracle asks only at the state's position).
      size_t at = history->size();
      for (size_t j = 0; j < history->size(); ++j)
        if ((*history)[j].second == placed[i].pos) at = j;
      if (!HasAttention(program_.params.model))
        at = placed[i].pos == placed[last].pos ? history->size() - 1 : history->size();
      if (at == history->size()) continue;
      const float* got = logits[i].data();
      const std::vector<float>& want = fresh[at];
      const Diff d = LargestDiff(got, want, rt_.n_vocab());
      const float scale = d.scale, worst = d.worst;
      const int worst_at = d.at;
      ++stats_.compared;
      stats_.worst = std::max(stats_.worst, worst / scale);
      LIFELINE_CHECK(worst <= tol * scale,
                     "differential oracle: op #" + std::to_string(pd.op) + ", sequence " + std::to_string(s) +
                         " at position " +
                         std::to_string(placed[i].pos) + ": logit " + std::to_string(worst_at) + " is " +
                         std::to_string(got[worst_at]) + ", a fresh context that decoded the sequence's " +
                         std::to_string(history->size()) + " tokens gives " + std::to_string(want[worst_at]) +
                         " (|diff| " + std::to_string(worst) + " > " + std::to_string(tol) + " x " +
                         std::to_string(scale) + ")");
    }
  }
  pending_.clear();
}

}  // namespace

ExecuteStats Execute(const Program& program, Runtime& rt, bool corrupt_state) {
  return Executor(program, rt, corrupt_state).Run();
}

}  // namespace lifeline::llama
