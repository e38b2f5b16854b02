//===- Expected.h - Errors as values in the runtime libraries ---*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The driver's and the data library's units return errors instead of
// exiting: a Status (ok, or a one-line message) or an Expected<T> (a value,
// or that message). Only a tool's main() decides to print it and exit.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_EXPECTED_H
#define INFIR2_RUNTIME_EXPECTED_H

#include <cassert>
#include <cstdarg>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

namespace infir2::rt {

/// A failure's one-line message, as a unit returns it.
struct Failure {
  std::string message;
};

/// printf-style formatting into a Failure.
[[gnu::format(printf, 1, 2)]] inline Failure fail(const char *fmt, ...) {
  va_list args, copy;
  va_start(args, fmt);
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string s(n > 0 ? size_t(n) : 0, '\0');
  if (n > 0)
    std::vsnprintf(s.data(), s.size() + 1, fmt, args);
  va_end(args);
  return Failure{std::move(s)};
}

/// Success, or a failure's message.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Failure f) : error_(std::move(f.message)) {}
  static Status ok() { return Status(); }

  explicit operator bool() const { return !error_; }
  const std::string &message() const {
    assert(error_ && "message() of a successful Status");
    return *error_;
  }

private:
  std::optional<std::string> error_;
};

/// A value, or a failure's message.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : value_(std::move(value)) {}
  Expected(Failure f) : error_(std::move(f.message)) {}

  explicit operator bool() const { return value_.has_value(); }
  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }
  const std::string &message() const { return error_; }
  /// The failure, to pass on from a function returning another type.
  Failure failure() const { return Failure{error_}; }

private:
  std::optional<T> value_;
  std::string error_;
};

} // namespace infir2::rt

/// Returns a failed Status (or anything a Failure converts to) early.
#define INFIR2_RETURN_IF_ERROR(expr)                                           \
  do {                                                                         \
    if (::infir2::rt::Status status_ = (expr); !status_)                       \
      return ::infir2::rt::Failure{status_.message()};                         \
  } while (0)

#endif // INFIR2_RUNTIME_EXPECTED_H
