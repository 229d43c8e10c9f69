// Status and StatusOr: how the layers report bad input. Layers never abort on input they were given;
// they return a status whose message names what was wrong. Internal invariants use LIFELINE_CHECK
// (core/check.h). LIFELINE_RETURN_IF_ERROR and LIFELINE_ASSIGN_OR_RETURN pass a failure up.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace lifeline {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,     // the request itself is malformed
  kNotFound,            // names something that does not exist (unknown slot, job, id)
  kFailedPrecondition,  // valid request, wrong state (cancel after the job finished)
  kResourceExhausted,   // a bound was reached (no free slot)
  kInternal,            // the layer's own fault, reported rather than aborted on
  kUnimplemented,       // valid request the code under test cannot carry out, refused up front
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NOT_FOUND: context slot 2 is not bound"
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }

// A value or the status that explains why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace lifeline

// Returns the status of `expr` (a Status) from the enclosing function when it is not OK.
#define LIFELINE_RETURN_IF_ERROR(expr)                                     \
  do {                                                                     \
    ::lifeline::Status lifeline_status_ = (expr);                          \
    if (!lifeline_status_.ok()) return lifeline_status_;                   \
  } while (0)

// Evaluates `expr` (a StatusOr<T>): returns its status from the enclosing function when it is not OK,
// else moves the value into `lhs` (a declaration such as `auto x` or an existing variable).
#define LIFELINE_ASSIGN_OR_RETURN(lhs, expr) \
  LIFELINE_ASSIGN_OR_RETURN_IMPL_(LIFELINE_STATUS_CONCAT_(lifeline_statusor_, __LINE__), lhs, expr)
#define LIFELINE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.ok()) return tmp.status();                   \
  lhs = std::move(tmp).value()
#define LIFELINE_STATUS_CONCAT_(a, b) LIFELINE_STATUS_CONCAT_INNER_(a, b)
#define LIFELINE_STATUS_CONCAT_INNER_(a, b) a##b
