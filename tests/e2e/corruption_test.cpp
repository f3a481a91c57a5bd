// Storage damage: a database bigger than the pool is copied, the copy's data file is
// damaged (flipped bytes, a zeroed page, truncation), and the copy is opened with a small
// pool and read completely. Every call must give the right answer or Corruption: never a
// wrong value, never a missing key, never a crash. check() must notice the damage.
// Also: a database that was not closed cleanly (a child process _exits without closing).
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::Database;
using vmstore::Iterator;
using vmstore::Tree;
using Model = std::map<std::string, std::string>;

const char* const kTrees[] = {"", "aux"};
constexpr const char* kOpenConfig = "pool_size=1M,create=false";

struct Golden {
  std::string dir;
  Model data[2];
  uint64_t page_count = 0;
  uint64_t free_pages = 0;
  uint64_t file_size = 0;
};

std::string goldenValue(const std::string& key, int i) {
  size_t len = i % 20 == 0 ? 3000 + i % 900 : 40 + (i * 37) % 560;
  return fillFor(key, 99, len);
}

// Builds the undamaged database once for the whole suite.
const Golden& golden() {
  static Golden* g = [] {
    auto* out = new Golden;
    // Per process: CTest runs test cases as parallel processes.
    out->dir = (tmpRoot() / ("Corruption.golden." + std::to_string(getpid()))).string();
    std::error_code ec;
    fs::remove_all(out->dir, ec);
    fs::create_directories(tmpRoot(), ec);
    vmstscratch::removeAtExit(out->dir);
    std::unique_ptr<Database> db;
    Status s = Database::open(out->dir, "durability=async,pool_size=1M", &db);
    EXPECT_TRUE(s.ok()) << s.toString();
    if (!s.ok()) return out;
    const int n = scaled(6000, 4000);  // ~3+ MB of pages vs a 1 MiB pool
    for (int t = 0; t < 2; ++t) {
      Tree* tree = nullptr;
      s = db->openTree(kTrees[t], true, &tree);
      EXPECT_TRUE(s.ok()) << s.toString();
      if (!s.ok()) return out;
      const int count = t == 0 ? n : n / 10;
      for (int i = 0; i < count; ++i) {
        std::string k = numKey(t == 0 ? "key" : "aux", static_cast<uint64_t>(mix64(i) % 1000000000), 9);
        std::string v = goldenValue(k, i);
        s = tree->put(k, v);
        EXPECT_TRUE(s.ok()) << s.toString();
        if (!s.ok()) return out;
        out->data[t][k] = v;
      }
    }
    s = db->sync();
    EXPECT_TRUE(s.ok()) << s.toString();
    vmstore::Stats st = db->stats();
    out->page_count = st.page_count;
    out->free_pages = st.free_pages;
    s = db->close();
    EXPECT_TRUE(s.ok()) << s.toString();
    out->file_size = fileSize(dataFile(out->dir));
    return out;
  }();
  return *g;
}

struct Outcome {
  bool opened = false;
  bool corrupt_seen = false;  // some call (open included) answered Corruption
  bool reads_corrupt = false;  // some read (get/scan/openTree) answered Corruption
  Status check;
};

bool isCorrupt(const Status& s) { return s.code() == Code::kCorruption; }

