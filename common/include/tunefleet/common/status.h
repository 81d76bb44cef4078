// Status and Result<T>: tunefleet's one error vocabulary.
// A code tells the caller what to do: kInvalidArgument = fix the input, kUnavailable =
// retry with backoff, kFailedPrecondition = give up. RocksDB, ZeroMQ and Cap'n Proto
// errors are converted to Status in exactly one place each (kb/store.cc, transport.cc,
// wire.cc). Values; safe to copy and move between threads.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tunefleet {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kUnavailable = 3,
  kFailedPrecondition = 4,
  kInternal = 5,
  kAlreadyExists = 6,
  kDeadlineExceeded = 7,
  kResourceExhausted = 8,
  kPermissionDenied = 9,  // the peer's CURVE role may not make this request
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: baseM=48 is not a multiple of 16"
  std::string ToString() const;

  // Returns a copy whose message is "context: message".
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }

// Exit codes every tunefleet binary uses for a failure: kExitBadInput when the user must
// fix something (an argument, a file, a key list: kInvalidArgument, kNotFound,
// kPermissionDenied), kExitFailure for operational failures worth retrying.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
// tunefleet-coordinator only: its scheduling loop stopped turning and the watchdog ended
// the process for its supervisor to restart (coordinator/loop_watchdog.h).
inline constexpr int kExitLoopStalled = 5;  // apart from the CLI's 3 and 4
int ExitCodeFor(const Status& status);

// An error text as a reply, the log or a terminal carries it: a refusal may quote what it
// was given (a 20 MB dtype string made a 31 MB log line and reply), so past `max`
// characters the middle is cut, the start (what is wrong) and the end (what to do) kept.
std::string Clipped(const std::string& text, size_t max = 2000);

// Either a T or a non-OK Status. Accessing value() of an error is a bug (asserts).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status has no value");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  const T& value() const& { assert(ok()); return std::get<T>(v_); }
  T& value() & { assert(ok()); return std::get<T>(v_); }
  T&& value() && { assert(ok()); return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tunefleet

// Propagates a non-OK Status from an expression returning Status.
#define TF_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::tunefleet::Status tf_status_ = (expr);     \
    if (!tf_status_.ok()) return tf_status_;     \
  } while (0)

#define TF_CONCAT_INNER_(a, b) a##b
#define TF_CONCAT_(a, b) TF_CONCAT_INNER_(a, b)
// TF_ASSIGN_OR_RETURN(auto x, MaybeX()); declares x or returns the error.
#define TF_ASSIGN_OR_RETURN(lhs, expr) \
  TF_ASSIGN_OR_RETURN_IMPL_(TF_CONCAT_(tf_result_, __LINE__), lhs, expr)
#define TF_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
