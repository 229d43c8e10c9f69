// The llama-runtime programs' model of the memory (model.h).
#include "harness/programs/llama/model.h"

#include <algorithm>
#include <climits>

namespace lifeline::llama {

bool HasAttention(ModelKind kind) { return kind != ModelKind::kMamba; }
bool HasRecurrent(ModelKind kind) { return kind == ModelKind::kMamba || kind == ModelKind::kJamba; }
bool HasSlidingWindow(ModelKind kind) { return kind == ModelKind::kGemma2; }

Model::Model(const ContextParams& params) : params_(params) {}

int Model::CellsIn(int stream) const {
  int n = 0;
  for (const Cell& c : mem_.cells)
    for (int s = 0; s < params_.n_seq_max; ++s)
      if ((c.seqs >> s) & 1) {
        if (Stream(s) == stream) ++n;
        if (params_.kv_unified) break;  // one stream: a shared cell counts once
      }
  return n;
}

bool Model::Legal(OpKind kind) const {
  const bool shift = params_.model != ModelKind::kGemma2 || params_.swa_full;  // llama_memory_can_shift
  switch (kind) {
    case OpKind::kSeqCp: return params_.n_seq_max > 1 && (params_.kv_unified || !HasAttention(params_.model));
    case OpKind::kSeqAdd:
    case OpKind::kSeqDiv: return shift;
    case OpKind::kLoadSeq:
    case OpKind::kLoadAll:
      for (int i = 0; i < kStateSlots; ++i)
        if (SlotHolds(i, kind == OpKind::kLoadAll)) return true;
      return false;
    default: return true;
  }
}

bool Model::SlotHolds(int slot, bool whole) const { return saved_[slot].used && saved_[slot].whole == whole; }

bool Model::SlotEmpty(int slot) const { return saved_[slot].used && saved_[slot].mem.cells.empty(); }

int Model::PosMax(int seq) const {
  int attn = -1, recr = -1;
  for (const Cell& c : mem_.cells)
    if ((c.seqs >> seq) & 1) attn = std::max(attn, c.pos);
  if (HasRecurrent(params_.model) && mem_.recr[seq].present) recr = mem_.recr[seq].pos;
  if (!HasAttention(params_.model)) return recr;
  if (!HasRecurrent(params_.model)) return attn;
  return std::min(attn, recr);  // llama_memory_hybrid::seq_pos_max
}

std::optional<int> Model::PosMin(int seq) const {
  if (HasSlidingWindow(params_.model)) return std::nullopt;  // the SWA cache reuses masked cells as it places
  return RawPosMin(seq);
}

int Model::RawPosMin(int seq) const {
  int attn = INT_MAX, recr = INT_MAX;
  for (const Cell& c : mem_.cells)
    if ((c.seqs >> seq) & 1) attn = std::min(attn, c.pos);
  if (HasRecurrent(params_.model) && mem_.recr[seq].present) recr = mem_.recr[seq].pos;
  int v;
  if (!HasAttention(params_.model)) v = recr;
  else if (!HasRecurrent(params_.model)) v = attn;
  else v = std::max(attn == INT_MAX ? -1 : attn, recr == INT_MAX ? -1 : recr);  // hybrid: the max of the two
  return v == INT_MAX ? -1 : v;
}

std::vector<std::pair<int, int>> Model::Visible(int seq, int pos) const {
  std::vector<std::pair<int, int>> v;  // (pos, token)
  for (const Cell& c : mem_.cells)
    if (((c.seqs >> seq) & 1) && c.pos <= pos) v.emplace_back(c.pos, c.token);
  std::sort(v.begin(), v.end());
  return v;
}

static std::vector<std::pair<int, int>> Relative(const std::vector<std::pair<int, int>>& visible, int pos) {
  std::vector<std::pair<int, int>> rel;  // (token, relative position), sorted
  for (const auto& [p, t] : visible)
    if (p <= pos) rel.emplace_back(t, p - pos);
  std::sort(rel.begin(), rel.end());
  return rel;
}

std::optional<std::vector<std::pair<int, int>>> Model::Reference(int seq, int pos) const {
  std::vector<std::pair<int, int>> out;  // (token, pos) in order
  if (HasAttention(params_.model)) {
    if (HasSlidingWindow(params_.model) && mem_.swa_unknown[seq]) return std::nullopt;
    const auto vis = Visible(seq, pos);
    for (size_t i = 1; i < vis.size(); ++i)
      if (vis[i].first == vis[i - 1].first) return std::nullopt;  // two cells at one position
    for (const Cell& c : mem_.cells) {
      if (!((c.seqs >> seq) & 1) || c.pos > pos) continue;
      if (c.birth != Relative(vis, c.pos)) return std::nullopt;
    }
    for (const auto& [p, t] : vis) out.emplace_back(t, p);
  }
  if (HasRecurrent(params_.model)) {
    const Recurrent& r = mem_.recr[seq];
    if (!r.present || r.pos != pos) return std::nullopt;  // the state is the last token's only
    std::vector<std::pair<int, int>> hist;
    const int first = r.pos - static_cast<int>(r.tokens.size()) + 1;
    for (size_t i = 0; i < r.tokens.size(); ++i) hist.emplace_back(r.tokens[i], first + static_cast<int>(i));
    if (HasAttention(params_.model)) {
      if (hist != out) return std::nullopt;  // the two memories of a hybrid hold different histories
    } else {
      // A recurrent model has no positions in its computation (mamba: no RoPE): the fresh context takes the
      // tokens from 0, whatever seq_add/seq_div did to the state's position.
      for (size_t i = 0; i < hist.size(); ++i) hist[i].second = static_cast<int>(i);
      out = hist;
    }
  }
  if (out.empty()) return std::nullopt;
  // A fresh context takes continuous positions only (llama_batch_allocr): a history with gaps is not one.
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i].second != out[i - 1].second + 1) return std::nullopt;
  return out;
}

