// The C++ API (vmstore/vmstore.hpp): Options, Status, Database, Tree, Iterator, stats()
// and check(), against the documented contract.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "../e2e/test_util.hpp"
#include "os/memory.hpp"
#include "vmstore/vmstore.hpp"

namespace {

using namespace vmstest;
using vmstore::Database;
using vmstore::Iterator;
using vmstore::Options;
using vmstore::Tree;

class CppApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = freshDir();
    Options o;
    o.pool_size = 4ull << 20;
    VMS_ASSERT_OK(Database::open(dir_, o, &db_));
    ASSERT_NE(db_, nullptr);
    VMS_ASSERT_OK(db_->openTree("", true, &tree_));
    ASSERT_NE(tree_, nullptr);
  }
  void TearDown() override {
    if (db_) {
      VMS_EXPECT_OK(db_->close());
    }
  }
  void reopen(std::string_view config = "pool_size=4M") {
    VMS_ASSERT_OK(db_->close());
    db_.reset();
    tree_ = nullptr;
    VMS_ASSERT_OK(Database::open(dir_, config, &db_));
    VMS_ASSERT_OK(db_->openTree("", true, &tree_));
  }
  std::string dir_;
  std::unique_ptr<Database> db_;
  Tree* tree_ = nullptr;
};

// ---- Options / parseSize / Status ------------------------------------------------------

TEST(CppOptions, Defaults) {
  Options o;
  EXPECT_EQ(o.pool_size, 1ull << 30);
  EXPECT_TRUE(o.create);
  EXPECT_EQ(o.max_size, vmstore::kDefaultMaxSize);  // 1 TiB (64 GiB under TSan)
}

TEST(CppOptions, ParseGood) {
  Options o;
  VMS_ASSERT_OK(Options::parse("pool_size=64M,create=false,max_size=2G", &o));
  EXPECT_EQ(o.pool_size, 64ull << 20);
  EXPECT_FALSE(o.create);
  EXPECT_EQ(o.max_size, 2ull << 30);
  Options e;
  VMS_ASSERT_OK(Options::parse("", &e));
  EXPECT_EQ(e.pool_size, Options().pool_size);
  EXPECT_TRUE(e.create);
  Options t;
  t.create = false;
  VMS_ASSERT_OK(Options::parse("create=true", &t));
  EXPECT_TRUE(t.create);
}

TEST(CppOptions, ParseBadLeavesOutUntouched) {
  const char* bad[] = {"bogus_key=1",   "pool_size=12Q", "pool_size=",  "pool_size=-1",
                       "pool_size=99999999999T", "create=maybe", "max_size=x", "pool_size=4M,nope=1",
                       "pool_size=8M,pool_size=16M", "create=true, create = false"};
  for (const char* config : bad) {
    SCOPED_TRACE(config);
    Options o;
    o.pool_size = 12345 * 4096;
    o.create = false;
    o.max_size = 777ull << 20;
    Status s = Options::parse(config, &o);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.toString();
    EXPECT_FALSE(s.message().empty());
    EXPECT_EQ(o.pool_size, 12345u * 4096) << "out was modified";
    EXPECT_FALSE(o.create) << "out was modified";
    EXPECT_EQ(o.max_size, 777ull << 20) << "out was modified";
  }
  Options o;
  Status s = Options::parse("pool_size=4M,warp_factor=9", &o);
  EXPECT_NE(s.message().find("warp_factor"), std::string::npos) << s.toString();
  EXPECT_EQ(o.pool_size, Options().pool_size);
  s = Options::parse("pool_size=8M,durability=none,pool_size=16M", &o);
  EXPECT_NE(s.message().find("'pool_size' is given twice"), std::string::npos) << s.toString();
}

