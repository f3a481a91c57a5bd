// CRC-32C (Castagnoli) of a byte range: the page checksum. Uses the SSE4.2 crc32
// instruction when the CPU has it (checked once), a table otherwise; all give the same
// value. With the instruction, a range of 4,080 bytes or more (a page's checksum sums
// 4,088) is summed as three lanes side by side, joined by table lookups (about three
// times the speed of one lane).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vmstore::internal {

uint32_t crc32c(const void* data, size_t len);
// The CRC-32C of (the bytes whose CRC-32C is crc) followed by data:
// crc32cExtend(crc32c(a), b) == crc32c(a || b).
uint32_t crc32cExtend(uint32_t crc, const void* data, size_t len);

}  // namespace vmstore::internal