std::vector<Model::Placed> Model::Place(const Op& op) const {
  std::vector<Placed> placed;
  int next[kMaxSeqs];
  for (int s = 0; s < kMaxSeqs; ++s) next[s] = s < params_.n_seq_max ? Next(s) : 0;
  for (const BatchToken& t : TokensOf(op)) {
    int pos = 0;
    for (int s = 0; s < kMaxSeqs; ++s)
      if ((t.seqs >> s) & 1) pos = std::max(pos, next[s]);
    if (placed.empty()) {
      if (op.flaw == Flaw::kGap) pos += 1;
      if (op.flaw == Flaw::kBehind) pos -= 1;
    }
    for (int s = 0; s < kMaxSeqs; ++s)
      if ((t.seqs >> s) & 1) next[s] = pos + 1;
    // Flaw::kBadSeq: the first token on sequence -1 (seqs 0; the runtime writes -1 for it).
    placed.push_back({placed.empty() && op.flaw == Flaw::kBadToken ? kVocab : t.token,
                      placed.empty() && op.flaw == Flaw::kBadSeq ? uint8_t{0} : t.seqs, pos, t.logits});
  }
  // llama_batch_get_one's batch has no output flags: llama_decode outputs the last token of each call (Chunks).
  if (op.flaw == Flaw::kGetOne)
    for (size_t i = 0; i < placed.size(); ++i)
      placed[i].logits = (i + 1) % static_cast<size_t>(params_.n_batch) == 0 || i + 1 == placed.size();
  return placed;
}

std::vector<std::vector<Model::Placed>> Model::Chunks(const Op& op) const {
  std::vector<std::vector<Placed>> out;
  for (const Placed& p : Place(op)) {
    if (out.empty() || static_cast<int>(out.back().size()) == params_.n_batch) out.emplace_back();
    out.back().push_back(p);
  }
  return out;
}

void Model::Decode(Op& op) {
  op.expect_ret = 0;
  for (const std::vector<Placed>& chunk : Chunks(op)) {
    op.expect_ret = DecodeChunk(chunk, op.flaw == Flaw::kAbort);
    if (op.expect_ret != 0) return;
  }
}

