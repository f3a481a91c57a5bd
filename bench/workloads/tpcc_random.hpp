// Random input generation of the `tpcc` workload (TPC-C 2.1.6 and 4.3.2): a fast
// per-thread generator, uniform ranges, NURand, random strings and customer last names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace vmstore::bench::tpcc {

// xoshiro256** seeded through splitmix64: fast, good enough for workload generation.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [lo, hi] (inclusive).
  int64_t uniform(int64_t lo, int64_t hi) {
    uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(next() % span);
  }
  uint32_t uniformU(uint32_t lo, uint32_t hi) {
    return static_cast<uint32_t>(uniform(lo, hi));
  }
  // NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x  (2.1.6)
  uint32_t nurand(uint32_t a, uint32_t x, uint32_t y, uint32_t c) {
    return static_cast<uint32_t>(
        (((uniform(0, a) | uniform(x, y)) + c) % (y - x + 1)) + x);
  }
  // a-string of random length lo..hi into dst (capacity >= hi); returns the length. The
  // rest of dst up to `capacity` is zeroed.
  size_t astring(char* dst, size_t capacity, size_t lo, size_t hi) {
    static constexpr char kAlnum[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    size_t len = static_cast<size_t>(uniform(static_cast<int64_t>(lo), static_cast<int64_t>(hi)));
    for (size_t i = 0; i < len; ++i) dst[i] = kAlnum[next() % (sizeof(kAlnum) - 1)];
    if (len < capacity) std::memset(dst + len, 0, capacity - len);
    return len;
  }
  // n-string (digits) of random length lo..hi.
  size_t nstring(char* dst, size_t capacity, size_t lo, size_t hi) {
    size_t len = static_cast<size_t>(uniform(static_cast<int64_t>(lo), static_cast<int64_t>(hi)));
    for (size_t i = 0; i < len; ++i) dst[i] = static_cast<char>('0' + next() % 10);
    if (len < capacity) std::memset(dst + len, 0, capacity - len);
    return len;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// The C constants of NURand (2.1.6): chosen once per workload instance. C_LAST differs
// between load and run by a delta in [65, 119] other than 96 and 112 (2.1.6.1).
struct NURandConstants {
  uint32_t cLastLoad = 0;
  uint32_t cLastRun = 0;
  uint32_t cId = 0;     // C for C_ID, NURand(1023, 1, 3000)
  uint32_t olIId = 0;   // C for OL_I_ID, NURand(8191, 1, 100000)

  static NURandConstants choose(Rng& rng) {
    NURandConstants c;
    c.cLastLoad = rng.uniformU(0, 255);
    for (;;) {
      c.cLastRun = rng.uniformU(0, 255);
      uint32_t delta = c.cLastRun > c.cLastLoad ? c.cLastRun - c.cLastLoad
                                                : c.cLastLoad - c.cLastRun;
      if (delta >= 65 && delta <= 119 && delta != 96 && delta != 112) break;
    }
    c.cId = rng.uniformU(0, 1023);
    c.olIId = rng.uniformU(0, 8191);
    return c;
  }
};

// C_LAST for a number 0..999 from the syllables of 4.3.2.3, into dst[16] (NUL-padded).
inline void lastName(uint32_t num, char* dst) {
  static constexpr const char* kSyllables[10] = {"BAR", "OUGHT", "ABLE", "PRI",   "PRES",
                                                 "ESE", "ANTI",  "CALLY", "ATION", "EING"};
  std::memset(dst, 0, 16);
  size_t n = 0;
  for (uint32_t digit : {num / 100, (num / 10) % 10, num % 10}) {
    const char* s = kSyllables[digit];
    size_t len = std::strlen(s);
    std::memcpy(dst + n, s, len);
    n += len;
  }
}

// A zip code: 4 random digits and "11111" (4.3.2.7).
inline void zipCode(Rng& rng, char* dst9) {
  for (int i = 0; i < 4; ++i) dst9[i] = static_cast<char>('0' + rng.next() % 10);
  std::memcpy(dst9 + 4, "11111", 5);
}

}  // namespace vmstore::bench::tpcc