// Opens the damaged copy and reads everything; fails the test on any wrong answer.
Outcome readDamaged(const std::string& dir, const Golden& g) {
  Outcome out;
  std::unique_ptr<Database> db;
  Status s = Database::open(dir, kOpenConfig, &db);
  if (!s.ok()) {
    EXPECT_TRUE(isCorrupt(s)) << "open of a damaged database: " << s.toString();
    out.corrupt_seen = isCorrupt(s);
    return out;
  }
  out.opened = true;
  auto note = [&](const Status& st) {
    if (isCorrupt(st)) out.corrupt_seen = out.reads_corrupt = true;
  };
  for (int t = 0; t < 2; ++t) {
    SCOPED_TRACE(std::string("tree '") + kTrees[t] + "'");
    const Model& model = g.data[t];
    Tree* tree = nullptr;
    s = db->openTree(kTrees[t], false, &tree);
    note(s);
    if (!s.ok()) {
      EXPECT_TRUE(isCorrupt(s)) << "openTree: " << s.toString();
      continue;
    }
    std::string v;
    int i = 0;
    for (const auto& [k, want] : model) {
      s = tree->get(k, &v);
      note(s);
      if (s.ok()) {
        EXPECT_TRUE(v == want) << "get " << k << ": WRONG VALUE " << show(v);
      } else {
        EXPECT_TRUE(isCorrupt(s)) << "get " << k << ": " << s.toString();
      }
      if (i++ % 50 == 0) {  // an absent key next to it
        s = tree->get(k + "-absent", &v);
        note(s);
        EXPECT_TRUE(s.isNotFound() || isCorrupt(s)) << "get of absent " << k << "-absent: " << s.toString();
      }
      if (::testing::Test::HasFailure()) return out;
    }
    // Scans both ways: only true entries, in order; a scan that ends OK saw them all.
    for (int dir_i = 0; dir_i < 2; ++dir_i) {
      bool forward = dir_i == 0;
      Iterator it = tree->newIterator();
      size_t seen = 0;
      std::string last;
      for (forward ? it.seekToFirst() : it.seekToLast(); it.valid(); forward ? it.next() : it.prev()) {
        std::string k(it.key());
        auto m = model.find(k);
        EXPECT_TRUE(m != model.end()) << (forward ? "forward" : "backward") << " scan: key that was never written: " << show(k);
        if (m == model.end()) return out;
        EXPECT_TRUE(it.value() == m->second) << "scan: WRONG VALUE for " << k;
        EXPECT_TRUE(last.empty() || (forward ? k > last : k < last)) << "scan out of order at " << k;
        if (::testing::Test::HasFailure()) return out;
        last = k;
        ++seen;
      }
      note(it.status());
      if (it.status().ok()) {
        EXPECT_EQ(seen, model.size()) << (forward ? "forward" : "backward")
                                      << " scan ended OK but skipped keys";
      } else {
        EXPECT_TRUE(isCorrupt(it.status())) << "scan: " << it.status().toString();
      }
    }
  }
  std::vector<std::string> names;
  s = db->listTrees(&names);
  note(s);
  EXPECT_TRUE(s.ok() || isCorrupt(s)) << "listTrees: " << s.toString();
  std::vector<std::string> problems;
  out.check = db->check(&problems);
  EXPECT_TRUE(out.check.ok() || isCorrupt(out.check)) << "check: " << out.check.toString();
  if (isCorrupt(out.check)) {
    out.corrupt_seen = true;
    EXPECT_FALSE(problems.empty()) << "check() said Corruption without listing a problem";
  }
  if (out.reads_corrupt) {
    EXPECT_TRUE(isCorrupt(out.check)) << "reads found damage that check() did not report: "
                                      << out.check.toString();
  }
  db->close();  // may report an error; must not crash
  return out;
}

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Golden& g = golden();
    ASSERT_FALSE(g.data[0].empty()) << "building the golden database failed";
    ASSERT_GT(g.page_count, 256u) << "the golden database is not bigger than the pool";
    ASSERT_GE(g.file_size, g.page_count * vmstore::kPageSize);
  }
  // A fresh copy of the golden database, and its data file.
  std::string copy(const std::string& name, fs::path* data) {
    std::string dir = freshDir(name);
    copyDir(golden().dir, dir);
    *data = dataFile(dir);
    EXPECT_FALSE(data->empty());
    return dir;
  }
};

TEST_F(CorruptionTest, UndamagedCopyReadsCleanly) {
  fs::path data;
  std::string dir = copy("clean", &data);
  Outcome o = readDamaged(dir, golden());
  EXPECT_TRUE(o.opened);
  EXPECT_FALSE(o.corrupt_seen);
  EXPECT_TRUE(o.check.ok()) << o.check.toString();
}

