// Unit tests of buffer/dirty_lists.hpp: notes by tag, from many threads, given back
// after a failed flush.
#include "buffer/dirty_lists.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace {

using vmstore::internal::DirtyLists;

std::vector<uint64_t> sorted(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(DirtyLists, TakeReturnsWhatWasNotedWithThatTagOnce) {
  DirtyLists lists;
  lists.note(1, 5);
  lists.note(2, 6);
  lists.note(1, 7);
  DirtyLists::Taken t = lists.take(1);
  EXPECT_TRUE(t.complete);
  EXPECT_EQ(sorted(t.pids), (std::vector<uint64_t>{5, 7}));
  EXPECT_TRUE(lists.take(1).pids.empty());
  EXPECT_EQ(lists.take(2).pids, std::vector<uint64_t>{6});
}

TEST(DirtyLists, ManyThreadsLoseNoNote) {
  DirtyLists lists;
  constexpr uint64_t kPerThread = 20000;
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; i++) lists.note(static_cast<uint8_t>(1 + (i & 1)), t * kPerThread + i);
    });
  }
  for (auto& th : threads) th.join();
  std::vector<uint64_t> odd = sorted(lists.take(2).pids);
  std::vector<uint64_t> even = sorted(lists.take(1).pids);
  ASSERT_EQ(odd.size() + even.size(), 4 * kPerThread);
  for (uint64_t p : even) EXPECT_EQ(p % 2, 0u);
  for (uint64_t p : odd) EXPECT_EQ(p % 2, 1u);
}

TEST(DirtyLists, WhatIsPutBackIsTakenAgainWithItsCompleteness) {
  DirtyLists lists;
  lists.note(2, 1);
  DirtyLists::Taken t = lists.take(2);
  lists.note(2, 3);  // noted while the flush ran (the other tag's, in practice)
  lists.putBack(2, std::move(t));
  EXPECT_EQ(sorted(lists.take(2).pids), (std::vector<uint64_t>{1, 3}));
  lists.putBack(2, std::vector<uint64_t>{9}, false);
  DirtyLists::Taken again = lists.take(2);
  EXPECT_FALSE(again.complete);
  EXPECT_TRUE(lists.take(2).complete);  // a take forgets it
}

}  // namespace
