#include "wal/value_patch.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace vmstore::internal {

namespace {

constexpr size_t kRangeHeader = 8;  // offset, length

uint32_t getU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The first index >= i where a and b differ, or n. Equal stretches (most of a row whose
// few fields changed) are compared 16 bytes per vector compare (SSE2, part of every
// x86-64), whose mask of equal bytes gives the first differing one by its lowest clear
// bit; the rest a word at a time, where the word that differs gives its first differing
// byte by its lowest set bit (words load little-endian: the lowest address is the
// lowest byte).
size_t firstDifference(const uint8_t* a, const uint8_t* b, size_t i, size_t n) {
  static_assert(std::endian::native == std::endian::little);
#if defined(__SSE2__)
  for (; i + 16 <= n; i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    const unsigned differ = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, y))) ^ 0xffffu;
    if (differ != 0) return i + static_cast<size_t>(std::countr_zero(differ));
  }
  if (i < n && n >= 16) {  // the last 16 bytes, those before i masked off
    const size_t at = n - 16;
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + at));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + at));
    unsigned differ = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, y))) ^ 0xffffu;
    differ &= ~((1u << (i - at)) - 1);
    return differ != 0 ? at + static_cast<size_t>(std::countr_zero(differ)) : n;
  }
#else
  constexpr size_t kChunk = 64;
  while (i + kChunk <= n && std::memcmp(a + i, b + i, kChunk) == 0) i += kChunk;
#endif
  for (; i + 8 <= n; i += 8) {
    uint64_t x, y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    if (x != y) return i + static_cast<size_t>(std::countr_zero(x ^ y)) / 8;
  }
  while (i < n && a[i] == b[i]) i++;
  return i;
}

// One past the last byte of the differing run that contains the differing byte at i:
// the run goes on while the next difference is less than kMergeGap bytes away. Compares
// 8 bytes at a time (kMergeGap is 8: equal words end the run).
size_t endOfRun(const uint8_t* a, const uint8_t* b, size_t i, size_t n) {
  static_assert(kMergeGap == 8, "one word of equal bytes ends a run");
  size_t end = i + 1;
  while (end + 8 <= n) {
    uint64_t x, y;
    std::memcpy(&x, a + end, 8);
    std::memcpy(&y, b + end, 8);
    const uint64_t diff = x ^ y;
    if (diff == 0) return end;  // kMergeGap equal bytes follow
    end += static_cast<size_t>((63 - __builtin_clzll(diff)) / 8) + 1;  // past its last differing byte
  }
  for (;;) {  // fewer than 8 bytes left: byte by byte, as the rule says
    size_t d = firstDifference(a, b, end, n);
    if (d == n || d - end >= kMergeGap) return end;
    end = d + 1;
  }
}

}  // namespace

bool encodePatch(std::span<const uint8_t> old, std::span<const uint8_t> next, std::string* buf,
                 std::string_view* patch) {
  const size_t n = next.size();
  if (old.size() != n || n > UINT32_MAX) return false;
  // Written in place into n bytes of buf (a patch is kept only if smaller than the
  // value); buf only grows, so a warm buffer is not cleared first.
  if (buf->size() < std::max<size_t>(n, 4)) buf->resize(std::max<size_t>(n, 4));
  char* const base = buf->data();
  size_t at = 0;
  auto putU32At = [&](uint32_t v) {
    std::memcpy(base + at, &v, sizeof(v));
    at += sizeof(v);
  };
  putU32At(static_cast<uint32_t>(n));
  size_t i = firstDifference(old.data(), next.data(), 0, n);
  while (i < n) {
    const size_t end = endOfRun(old.data(), next.data(), i, n);  // one past its last differing byte
    if (at + kRangeHeader + (end - i) >= n) return false;
    putU32At(static_cast<uint32_t>(i));
    putU32At(static_cast<uint32_t>(end - i));
    std::memcpy(base + at, next.data() + i, end - i);
    at += end - i;
    i = firstDifference(old.data(), next.data(), end, n);
  }
  *patch = std::string_view(base, at);
  return at < n;
}

uint64_t patchedSize(std::string_view patch) { return patch.size() < 4 ? UINT64_MAX : getU32(patch.data()); }

bool applyPatch(std::string_view patch, std::span<uint8_t> value) {
  if (patchedSize(patch) != value.size()) return false;
  // Checked whole first, so a malformed patch writes nothing.
  for (int pass = 0; pass < 2; pass++) {
    size_t p = 4;
    uint64_t floor = 0;  // ranges ascend and never overlap
    while (p < patch.size()) {
      if (patch.size() - p < kRangeHeader) return false;
      uint64_t off = getU32(patch.data() + p);
      uint64_t len = getU32(patch.data() + p + 4);
      p += kRangeHeader;
      if (off < floor || off + len > value.size() || len > patch.size() - p) return false;
      if (pass == 1 && len > 0) std::memcpy(value.data() + off, patch.data() + p, len);
      floor = off + len;
      p += len;
    }
  }
  return true;
}

}  // namespace vmstore::internal