TEST(CppOptions, ParseSize) {
  struct Case {
    const char* text;
    bool ok;
    uint64_t value;
  };
  const Case cases[] = {
      {"0", true, 0},
      {"123", true, 123},
      {"64K", true, 64ull << 10},
      {"16M", true, 16ull << 20},
      {"2G", true, 2ull << 30},
      {"1T", true, 1ull << 40},
      {"18446744073709551615", true, 18446744073709551615ull},
      {"18446744073709551616", false, 0},
      {"99999999999T", false, 0},
      {"16777216T", false, 0},  // 2^64 exactly
      {"", false, 0},
      {"12Q", false, 0},
      {"-1", false, 0},
      {"K", false, 0},
      {"1.5M", false, 0},
      {"12 M", false, 0},
      {"12MM", false, 0},
  };
  for (const Case& c : cases) {
    uint64_t v = 4242;
    bool ok = vmstore::parseSize(c.text, &v);
    EXPECT_EQ(ok, c.ok) << "'" << c.text << "'";
    if (c.ok && ok) {
      EXPECT_EQ(v, c.value) << "'" << c.text << "'";
    }
  }
}

TEST(CppStatus, NamesAndStrings) {
  EXPECT_TRUE(Status().ok());
  EXPECT_TRUE(Status::OK().ok());
  EXPECT_FALSE(Status::NotFound().ok());
  EXPECT_TRUE(Status::NotFound().isNotFound());
  Status c = Status::Corruption("page 17: checksum mismatch");
  EXPECT_EQ(c.rawCode(), VMS_ECORRUPT);
  EXPECT_STREQ(Status::codeName(VMS_ECORRUPT), vms_strerror(VMS_ECORRUPT));
  std::string s = c.toString();
  EXPECT_NE(s.find(Status::codeName(VMS_ECORRUPT)), std::string::npos) << s;
  EXPECT_NE(s.find("page 17: checksum mismatch"), std::string::npos) << s;
  EXPECT_EQ(Status::Busy("x").rawCode(), VMS_EBUSY);
  EXPECT_EQ(Status::TooBig("x").rawCode(), VMS_ETOOBIG);
  EXPECT_EQ(Status::NoSpace("x").rawCode(), VMS_ENOSPC);
  EXPECT_EQ(Status::NoMemory("x").rawCode(), VMS_ENOMEM);
  EXPECT_EQ(Status::IOError("x").rawCode(), VMS_EIO);
  EXPECT_EQ(Status::InvalidArgument("x").rawCode(), VMS_EINVAL);
  EXPECT_FALSE(Status::OK().toString().empty());
}

// ---- Database::open / close --------------------------------------------------------------

// huge_pages: stats say whether it is in effect (the data fits the pool) or not.
TEST(CppDatabase, StatsSayWhetherHugePagesAreInEffect) {
  std::string dir = freshDir();
  std::unique_ptr<Database> db;
  VMS_ASSERT_OK(Database::open(dir, "pool_size=8M", &db));
  EXPECT_EQ(db->stats().huge_pages_in_memory, 0u) << "off by default";
  VMS_ASSERT_OK(db->close());
  db.reset();
  VMS_ASSERT_OK(Database::open(dir, "pool_size=8M,huge_pages=true", &db));
  const bool thp = vmstore::internal::transparentHugePagesOn();
  EXPECT_EQ(db->stats().huge_pages_in_memory, thp ? 1u : 0u);
  Tree* t = nullptr;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  // Grow the file beyond the pool: the mode ends.
  const std::string value(3000, 'v');
  for (int i = 0; db->stats().page_count <= db->stats().pool_pages; i++) {
    VMS_ASSERT_OK(t->put("k" + std::to_string(i), value));
  }
  EXPECT_EQ(db->stats().huge_pages_in_memory, 0u) << "the file outgrew the pool";
  VMS_ASSERT_OK(db->close());
}

