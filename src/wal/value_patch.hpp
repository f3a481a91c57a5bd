// Value patches: how a value changed, as the log records a same-size update of it (a row
// whose few fields changed) instead of the whole new value.
//
// Contract
// - A patch turns one value into another of the same size: the value's size, then the
//   byte ranges that differ, each as its offset, its length and its new bytes (sizes
//   and offsets 4 bytes each, little-endian, as the rest of the log). Ranges ascend and
//   never overlap; differing bytes less than kMergeGap apart share one range (a range's
//   header costs more than the equal bytes between them).
// - encodePatch(old, next, buf, patch): old and next must have the same size. Writes the
//   patch into *buf, working storage that it grows to at least next's size and never
//   shrinks (so a buffer reused from write to write is neither reallocated nor cleared),
//   sets *patch to view it there, and returns true when it is smaller than next itself;
//   otherwise returns false (log the whole value then; *patch is then unspecified).
//   Equal values give a patch of no ranges (4 bytes).
// - applyPatch(patch, value): a blind write of the ranges' bytes, so applying a patch
//   twice, or a sequence of patches again over its own result, changes nothing more.
//   Returns false, writing nothing, when the patch is malformed (truncated, ranges out
//   of order, beyond the value, or bytes left over) or is for a value of another size.
// - patchedSize(patch): the size of the value the patch is for (UINT64_MAX when the
//   patch is too short to say).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace vmstore::internal {

inline constexpr size_t kMergeGap = 8;

bool encodePatch(std::span<const uint8_t> old, std::span<const uint8_t> next, std::string* buf,
                 std::string_view* patch);
bool applyPatch(std::string_view patch, std::span<uint8_t> value);
uint64_t patchedSize(std::string_view patch);

}  // namespace vmstore::internal
