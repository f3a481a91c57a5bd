// Unit tests of sync/key_locks.hpp: a key always maps to the same lock, keys as the
// workloads have them (short, sharing long prefixes, differing in their last bytes)
// spread over nearly all of the locks, and Held takes a sorted list over several trees'
// tables and gives it back.
#include "sync/key_locks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace {

using vmstore::internal::KeyLocks;
using vmstore::internal::KeySlot;

std::string bigEndianKey(uint32_t w, uint32_t i) {
  std::string k(8, '\0');
  for (int b = 0; b < 4; b++) {
    k[b] = static_cast<char>(w >> (24 - 8 * b));
    k[4 + b] = static_cast<char>(i >> (24 - 8 * b));
  }
  return k;
}

TEST(KeyLocks, AKeyAlwaysMapsToTheSameLock) {
  auto locks = std::make_unique<KeyLocks>();
  for (std::string key : {std::string("k"), std::string("a somewhat longer key, over 8 bytes"), bigEndianKey(1, 7)}) {
    std::string copy = key;  // another buffer, the same bytes
    EXPECT_EQ(&locks->of(key), &locks->of(copy));
    EXPECT_EQ(locks->slot(key), locks->slot(copy));
  }
}

TEST(KeyLocks, KeysSharingLongPrefixesSpreadOverTheLocks) {
  for (auto make : {+[](uint32_t i) { return bigEndianKey(1, i); },                        // 8 bytes
                    +[](uint32_t i) { return std::string(20, 'p') + bigEndianKey(3, i); },  // 28 bytes
                    +[](uint32_t i) { return std::to_string(i); }}) {                       // 1-5 bytes
    std::set<uint32_t> used;
    // Four keys a lock: a uniform hash leaves 1 - e^-4 (98%) of the locks used.
    for (uint32_t i = 0; i < KeyLocks::kCount * 4; i++) used.insert(KeyLocks::slotOf(make(i)));
    EXPECT_GT(used.size(), KeyLocks::kCount * 9 / 10);
  }
}

TEST(KeyLocks, HeldLocksASortedListOverTwoTreesAndGivesItBack) {
  auto a = std::make_unique<KeyLocks>();
  auto b = std::make_unique<KeyLocks>();
  std::vector<KeySlot> slots = {a->slot("x"), b->slot("x"), a->slot("y"), b->slot("z")};
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  {
    KeyLocks::Held held(slots);
    for (const KeySlot& s : slots) EXPECT_FALSE(s.table->at(s.slot).try_lock()) << "not held";
    // The same key of the other tree is another lock.
    EXPECT_NE(&a->of("x"), &b->of("x"));
  }
  for (const KeySlot& s : slots) {
    ASSERT_TRUE(s.table->at(s.slot).try_lock()) << "not given back";
    s.table->at(s.slot).unlock();
  }
}

}  // namespace
