// vmstore's documented limits. Exceeding one is a TooBig error with nothing written.
#pragma once

#include <cstddef>

namespace vmstore {

inline constexpr size_t kPageSize = 4096;
// Keys are 1 .. kMaxKeySize bytes (the empty key is rejected as InvalidArgument).
inline constexpr size_t kMaxKeySize = 1024;
// Values are 0 .. kMaxValueSize bytes. Values that do not fit beside their key in a
// B+tree leaf are stored in a page of their own.
inline constexpr size_t kMaxValueSize = 4000;
// Tree names are 0 .. kMaxTreeNameSize bytes; "" is the default tree.
inline constexpr size_t kMaxTreeNameSize = 255;
// Tree::getMany / vms_get_many run at most this many lookups at once per call.
inline constexpr size_t kGetManyInFlight = 64;

}  // namespace vmstore