TEST_F(CorruptionTest, SingleByteFlips) {
  const Golden& g = golden();
  const int seeds = scaled(16, 5);
  int corrupt_cases = 0, opened = 0, reads_corrupt = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(1000 + seed);
    fs::path data;
    std::string dir = copy("flip" + std::to_string(seed), &data);
    // Pages 1 .. page_count-1 (the superblock has a test of its own).
    uint64_t page = rng.uniform(1, g.page_count - 1);
    uint64_t off = page * vmstore::kPageSize + rng.uniform(0, vmstore::kPageSize - 1);
    ASSERT_NO_FATAL_FAILURE(flipByte(data, off, static_cast<unsigned char>(rng.uniform(1, 255))));
    Outcome o = readDamaged(dir, g);
    if (HasFatalFailure() || HasFailure()) return;
    corrupt_cases += o.corrupt_seen;
    opened += o.opened;
    reads_corrupt += o.reads_corrupt;
    if (o.opened && g.free_pages == 0) {
      EXPECT_TRUE(isCorrupt(o.check)) << "check() missed a flipped byte at offset " << off << " (page "
                                      << page << " of " << g.page_count << ", no free pages)";
    }
  }
  EXPECT_GT(corrupt_cases, 0) << "no single-byte flip was ever detected";
  std::printf("single-byte flips: %d cases, %d opened, %d with reads answering Corruption, %d detected\n",
              seeds, opened, reads_corrupt, corrupt_cases);
}

TEST_F(CorruptionTest, ManyByteFlips) {
  const Golden& g = golden();
  const int seeds = scaled(8, 3);
  int corrupt_cases = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(2000 + seed);
    fs::path data;
    std::string dir = copy("flips" + std::to_string(seed), &data);
    for (int i = 0; i < 40; ++i) {
      uint64_t off = rng.uniform(vmstore::kPageSize, g.page_count * vmstore::kPageSize - 1);
      ASSERT_NO_FATAL_FAILURE(flipByte(data, off, static_cast<unsigned char>(rng.uniform(1, 255))));
    }
    Outcome o = readDamaged(dir, g);
    if (HasFailure()) return;
    corrupt_cases += o.corrupt_seen;
    EXPECT_TRUE(!o.opened || o.reads_corrupt) << "40 flipped bytes, yet every read succeeded";
    if (o.opened) {
      EXPECT_TRUE(isCorrupt(o.check)) << "check() missed 40 flipped bytes";
    }
  }
  EXPECT_EQ(corrupt_cases, seeds);
}

TEST_F(CorruptionTest, SuperblockFlips) {
  const Golden& g = golden();
  const uint64_t offsets[] = {0, 1, 7, 8, 16, 24, 31, 40, 63, 100};
  for (uint64_t off : offsets) {
    SCOPED_TRACE("offset " + std::to_string(off));
    fs::path data;
    std::string dir = copy("super" + std::to_string(off), &data);
    ASSERT_NO_FATAL_FAILURE(flipByte(data, off, 0x10));
    readDamaged(dir, g);
    if (HasFailure()) return;
  }
}

TEST_F(CorruptionTest, ZeroedPages) {
  const Golden& g = golden();
  std::vector<uint64_t> pages = {0, 1, 2, 3, g.page_count / 3, g.page_count / 2, g.page_count - 1};
  Rng rng(3000);
  for (int i = 0; i < scaled(6, 2); ++i) pages.push_back(rng.uniform(1, g.page_count - 1));
  int corrupt_cases = 0;
  for (uint64_t page : pages) {
    SCOPED_TRACE("page " + std::to_string(page));
    fs::path data;
    std::string dir = copy("zero" + std::to_string(page), &data);
    ASSERT_NO_FATAL_FAILURE(patchFile(data, page * vmstore::kPageSize, std::string(vmstore::kPageSize, '\0')));
    Outcome o = readDamaged(dir, g);
    if (HasFailure()) return;
    corrupt_cases += o.corrupt_seen;
    if (o.opened && page > 0 && g.free_pages == 0) {
      EXPECT_TRUE(isCorrupt(o.check)) << "check() missed a zeroed page " << page;
    }
  }
  EXPECT_GT(corrupt_cases, 0);
}