TEST(CppDatabase, OpenWithOptionsAndWithConfigString) {
  std::string dir = freshDir();
  std::unique_ptr<Database> db;
  Options o;
  o.pool_size = 2ull << 20;
  VMS_ASSERT_OK(Database::open(dir, o, &db));
  EXPECT_EQ(db->stats().pool_pages, 512u);
  Tree* t = nullptr;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  VMS_ASSERT_OK(t->put("hello", "world"));
  VMS_ASSERT_OK(db->close());
  VMS_EXPECT_OK(db->close());  // twice is harmless
  db.reset();

  VMS_ASSERT_OK(Database::open(dir, "pool_size=3M,create=false", &db));
  EXPECT_EQ(db->stats().pool_pages, 768u);
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string v;
  VMS_ASSERT_OK(t->get("hello", &v));
  EXPECT_EQ(v, "world");
  VMS_ASSERT_OK(db->close());
  db.reset();

  VMS_ASSERT_OK(Database::open(dir, std::string_view(), &db));  // empty config
  VMS_ASSERT_OK(db->close());
}

TEST(CppDatabase, CloseReleasesTheLockBeforeDestruction) {
  // database.hpp: close() "... syncs, and releases the directory lock".
  std::string dir = freshDir();
  std::unique_ptr<Database> db;
  VMS_ASSERT_OK(Database::open(dir, "pool_size=2M", &db));
  Tree* t = nullptr;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  VMS_ASSERT_OK(t->put("k", "v"));
  VMS_ASSERT_OK(db->close());
  std::unique_ptr<Database> db2;  // db is closed but not destroyed yet
  VMS_ASSERT_OK(Database::open(dir, "pool_size=2M", &db2));
  VMS_ASSERT_OK(db2->openTree("", false, &t));
  std::string v;
  VMS_ASSERT_OK(t->get("k", &v));
  EXPECT_EQ(v, "v");
  db.reset();  // destroying the closed one must not disturb the open one
  VMS_ASSERT_OK(t->put("k2", "v2"));
  VMS_ASSERT_OK(db2->close());
}

TEST(CppDatabase, PoolSizeRoundsDownToPages) {
  std::string dir = freshDir();
  std::unique_ptr<Database> db;
  Options o;
  o.pool_size = (1ull << 20) + 4095;
  VMS_ASSERT_OK(Database::open(dir, o, &db));
  EXPECT_EQ(db->stats().pool_pages, 256u);
  VMS_ASSERT_OK(db->close());
}

// Opening a database commits memory for what it holds, not for its configured pool and
// log: an empty database with an 8 GiB pool and the default 1 GiB log (a 4 MiB ring)
// opens within a few MiB (the resident set, page states and policy are committed as
// pages come in; recovery reads the ring only when a record must come from it).
TEST(CppDatabase, OpeningCommitsMemoryForWhatTheDatabaseHoldsNotForThePool) {
  std::string dir = freshDir();
  Options o;
  o.pool_size = 8ull << 30;
  {
    std::unique_ptr<Database> db;
    VMS_ASSERT_OK(Database::open(dir, o, &db));
    Tree* t = nullptr;
    VMS_ASSERT_OK(db->openTree("t", true, &t));
    VMS_ASSERT_OK(t->put("k", "v"));
    VMS_ASSERT_OK(db->close());
  }
  const uint64_t before = residentBytes();
  std::unique_ptr<Database> db;
  VMS_ASSERT_OK(Database::open(dir, o, &db));
  const uint64_t after = residentBytes();
  std::string v;
  Tree* t = nullptr;
  VMS_ASSERT_OK(db->openTree("t", false, &t));
  VMS_ASSERT_OK(t->get("k", &v));
  EXPECT_EQ(v, "v");
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // their shadow memory grows too
  EXPECT_LT(after - std::min(after, before), uint64_t{8} << 20) << "the open committed memory by the pool's size";
#endif
  VMS_ASSERT_OK(db->close());
}

TEST(CppDatabase, BadConfigAndMissingDatabase) {
  std::string dir = freshDir();
  std::unique_ptr<Database> db;
  Status s = Database::open(dir, "pool_size=4M,what=1", &db);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.toString();
  EXPECT_FALSE(pathExists(dir));
  Options o;
  o.create = false;
  s = Database::open(dir, o, &db);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.toString();
  EXPECT_FALSE(pathExists(dir));
  EXPECT_EQ(db, nullptr);
}

