// vmstore::Status: the result of every public call.
//
// A Status carries a code (the same numbers as the C API's VMS_* constants, or a code of
// the caller's that an update function aborted with, see Tree::update) and, for errors,
// a message saying what went wrong and where. ok() is true only for Code::kOk;
// Code::kNotFound is a normal outcome (absent key, missing tree, end of iteration),
// not a failure of the engine. Statuses are cheap to copy when ok.
#pragma once

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
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

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
  const std::string& message() const { return message_; }

  // The name of the code, e.g. "corruption" (same text as vms_strerror).
  static const char* codeName(int code);
  // "corruption: page 17: checksum mismatch"
  std::string toString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

}  // namespace vmstore
