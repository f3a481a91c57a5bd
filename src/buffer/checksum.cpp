#include "buffer/checksum.hpp"

#include <array>
#include <cstring>

namespace vmstore::internal {

namespace {

constexpr uint32_t kPoly = 0x82F63B78;  // reversed Castagnoli polynomial

constexpr std::array<uint32_t, 256> makeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = makeTable();

uint32_t crcTable(uint32_t crc, const unsigned char* p, size_t len) {
  for (size_t i = 0; i < len; i++) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

__attribute__((target("sse4.2"))) uint32_t crcHardware(uint32_t crc, const unsigned char* p,
                                                       size_t len) {
  uint64_t c = crc;
  while (len >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    len -= 8;
  }
  // The rest (under 8 bytes) in at most three steps: 4, 2 and 1 bytes.
  uint32_t c32 = static_cast<uint32_t>(c);
  if (len & 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    c32 = __builtin_ia32_crc32si(c32, v);
    p += 4;
  }
  if (len & 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    c32 = __builtin_ia32_crc32hi(c32, v);
    p += 2;
  }
  if (len & 1) c32 = __builtin_ia32_crc32qi(c32, *p);
  return c32;
}

const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");

// Ranges of a page or more in rounds of three lanes summed side by side: the crc32
// instruction takes three cycles but can start one every cycle, so three independent
// sums run about three times as fast as one. A round's three sums are then joined:
// the CRC register is linear, so the sum over A||B||C from register r is
// shift(sum(r, A), 2 lane) ^ shift(sum(0, B), lane) ^ sum(0, C), where shift(x, n) is
// what n zero bytes do to register x. Each shift is linear in x too, so it is four
// table lookups (a table per byte of x, made once from the instruction itself).
// Two lane lengths: kLongLane for ranges of 12 KiB or more (value pages), and
// kPageLane, whose round (4,080 bytes) covers all but the last 8 of the 4,088 bytes a
// one-page checksum sums, for ranges from 4,080 bytes (pages, long log records).
constexpr size_t kLongLane = 4096;
constexpr size_t kPageLane = 1360;

struct ShiftTables {
  uint32_t lane[4][256];      // shift(x, lane)
  uint32_t twoLanes[4][256];  // shift(x, 2 * lane)
};

__attribute__((target("sse4.2"))) uint32_t shiftByZeros(uint32_t x, size_t bytes) {
  uint64_t c = x;
  for (size_t i = 0; i < bytes; i += 8) c = __builtin_ia32_crc32di(c, 0);
  return static_cast<uint32_t>(c);
}

void fillShiftTable(uint32_t table[4][256], size_t bytes) {
  uint32_t ofBit[32];
  for (int b = 0; b < 32; b++) ofBit[b] = shiftByZeros(1u << b, bytes);
  for (int k = 0; k < 4; k++) {
    for (uint32_t v = 0; v < 256; v++) {
      uint32_t t = 0;
      for (int b = 0; b < 8; b++) {
        if (v & (1u << b)) t ^= ofBit[8 * k + b];
      }
      table[k][v] = t;
    }
  }
}

uint32_t shiftWith(const uint32_t table[4][256], uint32_t x) {
  return table[0][x & 0xff] ^ table[1][(x >> 8) & 0xff] ^ table[2][(x >> 16) & 0xff] ^ table[3][x >> 24];
}

template <size_t Lane>
const ShiftTables& shiftTables() {
  static_assert(Lane % 8 == 0);
  static const ShiftTables tables = [] {
    ShiftTables t;
    fillShiftTable(t.lane, Lane);
    fillShiftTable(t.twoLanes, 2 * Lane);
    return t;
  }();
  return tables;
}

// Sums whole rounds of three Lane-byte lanes; leaves the rest (under 3 * Lane bytes) in
// *p / *len.
template <size_t Lane>
__attribute__((target("sse4.2"))) uint32_t crcRounds(uint32_t crc, const unsigned char** p, size_t* len) {
  const ShiftTables& t = shiftTables<Lane>();
  const unsigned char* q = *p;
  size_t n = *len;
  while (n >= 3 * Lane) {
    uint64_t a = crc, b = 0, c = 0;
    for (size_t i = 0; i < Lane; i += 8) {
      uint64_t va, vb, vc;
      std::memcpy(&va, q + i, 8);
      std::memcpy(&vb, q + Lane + i, 8);
      std::memcpy(&vc, q + 2 * Lane + i, 8);
      a = __builtin_ia32_crc32di(a, va);
      b = __builtin_ia32_crc32di(b, vb);
      c = __builtin_ia32_crc32di(c, vc);
    }
    crc = shiftWith(t.twoLanes, static_cast<uint32_t>(a)) ^ shiftWith(t.lane, static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(c);
    q += 3 * Lane;
    n -= 3 * Lane;
  }
  *p = q;
  *len = n;
  return crc;
}

}  // namespace

uint32_t crc32cExtend(uint32_t crc, const void* data, size_t len) {
  auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  if (!kHaveSse42) return ~crcTable(c, p, len);
  if (len >= 3 * kLongLane) c = crcRounds<kLongLane>(c, &p, &len);
  if (len >= 3 * kPageLane) c = crcRounds<kPageLane>(c, &p, &len);
  return ~crcHardware(c, p, len);
}

uint32_t crc32c(const void* data, size_t len) { return crc32cExtend(0, data, len); }

}  // namespace vmstore::internal
