// Unit tests of buffer/resident_set.hpp: the lock-free hash set of resident page ids the
// clock walks.
#include "buffer/resident_set.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "unit_util.hpp"

namespace {

using vmstore::internal::ResidentSet;

std::multiset<uint64_t> contents(const ResidentSet& rs) {
  std::multiset<uint64_t> out;
  rs.forEach([&](uint64_t pid) { out.insert(pid); });
  return out;
}

std::multiset<uint64_t> asMulti(const std::set<uint64_t>& s) { return {s.begin(), s.end()}; }

TEST(ResidentSet, CapacityHasHeadroom) {
  for (uint64_t n : {1ull, 2ull, 100ull, 256ull, 1000ull, 4096ull, 100000ull}) {
    ResidentSet rs(n);
    uint64_t cap = rs.capacity();
    EXPECT_EQ(cap & (cap - 1), 0u) << "capacity " << cap << " is a power of two";
    EXPECT_GT(cap, n + n / 4) << "room beyond maxResident for " << n;
  }
}

TEST(ResidentSet, InsertRemoveForEach) {
  ResidentSet rs(100);
  EXPECT_TRUE(contents(rs).empty());
  std::set<uint64_t> model;
  for (uint64_t pid = 1; pid <= 100; pid++) {
    rs.insert(pid * 7919);
    model.insert(pid * 7919);
  }
  EXPECT_EQ(contents(rs), asMulti(model));
  EXPECT_TRUE(rs.remove(50 * 7919));
  model.erase(50 * 7919);
  EXPECT_FALSE(rs.remove(50 * 7919)) << "already removed";
  EXPECT_FALSE(rs.remove(123456789)) << "never inserted";
  EXPECT_EQ(contents(rs), asMulti(model));
  // Re-inserting a removed pid works; large and sequential pids are fine.
  rs.insert(50 * 7919);
  model.insert(50 * 7919);
  EXPECT_TRUE(rs.remove(7919));
  model.erase(7919);
  rs.insert(0);
  model.insert(0);
  EXPECT_TRUE(rs.remove(100 * 7919));
  model.erase(100 * 7919);
  rs.insert((1ull << 50) + 3);
  model.insert((1ull << 50) + 3);
  EXPECT_EQ(contents(rs), asMulti(model));
  for (uint64_t pid : model) EXPECT_TRUE(rs.remove(pid)) << pid;
  EXPECT_TRUE(contents(rs).empty());
}

TEST(ResidentSet, ClockVisitsEachOncePerRotation) {
  ResidentSet rs(500);
  std::set<uint64_t> model;
  std::mt19937_64 rng(11);
  while (model.size() < 500) {
    uint64_t pid = rng() % 100000;
    if (model.insert(pid).second) rs.insert(pid);
  }
  // Remove some (tombstones must not be visited).
  for (int i = 0; i < 100; i++) {
    uint64_t pid = *std::next(model.begin(), static_cast<long>(rng() % model.size()));
    ASSERT_TRUE(rs.remove(pid));
    model.erase(pid);
  }
  const uint64_t cap = rs.capacity();
  // Whole rotations in one call, and in uneven steps starting anywhere.
  for (uint64_t step : {cap, uint64_t{1}, uint64_t{37}, uint64_t{256}, cap / 3 + 1}) {
    for (int rotations = 1; rotations <= 2; rotations++) {
      std::map<uint64_t, int> visits;
      uint64_t left = cap * rotations;
      while (left > 0) {
        uint64_t n = std::min(step, left);
        rs.advanceClock(n, [&](uint64_t pid) { visits[pid]++; });
        left -= n;
      }
      ASSERT_EQ(visits.size(), model.size()) << "step " << step;
      for (auto [pid, n] : visits) {
        ASSERT_TRUE(model.count(pid)) << "visited " << pid << ", which is not in the set";
        ASSERT_EQ(n, rotations) << "pid " << pid << " step " << step;
      }
    }
  }
}

TEST(ResidentSet, FullWithChurnNeverFails) {
  const uint64_t maxResident = 1000;
  ResidentSet rs(maxResident);
  std::vector<uint64_t> in;
  uint64_t next = 1;
  for (uint64_t i = 0; i < maxResident; i++) {
    rs.insert(next);
    in.push_back(next++);
  }
  std::mt19937_64 rng(5);
  const int rounds = vmsunit::scaled(200000, 40000);
  for (int r = 0; r < rounds; r++) {
    // Remove a random one, insert a never-seen one: tombstones pile up everywhere.
    size_t i = rng() % in.size();
    ASSERT_TRUE(rs.remove(in[i])) << "round " << r << " pid " << in[i];
    in[i] = next++;
    ASSERT_NO_THROW(rs.insert(in[i])) << "round " << r;
    // Sometimes remove a batch of 64 at once and refill it (the eviction pattern).
    if (r % 5000 == 4999) {
      std::set<size_t> batch;
      while (batch.size() < 64) batch.insert(rng() % in.size());
      for (size_t j : batch) ASSERT_TRUE(rs.remove(in[j]));
      for (size_t j : batch) {
        in[j] = next++;
        ASSERT_NO_THROW(rs.insert(in[j]));
      }
    }
  }
  std::set<uint64_t> model(in.begin(), in.end());
  EXPECT_EQ(contents(rs), asMulti(model));
  for (uint64_t pid : in) ASSERT_TRUE(rs.remove(pid));
  EXPECT_TRUE(contents(rs).empty());
  EXPECT_FALSE(rs.remove(1)) << "remove of an absent pid terminates in a table of tombstones";
}

TEST(ResidentSet, ConcurrentDisjointInsertRemove) {
  const int threads = 4;
  const uint64_t maxResident = 4000;
  const uint64_t perThread = maxResident / threads;
  const int rounds = vmsunit::scaled(100000, 20000);
  ResidentSet rs(maxResident);
  std::vector<std::vector<uint64_t>> finalSets(threads);
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      const uint64_t base = (static_cast<uint64_t>(t) + 1) << 40;
      uint64_t next = base;
      std::vector<uint64_t> in;
      try {
        for (int r = 0; r < rounds; r++) {
          bool grow = in.size() < perThread && (in.empty() || rng() % 2 == 0);
          if (grow) {
            rs.insert(next);
            in.push_back(next++);
          } else {
            size_t i = rng() % in.size();
            if (!rs.remove(in[i])) failures++;
            in[i] = in.back();
            in.pop_back();
          }
        }
      } catch (...) {
        failures++;
      }
      finalSets[t] = in;
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(failures.load(), 0) << "a remove missed an inserted pid, or an insert threw";
  std::set<uint64_t> model;
  for (auto& s : finalSets) model.insert(s.begin(), s.end());
  EXPECT_EQ(contents(rs), asMulti(model));
}

}  // namespace
