// vmstore::Status: the result of every public call.
//
// A Status carries a code (the same numbers as the C API's VMS_* constants, or a code of
// the caller's that an update function aborted with, see Tree::update) and, for errors,
// a message saying what went wrong and where. ok() is true only for Code::kOk;
// Code::kNotFound is a normal outcome (absent key, missing tree, end of iteration),
// not a failure of the engine. A status without a message (every OK one) holds no
// string at all: creating, moving and destroying it is a few instructions.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace vmstore {

class Status {
 public:
  enum class Code : int {
    kOk = 0,
    kNotFound = 1,
    kInvalidArgument = -1,
    kIOError = -2,
    kCorruption = -3,
    kNoSpace = -4,
    kTooBig = -5,
    kNoMemory = -6,
    kBusy = -7,
  };

  Status() = default;
  Status(Code code, std::string message)
      : code_(code), message_(message.empty() ? nullptr : std::make_unique<std::string>(std::move(message))) {}
  Status(const Status& o) : code_(o.code_), message_(o.message_ ? std::make_unique<std::string>(*o.message_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) {
      code_ = o.code_;
      message_ = o.message_ ? std::make_unique<std::string>(*o.message_) : nullptr;
    }
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }
  static Status NotFound(std::string m = {}) { return {Code::kNotFound, std::move(m)}; }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status IOError(std::string m) { return {Code::kIOError, std::move(m)}; }
  static Status Corruption(std::string m) { return {Code::kCorruption, std::move(m)}; }
  static Status NoSpace(std::string m) { return {Code::kNoSpace, std::move(m)}; }
  static Status TooBig(std::string m) { return {Code::kTooBig, std::move(m)}; }
  static Status NoMemory(std::string m) { return {Code::kNoMemory, std::move(m)}; }
  static Status Busy(std::string m) { return {Code::kBusy, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  bool isNotFound() const { return code_ == Code::kNotFound; }
  Code code() const { return code_; }
  int rawCode() const { return static_cast<int>(code_); }
  const std::string& message() const { return message_ ? *message_ : kNoMessage; }

  // The name of the code, e.g. "corruption" (same text as vms_strerror).
  static const char* codeName(int code);
  // "corruption: page 17: checksum mismatch"
  std::string toString() const;

 private:
  static inline const std::string kNoMessage;
  Code code_ = Code::kOk;
  std::unique_ptr<std::string> message_;  // null when there is none
};

}  // namespace vmstore
