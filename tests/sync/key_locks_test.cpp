// Unit tests of sync/key_locks.hpp: a key of a tree always maps to the same mutex, and
// keys as the workloads have them (short, sharing long prefixes, differing in their last
// bytes) spread over nearly all of the mutexes.
#include "sync/key_locks.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

namespace {

using vmstore::internal::KeyLocks;

std::string bigEndianKey(uint32_t w, uint32_t i) {
  std::string k(8, '\0');
  for (int b = 0; b < 4; b++) {
    k[b] = static_cast<char>(w >> (24 - 8 * b));
    k[4 + b] = static_cast<char>(i >> (24 - 8 * b));
  }
  return k;
}

TEST(KeyLocks, AKeyOfATreeAlwaysMapsToTheSameMutex) {
  auto locks = std::make_unique<KeyLocks>();
  int treeA = 0, treeB = 0;
  for (std::string key : {std::string("k"), std::string("a somewhat longer key, over 8 bytes"), bigEndianKey(1, 7)}) {
    std::string copy = key;  // another buffer, the same bytes
    EXPECT_EQ(&locks->of(&treeA, key), &locks->of(&treeA, copy));
    EXPECT_EQ(&locks->of(&treeB, key), &locks->of(&treeB, copy));
  }
}

TEST(KeyLocks, KeysSharingLongPrefixesSpreadOverTheMutexes) {
  auto locks = std::make_unique<KeyLocks>();
  int tree = 0;
  for (auto make : {+[](uint32_t i) { return bigEndianKey(1, i); },                        // 8 bytes
                    +[](uint32_t i) { return std::string(20, 'p') + bigEndianKey(3, i); },  // 28 bytes
                    +[](uint32_t i) { return std::to_string(i); }}) {                       // 1-5 bytes
    std::set<const std::mutex*> used;
    for (uint32_t i = 0; i < 20000; i++) used.insert(&locks->of(&tree, make(i)));
    EXPECT_GT(used.size(), KeyLocks::kCount * 9 / 10);
  }
}

}  // namespace
