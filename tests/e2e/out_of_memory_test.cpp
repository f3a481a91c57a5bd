// Data at least 10x the buffer pool: load it (checking resident_pages <= pool_pages along
// the way), read every value back in random order, close, reopen with the same small
// pool and read every value again (full scan plus random gets). Scans read ahead, and
// see the same entries without.
#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::Database;
using vmstore::Tree;

constexpr size_t kValueSize = 120;

std::string oomKey(uint64_t i) { return numKey("oom-", i, 9); }
std::string oomValue(uint64_t i) { return fillFor(oomKey(i), 0xC0FFEE, kValueSize); }

void expectResidentWithinPool(Database* db, const std::string& when) {
  vmstore::Stats s = db->stats();
  ASSERT_LE(s.resident_pages, s.pool_pages) << when;
}

// Gets `count` of the keys 0..n-1 (all when count == n) in random order and checks them.
void readAllRandomOrder(Database* db, Tree* tree, uint64_t n, uint64_t count, uint64_t seed,
                        const char* when) {
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  std::string v;
  for (uint64_t j = 0; j < count; ++j) {
    uint64_t i = order[j];
    Status s = tree->get(oomKey(i), &v);
    ASSERT_TRUE(s.ok()) << when << ": get " << oomKey(i) << ": " << s.toString();
    ASSERT_TRUE(v == oomValue(i)) << when << ": wrong value for " << oomKey(i);
    if (j % (n / 8 + 1) == 0) {
      ASSERT_NO_FATAL_FAILURE(expectResidentWithinPool(db, std::string(when) + ", read " + std::to_string(j)));
    }
  }
}

TEST(OutOfMemory, DataTenTimesThePool) {
  const std::string dir = freshDir();
  // The minimum pool (1 MiB, 256 pages) and 70k x 120 B values: ~3500 leaf pages, ~14x
  // the pool. Misses are real (O_DIRECT) disk reads, ~10k/s, which bounds the size: the
  // small scale cannot shrink the pool further, so it only trims the key count a little.
  const uint64_t pool = 1ull << 20;
  const uint64_t n = scaled<uint64_t>(70000, 60000);
  const std::string config = "durability=async,pool_size=" + std::to_string(pool);

  std::unique_ptr<Database> db = openDb(dir, config);
  ASSERT_NE(db, nullptr);
  Tree* tree = nullptr;
  VMS_ASSERT_OK(db->openTree("", true, &tree));
  EXPECT_EQ(db->stats().pool_pages, pool / vmstore::kPageSize);

  // Insert in a scrambled order so splits happen all over the tree.
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  for (uint64_t j = 0; j < n; ++j) {
    uint64_t i = order[j];
    Status s = tree->put(oomKey(i), oomValue(i));
    ASSERT_TRUE(s.ok()) << "put #" << j << " " << oomKey(i) << ": " << s.toString();
    if (j % (n / 10) == 0) {
      ASSERT_NO_FATAL_FAILURE(expectResidentWithinPool(db.get(), "load, put " + std::to_string(j)));
    }
  }
  VMS_ASSERT_OK(db->sync());
  vmstore::Stats loaded = db->stats();
  EXPECT_LE(loaded.resident_pages, loaded.pool_pages);
  EXPECT_GE(loaded.page_count * vmstore::kPageSize, 10 * pool)
      << "the data is not 10x the pool: " << loaded.page_count << " pages";
  EXPECT_GT(loaded.evictions, 0u);
  EXPECT_GT(loaded.pages_written, 0u);

  // Every value, in random order.
  ASSERT_NO_FATAL_FAILURE(readAllRandomOrder(db.get(), tree, n, n, 2, "after load"));
  vmstore::Stats read = db->stats();
  EXPECT_GT(read.misses, loaded.misses) << "random reads of 10x the pool caused no miss";
  EXPECT_LE(read.resident_pages, read.pool_pages);

  VMS_ASSERT_OK(db->close());
  db.reset();
  EXPECT_GE(fileSize(dataFile(dir)), 10 * pool);

  // Reopen with the same pool: every value again by a full scan (sequential, cheap), and
  // a quarter of them by random gets.
  db = openDb(dir, config + ",create=false");
  ASSERT_NE(db, nullptr);
  VMS_ASSERT_OK(db->openTree("", false, &tree));
  {
    vmstore::Iterator it = tree->newIterator();
    uint64_t i = 0;
    for (it.seekToFirst(); it.valid(); it.next(), ++i) {
      ASSERT_LT(i, n);
      ASSERT_EQ(it.key(), oomKey(i));
      ASSERT_TRUE(it.value() == oomValue(i)) << oomKey(i);
      if (i % (n / 8) == 0) {
        ASSERT_NO_FATAL_FAILURE(expectResidentWithinPool(db.get(), "scan at " + std::to_string(i)));
      }
    }
    VMS_ASSERT_OK(it.status());
    EXPECT_EQ(i, n);
  }
  ASSERT_NO_FATAL_FAILURE(readAllRandomOrder(db.get(), tree, n, n / 4, 3, "after reopen"));
  vmstore::Stats reopened = db->stats();
  EXPECT_GT(reopened.misses, 0u);
  EXPECT_LE(reopened.resident_pages, reopened.pool_pages);
  std::vector<std::string> problems;
  Status c = db->check(&problems);
  EXPECT_TRUE(c.ok()) << c.toString() << (problems.empty() ? "" : ": " + problems[0]);
  EXPECT_LE(db->stats().resident_pages, db->stats().pool_pages) << "after check()";
  VMS_ASSERT_OK(db->close());
}