TEST(CppDatabase, SecondOpenIsBusyAndDestructorCloses) {
  std::string dir = freshDir();
  std::unique_ptr<Database> db;
  VMS_ASSERT_OK(Database::open(dir, "pool_size=2M", &db));
  Tree* t = nullptr;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  VMS_ASSERT_OK(t->put("k", "v"));
  std::unique_ptr<Database> db2;
  Status s = Database::open(dir, "pool_size=2M", &db2);
  EXPECT_EQ(s.code(), Code::kBusy) << s.toString();
  EXPECT_EQ(db2, nullptr);
  db.reset();  // the destructor closes and releases the lock
  VMS_ASSERT_OK(Database::open(dir, "pool_size=2M", &db2));
  VMS_ASSERT_OK(db2->openTree("", false, &t));
  std::string v;
  VMS_ASSERT_OK(t->get("k", &v));
  EXPECT_EQ(v, "v");
}

// ---- Tree ------------------------------------------------------------------------------

TEST_F(CppApiTest, PutGetDel) {
  std::string v;
  EXPECT_TRUE(tree_->get("a", &v).isNotFound());
  VMS_ASSERT_OK(tree_->put("a", "1"));
  VMS_ASSERT_OK(tree_->put("b", std::string(3000, 'b')));
  VMS_ASSERT_OK(tree_->get("a", &v));
  EXPECT_EQ(v, "1");
  VMS_ASSERT_OK(tree_->get("b", &v));
  EXPECT_EQ(v, std::string(3000, 'b'));
  VMS_ASSERT_OK(tree_->put("a", "22"));
  VMS_ASSERT_OK(tree_->get("a", &v));
  EXPECT_EQ(v, "22");
  VMS_ASSERT_OK(tree_->del("a"));
  EXPECT_TRUE(tree_->get("a", &v).isNotFound());
  EXPECT_TRUE(tree_->del("a").isNotFound());
  EXPECT_TRUE(tree_->del("never").isNotFound());
  EXPECT_EQ(tree_->name(), "");
}

TEST_F(CppApiTest, Limits) {
  std::string kmax(vmstore::kMaxKeySize, 'k');
  std::string vmax(1 << 20, 'v');  // a large value the pool holds (the limit: c_api_test)
  vmsunit::ZeroBuffer over(vmstore::kMaxValueSize + 1);
  VMS_ASSERT_OK(tree_->put(kmax, "old"));
  EXPECT_EQ(tree_->put(kmax + "k", "x").code(), Code::kTooBig);
  EXPECT_EQ(tree_->put(kmax, over.view()).code(), Code::kTooBig);
  EXPECT_EQ(tree_->put("", "x").code(), Code::kInvalidArgument);
  std::string v;
  VMS_ASSERT_OK(tree_->get(kmax, &v));
  EXPECT_EQ(v, "old");
  VMS_ASSERT_OK(tree_->put(kmax, vmax));
  VMS_ASSERT_OK(tree_->get(kmax, &v));
  EXPECT_EQ(v, vmax);
  VMS_ASSERT_OK(tree_->put("empty", ""));
  VMS_ASSERT_OK(tree_->get("empty", &v));
  EXPECT_EQ(v, "");
  KV all = scanForward(tree_);
  ASSERT_EQ(all.size(), 2u);
}

TEST_F(CppApiTest, GetIntoSpan) {
  std::string val = "abcdefghij";
  VMS_ASSERT_OK(tree_->put("k", val));
  std::vector<std::byte> buf(4, std::byte{'#'});
  size_t vlen = 0;
  VMS_ASSERT_OK(tree_->get("k", std::span<std::byte>(buf), &vlen));
  EXPECT_EQ(vlen, val.size());
  EXPECT_EQ(std::memcmp(buf.data(), "abcd", 4), 0);
  std::vector<std::byte> big(64, std::byte{'#'});
  VMS_ASSERT_OK(tree_->get("k", std::span<std::byte>(big), &vlen));
  EXPECT_EQ(vlen, val.size());
  EXPECT_EQ(std::memcmp(big.data(), val.data(), val.size()), 0);
  EXPECT_EQ(big[val.size()], std::byte{'#'});
  VMS_ASSERT_OK(tree_->get("k", std::span<std::byte>(), &vlen));
  EXPECT_EQ(vlen, val.size());
  EXPECT_TRUE(tree_->get("absent", std::span<std::byte>(big), &vlen).isNotFound());
}

