// The page-reference trace format (issue 10 item 4): what `trace=FILE` records and
// `vmstore sim` replays.
//
// File layout (little endian)
//   "VMSTRC01"                         8 bytes, the magic and version
//   blocks, each:
//     u32 records, u32 payload bytes   a block header
//     payload                          `records` references, each one LEB128 varint of
//                                      zigzag(pid - previous pid) * 2 + miss, the previous
//                                      pid being 0 at the start of every block
// A block is what one thread recorded since its last block: references are in order
// within a thread; blocks of different threads interleave in the order they were
// written. `miss` is 1 when the access made the page resident (read in, read ahead or
// newly allocated), 0 when it found it resident.
//
// Contract
// - encodeReference appends one reference to a payload; decodeBlock decodes a whole
//   payload, returning false (and saying why in *error) on a truncated or malformed
//   varint, a record count that does not match, or a pid outside 0..2^62.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vmstore::internal {

inline constexpr char kTraceMagic[8] = {'V', 'M', 'S', 'T', 'R', 'C', '0', '1'};
inline constexpr size_t kTraceBlockHeader = 8;

struct TraceRef {
  uint64_t pid;
  bool miss;
};

// Appends the reference (pid, miss) to `payload`; *prev is the previous pid of the block
// (0 at its start) and becomes pid.
void encodeReference(std::vector<uint8_t>& payload, uint64_t* prev, uint64_t pid, bool miss);

// Decodes `records` references from payload[0..bytes) into out (appended).
bool decodeBlock(const uint8_t* payload, size_t bytes, uint32_t records, std::vector<TraceRef>* out,
                 std::string* error);

// The 8-byte block header for (records, bytes).
void encodeBlockHeader(uint8_t out[kTraceBlockHeader], uint32_t records, uint32_t bytes);
void decodeBlockHeader(const uint8_t in[kTraceBlockHeader], uint32_t* records, uint32_t* bytes);

}  // namespace vmstore::internal