// Large values (each in a page of its own) 10x the pool, overwritten once.
TEST(OutOfMemory, LargeValuesTenTimesThePool) {
  const std::string dir = freshDir();
  std::unique_ptr<Database> db = openDb(dir, "durability=async,pool_size=1M");
  ASSERT_NE(db, nullptr);
  Tree* tree = nullptr;
  VMS_ASSERT_OK(db->openTree("big", true, &tree));
  const int n = scaled(4000, 3000);  // 4000 x ~3.9 KB = 15 MB vs a 1 MiB pool
  auto value = [](int i, int round) {
    return fillFor(numKey("big", i), round, 3500 + (i % 500));
  };
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < n; ++i) {
      VMS_ASSERT_OK(tree->put(numKey("big", i), value(i, round)));
    }
    ASSERT_NO_FATAL_FAILURE(expectResidentWithinPool(db.get(), "round " + std::to_string(round)));
  }
  std::string v;
  for (int i = n - 1; i >= 0; --i) {
    VMS_ASSERT_OK(tree->get(numKey("big", i), &v));
    ASSERT_TRUE(v == value(i, 1)) << i;
  }
  VMS_ASSERT_OK(db->close());
  db.reset();  // (close() releasing the lock is tested in cpp_api_test)
  db = openDb(dir, "durability=async,pool_size=1M");
  ASSERT_NE(db, nullptr);
  VMS_ASSERT_OK(db->openTree("big", false, &tree));
  for (int i = 0; i < n; ++i) {
    VMS_ASSERT_OK(tree->get(numKey("big", i), &v));
    ASSERT_TRUE(v == value(i, 1)) << i;
  }
  vmstore::Stats s = db->stats();
  EXPECT_LE(s.resident_pages, s.pool_pages);
  // Overwriting every value must not have doubled the file for good: the old pages
  // were freed for reuse (at most ~2 rounds' worth of pages ever).
  EXPECT_LE(s.page_count, static_cast<uint64_t>(3 * n));
  VMS_ASSERT_OK(db->close());
}

}  // namespace

