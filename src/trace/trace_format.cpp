#include "trace/trace_format.hpp"

#include <cstring>

namespace vmstore::internal {

namespace {

constexpr uint64_t kMaxPid = 1ull << 62;

void putU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t getU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

void encodeReference(std::vector<uint8_t>& payload, uint64_t* prev, uint64_t pid, bool miss) {
  int64_t delta = static_cast<int64_t>(pid - *prev);
  uint64_t zz = (static_cast<uint64_t>(delta) << 1) ^ static_cast<uint64_t>(delta >> 63);
  // zigzag * 2 + miss: pids are below 2^62, so the zigzag of a delta fits in 63 bits.
  uint64_t v = (zz << 1) | (miss ? 1 : 0);
  while (v >= 0x80) {
    payload.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  payload.push_back(static_cast<uint8_t>(v));
  *prev = pid;
}

bool decodeBlock(const uint8_t* payload, size_t bytes, uint32_t records, std::vector<TraceRef>* out,
                 std::string* error) {
  size_t pos = 0;
  uint64_t prev = 0;
  for (uint32_t r = 0; r < records; r++) {
    uint64_t v = 0;
    int shift = 0;
    for (;;) {
      if (pos >= bytes) {
        *error = "block truncated at reference " + std::to_string(r) + " of " + std::to_string(records);
        return false;
      }
      uint8_t b = payload[pos++];
      if (shift > 63 || (shift == 63 && (b & 0x7e) != 0)) {
        *error = "malformed varint at reference " + std::to_string(r);
        return false;
      }
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
      shift += 7;
    }
    bool miss = v & 1;
    uint64_t zz = v >> 1;
    int64_t delta = static_cast<int64_t>(zz >> 1) ^ -static_cast<int64_t>(zz & 1);
    uint64_t pid = prev + static_cast<uint64_t>(delta);
    if (pid >= kMaxPid) {
      *error = "page id out of range at reference " + std::to_string(r);
      return false;
    }
    out->push_back({pid, miss});
    prev = pid;
  }
  if (pos != bytes) {
    *error = "block has " + std::to_string(bytes - pos) + " bytes after its " + std::to_string(records) + " references";
    return false;
  }
  return true;
}

void encodeBlockHeader(uint8_t out[kTraceBlockHeader], uint32_t records, uint32_t bytes) {
  putU32(out, records);
  putU32(out + 4, bytes);
}

void decodeBlockHeader(const uint8_t in[kTraceBlockHeader], uint32_t* records, uint32_t* bytes) {
  *records = getU32(in);
  *bytes = getU32(in + 4);
}

}  // namespace vmstore::internal