int Model::DecodeChunk(const std::vector<Placed>& placed, bool aborted) {
  // The batch's checks (llama_batch_allocr::init): tokens in the vocabulary, each sequence's positions
  // starting at its last position + 1 (any start when it has none) and continuous.
  int ret = 0;
  for (int s = 0; s < params_.n_seq_max; ++s) {
    int first = INT_MIN, last = INT_MIN, count = 0;
    for (const Placed& p : placed) {
      if (!((p.seqs >> s) & 1)) continue;
      if (first == INT_MIN) first = p.pos;
      if (p.pos < last) ret = -1;
      last = p.pos;
      ++count;
    }
    if (count == 0) continue;
    if (PosMax(s) >= 0 && first != PosMax(s) + 1) ret = -1;
    if (first < 0 || last - first + 1 > count) ret = -1;
  }
  for (const Placed& p : placed) {
    if (p.token < 0 || p.token >= kVocab) ret = -1;
    if (p.seqs == 0) ret = -1;  // a token on sequence -1
    // Sequences coupled by a token in both must hold the same span in the memory ("coupled ... but have
    // diverged"): seq_pos_min and seq_pos_max equal.
    for (int s0 = 0; s0 < params_.n_seq_max; ++s0)
      for (int s1 = s0 + 1; s1 < params_.n_seq_max; ++s1)
        if (((p.seqs >> s0) & 1) && ((p.seqs >> s1) & 1) &&
            (PosMax(s0) != PosMax(s1) || RawPosMin(s0) != RawPosMin(s1)))
          ret = -1;
  }
  if (ret != 0) return ret;
  // Room: a cell per token in its stream (a shared token is one cell in the unified cache).
  if (HasAttention(params_.model)) {
    int need[kMaxSeqs] = {};
    for (const Placed& p : placed)
      for (int s = 0; s < params_.n_seq_max; ++s)
        if ((p.seqs >> s) & 1) {
          ++need[Stream(s)];
          if (params_.kv_unified) break;
        }
    for (int st = 0; st < params_.n_seq_max; ++st)
      if (need[st] > 0 && CellsIn(st) + need[st] > kCellsPerStream) return 1;
  }
  if (aborted) return 2;
  if (HasAttention(params_.model)) {
    const size_t first_new = mem_.cells.size();
    for (const Placed& p : placed) mem_.cells.push_back({p.pos, p.seqs, p.token, {}});
    // What each new cell attended to: the cells of its first sequence up to its position (llama.cpp masks
    // by the token's first sequence id and by position, across the batch's ubatches alike).
    for (size_t i = first_new; i < mem_.cells.size(); ++i) {
      Cell& c = mem_.cells[i];
      int s0 = 0;
      while (!((c.seqs >> s0) & 1)) ++s0;
      c.birth = Relative(Visible(s0, c.pos), c.pos);
    }
  }
  if (HasRecurrent(params_.model)) {
    for (const Placed& p : placed)
      for (int s = 0; s < params_.n_seq_max; ++s)
        if ((p.seqs >> s) & 1) {
          Recurrent& r = mem_.recr[s];
          Unshare(s);  // a decode into a shared cell copies it for this sequence
          r.present = true;
          r.pos = p.pos;
          r.tokens.push_back(p.token);
        }
  }
  return 0;
}

void Model::SeqRm(Op& op) {
  const int p0 = op.p0 < 0 ? 0 : op.p0;
  const int p1 = op.p1 < 0 ? INT_MAX : op.p1;
  op.expect_ret = 1;
  if (HasRecurrent(params_.model)) {
    // llama_memory_recurrent::seq_rm: all or nothing of a state (the hybrid memory asks it first).
    if (op.seq < 0) {
      if (p0 != p1 && !(p0 == 0 && p1 == INT_MAX)) op.expect_ret = 0;
    } else {
      const Recurrent& r = mem_.recr[op.seq];
      if (r.present && 0 < p0 && p0 <= r.pos && p1 > r.pos) op.expect_ret = 0;
    }
    if (op.expect_ret == 0) return;
    for (int s = 0; s < params_.n_seq_max; ++s) {
      if (op.seq >= 0 && s != op.seq) continue;
      Recurrent& r = mem_.recr[s];
      if (r.present && p0 <= r.pos && r.pos < p1) {
        r = Recurrent{};
        Unshare(s);
      }
    }
  }
  if (HasAttention(params_.model)) {
    const uint8_t mask = op.seq < 0 ? 0xff : static_cast<uint8_t>(1u << op.seq);
    bool tail = false;
    for (Cell& c : mem_.cells)
      if (c.pos >= p0 && c.pos < p1 && (c.seqs & mask)) {
        c.seqs &= static_cast<uint8_t>(~mask);
        tail = true;
      }
    mem_.cells.erase(std::remove_if(mem_.cells.begin(), mem_.cells.end(), [](const Cell& c) { return c.seqs == 0; }),
                     mem_.cells.end());
    if (tail && HasSlidingWindow(params_.model))
      for (int s = 0; s < params_.n_seq_max; ++s)
        if ((mask >> s) & 1) mem_.swa_unknown[s] = PosMax(s) >= 0;
  }
}

void Model::SeqCp(Op& op) {
  const int p0 = op.p0 < 0 ? 0 : op.p0;
  const int p1 = op.p1 < 0 ? INT_MAX : op.p1;
  if (op.seq == op.seq_dst) return;
  if (HasAttention(params_.model)) {
    for (Cell& c : mem_.cells)
      if (((c.seqs >> op.seq) & 1) && c.pos >= p0 && c.pos < p1) c.seqs |= static_cast<uint8_t>(1u << op.seq_dst);
    if (HasSlidingWindow(params_.model)) mem_.swa_unknown[op.seq_dst] |= mem_.swa_unknown[op.seq];
  }
  if (HasRecurrent(params_.model)) {
    // llama_memory_recurrent::seq_cp: a state is whole, so the range is not read; the destination becomes the
    // source's state (empty when the source has none).
    mem_.recr[op.seq_dst] = mem_.recr[op.seq];
    if (mem_.recr[op.seq].present) mem_.group[op.seq_dst] = mem_.group[op.seq];
    else Unshare(op.seq_dst);
  }
}

