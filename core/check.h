// Always-on checks. Never compiled out, whatever NDEBUG says.
//
//   LIFELINE_CHECK(cond, msg)         an invariant of the code under test or an oracle: a failure is a
//                                     finding ("LIFELINE_CHECK failed").
//   LIFELINE_CHECK_OK(verdict)        an oracle's verdict (a Status, harness/oracles/): a failure is a
//                                     finding whose message is the verdict's message.
//   LIFELINE_PRECONDITION(cond, msg)  misuse of the harness by its caller ("LIFELINE_PRECONDITION
//                                     failed"): a bug in a test or target, not in the system under test.
//
// Both print file, line, condition and `msg` (evaluated only on failure), then — when upstream code produced
// what the check looks at (SetUpstreamContext) — an "upstream:" line naming those calls, then — when an
// OpTraceScope is active on the failing thread — the op index and the decoded op trace, then a stack trace,
// and abort. The report format is parsed by cli/lifeline/crash.py; keep them in step.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include "core/status.h"

namespace lifeline {

// Registers the decoded program of the current fuzz iteration or test on this thread, so a failing check
// can print which op was running and the whole trace. `render(program, current, out)` prints one line
// per op and marks op `current` with "=>".
class OpTraceScope {
 public:
  using Render = void (*)(const void* program, size_t current, std::FILE* out);
  OpTraceScope(const void* program, size_t op_count, Render render);
  ~OpTraceScope();
  OpTraceScope(const OpTraceScope&) = delete;
  OpTraceScope& operator=(const OpTraceScope&) = delete;

  // The op now running; it clears the upstream context (SetUpstreamContext) the previous op left.
  void set_op(size_t index);
  // Called by the check failure path.
  void Print(std::FILE* out) const;

 private:
  const void* program_;
  size_t op_count_;
  Render render_;
  size_t op_index_ = 0;
  OpTraceScope* outer_;
};

// What upstream did to produce the state the checks of the current op look at, for the report's "upstream:"
// line: the upstream calls involved, separated by " / ", each with what held when it ran, in brackets (e.g.
// "ggml_gallocr_alloc_graph [kept plan; edges changed]"). cli/lifeline/crash.py makes them the crash state of a
// LIFELINE_CHECK report, beside the oracle's kind, so that an oracle finding's signature names its mechanism
// in upstream's terms rather than the oracle's own frame. Per thread; OpTraceScope::set_op clears it.
void SetUpstreamContext(std::string calls);
void AddUpstreamCall(const std::string& call);  // appends " / <call>"
void ClearUpstreamContext();

namespace internal {
enum class CheckKind { kInvariant, kPrecondition };
[[noreturn]] void CheckFailed(CheckKind kind, const char* file, int line, const char* condition,
                              const std::string& message);
// Prints the calling thread's stack in the sanitizer format ("#N 0xPC in function file:line").
void PrintStackTrace(std::FILE* out);
// The op trace of the innermost OpTraceScope on this thread, if any (as a failing check prints it); for
// reports of code that cannot call LIFELINE_CHECK, such as upstream's own assertions.
void PrintCurrentTrace(std::FILE* out);
}  // namespace internal

}  // namespace lifeline

#define LIFELINE_CHECK(cond, msg)                                                                   \
  do {                                                                                              \
    if (__builtin_expect(!(cond), 0))                                                               \
      ::lifeline::internal::CheckFailed(::lifeline::internal::CheckKind::kInvariant, __FILE__,      \
                                        __LINE__, #cond, (msg));                                    \
  } while (0)

#define LIFELINE_PRECONDITION(cond, msg)                                                            \
  do {                                                                                              \
    if (__builtin_expect(!(cond), 0))                                                               \
      ::lifeline::internal::CheckFailed(::lifeline::internal::CheckKind::kPrecondition, __FILE__,   \
                                        __LINE__, #cond, (msg));                                    \
  } while (0)

#define LIFELINE_CHECK_OK(verdict)                                                                 \
  do {                                                                                             \
    const ::lifeline::Status lifeline_verdict_ = (verdict);                                        \
    if (__builtin_expect(!lifeline_verdict_.ok(), 0))                                              \
      ::lifeline::internal::CheckFailed(::lifeline::internal::CheckKind::kInvariant, __FILE__,     \
                                        __LINE__, #verdict, lifeline_verdict_.message());          \
  } while (0)
