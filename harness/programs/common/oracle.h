// What every executor checks alike: each op's status against the model's prediction, in one wording, and
// where an oracle's verdict was reached.
#pragma once

#include <string>

#include "core/check.h"
#include "core/status.h"

namespace lifeline::programs {

// The status oracle: `op` returned `got`; the model predicted `predicted`. Fails a LIFELINE_CHECK
// "status oracle: <Describe(op)> returned <got>, model predicted <predicted>" when they differ; the op's
// description (found by argument-dependent lookup) is built only then.
template <typename Op>
void CheckStatus(const Op& op, const Status& got, StatusCode predicted) {
  LIFELINE_CHECK(got.code() == predicted, "status oracle: " + Describe(op) + " returned " + got.ToString() +
                                              ", model predicted " + std::string(StatusCodeName(predicted)));
}

// The status oracle on a call that returns a value, then, when it succeeded, the value against the model's
// prediction: "<what> <value>, model predicted <expected>" (e.g. what = "Init returned slot").
template <typename Op, typename T, typename E>
void CheckReturned(const Op& op, const StatusOr<T>& got, StatusCode predicted, const char* what, const E& expected) {
  CheckStatus(op, got.status(), predicted);
  if (got.ok()) {
    LIFELINE_CHECK(got.value() == expected, std::string(what) + " " + std::to_string(got.value()) +
                                                ", model predicted " + std::to_string(expected));
  }
}

// `verdict` with `where` (e.g. "teardown: ") in front of its message.
inline Status At(const std::string& where, const Status& verdict) {
  return verdict.ok() ? verdict : Status(verdict.code(), where + verdict.message());
}

// "op 3 (<Describe(op)>): ": where in the program a check failed, for its message.
template <typename Op>
std::string Where(size_t index, const Op& op) {
  return "op " + std::to_string(index) + " (" + Describe(op) + "): ";
}

// `verdict` with Where(index, op) in front of its message; the op is described only when it failed.
template <typename Op>
Status At(size_t index, const Op& op, const Status& verdict) {
  return verdict.ok() ? verdict : At(Where(index, op), verdict);
}

}  // namespace lifeline::programs