TEST_F(CorruptionTest, TruncatedFile) {
  const Golden& g = golden();
  const uint64_t used = g.page_count * vmstore::kPageSize;
  const uint64_t sizes[] = {0, 100, vmstore::kPageSize, used / 2, used - vmstore::kPageSize, used - 100};
  for (uint64_t size : sizes) {
    SCOPED_TRACE("truncated to " + std::to_string(size));
    fs::path data;
    std::string dir = copy("trunc" + std::to_string(size), &data);
    fs::resize_file(data, size);
    if (size == 0) {
      // An empty data file looks like a database whose creation never finished: with
      // create=false, "no database here" (InvalidArgument) is as good as Corruption.
      std::unique_ptr<Database> db;
      Status s = Database::open(dir, kOpenConfig, &db);
      EXPECT_TRUE(isCorrupt(s) || s.code() == Code::kInvalidArgument) << s.toString();
      continue;
    }
    Outcome o = readDamaged(dir, g);
    if (HasFailure()) return;
    EXPECT_TRUE(o.corrupt_seen) << "a truncated data file went unnoticed";
    if (o.opened) {
      EXPECT_TRUE(isCorrupt(o.check)) << "check() missed the truncation";
    }
  }
}

// ---- not closed cleanly -------------------------------------------------------------------

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string uncleanKey(char batch, int i) { return numKey(std::string(1, batch), i, 7); }
std::string uncleanValue(char batch, int i) { return fillFor(uncleanKey(batch, i), batch, 300 + i % 200); }

int cput(vms_tree* t, const std::string& k, const std::string& v) {
  return vms_put(t, k.data(), k.size(), v.data(), v.size());
}

