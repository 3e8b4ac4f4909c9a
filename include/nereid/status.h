// Status and StatusOr: the one error type of Nereid, shared by the core, the frontends and the
// backend plugins (header-only so a plugin needs nothing but this folder).
//
// Codes follow Triton's error codes, which map one to one onto gRPC codes and HTTP statuses
// (see src/frontends/*/status_mapping). The detail is in the message.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace nereid {

enum class StatusCode : unsigned char {
  kOk = 0,
  kUnknown,           // HTTP 400, gRPC UNKNOWN
  kInternal,          // HTTP 500, gRPC INTERNAL
  kNotFound,          // HTTP 404, gRPC NOT_FOUND
  kInvalidArgument,   // HTTP 400, gRPC INVALID_ARGUMENT
  kUnavailable,       // HTTP 503, gRPC UNAVAILABLE
  kUnsupported,       // HTTP 501, gRPC UNIMPLEMENTED
  kAlreadyExists,     // HTTP 400, gRPC ALREADY_EXISTS
  kCancelled,         // HTTP 400, gRPC CANCELLED
  kPermissionDenied,  // HTTP 403, gRPC UNAVAILABLE (Triton's restricted-API answer)
};

// Immutable result of an operation. Cheap to copy when OK (no allocation).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Triton's text form, e.g. "Invalid argument: unexpected shape", used for repository reasons.
  std::string ToString() const {
    if (ok()) return "OK";
    return std::string(CodeName(code_)) + ": " + message_;
  }

  static std::string_view CodeName(StatusCode code) {
    switch (code) {
      case StatusCode::kOk:
        return "OK";
      case StatusCode::kUnknown:
        return "Unknown";
      case StatusCode::kInternal:
        return "Internal";
      case StatusCode::kNotFound:
        return "Not found";
      case StatusCode::kInvalidArgument:
        return "Invalid argument";
      case StatusCode::kUnavailable:
        return "Unavailable";
      case StatusCode::kUnsupported:
        return "Unsupported";
      case StatusCode::kAlreadyExists:
        return "Already exists";
      case StatusCode::kCancelled:
        return "Cancelled";
      case StatusCode::kPermissionDenied:
        return "Permission denied";
    }
    return "Unknown";
  }

  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string msg) {
  return Status(StatusCode::kInvalidArgument, std::move(msg));
}
inline Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
inline Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }
inline Status Unavailable(std::string msg) {
  return Status(StatusCode::kUnavailable, std::move(msg));
}
inline Status Unsupported(std::string msg) {
  return Status(StatusCode::kUnsupported, std::move(msg));
}
inline Status AlreadyExists(std::string msg) {
  return Status(StatusCode::kAlreadyExists, std::move(msg));
}
inline Status UnknownError(std::string msg) { return Status(StatusCode::kUnknown, std::move(msg)); }

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // An OK status carries no value, so it becomes an Internal error in every build type: a caller
  // that checks ok() never reads a value that is not there.
  StatusOr(Status status)  // NOLINT: implicit by design
      : v_(status.ok() ? Internal("StatusOr built from an OK status") : std::move(status)) {}
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace nereid

#define NEREID_STATUS_CONCAT_INNER_(a, b) a##b
#define NEREID_STATUS_CONCAT_(a, b) NEREID_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define NEREID_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::nereid::Status nereid_status_ = (expr);        \
    if (!nereid_status_.ok()) return nereid_status_; \
  } while (0)

// `lhs = value of expr` (a StatusOr), or returns its Status.
#define NEREID_ASSIGN_OR_RETURN(lhs, expr) \
  NEREID_ASSIGN_OR_RETURN_IMPL_(NEREID_STATUS_CONCAT_(nereid_statusor_, __LINE__), lhs, expr)
#define NEREID_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
