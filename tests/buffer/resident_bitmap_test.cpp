// Unit tests of buffer/resident_bitmap.hpp (the atomic bitmap resident set) and of
// ResidentPages, which serves either structure.
#include "buffer/resident_bitmap.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "buffer/resident_pages.hpp"

namespace {

using vmstore::internal::ResidentBitmap;
using vmstore::internal::ResidentPages;
using vmstore::internal::ResidentSetKind;

template <class S>
std::set<uint64_t> contents(const S& s) {
  std::set<uint64_t> out;
  s.forEach([&](uint64_t pid) { EXPECT_TRUE(out.insert(pid).second) << "visited twice: " << pid; });
  return out;
}

TEST(ResidentBitmap, InsertRemoveForEachAgainstAModel) {
  ResidentBitmap rs(1 << 20);
  std::set<uint64_t> model;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20000; i++) {
    uint64_t pid = rng() % (1 << 20);
    if (rng() % 3 == 0 && !model.empty()) {
      uint64_t victim = *model.lower_bound(pid % (*model.rbegin() + 1));
      EXPECT_TRUE(rs.remove(victim));
      model.erase(victim);
    } else if (model.insert(pid).second) {
      rs.insert(pid);
    }
  }
  EXPECT_EQ(contents(rs), model);
  EXPECT_FALSE(rs.remove((1 << 20) - 1) && !model.count((1 << 20) - 1));
  EXPECT_EQ(rs.capacity() % 64, 0u);
  EXPECT_GT(rs.capacity(), *model.rbegin());
}

TEST(ResidentBitmap, ClockVisitsEachOncePerRotation) {
  ResidentBitmap rs(100000);
  std::set<uint64_t> model;
  std::mt19937_64 rng(11);
  while (model.size() < 500) {
    uint64_t pid = rng() % 100000;
    if (model.insert(pid).second) rs.insert(pid);
  }
  const uint64_t cap = rs.capacity();
  for (uint64_t step : {cap, uint64_t{1}, uint64_t{37}, uint64_t{256}, cap / 3 + 1, uint64_t{64}}) {
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
        ASSERT_TRUE(model.count(pid)) << "visited " << pid;
        ASSERT_EQ(n, rotations) << "pid " << pid << " step " << step;
      }
    }
  }
}

TEST(ResidentBitmap, MemoryFollowsTheHighestIdNotThePool) {
  ResidentBitmap rs(1ull << 30);  // 1 Gi ids: 128 MiB of address space, committed lazily
  EXPECT_EQ(rs.memoryBytes(), 0u);
  rs.insert(5);
  EXPECT_EQ(rs.memoryBytes(), 8u);
  rs.insert(1 << 20);
  EXPECT_EQ(rs.memoryBytes(), ((1u << 20) / 64 + 1) * 8);
  EXPECT_EQ(contents(rs), (std::set<uint64_t>{5, 1 << 20}));
}

TEST(ResidentBitmap, ConcurrentDisjointInsertRemove) {
  ResidentBitmap rs(1 << 16);
  const int threads = 4;
  std::vector<std::thread> ts;
  // Ids interleave so that threads share words: the atomics must not lose bits.
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      for (int round = 0; round < 200; round++) {
        for (uint64_t pid = t; pid < 4096; pid += threads) rs.insert(pid);
        for (uint64_t pid = t; pid < 4096; pid += threads) {
          if (pid % 3 != 0 || round == 199) continue;
          EXPECT_TRUE(rs.remove(pid));
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(contents(rs).size(), 4096u);
}

TEST(ResidentPages, EitherStructureServesTheSameContract) {
  for (ResidentSetKind kind : {ResidentSetKind::kHash, ResidentSetKind::kBitmap}) {
    ResidentPages rs(kind, 256, 1 << 20);
    EXPECT_EQ(rs.kind(), kind);
    std::set<uint64_t> model;
    for (uint64_t pid = 1; pid < 4000; pid += 17) {
      rs.insert(pid);
      model.insert(pid);
    }
    EXPECT_TRUE(rs.remove(18));
    model.erase(18);
    EXPECT_FALSE(rs.remove(19));
    EXPECT_EQ(contents(rs), model);
    std::set<uint64_t> swept;
    rs.advanceClock(rs.capacity(), [&](uint64_t pid) { swept.insert(pid); });
    EXPECT_EQ(swept, model);
    EXPECT_GT(rs.memoryBytes(), 0u);
  }
}

}  // namespace