// Runs `body` in a child process that _exits with its return value (never closing the
// database); returns the child's exit code, or -1 if it did not exit normally.
template <typename F>
int inChild(F body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  if (pid < 0) return -2;
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

TEST(UncleanShutdown, WritesAfterSyncThenExitWithoutClose) {
  const std::string dir = freshDir();
  const int batch = scaled(5000, 3000);  // each batch ~2 MB, more than the 1 MiB pool
  int rc = inChild([&]() -> int {
    vms_db* db = nullptr;
    if (vms_open(dir.c_str(), "pool_size=1M", &db) != VMS_OK) return 10;
    vms_tree* t = nullptr;
    if (vms_tree_open(db, "", 1, &t) != VMS_OK) return 11;
    for (int i = 0; i < batch; ++i) {
      if (cput(t, uncleanKey('a', i), uncleanValue('a', i)) != VMS_OK) return 12;
    }
    if (vms_sync(db) != VMS_OK) return 13;
    for (int i = 0; i < batch; ++i) {  // only new keys: batch A stays as synced
      if (cput(t, uncleanKey('b', i), uncleanValue('b', i)) != VMS_OK) return 14;
    }
    return 0;  // no vms_close
  });
  ASSERT_EQ(rc, 0) << "the child failed";

  vms_db* db = nullptr;
  int orc = vms_open(dir.c_str(), kOpenConfig, &db);
  if (orc == VMS_ECORRUPT) {
    std::printf("unclean database refused: %s\n", vms_last_error());
    std::string msg = lower(vms_last_error());
    EXPECT_NE(msg.find("clean"), std::string::npos) << "message should say it was not closed cleanly: " << msg;
    // The refusal releases the lock: a second try gives the same answer, not EBUSY.
    EXPECT_EQ(vms_open(dir.c_str(), kOpenConfig, &db), VMS_ECORRUPT);
    return;
  }
  ASSERT_EQ(orc, VMS_OK) << "open after an unclean exit: " << vms_strerror(orc) << ": " << vms_last_error();
  vms_tree* t = nullptr;
  ASSERT_EQ(vms_tree_open(db, "", 0, &t), VMS_OK);
  std::string buf(kOnePageValue, '\0');
  for (char b : {'a', 'b'}) {
    for (int i = 0; i < batch; ++i) {
      std::string k = uncleanKey(b, i);
      size_t vlen = 0;
      int g = vms_get(t, k.data(), k.size(), buf.data(), buf.size(), &vlen);
      if (g == VMS_OK) {
        ASSERT_TRUE(std::string(buf.data(), vlen) == uncleanValue(b, i)) << "WRONG VALUE for " << k;
      } else if (b == 'a') {
        ASSERT_EQ(g, VMS_ECORRUPT) << "synced key " << k << ": " << vms_strerror(g);
      } else {
        ASSERT_TRUE(g == VMS_NOTFOUND || g == VMS_ECORRUPT) << k << ": " << vms_strerror(g);
      }
    }
  }
  vms_close(db);
}

TEST(UncleanShutdown, ExitAfterSyncWithoutCloseKeepsEverything) {
  const std::string dir = freshDir();
  const int batch = scaled(5000, 3000);
  int rc = inChild([&]() -> int {
    vms_db* db = nullptr;
    if (vms_open(dir.c_str(), "pool_size=1M", &db) != VMS_OK) return 10;
    vms_tree* t = nullptr;
    if (vms_tree_open(db, "", 1, &t) != VMS_OK) return 11;
    for (int i = 0; i < batch; ++i) {
      if (cput(t, uncleanKey('a', i), uncleanValue('a', i)) != VMS_OK) return 12;
    }
    if (vms_sync(db) != VMS_OK) return 13;
    // Reads only after the sync.
    std::string buf(kOnePageValue, '\0');
    for (int i = 0; i < batch; i += 7) {
      size_t vlen;
      std::string k = uncleanKey('a', i);
      if (vms_get(t, k.data(), k.size(), buf.data(), buf.size(), &vlen) != VMS_OK) return 14;
    }
    return 0;  // no vms_close
  });
  ASSERT_EQ(rc, 0) << "the child failed";

  // vmstore.h: only a database "written to after its last sync and then not closed"
  // refuses to open; this one was synced after its last write.
  std::unique_ptr<Database> db;
  Status s = Database::open(dir, kOpenConfig, &db);
  ASSERT_TRUE(s.ok()) << "a database synced after its last write must open: " << s.toString();
  Tree* t = nullptr;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string v;
  for (int i = 0; i < batch; ++i) {
    Status g = t->get(uncleanKey('a', i), &v);
    ASSERT_TRUE(g.ok()) << uncleanKey('a', i) << ": " << g.toString();
    ASSERT_TRUE(v == uncleanValue('a', i)) << "WRONG VALUE for " << uncleanKey('a', i);
  }
  std::vector<std::string> problems;
  Status c = db->check(&problems);
  EXPECT_TRUE(c.ok()) << c.toString() << (problems.empty() ? "" : ": " + problems[0]);
  VMS_ASSERT_OK(db->close());
}

TEST(UncleanShutdown, KilledWhileOpenWithoutWrites) {
  const std::string dir = freshDir();
  {
    std::unique_ptr<Database> db = openDb(dir, "durability=async,pool_size=1M");
    ASSERT_NE(db, nullptr);
    Tree* t = nullptr;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    VMS_ASSERT_OK(t->put("k", "v"));
    VMS_ASSERT_OK(db->close());
  }
  int rc = inChild([&]() -> int {
    vms_db* db = nullptr;
    if (vms_open(dir.c_str(), "pool_size=1M,create=false", &db) != VMS_OK) return 10;
    raise(SIGKILL);
    return 0;
  });
  EXPECT_EQ(rc, -1) << "the child should have died by SIGKILL";
  std::unique_ptr<Database> db;
  Status s = Database::open(dir, kOpenConfig, &db);
  ASSERT_TRUE(s.ok()) << "a database never written while open must open: " << s.toString();
  Tree* t = nullptr;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string v;
  VMS_ASSERT_OK(t->get("k", &v));
  EXPECT_EQ(v, "v");
}

}  // namespace
