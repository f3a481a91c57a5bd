// What sets each replacement policy apart, one test (or two) per policy, driven the way
// the simulator drives them: an access to a resident page is a hit, any other is a miss
// that evicts one victim when the pool is full. (The contract every policy meets is
// tested in conformance_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "policy/registry.hpp"

namespace {

using vmstore::internal::makePolicy;
using vmstore::internal::Policy;

class Cache {
 public:
  Cache(const std::string& policy, uint64_t pool, uint64_t maxPages = 100000)
      : p_(makePolicy(policy, pool, maxPages)), pool_(pool) {}
  // True on a hit; on a miss the victim (if any) is in lastVictim.
  bool access(uint64_t pid) {
    if (resident_.count(pid)) {
      p_->hit(pid);
      return true;
    }
    lastVictim = ~0ull;
    if (resident_.size() >= pool_) {
      uint64_t v;
      EXPECT_EQ(p_->victims(1, &v), 1u);
      resident_.erase(v);
      p_->evicted(v);
      lastVictim = v;
    }
    p_->admit(pid);
    resident_.insert(pid);
    return false;
  }
  bool resident(uint64_t pid) const { return resident_.count(pid) > 0; }
  Policy& policy() { return *p_; }
  uint64_t lastVictim = ~0ull;

 private:
  std::unique_ptr<Policy> p_;
  uint64_t pool_;
  std::set<uint64_t> resident_;
};

// Accesses 1..n once each, then `hot` pages again and again interleaved with a scan of
// `scan` new pages; returns how many of the hot pages are still resident afterwards.
int hotSurvivingAScan(const std::string& policy, uint64_t pool, int hot, int scan) {
  Cache c(policy, pool);
  for (int round = 0; round < 4; round++) {
    for (int h = 1; h <= hot; h++) c.access(h);
  }
  for (int s = 0; s < scan; s++) c.access(1000 + s);
  int alive = 0;
  for (int h = 1; h <= hot; h++) alive += c.resident(h);
  return alive;
}

TEST(PolicyBehaviour, FifoEvictsInArrivalOrderWhateverTheHits) {
  Cache c("fifo", 3);
  c.access(1), c.access(2), c.access(3);
  c.access(1);  // ignored
  c.access(4);
  EXPECT_EQ(c.lastVictim, 1u);
  EXPECT_FALSE(c.policy().tracksHits());
}

TEST(PolicyBehaviour, LruEvictsExactlyTheLeastRecentlyUsed) {
  Cache c("lru", 3);
  c.access(1), c.access(2), c.access(3);
  c.access(1);
  c.access(4);
  EXPECT_EQ(c.lastVictim, 2u);
  c.access(3);
  c.access(5);
  EXPECT_EQ(c.lastVictim, 1u);
}

TEST(PolicyBehaviour, Lru2PrefersPagesReferencedOnce) {
  Cache c("lru2", 3);
  c.access(1), c.access(1);  // two references
  c.access(2), c.access(2);
  c.access(3);               // one reference, the newest
  c.access(4);
  EXPECT_EQ(c.lastVictim, 3u) << "a page seen once goes before pages seen twice";
  // Among pages seen twice: the oldest second-to-last reference.
  c.access(4);  // 4 now has two references, its second-to-last newer than 1's and 2's
  c.access(5);
  EXPECT_EQ(c.lastVictim, 1u);
}

TEST(PolicyBehaviour, ScanResistantPoliciesKeepTheHotSet) {
  // 20 hot pages in a pool of 40, then a scan of 200 pages seen once: LRU and FIFO lose
  // the hot set; the policies built against scans keep most of it. (Not 2Q, whose hits
  // in A1in do not count until a page has left it once; nor LFU-DA, whose inflation rises
  // with every page a scan evicts, so a long scan ages the hot set out.)
  EXPECT_EQ(hotSurvivingAScan("lru", 40, 20, 200), 0);
  EXPECT_EQ(hotSurvivingAScan("fifo", 40, 20, 200), 0);
  for (const char* p : {"slru", "arc", "s3fifo", "lru2"}) {
    EXPECT_GE(hotSurvivingAScan(p, 40, 20, 200), 15) << p;
  }
}

TEST(PolicyBehaviour, TwoQSendsAGhostHitToTheMainQueue) {
  Cache c("2q", 8);  // Kin 2, Kout 4
  for (uint64_t p = 1; p <= 8; p++) c.access(p);
  for (uint64_t p = 9; p <= 12; p++) c.access(p);  // 1..4 leave A1in into A1out
  EXPECT_FALSE(c.resident(1));
  c.access(1);  // a ghost hit: Am
  // A stream of new pages passes through A1in and does not push 1 out.
  for (uint64_t p = 100; p < 120; p++) c.access(p);
  EXPECT_TRUE(c.resident(1));
}

TEST(PolicyBehaviour, ArcKeepsFrequentPagesAndLearnsFromGhosts) {
  Cache c("arc", 10);
  for (uint64_t p = 1; p <= 5; p++) c.access(p), c.access(p);  // T2: seen twice
  for (uint64_t p = 11; p <= 15; p++) c.access(p);               // T1: seen once
  for (uint64_t p = 16; p <= 20; p++) c.access(p);               // 11..15 leave for B1
  EXPECT_FALSE(c.resident(11));
  c.access(11);  // a ghost hit in B1: back, as frequent (T2)
  // A stream of one-time pages takes its victims from T1: T2 survives.
  for (uint64_t p = 200; p < 230; p++) c.access(p);
  int kept = 0;
  for (uint64_t p : {1, 2, 3, 4, 5, 11}) kept += c.resident(p);
  EXPECT_GE(kept, 5);
}

TEST(PolicyBehaviour, SieveKeepsVisitedPagesAndEvictsUnvisitedInOrder) {
  Cache c("sieve", 4);
  for (uint64_t p = 1; p <= 4; p++) c.access(p);
  c.access(1), c.access(3);  // visited
  c.access(5);
  EXPECT_EQ(c.lastVictim, 2u);
  c.access(6);
  EXPECT_EQ(c.lastVictim, 4u) << "the hand goes on from where it stopped";
  EXPECT_TRUE(c.resident(1) && c.resident(3));
}

TEST(PolicyBehaviour, S3FifoSendsOneHitWondersThroughSmallToGhostAndAGhostHitToMain) {
  Cache c("s3fifo", 20);  // S holds 2
  for (uint64_t p = 1; p <= 20; p++) c.access(p);
  for (uint64_t p = 1; p <= 10; p++) c.access(p);  // hit: 1..10 will move to M
  for (uint64_t p = 100; p < 140; p++) c.access(p);  // one-hit wonders
  int hot = 0;
  for (uint64_t p = 1; p <= 10; p++) hot += c.resident(p);
  EXPECT_EQ(hot, 10) << "pages hit in S moved to M and survived the stream";
  // 139 was evicted from S recently? The newest stay; an older wonder's id is a ghost:
  uint64_t ghost = 120;
  ASSERT_FALSE(c.resident(ghost));
  c.access(ghost);  // ghost hit: straight to M
  for (uint64_t p = 200; p < 240; p++) c.access(p);
  EXPECT_TRUE(c.resident(ghost));
}

TEST(PolicyBehaviour, LfudaAgesOutAPageThatWasHotLongAgo) {
  Cache c("lfuda", 10);
  for (int i = 0; i < 30; i++) c.access(1);  // count 31
  // A long new working set referenced a few times each: inflation rises past 31.
  for (int round = 0; round < 60; round++) {
    for (uint64_t p = 100 + round * 5u; p < 100 + round * 5u + 5; p++) {
      for (int k = 0; k < 3; k++) c.access(p);
    }
  }
  EXPECT_FALSE(c.resident(1)) << "plain LFU would keep page 1 forever";
}

TEST(PolicyBehaviour, LeanStoreHitRescuesACoolingPage) {
  Cache c("leanstore", 1000);  // a cooling stage of 100
  for (uint64_t p = 1; p <= 1000; p++) c.access(p);
  // The first call fills the cooling stage with random pages (150: 100 + the 50 asked
  // for) and offers the 50 oldest; evict them.
  std::vector<uint64_t> v(50);
  ASSERT_EQ(c.policy().victims(v.size(), v.data()), 50u);
  std::set<uint64_t> gone(v.begin(), v.end());
  for (uint64_t pid : v) c.policy().evicted(pid);
  // Hit every even page still resident: the cooling ones among them are rescued.
  for (uint64_t p = 2; p <= 1000; p += 2) {
    if (!gone.count(p)) c.policy().hit(p);
  }
  // The next victims come from what is still cooling: odd pages only.
  std::vector<uint64_t> w(20);
  ASSERT_EQ(c.policy().victims(w.size(), w.data()), 20u);
  for (uint64_t pid : w) EXPECT_EQ(pid % 2, 1u) << pid << " was hit while cooling";
  // A candidate that could not be evicted becomes hot again: not offered next time.
  for (uint64_t pid : w) c.policy().kept(pid);
  std::vector<uint64_t> x(20);
  ASSERT_EQ(c.policy().victims(x.size(), x.data()), 20u);
  for (uint64_t pid : x) EXPECT_EQ(std::count(w.begin(), w.end(), pid), 0) << pid;
}

TEST(PolicyBehaviour, RandomIsRoughlyUniform) {
  std::map<uint64_t, int> chosen;
  auto p = makePolicy("random", 10, 100);
  for (uint64_t pid = 1; pid <= 10; pid++) p->admit(pid);
  for (int i = 0; i < 10000; i++) {
    uint64_t v;
    ASSERT_EQ(p->victims(1, &v), 1u);
    chosen[v]++;
    p->kept(v);
  }
  ASSERT_EQ(chosen.size(), 10u);
  for (auto [pid, n] : chosen) EXPECT_TRUE(n > 700 && n < 1300) << pid << ": " << n;
}

TEST(PolicyBehaviour, GclockKeepsFrequentlyHitPages) {
  Cache c("gclock", 10);
  for (uint64_t p = 1; p <= 10; p++) c.access(p);
  for (int i = 0; i < 20; i++) c.access(1), c.access(2);
  for (uint64_t p = 100; p < 130; p++) c.access(p);
  EXPECT_TRUE(c.resident(1) && c.resident(2));
}

// GCLOCK as its definition gives it: one step of the hand at a time, S = 1, the ring's
// slots reused last-freed first as the policy reuses them.
class ReferenceGclock {
 public:
  void admit(uint64_t pid) {
    if (!free_.empty()) {
      ring_[free_.back()] = pid;
      slot_[pid] = free_.back();
      free_.pop_back();
    } else {
      slot_[pid] = ring_.size();
      ring_.push_back(pid);
    }
    count_[pid] = 25;
  }
  void hit(uint64_t pid) { count_[pid] = std::min(255, count_[pid] + 5); }
  uint64_t victim() {
    for (;;) {
      if (hand_ >= ring_.size()) hand_ = 0;
      uint64_t pid = ring_[hand_++];
      if (pid == 0) continue;
      if (count_[pid] == 0) {
        ring_[slot_[pid]] = 0;
        free_.push_back(slot_[pid]);
        return pid;
      }
      count_[pid]--;
    }
  }

