// status.h — Status and Result<T> for anything a user can cause (config,
// data, checkpoints, launch). Messages name the file, line or key.
#pragma once
#include <fmt/format.h>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace mt {

class Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string msg) { Status s; s.msg_ = std::move(msg); s.failed_ = true; return s; }
  template <typename... Args>
  static Status errorf(fmt::format_string<Args...> f, Args&&... args) {
    return error(fmt::format(f, std::forward<Args>(args)...));
  }
  bool is_ok() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string& message() const { return msg_; }

 private:
  std::string msg_;
  bool failed_ = false;
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Status s) : v_(std::move(s)) {}
  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  Status status() const { return is_ok() ? Status::ok() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace mt

// Propagate a failed Status from an expression returning Status.
#define MT_RETURN_IF_ERROR(expr)               \
  do {                                         \
    ::mt::Status mt_status_ = (expr);          \
    if (!mt_status_.is_ok()) return mt_status_; \
  } while (0)
