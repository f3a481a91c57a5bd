// Every replacement policy of the registry against the Policy contract (policy.hpp):
// victims are distinct and resident, sizes add up, races that the engine produces (a hit
// on an evicted page, kept() on a freed one) are harmless, and many threads at once
// leave the policy consistent. Policy-specific behaviour is tested beside each policy.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "policy/registry.hpp"

namespace {

using vmstore::internal::makePolicy;
using vmstore::internal::Policy;
using vmstore::internal::policyNames;

class PolicyConformance : public ::testing::TestWithParam<std::string> {};

// Runs a reference string through the policy the way the simulator does, checking the
// contract at every eviction. Returns the hits.
uint64_t replay(Policy& p, const std::vector<uint64_t>& refs, uint64_t pool) {
  std::set<uint64_t> resident;
  uint64_t hits = 0;
  for (uint64_t pid : refs) {
    if (resident.count(pid)) {
      p.hit(pid);
      hits++;
      continue;
    }
    if (resident.size() >= pool) {
      uint64_t v[4];
      size_t n = p.victims(1, v);
      EXPECT_EQ(n, 1u);
      if (n != 1) return hits;
      EXPECT_TRUE(resident.count(v[0])) << "victim " << v[0] << " is not resident";
      resident.erase(v[0]);
      p.evicted(v[0]);
    }
    p.admit(pid);
    resident.insert(pid);
    EXPECT_EQ(p.size(), resident.size());
  }
  return hits;
}

TEST_P(PolicyConformance, VictimsAreDistinctResidentAndAnswered) {
  const uint64_t pool = 64;
  auto p = makePolicy(GetParam(), pool, 1000);
  for (uint64_t pid = 1; pid <= pool; pid++) p->admit(pid);
  for (uint64_t pid = 1; pid <= pool; pid += 3) p->hit(pid);
  std::vector<uint64_t> v(pool);
  size_t n = p->victims(16, v.data());
  ASSERT_GE(n, 1u);
  ASSERT_LE(n, 16u);
  std::set<uint64_t> seen(v.begin(), v.begin() + n);
  EXPECT_EQ(seen.size(), n) << "victims repeated a pid";
  for (size_t i = 0; i < n; i++) EXPECT_TRUE(v[i] >= 1 && v[i] <= pool);
  // Half evicted, half kept: the size follows.
  for (size_t i = 0; i < n; i++) (i % 2 ? p->kept(v[i]) : p->evicted(v[i]));
  EXPECT_EQ(p->size(), pool - (n + 1) / 2);
  // A page kept is still offered later (it is not lost), and nothing is offered twice
  // in one call even when asked for more than are resident.
  std::vector<uint64_t> all(2 * pool);
  size_t m = p->victims(all.size(), all.data());
  std::set<uint64_t> once(all.begin(), all.begin() + m);
  EXPECT_EQ(once.size(), m);
  EXPECT_LE(m, p->size());
  for (size_t i = 0; i < m; i++) p->evicted(all[i]);
  EXPECT_EQ(p->size(), pool - (n + 1) / 2 - m);
}

TEST_P(PolicyConformance, EveryResidentPageCanBeEvicted) {
  auto p = makePolicy(GetParam(), 32, 100);
  for (uint64_t pid = 10; pid < 42; pid++) p->admit(pid);
  std::set<uint64_t> evicted;
  for (int round = 0; round < 200 && p->size() > 0; round++) {
    uint64_t v[8];
    size_t n = p->victims(8, v);
    for (size_t i = 0; i < n; i++) {
      EXPECT_TRUE(evicted.insert(v[i]).second);
      p->evicted(v[i]);
    }
  }
  EXPECT_EQ(p->size(), 0u);
  EXPECT_EQ(evicted.size(), 32u);
}

TEST_P(PolicyConformance, RacesTheEngineProducesAreHarmless) {
  auto p = makePolicy(GetParam(), 16, 100);
  p->hit(5);  // never admitted
  for (uint64_t pid = 1; pid <= 16; pid++) p->admit(pid);
  p->removed(3);
  p->hit(3);  // freed just before
  EXPECT_EQ(p->size(), 15u);
  uint64_t v[16];
  size_t n = p->victims(16, v);
  ASSERT_GE(n, 1u);
  for (size_t i = 0; i < n; i++) EXPECT_NE(v[i], 3u);
  // A candidate freed while it was offered: the engine reports kept() for it.
  p->removed(v[0]);
  p->kept(v[0]);
  for (size_t i = 1; i < n; i++) p->kept(v[i]);
  EXPECT_EQ(p->size(), 14u);
  // It can be admitted again and is resident once.
  p->admit(v[0]);
  EXPECT_EQ(p->size(), 15u);
}

TEST_P(PolicyConformance, ReplayHitsAndNeverExceedsThePool) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> refs;
  // A skewed working set: 20% of 500 pages get 80% of the references.
  for (int i = 0; i < 50000; i++) {
    bool hot = rng() % 10 < 8;
    refs.push_back(1 + (hot ? rng() % 100 : 100 + rng() % 400));
  }
  auto p = makePolicy(GetParam(), 150, 1000);
  uint64_t hits = replay(*p, refs, 150);
  // Every policy keeps more than a pool's worth of uniform chance (150/500 = 30%).
  EXPECT_GT(hits, refs.size() * 3 / 10) << GetParam();
}

TEST_P(PolicyConformance, ManyThreadsAtOnce) {
  const uint64_t pages = 4000;
  auto p = makePolicy(GetParam(), 256, pages);
  // Each admitter owns a disjoint id range; one evictor; hitters hit anything.
  std::atomic<bool> stop{false};
  std::vector<std::atomic<uint8_t>> resident(pages);
  std::atomic<uint64_t> admitted{0}, gone{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; t++) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 20000; i++) {
        uint64_t pid = 1 + t * (pages / 2) + rng() % (pages / 2 - 1);
        uint8_t zero = 0;
        if (resident[pid].compare_exchange_strong(zero, 1)) {
          p->admit(pid);
          admitted++;
          resident[pid].store(2);  // admitted: the evictor may now see it
        } else if (zero == 2 && rng() % 8 == 0 && resident[pid].compare_exchange_strong(zero, 3)) {
          p->removed(pid);
          gone++;
          resident[pid].store(0);
        } else {
          p->hit(pid);
        }
      }
    });
  }
  ts.emplace_back([&] {
    std::vector<uint64_t> v(32);
    while (!stop.load()) {
      size_t n = p->victims(v.size(), v.data());
      for (size_t i = 0; i < n; i++) {
        uint8_t two = 2;
        if (resident[v[i]].compare_exchange_strong(two, 3)) {
          p->evicted(v[i]);
          gone++;
          resident[v[i]].store(0);
        } else {
          p->kept(v[i]);
        }
      }
    }
  });
  for (int t = 0; t < 2; t++) ts[t].join();
  stop = true;
  ts.back().join();
  EXPECT_EQ(p->size(), admitted.load() - gone.load());
}

TEST(PolicyRegistry, UnknownNameIsAClearError) {
  try {
    makePolicy("lru-17", 10, 10);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("lru-17"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("clock"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, PolicyConformance, ::testing::ValuesIn(policyNames()),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
