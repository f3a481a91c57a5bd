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
  uint32_t c32 = static_cast<uint32_t>(c);
  while (len--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}

const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");

// Long ranges in rounds of three lanes of kLane bytes summed side by side: the crc32
// instruction takes three cycles but can start one every cycle, so three independent
// sums run about three times as fast as one. A round's three sums are then joined:
// the CRC register is linear, so the sum over A||B||C from register r is
// shift(sum(r, A), 2 kLane) ^ shift(sum(0, B), kLane) ^ sum(0, C), where shift(x, n) is
// what n zero bytes do to register x. Each shift is linear in x too, so it is four
// table lookups (a table per byte of x, made once from the instruction itself).
constexpr size_t kLane = 4096;
constexpr size_t kRound = 3 * kLane;

struct ShiftTables {
  uint32_t lane[4][256];     // shift(x, kLane)
  uint32_t twoLanes[4][256];  // shift(x, 2 * kLane)
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

const ShiftTables& shiftTables() {
  static const ShiftTables tables = [] {
    ShiftTables t;
    fillShiftTable(t.lane, kLane);
    fillShiftTable(t.twoLanes, 2 * kLane);
    return t;
  }();
  return tables;
}

__attribute__((target("sse4.2"))) uint32_t crcThreeLanes(uint32_t crc, const unsigned char* p, size_t len) {
  const ShiftTables& t = shiftTables();
  while (len >= kRound) {
    uint64_t a = crc, b = 0, c = 0;
    for (size_t i = 0; i < kLane; i += 8) {
      uint64_t va, vb, vc;
      std::memcpy(&va, p + i, 8);
      std::memcpy(&vb, p + kLane + i, 8);
      std::memcpy(&vc, p + 2 * kLane + i, 8);
      a = __builtin_ia32_crc32di(a, va);
      b = __builtin_ia32_crc32di(b, vb);
      c = __builtin_ia32_crc32di(c, vc);
    }
    crc = shiftWith(t.twoLanes, static_cast<uint32_t>(a)) ^ shiftWith(t.lane, static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(c);
    p += kRound;
    len -= kRound;
  }
  return crcHardware(crc, p, len);
}

}  // namespace

uint32_t crc32cExtend(uint32_t crc, const void* data, size_t len) {
  auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  if (!kHaveSse42) return ~crcTable(c, p, len);
  c = len >= kRound ? crcThreeLanes(c, p, len) : crcHardware(c, p, len);
  return ~c;
}

uint32_t crc32c(const void* data, size_t len) { return crc32cExtend(0, data, len); }

}  // namespace vmstore::internal