// Read-ahead (issue 7 item 4): cold scans of data 10x the pool, forward and backward,
// with read-ahead on and off, see exactly the same entries; with it on, most leaves a
// long scan misses on come in by read-ahead, and scans that stay in one leaf read
// nothing ahead.
TEST(OutOfMemory, ScansReadAheadAndSeeTheSameEntries) {
  const std::string dir = freshDir();
  const uint64_t n = scaled<uint64_t>(60000, 40000);
  const std::string config = "durability=none,pool_size=1M";
  {
    std::unique_ptr<Database> db = openDb(dir, config);
    ASSERT_NE(db, nullptr);
    Tree* tree = nullptr;
    VMS_ASSERT_OK(db->openTree("", true, &tree));
    for (uint64_t i = 0; i < n; ++i) VMS_ASSERT_OK(tree->put(oomKey(i), oomValue(i)));
    VMS_ASSERT_OK(db->close());
  }
  for (const char* readAhead : {"32", "0", "256"}) {
    SCOPED_TRACE(std::string("read_ahead=") + readAhead);
    std::unique_ptr<Database> db = openDb(dir, config + ",create=false,read_ahead=" + readAhead);
    ASSERT_NE(db, nullptr);
    Tree* tree = nullptr;
    VMS_ASSERT_OK(db->openTree("", false, &tree));
    // Point scans: a seek and one entry each, spread over the tree: nothing ahead.
    for (uint64_t i = 0; i < n; i += n / 20) {
      vmstore::Iterator it = tree->newIterator();
      it.seek(oomKey(i));
      ASSERT_TRUE(it.valid());
      ASSERT_EQ(it.key(), oomKey(i));
    }
    EXPECT_EQ(db->stats().read_ahead_pages, 0u);
    // A cold full scan forward, then backward.
    vmstore::Stats before = db->stats();
    {
      vmstore::Iterator it = tree->newIterator();
      uint64_t i = 0;
      for (it.seekToFirst(); it.valid(); it.next(), ++i) {
        ASSERT_LT(i, n);
        ASSERT_EQ(it.key(), oomKey(i));
        ASSERT_TRUE(it.value() == oomValue(i)) << oomKey(i);
      }
      VMS_ASSERT_OK(it.status());
      EXPECT_EQ(i, n);
    }
    {
      vmstore::Iterator it = tree->newIterator();
      uint64_t i = n;
      for (it.seekToLast(); it.valid(); it.prev()) {
        ASSERT_GT(i, 0u);
        --i;
        ASSERT_EQ(it.key(), oomKey(i));
        ASSERT_TRUE(it.value() == oomValue(i)) << oomKey(i);
      }
      VMS_ASSERT_OK(it.status());
      EXPECT_EQ(i, 0u);
    }
    vmstore::Stats after = db->stats();
    EXPECT_LE(after.resident_pages, after.pool_pages);
    const uint64_t misses = after.misses - before.misses;
    const uint64_t ahead = after.read_ahead_pages - before.read_ahead_pages;
    EXPECT_GT(misses, 2 * after.pool_pages) << "the scans did not outgrow the pool";
    if (std::string(readAhead) == "0") {
      EXPECT_EQ(ahead, 0u);
    } else {
      // Only the first leaves of each scan and of each parent's run are read alone.
      EXPECT_GT(ahead, misses * 3 / 4) << ahead << " of " << misses << " misses read ahead";
    }
    VMS_ASSERT_OK(db->close());
  }
}

TEST(OutOfMemory, ReadAheadConfigIsChecked) {
  const std::string dir = freshDir();
  for (const char* bad : {"read_ahead=257", "read_ahead=-1", "read_ahead=4K", "read_ahead=", "read_ahead=many"}) {
    vmstore::Options o;
    Status s = vmstore::Options::parse(bad, &o);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(s.toString().find("read_ahead"), std::string::npos) << s.toString();
    EXPECT_EQ(o.read_ahead, 32u) << "a bad value leaves the options untouched";
  }
  vmstore::Options o;
  VMS_EXPECT_OK(vmstore::Options::parse("read_ahead=0", &o));
  EXPECT_EQ(o.read_ahead, 0u);
  VMS_EXPECT_OK(vmstore::Options::parse("read_ahead=256", &o));
  EXPECT_EQ(o.read_ahead, 256u);
}