TEST_F(CppApiTest, TreesListOpenDrop) {
  Tree* a = nullptr;
  Tree* a2 = nullptr;
  Tree* b = nullptr;
  Tree* missing = nullptr;
  VMS_ASSERT_OK(db_->openTree("alpha", true, &a));
  VMS_ASSERT_OK(db_->openTree("alpha", false, &a2));
  EXPECT_EQ(a, a2);
  EXPECT_EQ(a->name(), "alpha");
  VMS_ASSERT_OK(db_->openTree("beta", true, &b));
  EXPECT_TRUE(db_->openTree("gamma", false, &missing).isNotFound());
  EXPECT_NE(db_->openTree(std::string(vmstore::kMaxTreeNameSize + 1, 'x'), true, &missing).rawCode(), VMS_OK);
  std::string binary_name("bin\0ary", 7);
  Tree* bin = nullptr;
  VMS_ASSERT_OK(db_->openTree(binary_name, true, &bin));
  EXPECT_EQ(bin->name(), binary_name);

  std::vector<std::string> names;
  VMS_ASSERT_OK(db_->listTrees(&names));
  std::set<std::string> got(names.begin(), names.end());
  EXPECT_EQ(got.size(), names.size()) << "listTrees returned a name twice";
  EXPECT_TRUE(got.count("alpha"));
  EXPECT_TRUE(got.count("beta"));
  EXPECT_TRUE(got.count(""));
  EXPECT_TRUE(got.count(binary_name));
  EXPECT_FALSE(got.count("gamma"));
  EXPECT_EQ(db_->stats().trees, names.size());

  VMS_ASSERT_OK(a->put("k", "v"));
  vmstore::TreeShape shape;
  VMS_ASSERT_OK(a->shape(&shape));
  EXPECT_EQ(shape.height, 1u);
  EXPECT_EQ(shape.leaf_pages, 1u);
  EXPECT_EQ(shape.inner_pages, 0u);
  EXPECT_EQ(shape.keys, 1u);
  EXPECT_GT(shape.leaf_fill, 0.0);
  VMS_ASSERT_OK(db_->dropTree("alpha"));
  EXPECT_TRUE(a->shape(&shape).isNotFound());
  std::string v;
  EXPECT_TRUE(a->get("k", &v).isNotFound());
  EXPECT_TRUE(a->put("k", "v").isNotFound());
  EXPECT_TRUE(a->del("k").isNotFound());
  Iterator it = a->newIterator();
  it.seekToFirst();
  EXPECT_FALSE(it.valid());
  EXPECT_TRUE(db_->dropTree("alpha").isNotFound());
  EXPECT_TRUE(db_->openTree("alpha", false, &missing).isNotFound());

  reopen();
  names.clear();
  VMS_ASSERT_OK(db_->listTrees(&names));
  got = std::set<std::string>(names.begin(), names.end());
  EXPECT_FALSE(got.count("alpha"));
  EXPECT_TRUE(got.count("beta"));
  EXPECT_TRUE(got.count(binary_name));
}

// ---- Iterator ----------------------------------------------------------------------------

TEST_F(CppApiTest, IteratorEmptyTree) {
  Iterator it = tree_->newIterator();
  it.seekToFirst();
  EXPECT_FALSE(it.valid());
  VMS_EXPECT_OK(it.status());
  it.seekToLast();
  EXPECT_FALSE(it.valid());
  VMS_EXPECT_OK(it.status());
  it.seek("a");
  EXPECT_FALSE(it.valid());
  it.seekForPrev("a");
  EXPECT_FALSE(it.valid());
  VMS_EXPECT_OK(it.status());
}

