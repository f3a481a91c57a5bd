// Unit tests of the buffer manager over memory tiers (buffer_manager.hpp, "Memory
// tiers"; tiering.cpp): pages fill the fastest tier, then move down in batches and leave
// memory from the last tier; every page stays in exactly one tier within its budget
// (checkTiers); pages used often in a lower tier move back up; a move that fails leaves
// the page where it was, it is retried and nothing is lost; readers and writers run while
// pages move. On one NUMA node the tiers share the node (migrations succeed without
// moving anything); `make numa-test` runs the same tests in a guest with two nodes, where
// the pages really move and checkTiers also checks each page's node.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "buffer/buffer_manager.hpp"
#include "os/numa.hpp"
#include "policy/registry.hpp"
#include "unit_util.hpp"

namespace {

using vmstore::MigrateMode;
using vmstore::internal::BufferManager;
using vmstore::internal::DataFile;
using vmstore::internal::Page;
using vmstore::internal::PageKind;
using vmstore::internal::TierSpec;

// The second tier on another node when there is one (the guest), else the same node.
std::vector<TierSpec> twoTiers(uint64_t fast, uint64_t slow) {
  std::vector<int> nodes = vmstore::internal::numa::memoryNodes();
  return {{nodes[0], fast}, {nodes.size() > 1 ? nodes[1] : nodes[0], slow}};
}

struct TierEnv {
  TierEnv(std::vector<TierSpec> tiers, MigrateMode mode = MigrateMode::kMovePages, size_t batch = 32) {
    vmstore::Status st = file.open(dir.file("data.vms"), true);
    if (!st.ok()) throw std::runtime_error(st.toString());
    uint64_t pool = 0;
    for (const TierSpec& t : tiers) pool += t.pages;
    bm = std::make_unique<BufferManager>(&file, pool, 1 << 20, 1);
    bm->setTiers(tiers, mode, batch);
  }
  ~TierEnv() {
    bm.reset();
    file.close();
  }
  std::vector<std::string> problems() const {
    std::vector<std::string> p;
    bm->checkTiers(&p);
    return p;
  }
  vmsunit::ScratchDir dir;
  DataFile file;
  std::unique_ptr<BufferManager> bm;
};

uint64_t word(const Page* p) {
  uint64_t w;
  std::memcpy(&w, p->payload, sizeof w);
  return w;
}
void setWord(Page* p, uint64_t v) { std::memcpy(p->payload, &v, sizeof v); }

// Allocates n pages, each holding its id * 7 in its first word; returns their ids.
std::vector<uint64_t> fill(BufferManager& bm, uint64_t n) {
  std::vector<uint64_t> pids;
  for (uint64_t i = 0; i < n; i++) {
    Page* p = bm.allocPage(PageKind::kBTreeLeaf);
    uint64_t pid = p->header.pid;
    setWord(p, pid * 7);
    bm.unfixX(pid);
    pids.push_back(pid);
  }
  return pids;
}

std::string readAll(BufferManager& bm, const std::vector<uint64_t>& pids) {
  for (uint64_t pid : pids) {
    Page* p = bm.fixS(pid);
    uint64_t w = word(p);
    bm.unfixS(pid);
    if (w != pid * 7) return "page " + std::to_string(pid) + " holds " + std::to_string(w);
  }
  return "";
}

TEST(Tiering, PagesFillTheFastTierThenMoveDownThenLeaveFromTheLast) {
  TierEnv env(twoTiers(256, 512));
  BufferManager& bm = *env.bm;
  const auto* tiers = bm.tiers();
  std::vector<uint64_t> pids = fill(bm, 200);
  EXPECT_EQ(tiers->used(0), 200u);
  EXPECT_EQ(tiers->used(1), 0u);
  EXPECT_EQ(bm.demotedPages(), 0u);
  pids = fill(bm, 600);  // 800 in all: beyond tier 0, then beyond the pool
  std::vector<uint64_t> all = pids;
  EXPECT_LE(tiers->used(0), 256u);
  EXPECT_LE(tiers->used(1), 512u);
  EXPECT_GT(bm.demotedPages(), 0u);
  EXPECT_EQ(tiers->used(0) + tiers->used(1), bm.residentPages());
  EXPECT_TRUE(env.problems().empty()) << env.problems().front();
  // Everything reads back, however often it moved or left memory.
  for (int round = 0; round < 2; round++) ASSERT_EQ(readAll(bm, all), "");
  vmstore::Stats s;
  bm.fillStats(&s);
  EXPECT_GT(s.evictions, 0u) << "pages leave memory from the last tier";
  EXPECT_EQ(s.tier_count, 2u);
  EXPECT_EQ(s.tier_budget_pages[0], 256u);
  EXPECT_EQ(s.tier_pages[0] + s.tier_pages[1], s.resident_pages);
  EXPECT_GT(s.migrate_calls, 0u);
  EXPECT_EQ(s.migrate_failures, 0u);
  EXPECT_TRUE(env.problems().empty()) << env.problems().front();
}

TEST(Tiering, PagesUsedOftenComeBackUp) {
  TierEnv env(twoTiers(256, 768));
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> hot = fill(bm, 64);
  std::vector<uint64_t> cold = fill(bm, 900);  // pushes the hot ones down
  for (int round = 0; round < 20; round++) {
    ASSERT_EQ(readAll(bm, hot), "");
    // A stream of cold pages keeps tier 0 turning over.
    std::vector<uint64_t> slice(cold.begin() + (round * 40) % 800, cold.begin() + (round * 40) % 800 + 40);
    ASSERT_EQ(readAll(bm, slice), "");
  }
  EXPECT_GT(bm.promotedPages(), 0u);
  unsigned inFast = 0;
  for (uint64_t pid : hot) inFast += bm.tiers()->tierOf(pid) == 0 && !bm.mayNeedRead(pid);
  EXPECT_GT(inFast, hot.size() / 2) << "most hot pages end in the fast tier";
  EXPECT_TRUE(env.problems().empty()) << env.problems().front();
}

TEST(Tiering, AMoveThatFailsLeavesThePageAndIsRetried) {
  TierEnv env(twoTiers(256, 512));
  BufferManager& bm = *env.bm;
  std::atomic<int> refusals{0};
  // Every third page is refused its first two moves (as if the node were full).
  std::vector<std::atomic<int>> tries(4096);
  bm.migrator()->failForTest([&](uint64_t pid) {
    if (pid % 3 != 0 || pid >= tries.size()) return false;
    if (tries[pid].fetch_add(1) >= 2) return false;
    refusals++;
    return true;
  });
  std::vector<uint64_t> pids = fill(bm, 700);
  EXPECT_GT(refusals.load(), 0);
  vmstore::Stats s;
  bm.fillStats(&s);
  EXPECT_EQ(s.migrate_failures, static_cast<uint64_t>(refusals.load()));
  EXPECT_GT(s.demoted_pages, 0u);
  EXPECT_LE(bm.tiers()->used(0), 256u);
  EXPECT_TRUE(env.problems().empty()) << env.problems().front();
  ASSERT_EQ(readAll(bm, pids), "");
  // Retried: pages refused before have moved down since.
  unsigned retriedDown = 0;
  for (uint64_t pid : pids) {
    if (pid % 3 == 0 && tries[pid].load() > 2 && bm.tiers()->tierOf(pid) == 1) retriedDown++;
  }
  EXPECT_GT(retriedDown, 0u);
}

TEST(Tiering, ReadersAndWritersRunWhilePagesMove) {
  TierEnv env(twoTiers(256, 512), MigrateMode::kMovePages, 8);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = fill(bm, 900);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0};
  std::atomic<uint64_t> ops{0};
  // Writers add 7 * pid * k to a page's word only in whole steps of pid * 7, so a page's
  // word is always a multiple of its id * 7 (readers check that).
  auto worker = [&](unsigned seed, bool write) {
    std::mt19937_64 rng(seed);
    while (!stop.load()) {
      uint64_t pid = pids[rng() % pids.size()];
      if (write) {
        Page* p = bm.fixX(pid);
        bm.markDirty(pid, p);
        setWord(p, word(p) + pid * 7);
        bm.unfixX(pid);
      } else {
        Page* p = bm.fixS(pid);
        if (word(p) % (pid * 7) != 0) bad++;
        bm.unfixS(pid);
      }
      ops++;
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < 3; i++) threads.emplace_back(worker, i + 1, i == 0);
  while (ops.load() < 50000) std::this_thread::yield();
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(bm.demotedPages(), 0u);
  EXPECT_TRUE(env.problems().empty()) << env.problems().front();
  for (uint64_t pid : pids) {
    Page* p = bm.fixS(pid);
    ASSERT_EQ(word(p) % (pid * 7), 0u) << pid;
    bm.unfixS(pid);
  }
}

TEST(Tiering, MbindPageByPageIsTheSameToTheBufferManager) {
  TierEnv env(twoTiers(256, 512), MigrateMode::kMbind, 1);
  std::vector<uint64_t> pids = fill(*env.bm, 700);
  EXPECT_GT(env.bm->demotedPages(), 0u);
  vmstore::Stats s;
  env.bm->fillStats(&s);
  EXPECT_GE(s.migrate_calls, s.demoted_pages) << "a call per page at least";
  EXPECT_TRUE(env.problems().empty()) << env.problems().front();
  ASSERT_EQ(readAll(*env.bm, pids), "");
}

TEST(Tiering, ThreeTiers) {
  std::vector<int> nodes = vmstore::internal::numa::memoryNodes();
  int last = nodes.back();
  TierEnv env({{nodes[0], 256}, {last, 256}, {last, 512}});
  std::vector<uint64_t> pids = fill(*env.bm, 1500);
  const auto* tiers = env.bm->tiers();
  EXPECT_LE(tiers->used(0), 256u);
  EXPECT_LE(tiers->used(1), 256u);
  EXPECT_GT(tiers->used(2), 0u);
  EXPECT_TRUE(env.problems().empty()) << env.problems().front();
  ASSERT_EQ(readAll(*env.bm, pids), "");
}

TEST(Tiering, BudgetsMustAddUpToThePoolAndTheClockIsThePolicy) {
  vmsunit::ScratchDir dir;
  DataFile file;
  ASSERT_TRUE(file.open(dir.file("data.vms"), true).ok());
  BufferManager bm(&file, 512, 1 << 20, 1);
  EXPECT_THROW(bm.setTiers({{0, 256}, {0, 128}}, MigrateMode::kMovePages, 8), std::invalid_argument);
  bm.setPolicy(vmstore::internal::makePolicy("lru", 512, 1 << 20));
  EXPECT_THROW(bm.setTiers({{0, 256}, {0, 256}}, MigrateMode::kMovePages, 8), std::invalid_argument);
  file.close();
}

}  // namespace