std::vector<int> Model::SeqCpShared(const Op& op, std::vector<int>* rest) const {
  const int p0 = op.p0 < 0 ? 0 : op.p0;
  const int p1 = op.p1 < 0 ? INT_MAX : op.p1;
  std::vector<int> shared;
  rest->clear();
  if (!HasAttention(params_.model) || op.seq == op.seq_dst) return shared;
  for (const Cell& c : mem_.cells) {
    if (!((c.seqs >> op.seq) & 1) || c.pos < p0 || c.pos >= p1) continue;
    std::vector<int>& to = ((c.seqs >> op.seq_dst) & 1) ? shared : *rest;
    if (std::find(to.begin(), to.end(), c.pos) == to.end()) to.push_back(c.pos);
  }
  std::sort(shared.begin(), shared.end());
  std::sort(rest->begin(), rest->end());
  return shared;
}

void Model::SeqKeep(Op& op) {
  const uint8_t bit = static_cast<uint8_t>(1u << op.seq);
  for (Cell& c : mem_.cells) c.seqs &= bit;
  mem_.cells.erase(std::remove_if(mem_.cells.begin(), mem_.cells.end(), [](const Cell& c) { return c.seqs == 0; }),
                   mem_.cells.end());
  for (int s = 0; s < kMaxSeqs; ++s)
    if (s != op.seq) {
      mem_.recr[s] = Recurrent{};
      mem_.swa_unknown[s] = false;
      Unshare(s);
    }
}

void Model::SeqShift(Op& op) {
  const int p0 = op.p0 < 0 ? 0 : op.p0;
  const int p1 = op.p1 < 0 ? INT_MAX : op.p1;
  if (p0 == p1) return;
  if (op.kind == OpKind::kSeqAdd && op.delta == 0) return;
  auto moved = [&](int pos) { return op.kind == OpKind::kSeqAdd ? pos + op.delta : pos / op.delta; };
  if (HasAttention(params_.model)) {
    bool any = false;
    for (Cell& c : mem_.cells)
      if (((c.seqs >> op.seq) & 1) && c.pos >= p0 && c.pos < p1) {
        c.pos = moved(c.pos);
        any = true;
      }
    // llama_kv_cells::pos_add frees a cell moved below position 0.
    mem_.cells.erase(std::remove_if(mem_.cells.begin(), mem_.cells.end(), [](const Cell& c) { return c.pos < 0; }),
                     mem_.cells.end());
    if (any && HasSlidingWindow(params_.model)) mem_.swa_unknown[op.seq] = PosMax(op.seq) >= 0;
  }
  if (HasRecurrent(params_.model)) {
    // The cell's position moves for every sequence that shares it.
    const Recurrent& r = mem_.recr[op.seq];
    if (r.present && r.pos >= p0 && r.pos < p1) {
      const int from = r.pos, to = moved(r.pos);
      for (int t = 0; t < kMaxSeqs; ++t)
        if (mem_.group[t] == mem_.group[op.seq] && mem_.recr[t].present && mem_.recr[t].pos == from)
          mem_.recr[t].pos = to;
    }
  }
}

bool Model::ShiftTouchesCells(const Op& op) const {
  const int p0 = op.p0 < 0 ? 0 : op.p0;
  const int p1 = op.p1 < 0 ? INT_MAX : op.p1;
  if (!HasAttention(params_.model) || p0 == p1 || (op.kind == OpKind::kSeqAdd && op.delta == 0)) return false;
  for (const Cell& c : mem_.cells)
    if (((c.seqs >> op.seq) & 1) && c.pos >= p0 && c.pos < p1) return true;
  return false;
}

bool Model::ShiftsStateBelowZero(const Op& op) const {
  const int p0 = op.p0 < 0 ? 0 : op.p0;
  const int p1 = op.p1 < 0 ? INT_MAX : op.p1;
  if (!HasRecurrent(params_.model) || p0 == p1) return false;
  const Recurrent& r = mem_.recr[op.seq];
  return r.present && r.pos >= p0 && r.pos < p1 && r.pos + op.delta < 0;
}

void Model::Clear(Op&) { mem_ = Memory{}; }

