// Values that say what they should be, for readers racing writers (value_view_test,
// read_optimistic_test): a value's first 4 bytes are its tag, and its size and every
// other byte follow from the tag, so a reader checks what it saw without building the
// value, and a torn or stale read shows. Sizes 40 (in the leaf), 3,500 (a page of its
// own) and 9,000-249,000 (several pages).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "../e2e/test_util.hpp"

namespace vmstest {

// n bytes of c, with i / 997 at every 997th byte (so that shifted bytes show).
inline std::string patternedValue(char c, size_t n) {
  std::string v(n, c);
  for (size_t i = 0; i < n; i += 997) v[i] = static_cast<char>(i / 997);
  return v;
}

inline size_t sizeOfTag(uint32_t tag) { return tag % 3 == 0 ? 40 : (tag % 3 == 1 ? 3500 : 9000 + (tag % 7) * 40000); }

inline std::string valueOfTag(uint32_t tag) {
  std::string v = patternedValue(static_cast<char>('a' + tag % 26), sizeOfTag(tag));
  std::memcpy(v.data(), &tag, 4);
  return v;
}

// True when v is valueOfTag(its own tag), every byte of it: the runs of fill between
// the 997th bytes are compared with memcmp, so a reader checks a 249 KB value quickly.
inline bool isValueOfTag(std::string_view v) {
  if (v.size() < 4) return false;
  uint32_t tag;
  std::memcpy(&tag, v.data(), 4);
  if (v.size() != sizeOfTag(tag)) return false;
  char fill[997];
  std::memset(fill, 'a' + tag % 26, sizeof fill);
  for (size_t mark = 0; mark < v.size(); mark += 997) {
    if (mark > 0 && v[mark] != static_cast<char>(mark / 997)) return false;
    const size_t from = mark == 0 ? 4 : mark + 1;  // bytes 0-3 are the tag
    const size_t to = std::min(mark + 997, v.size());
    if (to > from && std::memcmp(v.data() + from, fill, to - from) != 0) return false;
  }
  return true;
}

// ops writes to keys "k0".."k<keys - 1>": a delete one time in five, else a put of a
// tagged value with a random tag. A put that fails counts in *bad.
inline void replaceAndDelete(vmstore::Tree* t, int keys, int ops, uint64_t seed, std::atomic<int>* bad) {
  Rng rng(seed);
  for (int i = 0; i < ops; i++) {
    std::string k = "k" + std::to_string(rng.uniform(0, keys - 1));
    if (rng.chance(0.2)) {
      (void)t->del(k);
    } else if (!t->put(k, valueOfTag(static_cast<uint32_t>(rng.uniform(1, 1u << 30)))).ok()) {
      (*bad)++;
    }
  }
}

}  // namespace vmstest