TEST_F(CppApiTest, IteratorSeekVariants) {
  for (const char* k : {"b", "d", "f"}) VMS_ASSERT_OK(tree_->put(k, std::string("v") + k));
  Iterator it = tree_->newIterator();
  auto at = [&](const char* want) {
    if (want == nullptr) {
      EXPECT_FALSE(it.valid()) << "expected the end, at " << (it.valid() ? std::string(it.key()) : "");
      VMS_EXPECT_OK(it.status());
    } else {
      ASSERT_TRUE(it.valid()) << "expected " << want << ": " << it.status().toString();
      EXPECT_EQ(it.key(), want);
      EXPECT_EQ(it.value(), std::string("v") + want);
    }
  };
  it.seek("a"); at("b");
  it.seek("b"); at("b");
  it.seek("c"); at("d");
  it.seek("f"); at("f");
  it.seek("g"); at(nullptr);
  it.seek(std::string("\x00", 1)); at("b");
  it.seekForPrev("a"); at(nullptr);
  it.seekForPrev("b"); at("b");
  it.seekForPrev("c"); at("b");
  it.seekForPrev(std::string("d\x00", 2)); at("d");
  it.seekForPrev("f"); at("f");
  it.seekForPrev("\xff\xff"); at("f");
  it.seekToFirst(); at("b");
  it.seekToLast(); at("f");

  // Moving both ways.
  it.seek("c"); at("d");
  it.next(); at("f");
  it.prev(); at("d");
  it.prev(); at("b");
  it.next(); at("d");
  it.prev(); at("b");
  it.prev(); at(nullptr);
  it.seekToLast();
  it.next(); at(nullptr);
  // Re-seeking after the end works.
  it.seekToFirst(); at("b");
}

TEST_F(CppApiTest, IteratorFullScansBothWaysOverManyLeaves) {
  std::map<std::string, std::string> model;
  Rng rng(1234);
  const int n = scaled(20000, 4000);
  for (int i = 0; i < n; ++i) {
    std::string k = rng.bytes(rng.uniform(1, 24));
    std::string v = rng.bytes(rng.chance(0.05) ? rng.uniform(2000, 4000) : rng.uniform(0, 100));
    model[k] = v;
    VMS_ASSERT_OK(tree_->put(k, v));
  }
  Status st;
  EXPECT_EQ(diffKV(scanForward(tree_, &st), toKV(model)), "");
  VMS_EXPECT_OK(st);
  EXPECT_EQ(diffKV(scanBackward(tree_, &st), reversed(toKV(model))), "");
  VMS_EXPECT_OK(st);

  // Random seeks, then a few steps each way.
  Iterator it = tree_->newIterator();
  for (int i = 0; i < 300; ++i) {
    std::string target = rng.bytes(rng.uniform(1, 6));
    bool forward = rng.chance(0.5);
    auto m = forward ? model.lower_bound(target) : model.upper_bound(target);
    if (forward) {
      it.seek(target);
    } else {
      it.seekForPrev(target);
      if (m == model.begin()) {
        m = model.end();
      } else {
        --m;
      }
    }
    for (int step = 0; step < 20; ++step) {
      if (m == model.end()) {
        ASSERT_FALSE(it.valid()) << "seek " << show(target) << " step " << step;
        VMS_ASSERT_OK(it.status());
        break;
      }
      ASSERT_TRUE(it.valid()) << "seek " << show(target) << " step " << step << ": " << it.status().toString();
      ASSERT_EQ(it.key(), m->first);
      ASSERT_EQ(it.value(), m->second);
      if (forward) {
        it.next();
        ++m;
      } else {
        it.prev();
        m = m == model.begin() ? model.end() : std::prev(m);
      }
    }
  }

  // A scan survives a reopen of the database (fresh iterator) in a small pool.
  reopen("pool_size=1M");
  EXPECT_EQ(diffKV(scanBackward(tree_, &st), reversed(toKV(model))), "");
  VMS_EXPECT_OK(st);
}