std::vector<int> Model::Prompt(int seq) const {
  if (!HasAttention(params_.model)) return mem_.recr[seq].tokens;
  std::vector<std::pair<int, int>> held;  // (pos, token)
  for (const Cell& c : mem_.cells)
    if ((c.seqs >> seq) & 1) held.emplace_back(c.pos, c.token);
  std::sort(held.begin(), held.end());
  std::vector<int> out;
  for (const auto& [pos, token] : held) out.push_back(token);
  return out;
}

std::optional<int> Model::FileLoadStop(const Op& op) const {
  const Saved& s = saved_[op.slot];
  if (s.form != StateForm::kFile) return std::nullopt;
  if (op.tokens_out == TokensOut::kCountOnly) return 2;
  if (op.tokens_out == TokensOut::kShort && !s.tokens.empty()) return 0;
  return std::nullopt;
}

void Model::SaveSeq(Op& op) {
  // llama.h: getting a device state of a sequence invalidates every earlier one of that sequence.
  if (op.form == StateForm::kDevice)
    for (Saved& other : saved_)
      if (other.used && other.form == StateForm::kDevice && other.device_seq == op.seq) other = Saved{};
  Saved& s = saved_[op.slot];
  s = Saved{};
  s.used = true;
  s.form = op.form;
  if (op.form == StateForm::kFile) s.tokens = Prompt(op.seq);
  if (op.form == StateForm::kDevice) s.device_seq = op.seq;
  for (const Cell& c : mem_.cells)
    if ((c.seqs >> op.seq) & 1) s.mem.cells.push_back({c.pos, 1, c.token, c.birth});
  s.mem.recr[0] = mem_.recr[op.seq];
  s.mem.swa_unknown[0] = mem_.swa_unknown[op.seq];
}

bool Model::RestoreRefused(const Op& op) const {
  if (!HasAttention(params_.model)) return false;
  // The destination's stream once the destination is removed (a cell it shares with another sequence stays).
  const uint8_t others = static_cast<uint8_t>(~(1u << op.seq));
  int held = 0;
  for (const Cell& c : mem_.cells)
    for (int s = 0; s < params_.n_seq_max; ++s)
      if ((c.seqs & others) >> s & 1) {
        if (Stream(s) == Stream(op.seq)) ++held;
        if (params_.kv_unified) break;
      }
  return held + static_cast<int>(saved_[op.slot].mem.cells.size()) > kCellsPerStream;
}

void Model::LoadSeq(Op& op) {
  if (const std::optional<int> stop = FileLoadStop(op)) {  // before llama_state_seq_load_file reads any state
    op.expect_ret = *stop;
    return;
  }
  const Saved& s = saved_[op.slot];
  const bool refused = RestoreRefused(op);
  // llama_state_seq_set_data removes the destination sequence first, restored or not.
  const uint8_t bit = static_cast<uint8_t>(1u << op.seq);
  for (Cell& c : mem_.cells) c.seqs &= static_cast<uint8_t>(~bit);
  mem_.cells.erase(std::remove_if(mem_.cells.begin(), mem_.cells.end(), [](const Cell& c) { return c.seqs == 0; }),
                   mem_.cells.end());
  mem_.recr[op.seq] = Recurrent{};
  mem_.swa_unknown[op.seq] = false;
  Unshare(op.seq);
  op.expect_ret = refused ? 0 : 1;
  if (refused) return;  // no room: the sequence is left empty
  int top = -1;
  for (const Cell& c : s.mem.cells) {
    mem_.cells.push_back({c.pos, bit, c.token, c.birth});
    top = std::max(top, c.pos);
  }
  mem_.recr[op.seq] = s.mem.recr[0];
  mem_.swa_unknown[op.seq] = s.mem.swa_unknown[0];
  // A sequence's state leaves out the SWA cache's cells outside the window (llama_kv_cache::state_write: masked
  // cells are not written), so the restored SWA cache holds only the window, the base cache everything.
  if (HasSlidingWindow(params_.model))
    for (const Cell& c : s.mem.cells)
      if (top - c.pos >= kSlidingWindow) mem_.swa_unknown[op.seq] = true;
}

void Model::SaveAll(Op& op) {
  saved_[op.slot] = Saved{true, true, mem_, op.form, {}};
  if (op.form == StateForm::kFile) saved_[op.slot].tokens = Prompt(0);
}

void Model::LoadAll(Op& op) {
  if (const std::optional<int> stop = FileLoadStop(op)) {  // llama_state_load_file refuses before any state
    op.expect_ret = *stop;
    return;
  }
  op.expect_ret = 1;
  mem_ = saved_[op.slot].mem;
}

}  // namespace lifeline::llama
