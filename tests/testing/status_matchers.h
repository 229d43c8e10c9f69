// gtest helpers for lifeline::Status, shared by the test binaries.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "core/status.h"

namespace lifeline::testing_util {

// `s` is OK; otherwise the failure shows it.
inline ::testing::AssertionResult IsOk(const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << s.ToString();
}

// `s` has `code` and a message containing `needle` (any message when `needle` is empty).
inline ::testing::AssertionResult HasStatus(const Status& s, StatusCode code, std::string_view needle = {}) {
  if (s.code() != code) {
    return ::testing::AssertionFailure() << "code is " << StatusCodeName(s.code()) << ", expected "
                                         << StatusCodeName(code) << " (" << s.ToString() << ")";
  }
  if (s.message().find(needle) == std::string::npos) {
    return ::testing::AssertionFailure() << "message '" << s.message() << "' does not mention '" << needle << "'";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace lifeline::testing_util