TEST_F(CppApiTest, IteratorMove) {
  VMS_ASSERT_OK(tree_->put("a", "1"));
  VMS_ASSERT_OK(tree_->put("b", "2"));
  Iterator it = tree_->newIterator();
  it.seek("b");
  Iterator moved(std::move(it));
  ASSERT_TRUE(moved.valid());
  EXPECT_EQ(moved.key(), "b");
  Iterator other = tree_->newIterator();
  other = std::move(moved);
  ASSERT_TRUE(other.valid());
  EXPECT_EQ(other.key(), "b");
  other.prev();
  ASSERT_TRUE(other.valid());
  EXPECT_EQ(other.key(), "a");
}

TEST_F(CppApiTest, IteratorUnderConcurrentChangesStaysOrderedAndHonest) {
  // database.hpp: the iterator reads one leaf at a time and sees each key as it was when
  // it entered that key's leaf; it never returns a key twice or out of order.
  for (int i = 0; i < 1000; ++i) VMS_ASSERT_OK(tree_->put(numKey("k", i), "old"));
  Iterator it = tree_->newIterator();
  it.seekToFirst();
  std::string last;
  int seen = 0;
  for (; it.valid(); it.next()) {
    std::string k(it.key());
    ASSERT_TRUE(last.empty() || k > last) << "out of order or repeated: " << k << " after " << last;
    last = k;
    if (k.back() == 'x') {  // inserted during the scan: may or may not be seen
      EXPECT_EQ(it.value(), std::string(300, 'x'));
      continue;
    }
    int idx = std::stoi(k.substr(1));
    // A value this key really had: "old", or "new" for odd keys updated ahead of us.
    EXPECT_TRUE(it.value() == "old" || (idx % 2 == 1 && it.value() == "new")) << k << " = " << it.value();
    ++seen;
    // Modify keys ahead of the iterator: odd ones get a new value, every x50 is deleted,
    // and pages split with new keys between them.
    for (int j = idx + 1; j <= idx + 2 && j < 1000; ++j) {
      if (j % 100 == 50) {
        Status d = tree_->del(numKey("k", j));
        ASSERT_TRUE(d.ok() || d.isNotFound()) << d.toString();
      } else if (j % 2 == 1) {
        VMS_ASSERT_OK(tree_->put(numKey("k", j), "new"));
      }
    }
    VMS_ASSERT_OK(tree_->put(numKey("k", idx) + "x", std::string(300, 'x')));
  }
  VMS_EXPECT_OK(it.status());
  // Deleted keys may have been read before their deletion: between 990 and 1000.
  EXPECT_GE(seen, 990);
  EXPECT_LE(seen, 1000);
  // A fresh scan sees exactly the final state.
  int fresh = 0;
  Iterator again = tree_->newIterator();
  for (again.seekToFirst(); again.valid(); again.next()) {
    std::string k(again.key());
    if (k.back() == 'x') continue;
    int idx = std::stoi(k.substr(1));
    EXPECT_NE(idx % 100, 50) << "deleted key " << k << " still present";
    EXPECT_EQ(again.value(), idx % 2 == 1 ? "new" : "old") << k;
    ++fresh;
  }
  VMS_EXPECT_OK(again.status());
  EXPECT_EQ(fresh, 990);
}

// ---- stats and check ----------------------------------------------------------------------

