// SPDX-License-Identifier: Apache-2.0
// Errors as values: Status for operations that return nothing, Result<T> for
// those that return a value. Libraries return these; only the command-line
// tools turn them into messages and exit codes.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace systole {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller passed something malformed
  kNotFound,         // no such device, backend, file
  kTimeout,          // a wait ran out of time
  kUnavailable,      // the backend or device cannot be used here
  kDeviceError,      // the device reported an error (see the message)
  kDataLoss,         // a file or transfer is truncated or corrupt
  kInternal,         // a bug: an invariant did not hold
  kAborted,          // a run stopped itself (a NaN loss)
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: M must be >= 1"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status ok_status() { return Status(); }

// Inside a catch block: the exception in flight as a kInternal Status,
// "WHERE: what()" ("WHERE: out of memory" for std::bad_alloc), for code
// that must not let an exception leave a thread.
Status current_exception_status(const std::string& where);

// A value or the Status that explains why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "a Result without a value needs an error");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace systole

// Returns the Status of `expr` from the enclosing function when it is an
// error.
#define SYSTOLE_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::systole::Status systole_status_ = (expr);        \
    if (!systole_status_.ok()) return systole_status_; \
  } while (0)