 private:
  std::vector<uint64_t> ring_, free_;
  std::map<uint64_t, uint64_t> slot_;
  std::map<uint64_t, int> count_;
  uint64_t hand_ = 0;
};

TEST(PolicyBehaviour, GclockChoosesTheVictimsOfSingleSteps) {
  // Hot pages climb to the cap, so the reference's hand turns the ring up to 256 times
  // per victim; the policy takes the least count at once and must choose the same.
  const uint64_t pool = 50;
  Cache c("gclock", pool);
  ReferenceGclock ref;
  std::set<uint64_t> resident;
  std::mt19937_64 rng(7);
  uint64_t victims = 0;
  for (int i = 0; i < 20000; i++) {
    uint64_t pid = 1 + (rng() % 10 < 9 ? rng() % 40 : 40 + rng() % 400);
    if (resident.count(pid)) {
      ref.hit(pid);
    } else {
      if (resident.size() >= pool) {
        uint64_t expected = ref.victim();
        resident.erase(expected);
        victims++;
        c.access(pid);
        ASSERT_EQ(c.lastVictim, expected) << "access " << i;
        ref.admit(pid);
        resident.insert(pid);
        continue;
      }
      ref.admit(pid);
      resident.insert(pid);
    }
    c.access(pid);
  }
  EXPECT_GT(victims, 1000u);
}

TEST(PolicyBehaviour, ClockGivesASecondChance) {
  Cache c("clock", 3);
  c.access(1), c.access(2), c.access(3);
  c.access(4);  // all referenced: the hand clears 1, 2, 3 and evicts 1
  EXPECT_EQ(c.lastVictim, 1u);
  c.access(2);  // referenced again
  c.access(5);
  EXPECT_EQ(c.lastVictim, 3u);
}

}  // namespace