TEST_F(CppApiTest, StatsHitsAfterGets) {
  for (int i = 0; i < 100; ++i) VMS_ASSERT_OK(tree_->put(numKey("k", i), "v"));
  vmstore::Stats before = db_->stats();
  std::string v;
  for (int i = 0; i < 100; ++i) VMS_ASSERT_OK(tree_->get(numKey("k", i), &v));
  vmstore::Stats after = db_->stats();
  EXPECT_GT(after.hits, 0u);
  EXPECT_GT(after.hits, before.hits);
  EXPECT_EQ(after.pool_pages, 1024u);  // 4 MiB
  EXPECT_LE(after.resident_pages, after.pool_pages);
  EXPECT_GT(after.page_count, 0u);
  EXPECT_GE(after.trees, 1u);
  VMS_ASSERT_OK(db_->sync());
  vmstore::Stats synced = db_->stats();
  EXPECT_GT(synced.pages_written, 0u);
  EXPECT_GT(synced.file_bytes, 0u);
  EXPECT_GE(synced.file_bytes, synced.page_count * vmstore::kPageSize);
}

TEST(CppStats, LoadBiggerThanThePool) {
  std::string dir = freshDir();
  std::unique_ptr<Database> db;
  VMS_ASSERT_OK(Database::open(dir, "durability=async,pool_size=1M", &db));
  Tree* t = nullptr;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  const int n = scaled(20000, 8000);  // ~ 20000 * 300 B = 6 MB vs a 1 MiB pool
  for (int i = 0; i < n; ++i) {
    std::string k = numKey("key", mix64(i) % 100000000);
    VMS_ASSERT_OK(t->put(k, fillFor(k, 0, 280)));
    if (i % 2000 == 0) {
      vmstore::Stats s = db->stats();
      ASSERT_LE(s.resident_pages, s.pool_pages) << "after " << i << " puts";
    }
  }
  std::string v;
  for (int i = 0; i < n; i += 3) {
    std::string k = numKey("key", mix64(i) % 100000000);
    VMS_ASSERT_OK(t->get(k, &v));
    ASSERT_EQ(v, fillFor(k, 0, 280));
  }
  vmstore::Stats s = db->stats();
  EXPECT_EQ(s.pool_pages, 256u);
  EXPECT_LE(s.resident_pages, s.pool_pages);
  EXPECT_GT(s.misses, 0u);
  EXPECT_GT(s.evictions, 0u);
  EXPECT_GT(s.pages_written, 0u);
  EXPECT_GT(s.hits, 0u);
  EXPECT_GT(s.page_count, s.pool_pages);
  EXPECT_GT(s.file_bytes, 1u << 20);
  std::vector<std::string> problems;
  Status c = db->check(&problems);
  EXPECT_TRUE(c.ok()) << c.toString() << (problems.empty() ? "" : ": " + problems[0]);
  VMS_ASSERT_OK(db->close());
}

TEST_F(CppApiTest, CheckHealthyDatabase) {
  Rng rng(99);
  Tree* other = nullptr;
  VMS_ASSERT_OK(db_->openTree("other", true, &other));
  for (int i = 0; i < 3000; ++i) {
    VMS_ASSERT_OK(tree_->put(rng.bytes(rng.uniform(1, 64)), randomValue(rng)));
    VMS_ASSERT_OK(other->put(numKey("o", i), "x"));
  }
  for (int i = 0; i < 3000; i += 2) VMS_ASSERT_OK(other->del(numKey("o", i)));
  std::vector<std::string> problems;
  Status s = db_->check(&problems);
  EXPECT_TRUE(s.ok()) << s.toString();
  EXPECT_TRUE(problems.empty()) << problems.size() << " problems, first: " << problems[0];
  reopen("pool_size=1M");
  problems.clear();
  s = db_->check(&problems);
  EXPECT_TRUE(s.ok()) << s.toString() << (problems.empty() ? "" : ": " + problems[0]);
}

TEST_F(CppApiTest, SyncAndDataSurvivesReopen) {
  VMS_ASSERT_OK(tree_->put("a", "1"));
  VMS_ASSERT_OK(db_->sync());
  VMS_ASSERT_OK(tree_->put("b", "2"));
  reopen();
  std::string v;
  VMS_ASSERT_OK(tree_->get("a", &v));
  EXPECT_EQ(v, "1");
  VMS_ASSERT_OK(tree_->get("b", &v));
  EXPECT_EQ(v, "2");
}

}  // namespace
