// Unit tests of buffer/free_space.hpp: ids pushed by one thread are popped by another
// (a thread's home shard is only its first choice), pop fails only when all is empty,
// snapshot/assign keep the whole set, and under concurrent pushes and pops every id
// comes out exactly once.
#include "buffer/free_space.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace {

using vmstore::internal::FreeSpace;

TEST(FreeSpace, IdsPushedByOneThreadArePoppedByAnother) {
  FreeSpace fs;
  std::thread([&] {
    for (uint64_t pid = 1; pid <= 100; pid++) fs.push(pid);
  }).join();
  EXPECT_EQ(fs.size(), 100u);
  std::set<uint64_t> seen;
  uint64_t pid;
  while (fs.pop(&pid)) EXPECT_TRUE(seen.insert(pid).second) << pid;
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(fs.size(), 0u);
  EXPECT_FALSE(fs.pop(&pid));
}

TEST(FreeSpace, SnapshotAndAssignKeepTheWholeSet) {
  FreeSpace fs;
  std::vector<uint64_t> ids;
  for (uint64_t pid = 10; pid < 60; pid++) ids.push_back(pid);
  fs.assign(ids);
  EXPECT_EQ(fs.size(), ids.size());
  std::vector<uint64_t> snap = fs.snapshot();
  std::sort(snap.begin(), snap.end());
  EXPECT_EQ(snap, ids);
  std::thread([&] { fs.push(7); }).join();
  snap = fs.snapshot();
  EXPECT_EQ(snap.size(), ids.size() + 1);
  fs.assign({});
  EXPECT_EQ(fs.size(), 0u);
  EXPECT_TRUE(fs.snapshot().empty());
}

TEST(FreeSpace, ConcurrentPushesAndPopsLoseAndDuplicateNothing) {
  FreeSpace fs;
  constexpr int kThreads = 6;
  constexpr uint64_t kPerThread = 20000;
  std::vector<std::vector<uint64_t>> popped(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      // Each thread frees its own ids and takes whatever is free, often another's.
      for (uint64_t i = 0; i < kPerThread; i++) {
        fs.push(1 + t * kPerThread + i);
        uint64_t pid;
        if (i % 3 != 0 && fs.pop(&pid)) popped[t].push_back(pid);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<uint64_t> all = fs.snapshot();
  for (auto& p : popped) all.insert(all.end(), p.begin(), p.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), kThreads * kPerThread);
  for (uint64_t i = 0; i < all.size(); i++) ASSERT_EQ(all[i], i + 1);
}

}  // namespace
