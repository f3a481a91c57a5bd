// Freed pages are reused: repeated "insert N keys, delete them all" rounds, repeated
// create/drop of trees, and the same across reopens, keep the data file within 2x of
// its size after the first round.
#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::Database;
using vmstore::Tree;

struct Sizes {
  uint64_t file_bytes;   // stats().file_bytes
  uint64_t page_count;   // stats().page_count
  uint64_t disk_bytes;   // size of the data file as the file system sees it
};

Sizes measure(Database* db, const std::string& dir) {
  EXPECT_TRUE(db->sync().ok());
  vmstore::Stats s = db->stats();
  // The log file is recycled at its high-water size (bounded by log_size, tested in
  // durability_test.cpp): what must stay bounded here is the data.
  return Sizes{s.file_bytes - s.log_file_bytes, s.page_count, fileSize(dataFile(dir))};
}

// The page count is what must stay bounded. The data file holds at most that many
// pages (it may still be shorter: pages allocated and freed between checkpoints are
// never written, so its length follows which free pages were last written).
void expectWithin2x(const Sizes& now, const Sizes& first, const std::string& when) {
  EXPECT_LE(now.page_count, 2 * first.page_count) << when << ": stats().page_count grew";
  EXPECT_LE(now.file_bytes, 2 * first.page_count * 4096) << when << ": stats().file_bytes grew";
  EXPECT_LE(now.disk_bytes, 2 * first.page_count * 4096) << when << ": the data file grew";
}

std::string growthValue(uint64_t i, int round) { return fillFor(beKey(i), round, 110 + i % 21); }

TEST(FileGrowth, InsertDeleteRoundsStayBounded) {
  const std::string dir = freshDir();
  // A pool that holds a round's data (~20 MB): this test is about page reuse, and
  // eviction with O_DIRECT I/O would make it slow (the out-of-memory tests cover that).
  std::unique_ptr<Database> db = openDb(dir, "durability=async,pool_size=64M");
  ASSERT_NE(db, nullptr);
  Tree* tree = nullptr;
  VMS_ASSERT_OK(db->openTree("", true, &tree));
  // 100,000 keys even at small scale (a few seconds under ASan), but not under TSan.
  const uint64_t n = scaled<uint64_t>(100000, kThreadSanitizer ? 20000 : 100000);
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 gen(5);

  Sizes first{};
  for (int round = 1; round <= 10; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::shuffle(order.begin(), order.end(), gen);
    for (uint64_t i : order) {
      Status s = tree->put(beKey(i), growthValue(i, round));
      ASSERT_TRUE(s.ok()) << "put " << i << ": " << s.toString();
    }
    // Spot-check a few values, then delete everything in another order.
    std::string v;
    for (uint64_t j = 0; j < n; j += n / 50) {
      VMS_ASSERT_OK(tree->get(beKey(order[j]), &v));
      ASSERT_TRUE(v == growthValue(order[j], round));
    }
    std::shuffle(order.begin(), order.end(), gen);
    for (uint64_t i : order) {
      Status s = tree->del(beKey(i));
      ASSERT_TRUE(s.ok()) << "del " << i << ": " << s.toString();
    }
    ASSERT_TRUE(scanForward(tree).empty());
    Sizes now = measure(db.get(), dir);
    if (round == 1) {
      first = now;
      ASSERT_GT(first.file_bytes, 0u);
      ASSERT_GT(first.disk_bytes, 0u) << "no data file found in " << dir;
    } else {
      expectWithin2x(now, first, "after round " + std::to_string(round));
    }
  }
  std::vector<std::string> problems;
  Status c = db->check(&problems);
  EXPECT_TRUE(c.ok()) << c.toString() << (problems.empty() ? "" : ": " + problems[0]);
  VMS_ASSERT_OK(db->close());
  EXPECT_LE(fileSize(dataFile(dir)), 2 * first.disk_bytes);
}

// The data file is allocated ahead of its growth while open (DataFile::setAllocateAhead);
// a clean close gives that space back, so a closed database's file ends at its last page.
TEST(FileGrowth, CleanCloseEndsTheFileAtItsLastPage) {
  const std::string dir = freshDir();
  std::unique_ptr<Database> db = openDb(dir, "durability=async,pool_size=16M");
  ASSERT_NE(db, nullptr);
  Tree* tree = nullptr;
  VMS_ASSERT_OK(db->openTree("", true, &tree));
  for (uint64_t i = 0; i < 2000; ++i) VMS_ASSERT_OK(tree->put(beKey(i), growthValue(i, 1)));
  VMS_ASSERT_OK(db->sync());
  const uint64_t open_bytes = fileSize(dataFile(dir));
  VMS_ASSERT_OK(db->close());
  const uint64_t closed_bytes = fileSize(dataFile(dir));
  db = openDb(dir, "durability=async,pool_size=16M");
  ASSERT_NE(db, nullptr);
  const uint64_t pages = db->stats().page_count;
  EXPECT_LE(closed_bytes, pages * 4096) << "the space allocated ahead outlived the close";
  EXPECT_GT(closed_bytes, (pages - pages / 4) * 4096) << "the close cut pages in use";
  // (With O_DIRECT, the open file had space ahead of its pages: open_bytes is larger.)
  RecordProperty("open_bytes", std::to_string(open_bytes));
  VMS_ASSERT_OK(db->openTree("", false, &tree));
  std::string v;
  for (uint64_t i = 0; i < 2000; ++i) {
    VMS_ASSERT_OK(tree->get(beKey(i), &v));
    ASSERT_EQ(v, growthValue(i, 1));
  }
  VMS_ASSERT_OK(db->close());
}

