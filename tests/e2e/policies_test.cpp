// Every replacement policy and both resident-set structures, end to end, out of memory:
// data 8x the pool written, read back in random order and by a scan, the budget kept at
// every step, the replacement counters moving. (Each policy's decisions are tested in
// tests/policy; `make test-policies` runs the buffer manager and model tests under each.)
#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "policy/registry.hpp"
#include "test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::Database;
using vmstore::Tree;

std::string pKey(uint64_t i) { return numKey("pol-", i, 8); }
std::string pValue(uint64_t i) { return fillFor(pKey(i), 0x5EED, 200); }

struct PolicyCase {
  std::string policy;
  std::string residentSet;
};

class PolicyEndToEnd : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(PolicyEndToEnd, OutOfMemoryReadsAndWritesStayIntact) {
  const PolicyCase& c = GetParam();
  const std::string dir = freshDir();
  const std::string config =
      "durability=none,pool_size=1M,policy=" + c.policy + ",resident_set=" + c.residentSet;
  const uint64_t n = scaled<uint64_t>(12000, 8000);  // ~8x the 256-page pool
  std::unique_ptr<Database> db = openDb(dir, config);
  ASSERT_NE(db, nullptr);
  Tree* tree = nullptr;
  VMS_ASSERT_OK(db->openTree("", true, &tree));
  for (uint64_t i = 0; i < n; i++) {
    VMS_ASSERT_OK(tree->put(pKey(i), pValue(i)));
    if (i % 1000 == 0) {
      ASSERT_LE(db->stats().resident_pages, db->stats().pool_pages) << i;
    }
  }
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(9));
  std::string v;
  // Skewed re-reads: a hot tenth read often, the rest once.
  for (uint64_t j = 0; j < n; j++) {
    uint64_t i = j % 3 == 0 ? order[j % (n / 10)] : order[j];
    VMS_ASSERT_OK(tree->get(pKey(i), &v));
    ASSERT_EQ(v, pValue(i)) << pKey(i);
  }
  uint64_t seen = 0;
  vmstore::Iterator it = tree->newIterator();
  for (it.seekToFirst(); it.valid(); it.next()) {
    ASSERT_EQ(it.value(), pValue(seen)) << seen;
    seen++;
  }
  VMS_ASSERT_OK(it.status());
  EXPECT_EQ(seen, n);
  vmstore::Stats s = db->stats();
  EXPECT_LE(s.resident_pages, s.pool_pages);
  EXPECT_GT(s.evictions, 0u);
  EXPECT_GT(s.misses, 0u);
  EXPECT_GT(s.victim_ns, 0u);
  EXPECT_GT(s.resident_set_bytes, 0u);
  if (c.policy != "clock") {
    EXPECT_GT(s.policy_bytes, 0u);
  }
  // Reopened with the same policy, everything is there (nothing is kept about the
  // policy on storage: it may change from one open to the next).
  db.reset();
  db = openDb(dir, config + ",create=false");
  ASSERT_NE(db, nullptr);
  VMS_ASSERT_OK(db->openTree("", false, &tree));
  for (uint64_t i = 0; i < n; i += 7) {
    VMS_ASSERT_OK(tree->get(pKey(i), &v));
    ASSERT_EQ(v, pValue(i));
  }
}

std::vector<PolicyCase> cases() {
  std::vector<PolicyCase> out;
  for (const std::string& p : vmstore::internal::policyNames()) out.push_back({p, "hash"});
  out.push_back({"clock", "bitmap"});
  out.push_back({"lru", "bitmap"});
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, PolicyEndToEnd, ::testing::ValuesIn(cases()), [](const auto& info) {
  std::string s = info.param.policy + "_" + info.param.residentSet;
  for (char& ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return s;
});

TEST(PolicyConfig, UnknownPolicyOrResidentSetIsAClearError) {
  std::unique_ptr<Database> db;
  Status s = Database::open(freshDir(), "policy=mru", &db);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.toString();
  EXPECT_NE(s.message().find("mru"), std::string::npos);
  EXPECT_NE(s.message().find("clock"), std::string::npos) << "lists the known policies: " << s.message();
  s = Database::open(freshDir(), "resident_set=tree", &db);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.toString();
  // A C++ Options value nothing parsed is checked at open.
  vmstore::Options o;
  o.policy = "nope";
  s = Database::open(freshDir(), o, &db);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.toString();
}

}  // namespace
