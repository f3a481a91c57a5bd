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

}  // namespace

uint32_t crc32cExtend(uint32_t crc, const void* data, size_t len) {
  auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  c = kHaveSse42 ? crcHardware(c, p, len) : crcTable(c, p, len);
  return ~c;
}

uint32_t crc32c(const void* data, size_t len) { return crc32cExtend(0, data, len); }

}  // namespace vmstore::internal
