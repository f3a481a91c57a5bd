// vmstore's documented limits. Exceeding one is a TooBig error with nothing written.
#pragma once

#include <cstddef>

namespace vmstore {

inline constexpr size_t kPageSize = 4096;
// Keys are 1 .. kMaxKeySize bytes (the empty key is rejected as InvalidArgument).
inline constexpr size_t kMaxKeySize = 1024;
// Values are 0 .. kMaxValueSize bytes (1 GiB). Values that do not fit beside their key
// in a B+tree leaf are stored in a page of their own, a variable-size page of as many
// 4 KiB pages as they need, contiguous in memory; one value may take at most half of the
// buffer pool (larger: NoMemory, "open with a pool_size of at least ...").
inline constexpr size_t kMaxValueSize = size_t{1} << 30;
// Tree names are 0 .. kMaxTreeNameSize bytes; "" is the default tree.
inline constexpr size_t kMaxTreeNameSize = 255;
// Tree::getMany / vms_get_many run at most this many lookups at once per call.
inline constexpr size_t kGetManyInFlight = 64;

}  // namespace vmstore
