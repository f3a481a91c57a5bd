// Unit tests of buffer/free_space.hpp: ids pushed by one thread are popped by another
// (a thread's home shard is only its first choice), pop fails only when all is empty,
// snapshot/assign keep the whole set, and under concurrent pushes and pops every id
// comes out exactly once. Runs for variable-size pages: neighbours merge, best fit, the
// rest of a run stays free, single pops fall back to runs, and the persisted list of ids
// turns back into the same runs.
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

TEST(FreeSpace, RunsMergeWithTheirNeighboursAndAreTakenBestFit) {
  FreeSpace fs;
  fs.pushRun(100, 10);  // [100, 110)
  fs.pushRun(120, 5);   // [120, 125)
  fs.pushRun(110, 10);  // fills the gap: one run [100, 125)
  EXPECT_EQ(fs.size(), 25u);
  EXPECT_EQ(fs.longestRun(), 25u);
  fs.pushRun(200, 4);
  uint64_t pid;
  ASSERT_TRUE(fs.popRun(3, &pid));
  EXPECT_EQ(pid, 200u) << "best fit: the 4-page run, not the 25-page one";
  ASSERT_TRUE(fs.popRun(20, &pid));
  EXPECT_EQ(pid, 100u);
  EXPECT_EQ(fs.longestRun(), 5u) << "the rest of the run stays free";
  EXPECT_FALSE(fs.popRun(6, &pid));
  EXPECT_EQ(fs.size(), 6u);
  // Single ids come from the shards first, then from the smallest run.
  fs.push(7);
  ASSERT_TRUE(fs.pop(&pid));
  EXPECT_EQ(pid, 7u);
  ASSERT_TRUE(fs.pop(&pid));
  EXPECT_EQ(pid, 203u);
  std::set<uint64_t> rest;
  while (fs.pop(&pid)) EXPECT_TRUE(rest.insert(pid).second);
  EXPECT_EQ(rest, (std::set<uint64_t>{120, 121, 122, 123, 124}));
  EXPECT_EQ(fs.size(), 0u);
}

TEST(FreeSpace, AssignFindsTheRunsOfAPersistedList) {
  FreeSpace fs;
  fs.pushRun(50, 8);
  fs.push(10);
  fs.push(30);
  std::vector<uint64_t> persisted = fs.snapshot();
  EXPECT_EQ(persisted.size(), 10u);
  FreeSpace back;
  back.assign(persisted);
  EXPECT_EQ(back.size(), 10u);
  EXPECT_EQ(back.longestRun(), 8u);
  uint64_t pid;
  ASSERT_TRUE(back.popRun(8, &pid));
  EXPECT_EQ(pid, 50u);
  std::vector<uint64_t> singles = back.snapshot();
  std::sort(singles.begin(), singles.end());
  EXPECT_EQ(singles, (std::vector<uint64_t>{10, 30}));
}

}  // namespace
