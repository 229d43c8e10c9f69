// The string-handoff programs' decoder: how bytes become ops. Every choice goes through the model
// (model.h), which says what is legal now and predicts each op's outcome.
#include "harness/programs/handoff/format.h"

#include <fuzzer/FuzzedDataProvider.h>

#include "harness/programs/common/decode.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/handoff/model.h"
#include "layers/interop/job_api.h"

namespace lifeline::handoff {
namespace {

// Mostly raw bytes (empty, short, long, non-ASCII, embedded NUL all come from here); sometimes a language
// whisper knows (its table, layers/interop/job_api.h), so valid ids are common without a dictionary.
std::string DecodeLanguage(FuzzedDataProvider& fdp) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return std::string(interop::LangCode(fdp.ConsumeIntegralInRange<int>(0, interop::LangCount() - 1)));
    default: {
      size_t n = fdp.ConsumeIntegralInRange<size_t>(0, kMaxLangBytes);
      return fdp.ConsumeBytesAsString(n);
    }
  }
}

void DecodeSubmit(FuzzedDataProvider& fdp, Op& op) {
  op.slot = fdp.ConsumeIntegralInRange<uint8_t>(0, kSlots - 1);
  op.language = DecodeLanguage(fdp);
  size_t samples = fdp.ConsumeIntegralInRange<size_t>(0, kMaxAudioSamples);
  for (size_t i = 0; i < samples; ++i) op.audio.push_back(fdp.ConsumeIntegral<int8_t>() / 8.0f);
  op.n_threads = fdp.ConsumeIntegralInRange<int>(0, kMaxThreads);
  op.translate = fdp.ConsumeBool();
}

}  // namespace

Program Decode(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  Model m;
  // Bind and the submits are always legal.
  return programs::DecodeOps<Op>(fdp, kMaxOps, m, [&](Op& op) {
    switch (op.kind) {
      case OpKind::kBind:
        op.multilingual = fdp.ConsumeBool();
        m.Bind(op);
        break;
      case OpKind::kRebind:
        op.slot = programs::PickFrom(fdp, m.BoundSlots());
        op.multilingual = fdp.ConsumeBool();
        m.Rebind(op);
        break;
      case OpKind::kSubmitAsync:
      case OpKind::kSubmitSync:
        DecodeSubmit(fdp, op);
        m.Submit(op);
        break;
      case OpKind::kStart:
      case OpKind::kCancel:
      case OpKind::kJoin:
        m.JobOp(programs::Pick(fdp, m.jobs.size()), op);
        break;
    }
  });
}

namespace {

constexpr const char* kOpNames[] = {"bind", "rebind", "submit-async", "submit-sync", "start", "cancel", "join"};

}  // namespace

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
