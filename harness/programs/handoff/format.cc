// The string-handoff programs' decoder: how bytes become ops. Every choice goes through the model
// (model.h), which says what is legal now and predicts each op's outcome.
#include "harness/programs/handoff/format.h"

#include <utility>

#include "harness/programs/common/decode.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/handoff/model.h"
#include "layers/interop/job_api.h"

namespace lifeline::handoff {
namespace {

using programs::Source;
using programs::Unencodable;

// Mostly raw bytes (empty, short, long, non-ASCII, embedded NUL all come from here); sometimes a language
// whisper knows (its table, layers/interop/job_api.h), so valid ids are common without a dictionary.
std::string DecodeLanguage(Source& src, const std::string& want) {
  auto known = [&]() -> int {
    for (int i = 0; i < interop::LangCount(); ++i)
      if (want == interop::LangCode(i)) return i;
    return -1;
  };
  // Encoding writes a known code as one (case 0) and any other bytes as bytes (case 1).
  switch (src.Int<int>(0, 3, [&] { return known() >= 0 ? 0 : 1; })) {
    case 0: return std::string(interop::LangCode(src.Int<int>(0, interop::LangCount() - 1, known)));
    default: {
      size_t n = src.Int<size_t>(0, kMaxLangBytes, [&] { return want.size(); });
      return src.String(n, [&] { return want; });
    }
  }
}

void DecodeSubmit(Source& src, Op& op, const Op& want) {
  op.slot = src.Int<uint8_t>(0, kSlots - 1, [&] { return want.slot; });
  op.language = DecodeLanguage(src, want.language);
  size_t samples = src.Int<size_t>(0, kMaxAudioSamples, [&] { return want.audio.size(); });
  for (size_t i = 0; i < samples; ++i) {
    op.audio.push_back(src.Full<int8_t>([&] {
      const float v = want.audio[i] * 8.0f;
      if (v != static_cast<float>(static_cast<int8_t>(v))) throw Unencodable("an audio sample that is not k/8 for an int8 k");
      return static_cast<int8_t>(v);
    }) / 8.0f);
  }
  op.n_threads = src.Int<int>(0, kMaxThreads, [&] { return want.n_threads; });
  op.translate = src.Bool([&] { return want.translate; });
}

// Both directions: decoding when `target` is null, else encoding it (its id form) into `src`.
Program Run(Source& src, const Program* target) {
  Model m;
  std::vector<uint32_t> job_of;  // encoding: the job id each target op submitted (0: none)
  // Bind and the submits are always legal.
  return programs::DecodeOps<Op>(src, kMaxOps, m, [&](Op& op, const Op& want, size_t i) {
    switch (op.kind) {
      case OpKind::kBind:
        op.multilingual = src.Bool([&] { return want.multilingual; });
        m.Bind(op);
        break;
      case OpKind::kRebind:
        op.slot = programs::PickFrom(src, m.BoundSlots(), [&] { return want.slot; });
        op.multilingual = src.Bool([&] { return want.multilingual; });
        m.Rebind(op);
        break;
      case OpKind::kSubmitAsync:
      case OpKind::kSubmitSync:
        DecodeSubmit(src, op, want);
        m.Submit(op);
        break;
      case OpKind::kStart:
      case OpKind::kCancel:
      case OpKind::kJoin:
        m.JobOp(programs::Pick(src, m.jobs.size(), [&] {
          if (want.job >= job_of.size() || job_of[want.job] == 0)
            throw Unencodable("names the job of op #" + std::to_string(want.job) + ", which submitted none before it");
          for (size_t k = 0; k < m.jobs.size(); ++k)
            if (m.jobs[k].id == job_of[want.job]) return k;
          throw Unencodable("the job of op #" + std::to_string(want.job) + " is no longer in flight");
        }), op);
        break;
    }
    if (src.encoding()) {
      job_of.resize(i + 1, 0);
      if (op.kind == OpKind::kSubmitAsync && op.expect == StatusCode::kOk) job_of[i] = op.job;
    }
  }, target);
}

}  // namespace

Program Decode(const uint8_t* data, size_t size) {
  Source src(data, size);
  return Run(src, nullptr);
}

Program ToIds(const Program& program) {
  Program out = program;
  std::vector<std::pair<uint32_t, size_t>> submitted;  // job id -> op
  for (size_t i = 0; i < program.size(); ++i) {
    const Op& op = program[i];
    if (op.kind == OpKind::kSubmitAsync && op.expect == StatusCode::kOk) submitted.emplace_back(op.job, i);
    if (op.kind == OpKind::kStart || op.kind == OpKind::kCancel || op.kind == OpKind::kJoin) {
      for (const auto& [job, at] : submitted)
        if (job == op.job) out[i].job = static_cast<uint32_t>(at);
    }
  }
  return out;
}

bool SameOp(const Op& a, const Op& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case OpKind::kBind: return a.multilingual == b.multilingual;
    case OpKind::kRebind: return a.slot == b.slot && a.multilingual == b.multilingual;
    case OpKind::kSubmitAsync:
    case OpKind::kSubmitSync:
      return a.slot == b.slot && a.language == b.language && a.audio == b.audio && a.n_threads == b.n_threads &&
             a.translate == b.translate;
    default: return a.job == b.job;
  }
}

std::vector<uint8_t> Encode(const Program& target) {
  return programs::EncodeChecked(
      target, [&](Source& src) { Run(src, &target); },
      [](const std::vector<uint8_t>& b) { return ToIds(Decode(b.data(), b.size())); }, SameOp);
}

const char* const kOpNames[] = {"bind", "rebind", "submit-async", "submit-sync", "start", "cancel", "join"};

std::string Describe(const Op& op) {
  std::string out = programs::NameOf(kOpNames, op.kind);
  switch (op.kind) {
    case OpKind::kBind:
    case OpKind::kRebind:
      if (op.kind == OpKind::kRebind) out += " slot=" + std::to_string(op.slot);
      out += op.multilingual ? " multilingual" : " english-only";
      if (op.expect == StatusCode::kOk) out += " -> slot " + std::to_string(op.expect_slot);
      break;
    case OpKind::kSubmitAsync:
    case OpKind::kSubmitSync:
      out += " slot=" + std::to_string(op.slot) + " lang=" + programs::Quote(op.language) + " (" +
             std::to_string(op.language.size()) + " B, " +
             (op.language.size() <= 15 ? "inline" : "heap") + ") audio=" +
             std::to_string(op.audio.size()) + " threads=" + std::to_string(op.n_threads) +
             (op.translate ? " translate" : "");
      if (op.expect == StatusCode::kOk) {
        out += " -> sees " + programs::Quote(op.expect_language);
        if (op.kind == OpKind::kSubmitAsync) out += " as job " + std::to_string(op.job);
      }
      break;
    case OpKind::kStart:
    case OpKind::kCancel:
    case OpKind::kJoin:
      out += " job " + std::to_string(op.job);
      if (op.kind == OpKind::kJoin && op.expect_cancelled) out += " (cancelled)";
      break;
  }
  if (op.expect != StatusCode::kOk) out += " -> " + std::string(StatusCodeName(op.expect));
  return out;
}

std::string Describe(const Program& program) { return programs::DescribeNumbered(program); }

}  // namespace lifeline::handoff
