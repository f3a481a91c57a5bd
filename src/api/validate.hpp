// Checks of user input shared by every entry point: the same errors for the same input.
//
// Contract: OK, or InvalidArgument (the empty key) / TooBig (beyond vmstore/limits.hpp)
// with a message naming the size and the limit.
#pragma once

#include <string>
#include <string_view>

#include "vmstore/limits.hpp"
#include "vmstore/status.hpp"

namespace vmstore::internal {

// The errors, out of line (every call checks its key; the check itself stays inline).
[[gnu::noinline, gnu::cold]] inline Status badKey(std::string_view key) {
  if (key.empty()) return Status::InvalidArgument("the empty key is not allowed");
  return Status::TooBig("key of " + std::to_string(key.size()) + " bytes exceeds the maximum of " +
                        std::to_string(kMaxKeySize));
}
[[gnu::noinline, gnu::cold]] inline Status badValue(std::string_view value) {
  return Status::TooBig("value of " + std::to_string(value.size()) + " bytes exceeds the maximum of " +
                        std::to_string(kMaxValueSize));
}

inline Status validateKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeySize) [[unlikely]] return badKey(key);
  return Status::OK();
}

inline Status validateValue(std::string_view value) {
  if (value.size() > kMaxValueSize) [[unlikely]] return badValue(value);
  return Status::OK();
}

}  // namespace vmstore::internal