TEST(FileGrowth, CreateAndDropTreesRepeatedly) {
  const std::string dir = freshDir();
  std::unique_ptr<Database> db = openDb(dir, "durability=async,pool_size=4M");
  ASSERT_NE(db, nullptr);
  Tree* keep = nullptr;
  VMS_ASSERT_OK(db->openTree("keep", true, &keep));
  VMS_ASSERT_OK(keep->put("k", "v"));
  const uint64_t baseline_trees = db->stats().trees;
  const int rounds = scaled(30, 10);
  const int keys = scaled(5000, 2000);
  Sizes first{};
  for (int round = 1; round <= rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string name = "tree-" + std::to_string(round);
    Tree* t = nullptr;
    VMS_ASSERT_OK(db->openTree(name, true, &t));
    for (int i = 0; i < keys; ++i) {
      // Some values large enough to get pages of their own.
      VMS_ASSERT_OK(t->put(beKey(i), fillFor(name, i, i % 10 == 0 ? 3000 : 120)));
    }
    EXPECT_EQ(db->stats().trees, baseline_trees + 1);
    VMS_ASSERT_OK(db->dropTree(name));
    EXPECT_EQ(db->stats().trees, baseline_trees);
    EXPECT_GT(db->stats().free_pages, 0u) << "dropping a tree freed no page";
    Sizes now = measure(db.get(), dir);
    if (round == 2) {
      first = now;
    } else if (round > 2) {
      expectWithin2x(now, first, "after round " + std::to_string(round));
    }
  }
  std::vector<std::string> names;
  VMS_ASSERT_OK(db->listTrees(&names));
  std::set<std::string> got(names.begin(), names.end());
  EXPECT_TRUE(got.count("keep"));
  for (int round = 1; round <= rounds; ++round) {
    EXPECT_FALSE(got.count("tree-" + std::to_string(round))) << "dropped tree still listed";
  }
  std::string v;
  VMS_ASSERT_OK(keep->get("k", &v));
  EXPECT_EQ(v, "v");
  std::vector<std::string> problems;
  Status c = db->check(&problems);
  EXPECT_TRUE(c.ok()) << c.toString() << (problems.empty() ? "" : ": " + problems[0]);
  VMS_ASSERT_OK(db->close());
}

// The free-space list survives close and reopen: rounds that insert, close, reopen and
// delete everything keep the file bounded too.
TEST(FileGrowth, FreeSpaceIsReusedAcrossReopens) {
  const std::string dir = freshDir();
  const uint64_t n = scaled<uint64_t>(30000, 8000);
  Sizes first{};
  for (int round = 1; round <= 6; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::unique_ptr<Database> db = openDb(dir, "durability=async,pool_size=64M");
    ASSERT_NE(db, nullptr);
    Tree* tree = nullptr;
    VMS_ASSERT_OK(db->openTree("", true, &tree));
    for (uint64_t i = 0; i < n; ++i) VMS_ASSERT_OK(tree->put(beKey(mix64(i)), growthValue(i, round)));
    VMS_ASSERT_OK(db->close());
    db.reset();  // (close() releasing the lock is tested in cpp_api_test)
    db = openDb(dir, "durability=async,pool_size=64M");
    ASSERT_NE(db, nullptr);
    VMS_ASSERT_OK(db->openTree("", false, &tree));
    std::string v;
    for (uint64_t i = 0; i < n; i += 97) {
      VMS_ASSERT_OK(tree->get(beKey(mix64(i)), &v));
      ASSERT_TRUE(v == growthValue(i, round));
    }
    for (uint64_t i = 0; i < n; ++i) VMS_ASSERT_OK(tree->del(beKey(mix64(i))));
    Sizes now = measure(db.get(), dir);
    if (round == 1) {
      first = now;
    } else {
      expectWithin2x(now, first, "after round " + std::to_string(round));
    }
    if (round == 6) {
      std::vector<std::string> problems;
      Status c = db->check(&problems);
      EXPECT_TRUE(c.ok()) << c.toString() << (problems.empty() ? "" : ": " + problems[0]);
    }
    VMS_ASSERT_OK(db->close());
  }
}

}  // namespace
