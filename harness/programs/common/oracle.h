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

// `verdict` with `where` (e.g. "op 3 (compute ctx0 [...]): ") in front of its message.
inline Status At(const std::string& where, const Status& verdict) {
  return verdict.ok() ? verdict : Status(verdict.code(), where + verdict.message());
}

}  // namespace lifeline::programs
