// Tests of value patches (wal/value_patch.hpp): the log's record of a same-size update.
#include "wal/value_patch.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace vmstore::internal {
namespace {

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
std::span<uint8_t> writable(std::string& s) { return {reinterpret_cast<uint8_t*>(s.data()), s.size()}; }

// encodePatch through one working buffer for the whole file, as the engine reuses a
// write's: it still holds what earlier, larger patches left in it.
bool encode(std::span<const uint8_t> old, std::span<const uint8_t> next, std::string* patch) {
  static std::string buf;
  std::string_view view;
  if (!encodePatch(old, next, &buf, &view)) return false;
  patch->assign(view);
  return true;
}

TEST(ValuePatch, TurnsTheOldValueIntoTheNewOne) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2000; round++) {
    size_t n = rng() % 600;
    std::string old(n, '\0');
    for (char& c : old) c = static_cast<char>(rng() % 4);  // few values: runs of equal bytes
    std::string next = old;
    int changes = static_cast<int>(rng() % 6);
    for (int c = 0; c < changes && n > 0; c++) {
      size_t at = rng() % n;
      size_t len = std::min<size_t>(n - at, rng() % 12 + 1);
      for (size_t i = at; i < at + len; i++) next[i] = static_cast<char>(rng());
    }
    std::string patch;
    if (!encode(bytes(old), bytes(next), &patch)) {
      continue;  // not smaller than the value: logged whole
    }
    EXPECT_LT(patch.size(), next.size());
    std::string v = old;
    ASSERT_TRUE(applyPatch(patch, writable(v)));
    ASSERT_EQ(v, next) << "round " << round;
    ASSERT_TRUE(applyPatch(patch, writable(v)));  // again: a blind write, nothing more
    ASSERT_EQ(v, next);
  }
}

// The ranges by the rule of the header, byte by byte: each differing byte, merged with
// the next when less than kMergeGap bytes lie between them. (The encoder compares words.)
std::vector<std::pair<size_t, size_t>> rangesByTheRule(const std::string& a, const std::string& b) {
  std::vector<std::pair<size_t, size_t>> out;  // (offset, length)
  for (size_t i = 0; i < a.size(); i++) {
    if (a[i] == b[i]) continue;
    if (!out.empty() && i - (out.back().first + out.back().second) < kMergeGap) {
      out.back().second = i + 1 - out.back().first;
    } else {
      out.push_back({i, 1});
    }
  }
  return out;
}

TEST(ValuePatch, RangesFollowTheMergeRuleExactly) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 5000; round++) {
    size_t n = rng() % 300 + 1;
    std::string old(n, '\0');
    for (char& c : old) c = static_cast<char>(rng() % 3);
    std::string next = old;
    for (int c = static_cast<int>(rng() % 8); c > 0; c--) {
      size_t at = rng() % n;
      size_t len = std::min<size_t>(n - at, rng() % 20 + 1);
      for (size_t i = at; i < at + len; i++) {
        if (rng() % 3 != 0) next[i] = static_cast<char>(rng() % 3);  // gaps of every width inside
      }
    }
    std::string patch;
    if (!encode(bytes(old), bytes(next), &patch)) continue;
    std::vector<std::pair<size_t, size_t>> got;
    for (size_t p = 4; p < patch.size();) {
      uint32_t off, len;
      std::memcpy(&off, patch.data() + p, 4);
      std::memcpy(&len, patch.data() + p + 4, 4);
      got.push_back({off, len});
      p += 8 + len;
    }
    ASSERT_EQ(got, rangesByTheRule(old, next)) << "round " << round << ", " << n << " bytes";
  }
}

TEST(ValuePatch, ARowUpdateIsSmallAndAWholeNewValueIsNotAPatch) {
  std::string row(320, 'r');
  std::string next = row;
  next[12] = 'x';            // one field near the start
  next[252] = 'y';           // two fields near the end, 5 bytes apart: one range
  next[258] = 'z';
  std::string patch;
  ASSERT_TRUE(encode(bytes(row), bytes(next), &patch));
  EXPECT_EQ(patch.size(), 4u + (8 + 1) + (8 + 7));
  EXPECT_TRUE(encode(bytes(row), bytes(row), &patch));
  EXPECT_EQ(patch.size(), 4u);  // equal: no ranges
  std::string other(320, 'o');
  EXPECT_FALSE(encode(bytes(row), bytes(other), &patch));
  EXPECT_FALSE(encode(bytes(row), bytes(std::string(319, 'r')), &patch));  // sizes differ
  EXPECT_FALSE(encode(bytes(std::string("ab")), bytes(std::string("ab")), &patch));  // under a patch's size
}

TEST(ValuePatch, TheWorkingBufferOnlyGrowsAndIsNotCleared) {
  std::string buf;
  std::string_view patch;
  std::string big(600, 'b');
  std::string bigNext = big;
  bigNext[500] = 'x';
  ASSERT_TRUE(encodePatch(bytes(big), bytes(bigNext), &buf, &patch));
  EXPECT_GE(buf.size(), 600u);
  std::string row(100, 'r');
  std::string next = row;
  next[7] = 'y';
  std::string before = buf;
  ASSERT_TRUE(encodePatch(bytes(row), bytes(next), &buf, &patch));
  EXPECT_EQ(buf.size(), before.size());  // not shrunk
  EXPECT_EQ(patch.data(), buf.data());
  EXPECT_EQ(buf.substr(patch.size()), before.substr(patch.size()));  // past the patch: untouched
  std::string v = row;
  ASSERT_TRUE(applyPatch(patch, writable(v)));
  EXPECT_EQ(v, next);
}

TEST(ValuePatch, AMalformedPatchOrAnotherSizeWritesNothing) {
  std::string row(64, 'a');
  std::string next = row;
  next[3] = 'b';
  next[40] = 'c';
  std::string patch;
  ASSERT_TRUE(encode(bytes(row), bytes(next), &patch));
  std::string shorter(63, 'a');
  EXPECT_FALSE(applyPatch(patch, writable(shorter)));
  EXPECT_EQ(shorter, std::string(63, 'a'));
  std::vector<std::string> bad = {
      patch.substr(0, 3),                     // no size
      patch.substr(0, patch.size() - 1),      // the last range's bytes cut
      patch.substr(0, 4 + 5),                 // a range header cut
      patch + std::string("\x01", 1),         // bytes left over
  };
  // The second range moved before the first: out of order.
  std::string swapped = patch;
  uint32_t zero = 0;
  std::memcpy(swapped.data() + 4 + 9, &zero, 4);
  bad.push_back(swapped);
  // A range beyond the value.
  std::string beyond = patch;
  uint32_t far = 64;
  std::memcpy(beyond.data() + 4, &far, 4);
  bad.push_back(beyond);
  for (const std::string& p : bad) {
    std::string v = row;
    EXPECT_FALSE(applyPatch(p, writable(v)));
    EXPECT_EQ(v, row) << "a malformed patch wrote";
  }
}

}  // namespace
}  // namespace vmstore::internal
