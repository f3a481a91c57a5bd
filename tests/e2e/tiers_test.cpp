// Memory tiers end to end (config tiers, README "Memory tiers"): a database over two tiers
// keeps every page in one tier within its budget while data several times the pool is
// written, read and updated from several threads; it reopens without tiers and with them;
// the configuration's errors are clear and leave nothing behind. On one NUMA node both
// tiers are on it (moves succeed without moving); `make numa-test` runs this on two.
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "os/numa.hpp"
#include "test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::Database;
using vmstore::Status;
using vmstore::Tree;

std::string tKey(uint64_t i) { return numKey("tier-", i, 8); }
std::string tValue(uint64_t i, uint64_t version) { return fillFor(tKey(i), version, 150); }

// "FAST:1M+SLOW:2M" on this machine's first two nodes with memory (or its one node twice).
std::string tierConfig(const std::string& fast, const std::string& slow) {
  std::vector<int> nodes = vmstore::internal::numa::memoryNodes();
  int second = nodes.size() > 1 ? nodes[1] : nodes[0];
  return "tiers=" + std::to_string(nodes[0]) + ":" + fast + "+" + std::to_string(second) + ":" + slow;
}

TEST(Tiers, DataBeyondThePoolStaysIntactAndEachTierWithinItsBudget) {
  const std::string dir = freshDir();
  const std::string config = "durability=none," + tierConfig("1M", "2M");
  const uint64_t n = scaled<uint64_t>(40000, 15000);  // ~3-8x the 768-page pool
  std::unique_ptr<Database> db = openDb(dir, config);
  ASSERT_NE(db, nullptr);
  Tree* tree = nullptr;
  VMS_ASSERT_OK(db->openTree("", true, &tree));
  for (uint64_t i = 0; i < n; i++) VMS_ASSERT_OK(tree->put(tKey(i), tValue(i, 0)));
  vmstore::Stats s = db->stats();
  ASSERT_EQ(s.tier_count, 2u);
  EXPECT_EQ(s.pool_pages, 768u);
  EXPECT_EQ(s.tier_budget_pages[0], 256u);
  EXPECT_EQ(s.tier_budget_pages[1], 512u);
  EXPECT_LE(s.tier_pages[0], 256u);
  EXPECT_LE(s.tier_pages[1], 512u);
  EXPECT_GT(s.demoted_pages, 0u);
  EXPECT_GT(s.evictions, 0u);
  expectCheckOk(db.get());
  // Readers and writers on several threads while pages move: each thread owns the keys
  // i % 3 == t and bumps their version; every read sees a version it could have.
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 3; t++) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t + 11);
      for (int op = 0; op < 3000 && !failed; op++) {
        uint64_t i = rng() % n;
        std::string v;
        if (!tree->get(tKey(i), &v).ok() || (v != tValue(i, 0) && v != tValue(i, 1))) failed = true;
        if (i % 3 == t && !tree->put(tKey(i), tValue(i, 1)).ok()) failed = true;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(failed.load());
  expectCheckOk(db.get());
  s = db->stats();
  EXPECT_LE(s.tier_pages[0], 256u);
  EXPECT_LE(s.tier_pages[1], 512u);
  EXPECT_EQ(s.migrate_failures, 0u);
  VMS_ASSERT_OK(db->close());
  // Nothing about tiers is stored: the database opens without them, and with them again.
  for (const std::string& again : {std::string("durability=none,pool_size=2M,create=false"), config}) {
    db = openDb(dir, again);
    ASSERT_NE(db, nullptr) << again;
    VMS_ASSERT_OK(db->openTree("", false, &tree));
    for (uint64_t i = 0; i < n; i += 7) {
      std::string v;
      VMS_ASSERT_OK(tree->get(tKey(i), &v));
      ASSERT_TRUE(v == tValue(i, 0) || v == tValue(i, 1)) << i;
    }
    expectCheckOk(db.get());
    VMS_ASSERT_OK(db->close());
  }
}

TEST(Tiers, ConfigurationErrorsAreClear) {
  struct Bad {
    std::string config;
    std::string says;
  };
  const std::vector<Bad> bad = {
      {"tiers=0", "not NODE:SIZE"},
      {"tiers=", "not NODE:SIZE"},
      {"tiers=0:4M+", "missing after '+'"},
      {"tiers=x:4M", "not a NUMA node"},
      {"tiers=0:4Q", "not a size"},
      {"tiers=0:512K", "at least 1M"},
      {"tiers=0:1M+0:1M+0:1M+0:1M+0:1M", "at most 4 tiers"},
      {"pool_size=4M,tiers=0:1M+0:2M", "pool_size and tiers both given"},
      {"migrate=memcpy", "not move_pages or mbind"},
      {"migrate_batch=0", "from 1 to 4096"},
      {"migrate_batch=5000", "from 1 to 4096"},
  };
  for (const Bad& b : bad) {
    vmstore::Options o;
    Status s = vmstore::Options::parse(b.config, &o);
    EXPECT_TRUE((s.code() == Status::Code::kInvalidArgument)) << b.config << ": " << s.toString();
    EXPECT_NE(s.message().find(b.says), std::string::npos) << b.config << ": " << s.message();
    EXPECT_TRUE(o.tiers.empty()) << b.config << " left tiers set";
  }
  vmstore::Options o;
  VMS_ASSERT_OK(vmstore::Options::parse("tiers=0:4G+1:16G,migrate_batch=512,migrate=mbind", &o));
  ASSERT_EQ(o.tiers.size(), 2u);
  EXPECT_EQ(o.tiers[1].node, 1);
  EXPECT_EQ(o.tiers[1].size, 16ull << 30);
  EXPECT_EQ(o.migrate_batch, 512u);
  EXPECT_EQ(o.migrate, vmstore::MigrateMode::kMbind);

  // At open: a node without memory here, and a policy other than clock.
  const std::string dir = freshDir();
  std::unique_ptr<Database> db;
  Status s = Database::open(dir, "tiers=0:1M+999:1M", &db);
  EXPECT_TRUE((s.code() == Status::Code::kInvalidArgument)) << s.toString();
  EXPECT_NE(s.message().find("node 999 has no memory"), std::string::npos) << s.message();
  s = Database::open(dir, tierConfig("1M", "1M") + ",policy=lru", &db);
  EXPECT_TRUE((s.code() == Status::Code::kInvalidArgument)) << s.toString();
  EXPECT_NE(s.message().find("policy=clock"), std::string::npos) << s.message();
  // policy=clock is fine, and so is leaving the policy alone (tiers use clock).
  s = Database::open(dir, tierConfig("1M", "1M") + ",policy=clock", &db);
  VMS_ASSERT_OK(s);
  EXPECT_EQ(db->stats().policy_bytes, 0u);
  VMS_ASSERT_OK(db->close());
}

}  // namespace
