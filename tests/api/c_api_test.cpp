// The C API (vmstore.h): bad input on every call, and the documented semantics of
// opening, trees, puts/gets/deletes, iterators and persistence.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../e2e/test_util.hpp"
#include "vmstore.h"

namespace {

using namespace vmstest;

const std::vector<int> kAllCodes = {VMS_OK,       VMS_NOTFOUND, VMS_EINVAL,  VMS_EIO, VMS_ECORRUPT,
                                    VMS_ENOSPC,   VMS_ETOOBIG,  VMS_ENOMEM,  VMS_EBUSY};

std::string lastError() {
  const char* e = vms_last_error();
  return e == nullptr ? std::string("<NULL>") : std::string(e);
}

int cput(vms_tree* t, std::string_view k, std::string_view v) {
  return vms_put(t, k.data(), k.size(), v.data(), v.size());
}

// rc of vms_get; the value in *out when OK.
int cget(vms_tree* t, std::string_view k, std::string* out) {
  std::string buf(4096, '\0');
  size_t vlen = ~size_t{0};
  int rc = vms_get(t, k.data(), k.size(), buf.data(), buf.size(), &vlen);
  if (rc == VMS_OK && vlen > buf.size()) {  // a larger value: again with room for it
    buf.resize(vlen);
    rc = vms_get(t, k.data(), k.size(), buf.data(), buf.size(), &vlen);
  }
  if (rc == VMS_OK && out != nullptr) {
    EXPECT_LE(vlen, buf.size());
    out->assign(buf.data(), std::min(vlen, buf.size()));
  }
  return rc;
}

int cdel(vms_tree* t, std::string_view k) { return vms_delete(t, k.data(), k.size()); }

// All entries from `start` (nullptr: the first key), via the C iterator.
KV cscan(vms_tree* t, const std::string* start = nullptr, int* final_rc = nullptr) {
  KV out;
  vms_iter* it = nullptr;
  int rc = start == nullptr ? vms_iter_open(t, nullptr, 0, &it)
                            : vms_iter_open(t, start->data(), start->size(), &it);
  EXPECT_EQ(rc, VMS_OK) << lastError();
  if (rc != VMS_OK) {
    if (final_rc) *final_rc = rc;
    return out;
  }
  const void* k = nullptr;
  const void* v = nullptr;
  size_t kl = 0, vl = 0;
  while ((rc = vms_iter_next(it, &k, &kl, &v, &vl)) == VMS_OK) {
    out.emplace_back(std::string(static_cast<const char*>(k), kl),
                     std::string(static_cast<const char*>(v), vl));
  }
  if (final_rc) *final_rc = rc;
  EXPECT_EQ(rc, VMS_NOTFOUND) << "iteration ended with " << vms_strerror(rc) << ": " << lastError();
  vms_iter_close(it);
  return out;
}

// Forks a child that waits until the parent writes a byte to the returned pipe, then
// calls vms_open(dir, config) (closing again on success) and _exits with rc + 100.
struct ChildOpener {
  pid_t pid = -1;
  int go_fd = -1;

  void start(const std::string& dir, const char* config) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[1]);
      char c;
      if (read(fds[0], &c, 1) != 1) _exit(1);
      vms_db* db = nullptr;
      int rc = vms_open(dir.c_str(), config, &db);
      if (rc == VMS_OK) vms_close(db);
      _exit(rc + 100);
    }
    close(fds[0]);
    go_fd = fds[1];
  }
  // Lets the child go and returns its vms_open status (or -1000 when it did not exit normally).
  int finish() {
    char c = 'g';
    EXPECT_EQ(write(go_fd, &c, 1), 1);
    close(go_fd);
    int st = 0;
    EXPECT_EQ(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st)) return -1000;
    return WEXITSTATUS(st) - 100;
  }
};

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = freshDir();
    ASSERT_EQ(vms_open(dir_.c_str(), "pool_size=4M", &db_), VMS_OK) << lastError();
    ASSERT_NE(db_, nullptr);
    ASSERT_EQ(vms_tree_open(db_, "", 1, &tree_), VMS_OK) << lastError();
    ASSERT_NE(tree_, nullptr);
  }
  void TearDown() override {
    if (db_ != nullptr) {
      EXPECT_EQ(vms_close(db_), VMS_OK) << lastError();
    }
    db_ = nullptr;
  }
  void reopen(const char* config = "pool_size=4M") {
    ASSERT_EQ(vms_close(db_), VMS_OK) << lastError();
    db_ = nullptr;
    tree_ = nullptr;
    ASSERT_EQ(vms_open(dir_.c_str(), config, &db_), VMS_OK) << lastError();
    ASSERT_EQ(vms_tree_open(db_, "", 1, &tree_), VMS_OK) << lastError();
  }

  std::string dir_;
  vms_db* db_ = nullptr;
  vms_tree* tree_ = nullptr;
};

// ---- vms_strerror / vms_last_error --------------------------------------------------

TEST(CApiStrerror, EveryCodeHasADistinctName) {
  std::set<std::string> names;
  for (int code : kAllCodes) {
    const char* s = vms_strerror(code);
    ASSERT_NE(s, nullptr) << code;
    EXPECT_GT(std::strlen(s), 0u) << code;
    names.insert(s);
    // The C++ name is the same text.
    EXPECT_STREQ(vmstore::Status::codeName(code), s) << code;
  }
  EXPECT_EQ(names.size(), kAllCodes.size()) << "two codes share a name";
}

TEST(CApiStrerror, UnknownCodeIsNotACrash) {
  for (int code : {2, -8, -100, 12345, -2147483647 - 1, 2147483647}) {
    const char* s = vms_strerror(code);
    ASSERT_NE(s, nullptr) << code;
    EXPECT_GT(std::strlen(s), 0u) << code;
  }
}

TEST(CApiLastError, EmptyOnAFreshThreadAndKeptPerThread) {
  std::string fresh = "unset";
  std::thread([&] { fresh = lastError(); }).join();
  EXPECT_EQ(fresh, "");

  // A failure on this thread is visible here, not on another thread.
  EXPECT_EQ(vms_open(nullptr, nullptr, nullptr), VMS_EINVAL);
  EXPECT_NE(lastError(), "");
  std::string other = "unset";
  std::thread([&] { other = lastError(); }).join();
  EXPECT_EQ(other, "");
}

// ---- NULL handles and pointers: VMS_EINVAL, never a crash ------------------------------

TEST(CApiNull, OpenCloseSync) {
  std::string dir = freshDir();
  vms_db* db = nullptr;
  EXPECT_EQ(vms_open(nullptr, nullptr, &db), VMS_EINVAL);
  EXPECT_NE(lastError(), "");
  EXPECT_EQ(vms_open(nullptr, "pool_size=4M", &db), VMS_EINVAL);
  EXPECT_EQ(vms_open(dir.c_str(), nullptr, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_open(dir.c_str(), "pool_size=4M", nullptr), VMS_EINVAL);
  EXPECT_FALSE(pathExists(dir)) << "a failed vms_open created " << dir;
  EXPECT_EQ(vms_close(nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_sync(nullptr), VMS_EINVAL);
  EXPECT_NE(lastError(), "");
}

TEST(CApiClose, ASecondCloseIsRefusedAndTheHandleStaysSafe) {
  // It used to return VMS_OK and keep the handle twice among the retired ones, which
  // deleted it twice when the process exited.
  std::string dir = freshDir();
  vms_db* db = nullptr;
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=4M", &db), VMS_OK);
  EXPECT_EQ(vms_close(db), VMS_OK);
  EXPECT_EQ(vms_close(db), VMS_EINVAL);
  EXPECT_NE(lastError().find("closed already"), std::string::npos) << lastError();
  EXPECT_EQ(vms_sync(db), VMS_EINVAL);
  // The directory opens again.
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=4M", &db), VMS_OK);
  EXPECT_EQ(vms_close(db), VMS_OK);
}

TEST(CApiClose, AnIteratorOfAClosedDatabaseReturnsNothingMore) {
  std::string dir = freshDir();
  vms_db* db = nullptr;
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=4M", &db), VMS_OK);
  vms_tree* t = nullptr;
  ASSERT_EQ(vms_tree_open(db, "", 1, &t), VMS_OK);
  ASSERT_EQ(vms_put(t, "a", 1, "1", 1), VMS_OK);
  ASSERT_EQ(vms_put(t, "b", 1, "2", 1), VMS_OK);
  vms_iter* it = nullptr;
  ASSERT_EQ(vms_iter_open(t, nullptr, 0, &it), VMS_OK);  // its first entries copied out
  ASSERT_EQ(vms_close(db), VMS_OK);
  const void *k, *v;
  size_t kl, vl;
  EXPECT_EQ(vms_iter_next(it, &k, &kl, &v, &vl), VMS_EINVAL);
  EXPECT_EQ(vms_iter_next(it, &k, &kl, &v, &vl), VMS_EINVAL);
  vms_iter_close(it);
}

TEST_F(CApiTest, NullTreeOpenAndDrop) {
  vms_tree* t = nullptr;
  EXPECT_EQ(vms_tree_open(nullptr, "", 1, &t), VMS_EINVAL);
  EXPECT_EQ(vms_tree_open(nullptr, "x", 0, &t), VMS_EINVAL);
  EXPECT_EQ(vms_tree_open(db_, nullptr, 1, &t), VMS_EINVAL);
  EXPECT_EQ(vms_tree_open(db_, "x", 1, nullptr), VMS_EINVAL);
  EXPECT_NE(lastError(), "");
  // Nothing was created by the failed calls.
  EXPECT_EQ(vms_tree_open(db_, "x", 0, &t), VMS_NOTFOUND);
  EXPECT_EQ(vms_tree_drop(nullptr, "x"), VMS_EINVAL);
  EXPECT_EQ(vms_tree_drop(db_, nullptr), VMS_EINVAL);
}

TEST_F(CApiTest, NullPutGetDelete) {
  ASSERT_EQ(cput(tree_, "k", "v"), VMS_OK);
  const char* k = "k";
  const char* v = "value";
  EXPECT_EQ(vms_put(nullptr, k, 1, v, 5), VMS_EINVAL);
  EXPECT_EQ(vms_put(tree_, nullptr, 1, v, 5), VMS_EINVAL);
  EXPECT_EQ(vms_put(tree_, nullptr, 0, v, 5), VMS_EINVAL);
  EXPECT_EQ(vms_put(tree_, k, 1, nullptr, 5), VMS_EINVAL);
  EXPECT_NE(lastError(), "");

  char buf[16];
  size_t vlen = 0;
  EXPECT_EQ(vms_get(nullptr, k, 1, buf, sizeof buf, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_get(tree_, nullptr, 1, buf, sizeof buf, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_get(tree_, k, 1, buf, sizeof buf, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_get(tree_, k, 1, nullptr, 5, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_get(tree_, k, 0, buf, sizeof buf, &vlen), VMS_EINVAL);

  EXPECT_EQ(vms_delete(nullptr, k, 1), VMS_EINVAL);
  EXPECT_EQ(vms_delete(tree_, nullptr, 1), VMS_EINVAL);
  EXPECT_EQ(vms_delete(tree_, k, 0), VMS_EINVAL);

  // Nothing changed.
  std::string got;
  ASSERT_EQ(cget(tree_, "k", &got), VMS_OK);
  EXPECT_EQ(got, "v");
}

TEST_F(CApiTest, NullIterator) {
  ASSERT_EQ(cput(tree_, "a", "1"), VMS_OK);
  vms_iter* it = nullptr;
  EXPECT_EQ(vms_iter_open(nullptr, nullptr, 0, &it), VMS_EINVAL);
  EXPECT_EQ(vms_iter_open(tree_, nullptr, 0, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_iter_open(tree_, nullptr, 3, &it), VMS_EINVAL) << "NULL start with a length";
  const void* k;
  const void* v;
  size_t kl, vl;
  EXPECT_EQ(vms_iter_next(nullptr, &k, &kl, &v, &vl), VMS_EINVAL);
  vms_iter_close(nullptr);  // must not crash

  ASSERT_EQ(vms_iter_open(tree_, nullptr, 0, &it), VMS_OK) << lastError();
  ASSERT_NE(it, nullptr);
  EXPECT_EQ(vms_iter_next(it, nullptr, &kl, &v, &vl), VMS_EINVAL);
  EXPECT_EQ(vms_iter_next(it, &k, nullptr, &v, &vl), VMS_EINVAL);
  EXPECT_EQ(vms_iter_next(it, &k, &kl, nullptr, &vl), VMS_EINVAL);
  EXPECT_EQ(vms_iter_next(it, &k, &kl, &v, nullptr), VMS_EINVAL);
  EXPECT_NE(lastError(), "");
  vms_iter_close(it);
}

// ---- vms_open config and directories ----------------------------------------------------

TEST(CApiOpen, BadConfigIsEinvalAndCreatesNothing) {
  const char* bad[] = {
      "bogus_key=1",       "pool_size=12Q",         "pool_size=",           "pool_size=-1",
      "pool_size=99999999999T", "create=maybe",      "max_size=lots",        "pool_size",
      "pool_size=4M,bogus_key=1", "create=",         "pool_size=4M,create=maybe",
      "durability=fast",   "durability=",           "durability=SYNC",      "sync_interval=0",
      "sync_interval=60001", "sync_interval=10ms",  "sync_interval=1K",     "log_size=512K",
      "log_size=65G",      "log_size=big",          "direct_io=sometimes",  "direct_io=",
      "io=async",          "io=",                   "io=URING",             "page_provider=maybe",  "log_zero_fill=maybe",
      "page_provider=",    "huge_pages=maybe",      "huge_pages=",          "huge_pages=TRUE",
      "commit_delay=100001", "commit_delay=-1",     "commit_delay=1ms",     "commit_delay=",
  };
  int i = 0;
  for (const char* config : bad) {
    SCOPED_TRACE(config);
    std::string dir = freshDir("c" + std::to_string(i++));
    vms_db* db = nullptr;
    EXPECT_EQ(vms_open(dir.c_str(), config, &db), VMS_EINVAL);
    EXPECT_NE(lastError(), "");
    EXPECT_FALSE(pathExists(dir)) << "a rejected config created " << dir;
    if (db != nullptr && pathExists(dir)) vms_close(db);
  }
}

TEST(CApiOpen, UnknownKeyIsNamedInLastError) {
  std::string dir = freshDir();
  vms_db* db = nullptr;
  EXPECT_EQ(vms_open(dir.c_str(), "pool_size=4M,frobnicate_level=3", &db), VMS_EINVAL);
  EXPECT_NE(lastError().find("frobnicate_level"), std::string::npos) << lastError();
  EXPECT_FALSE(pathExists(dir));
}

TEST(CApiOpen, BadConfigLeavesAnExistingEmptyDirectoryEmpty) {
  std::string dir = freshDir();
  fs::create_directories(dir);
  vms_db* db = nullptr;
  EXPECT_EQ(vms_open(dir.c_str(), "pool_size=12Q", &db), VMS_EINVAL);
  EXPECT_TRUE(fs::is_empty(dir)) << "files were created by a rejected open";
}

TEST(CApiOpen, GoodConfigs) {
  const char* good[] = {nullptr,
                        "",
                        "pool_size=4M",
                        "pool_size=4194304",
                        "pool_size=1M",
                        "pool_size=2048K,create=true",
                        "create=true,pool_size=1M,max_size=1G",
                        // 1 TiB of address space: under ThreadSanitizer, whose shadow takes
                        // most of it, such a mapping beside another test's failed (ENOMEM).
                        kThreadSanitizer ? "max_size=64G" : "max_size=1T",
                        "durability=sync",
                        "durability=async,sync_interval=1",
                        "durability=none,direct_io=false",
                        "log_size=1M,sync_interval=60000,direct_io=true",
                        "io=sync,page_provider=false",
                        "io=uring,page_provider=true",
                        "durability=sync,log_zero_fill=false",
                        "durability=sync,commit_delay=0",
                        "durability=sync,commit_delay=100000"};
  int i = 0;
  for (const char* config : good) {
    SCOPED_TRACE(config == nullptr ? "(NULL)" : config);
    std::string dir = freshDir("g" + std::to_string(i++));
    vms_db* db = nullptr;
    ASSERT_EQ(vms_open(dir.c_str(), config, &db), VMS_OK) << lastError();
    ASSERT_NE(db, nullptr);
    vms_tree* t = nullptr;
    ASSERT_EQ(vms_tree_open(db, "", 1, &t), VMS_OK);
    EXPECT_EQ(cput(t, "key", "value"), VMS_OK);
    EXPECT_EQ(vms_close(db), VMS_OK) << lastError();
    EXPECT_TRUE(fs::is_directory(dir));
  }
}

TEST(CApiOpen, CreateFalseOnMissingDirectoryCreatesNothing) {
  std::string dir = freshDir();
  vms_db* db = nullptr;
  int rc = vms_open(dir.c_str(), "create=false", &db);
  EXPECT_LT(rc, 0);
  EXPECT_EQ(rc, VMS_EINVAL) << "options.hpp: a missing database with create=false is InvalidArgument";
  EXPECT_NE(lastError(), "");
  EXPECT_FALSE(pathExists(dir));

  // An existing empty directory holds no database either: error, still empty.
  fs::create_directories(dir);
  rc = vms_open(dir.c_str(), "create=false,pool_size=4M", &db);
  EXPECT_LT(rc, 0);
  EXPECT_TRUE(fs::is_empty(dir));
}

// Opens dir with config, puts a = b into the default tree, closes.
void putABAndClose(const std::string& dir, const char* config) {
  vms_db* db = nullptr;
  ASSERT_EQ(vms_open(dir.c_str(), config, &db), VMS_OK) << lastError();
  vms_tree* t = nullptr;
  ASSERT_EQ(vms_tree_open(db, "", 1, &t), VMS_OK);
  ASSERT_EQ(cput(t, "a", "b"), VMS_OK);
  ASSERT_EQ(vms_close(db), VMS_OK);
}

// Opens dir with config and expects a = b in the default tree.
void expectABAfterOpen(const std::string& dir, const char* config) {
  vms_db* db = nullptr;
  ASSERT_EQ(vms_open(dir.c_str(), config, &db), VMS_OK) << lastError();
  vms_tree* t = nullptr;
  ASSERT_EQ(vms_tree_open(db, "", 0, &t), VMS_OK);
  std::string got;
  EXPECT_EQ(cget(t, "a", &got), VMS_OK);
  EXPECT_EQ(got, "b");
  EXPECT_EQ(vms_close(db), VMS_OK);
}

TEST(CApiOpen, CreateFalseOpensAnExistingDatabase) {
  std::string dir = freshDir();
  putABAndClose(dir, "pool_size=4M");
  expectABAfterOpen(dir, "create=false,pool_size=4M");
}

TEST(CApiOpen, ALogWithoutItsDataFileIsRefusedNotReplayedIntoANewDatabase) {
  std::string dir = freshDir();
  putABAndClose(dir, "pool_size=4M,durability=sync");
  vms_db* db = nullptr;
  fs::rename(dir + "/data.vms", dir + "/data.vms.saved");
  std::set<std::string> before;
  for (const auto& e : fs::directory_iterator(dir)) before.insert(e.path().filename().string());

  for (const char* config : {"pool_size=4M", "pool_size=4M,create=false"}) {
    EXPECT_EQ(vms_open(dir.c_str(), config, &db), VMS_ECORRUPT) << config;
    EXPECT_NE(lastError().find("data file is missing"), std::string::npos) << lastError();
    std::set<std::string> after;
    for (const auto& e : fs::directory_iterator(dir)) after.insert(e.path().filename().string());
    after.erase("LOCK");
    before.erase("LOCK");
    EXPECT_EQ(after, before) << config << ": nothing created";
  }
  // The data file back in place, the database opens with what it held.
  fs::rename(dir + "/data.vms.saved", dir + "/data.vms");
  expectABAfterOpen(dir, "pool_size=4M");
}

TEST(CApiOpen, SecondOpenInSameProcessIsBusy) {
  std::string dir = freshDir();
  vms_db* db = nullptr;
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=4M", &db), VMS_OK);
  vms_db* db2 = nullptr;
  EXPECT_EQ(vms_open(dir.c_str(), "pool_size=4M", &db2), VMS_EBUSY);
  EXPECT_NE(lastError(), "");
  // A differently spelled path to the same directory is the same database.
  std::string alias = dir + "/.";
  EXPECT_EQ(vms_open(alias.c_str(), "pool_size=4M", &db2), VMS_EBUSY);
  ASSERT_EQ(vms_close(db), VMS_OK);
  // After close, opening works again.
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=4M", &db), VMS_OK) << lastError();
  EXPECT_EQ(vms_close(db), VMS_OK);
}

TEST(CApiOpen, OpenFromAnotherProcessIsBusy) {
  std::string dir = freshDir();
  {  // create it first
    vms_db* db = nullptr;
    ASSERT_EQ(vms_open(dir.c_str(), "pool_size=4M", &db), VMS_OK);
    ASSERT_EQ(vms_close(db), VMS_OK);
  }
  ChildOpener child;
  ASSERT_NO_FATAL_FAILURE(child.start(dir, "pool_size=4M"));
  vms_db* db = nullptr;
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=4M", &db), VMS_OK) << lastError();
  int child_rc = child.finish();
  EXPECT_EQ(child_rc, VMS_EBUSY) << "child's vms_open returned " << child_rc;
  ASSERT_EQ(vms_close(db), VMS_OK);

  // Once closed, another process can open it.
  ChildOpener child2;
  ASSERT_NO_FATAL_FAILURE(child2.start(dir, "pool_size=4M"));
  EXPECT_EQ(child2.finish(), VMS_OK);
}

// ---- trees ---------------------------------------------------------------------------------

TEST_F(CApiTest, DefaultTreeAndSameHandle) {
  vms_tree* t2 = nullptr;
  ASSERT_EQ(vms_tree_open(db_, "", 0, &t2), VMS_OK);
  EXPECT_EQ(t2, tree_) << "the same name gives the same handle";
  vms_tree* a1 = nullptr;
  vms_tree* a2 = nullptr;
  ASSERT_EQ(vms_tree_open(db_, "alpha", 1, &a1), VMS_OK);
  ASSERT_EQ(vms_tree_open(db_, "alpha", 1, &a2), VMS_OK);
  EXPECT_EQ(a1, a2);
  vms_tree* a3 = nullptr;
  ASSERT_EQ(vms_tree_open(db_, "alpha", 0, &a3), VMS_OK);
  EXPECT_EQ(a1, a3);
  EXPECT_NE(a1, tree_);
}

TEST_F(CApiTest, MissingTreeWithoutCreateIsNotFound) {
  vms_tree* t = nullptr;
  EXPECT_EQ(vms_tree_open(db_, "nope", 0, &t), VMS_NOTFOUND);
  EXPECT_EQ(vms_tree_open(db_, "nope", 0, &t), VMS_NOTFOUND);
  reopen();
  EXPECT_EQ(vms_tree_open(db_, "nope", 0, &t), VMS_NOTFOUND);
}

TEST_F(CApiTest, TreesAreIsolated) {
  vms_tree* a = nullptr;
  vms_tree* b = nullptr;
  ASSERT_EQ(vms_tree_open(db_, "a", 1, &a), VMS_OK);
  ASSERT_EQ(vms_tree_open(db_, "b", 1, &b), VMS_OK);
  ASSERT_EQ(cput(a, "k", "in a"), VMS_OK);
  ASSERT_EQ(cput(b, "k", "in b"), VMS_OK);
  ASSERT_EQ(cput(tree_, "k", "in default"), VMS_OK);
  std::string got;
  ASSERT_EQ(cget(a, "k", &got), VMS_OK);
  EXPECT_EQ(got, "in a");
  ASSERT_EQ(cget(b, "k", &got), VMS_OK);
  EXPECT_EQ(got, "in b");
  ASSERT_EQ(cget(tree_, "k", &got), VMS_OK);
  EXPECT_EQ(got, "in default");
  ASSERT_EQ(cdel(a, "k"), VMS_OK);
  EXPECT_EQ(cget(a, "k", &got), VMS_NOTFOUND);
  ASSERT_EQ(cget(b, "k", &got), VMS_OK);
  EXPECT_EQ(got, "in b");
  EXPECT_EQ(cscan(a).size(), 0u);
  EXPECT_EQ(cscan(b).size(), 1u);
}

TEST_F(CApiTest, TreeNameLength) {
  std::string n255(255, 'n');
  n255[0] = 'A';
  n255[254] = 'Z';
  std::string n256(256, 'n');
  vms_tree* t = nullptr;
  ASSERT_EQ(vms_tree_open(db_, n255.c_str(), 1, &t), VMS_OK) << lastError();
  ASSERT_EQ(cput(t, "key", "long name"), VMS_OK);
  vms_tree* t2 = nullptr;
  int rc = vms_tree_open(db_, n256.c_str(), 1, &t2);
  EXPECT_LT(rc, 0) << "a 256-byte tree name must be an error, got " << vms_strerror(rc);
  EXPECT_NE(lastError(), "");
  rc = vms_tree_open(db_, n256.c_str(), 0, &t2);
  EXPECT_NE(rc, VMS_OK);

  reopen();
  ASSERT_EQ(vms_tree_open(db_, n255.c_str(), 0, &t), VMS_OK);
  std::string got;
  ASSERT_EQ(cget(t, "key", &got), VMS_OK);
  EXPECT_EQ(got, "long name");
  // A name that differs in its last byte is another tree.
  std::string other = n255;
  other[254] = 'Y';
  EXPECT_EQ(vms_tree_open(db_, other.c_str(), 0, &t2), VMS_NOTFOUND);
}

TEST_F(CApiTest, DropTree) {
  vms_tree* t = nullptr;
  ASSERT_EQ(vms_tree_open(db_, "gone", 1, &t), VMS_OK);
  for (int i = 0; i < 500; ++i) {
    ASSERT_EQ(cput(t, numKey("k", i), std::string(100, 'v')), VMS_OK);
  }
  ASSERT_EQ(vms_tree_drop(db_, "gone"), VMS_OK) << lastError();

  // The old handle answers NOTFOUND to everything.
  std::string got;
  EXPECT_EQ(cput(t, "k", "v"), VMS_NOTFOUND);
  EXPECT_EQ(cget(t, numKey("k", 1), &got), VMS_NOTFOUND);
  EXPECT_EQ(cdel(t, numKey("k", 1)), VMS_NOTFOUND);
  vms_iter* it = nullptr;
  EXPECT_EQ(vms_iter_open(t, nullptr, 0, &it), VMS_NOTFOUND);

  vms_tree* t2 = nullptr;
  EXPECT_EQ(vms_tree_open(db_, "gone", 0, &t2), VMS_NOTFOUND);
  EXPECT_EQ(vms_tree_drop(db_, "gone"), VMS_NOTFOUND);

  // Re-creating gives an empty tree.
  ASSERT_EQ(vms_tree_open(db_, "gone", 1, &t2), VMS_OK);
  EXPECT_EQ(cget(t2, numKey("k", 1), &got), VMS_NOTFOUND);
  EXPECT_EQ(cscan(t2).size(), 0u);
  ASSERT_EQ(cput(t2, "new", "x"), VMS_OK);

  // The default tree is untouched, and the state survives a reopen.
  ASSERT_EQ(cput(tree_, "d", "default"), VMS_OK);
  reopen();
  ASSERT_EQ(vms_tree_open(db_, "gone", 0, &t2), VMS_OK);
  KV all = cscan(t2);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].first, "new");
  ASSERT_EQ(cget(tree_, "d", &got), VMS_OK);
}

TEST_F(CApiTest, DroppedTreeStaysDroppedAfterReopen) {
  vms_tree* t = nullptr;
  ASSERT_EQ(vms_tree_open(db_, "temp", 1, &t), VMS_OK);
  ASSERT_EQ(cput(t, "a", "b"), VMS_OK);
  ASSERT_EQ(vms_tree_drop(db_, "temp"), VMS_OK);
  reopen();
  EXPECT_EQ(vms_tree_open(db_, "temp", 0, &t), VMS_NOTFOUND);
}

TEST_F(CApiTest, DropMissingTreeIsNotFound) {
  EXPECT_EQ(vms_tree_drop(db_, "never-created"), VMS_NOTFOUND);
  std::string n256(256, 'x');
  EXPECT_NE(vms_tree_drop(db_, n256.c_str()), VMS_OK);
}

// ---- put / get / delete ------------------------------------------------------------------

TEST_F(CApiTest, EmptyKeyIsInvalid) {
  EXPECT_EQ(cput(tree_, std::string_view("x", 0), "v"), VMS_EINVAL);
  EXPECT_NE(lastError(), "");
  EXPECT_EQ(cscan(tree_).size(), 0u) << "a rejected put wrote something";
}

TEST_F(CApiTest, KeySizeLimit) {
  std::string kmax(VMS_MAX_KEY_SIZE, 'k');
  kmax[0] = '\x01';
  kmax.back() = '\xfe';
  std::string kbig = kmax + "x";
  ASSERT_EQ(cput(tree_, kmax, "old"), VMS_OK) << lastError();
  EXPECT_EQ(cput(tree_, kbig, "new"), VMS_ETOOBIG);
  EXPECT_NE(lastError(), "");

  std::string got;
  int rc = cget(tree_, kbig, &got);
  EXPECT_TRUE(rc == VMS_NOTFOUND || rc == VMS_ETOOBIG) << vms_strerror(rc);
  ASSERT_EQ(cget(tree_, kmax, &got), VMS_OK);
  EXPECT_EQ(got, "old") << "the key's previous value changed";
  rc = cdel(tree_, kbig);
  EXPECT_TRUE(rc == VMS_NOTFOUND || rc == VMS_ETOOBIG) << vms_strerror(rc);

  KV all = cscan(tree_);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].first, kmax);

  // An oversized key as iterator start is either rejected or positions correctly.
  vms_iter* it = nullptr;
  rc = vms_iter_open(tree_, kbig.data(), kbig.size(), &it);
  if (rc == VMS_OK) {
    const void* k;
    const void* v;
    size_t kl, vl;
    EXPECT_EQ(vms_iter_next(it, &k, &kl, &v, &vl), VMS_NOTFOUND) << "kmax < kbig";
    vms_iter_close(it);
  } else {
    EXPECT_TRUE(rc == VMS_ETOOBIG || rc == VMS_EINVAL) << vms_strerror(rc);
  }

  // Maximum-size keys in bulk, and after reopen.
  for (int i = 0; i < 200; ++i) {
    std::string k = numKey("", i) + std::string(VMS_MAX_KEY_SIZE - 10, static_cast<char>('a' + i % 26));
    ASSERT_EQ(k.size(), static_cast<size_t>(VMS_MAX_KEY_SIZE));
    ASSERT_EQ(cput(tree_, k, std::to_string(i)), VMS_OK);
  }
  reopen();
  ASSERT_EQ(cget(tree_, kmax, &got), VMS_OK);
  EXPECT_EQ(got, "old");
  EXPECT_EQ(cscan(tree_).size(), 201u);
}

TEST_F(CApiTest, ValueSizeLimit) {
  EXPECT_EQ(VMS_MAX_VALUE_SIZE, size_t{1} << 30);
  // Beyond the limit: refused before a byte of it is read (the buffer costs no memory).
  vmsunit::ZeroBuffer over(VMS_MAX_VALUE_SIZE + 1);
  ASSERT_EQ(cput(tree_, "key", "previous"), VMS_OK);
  EXPECT_EQ(cput(tree_, "key", over.view()), VMS_ETOOBIG);
  EXPECT_NE(lastError().find("value"), std::string::npos) << lastError();
  std::string got;
  ASSERT_EQ(cget(tree_, "key", &got), VMS_OK);
  EXPECT_EQ(got, "previous");
  EXPECT_EQ(cput(tree_, "other", over.view()), VMS_ETOOBIG);
  EXPECT_EQ(cget(tree_, "other", &got), VMS_NOTFOUND);

  // Within the limit but over half the pool (4M here): out of memory, nothing changed.
  std::string tooLarge(3 << 20, 'x');
  EXPECT_EQ(cput(tree_, "key", tooLarge), VMS_ENOMEM);
  EXPECT_NE(lastError().find("pool_size"), std::string::npos) << lastError();
  ASSERT_EQ(cget(tree_, "key", &got), VMS_OK);
  EXPECT_EQ(got, "previous");

  // Values of every size up to what the pool holds, with the maximum key.
  std::string kmax(VMS_MAX_KEY_SIZE, 'K');
  std::vector<std::string> values;
  for (size_t n : {size_t{4000}, size_t{4057}, size_t{8192}, size_t{100000}, size_t{1} << 20, size_t{2} << 20}) {
    std::string v(n - 40, 'v');  // the largest fills its pages to the last byte
    v[0] = '\0';
    v.back() = '\xff';
    values.push_back(v);
  }
  auto keyOf = [&](size_t i) { return kmax.substr(1) + static_cast<char>('0' + i); };
  for (size_t i = 0; i < values.size(); i++) {
    ASSERT_EQ(cput(tree_, keyOf(i), values[i]), VMS_OK) << lastError();
  }
  reopen();
  for (size_t i = 0; i < values.size(); i++) {
    ASSERT_EQ(cget(tree_, keyOf(i), &got), VMS_OK);
    EXPECT_EQ(got, values[i]) << values[i].size() << " bytes";
  }
}

TEST_F(CApiTest, ValueOfTheMaximumSizeRoundTrips) {
  // 1 GiB needs a pool of over 2 GiB (one value takes at most half of it). The
  // sanitizer runs check 64 MiB instead.
  const size_t n = vmsunit::scaled<size_t>(VMS_MAX_VALUE_SIZE, 64 << 20);
  reopen(n == VMS_MAX_VALUE_SIZE ? "pool_size=2100M" : "pool_size=160M");
  std::string v(n, 'm');
  for (size_t i = 0; i < n; i += 4096) v[i] = static_cast<char>(i >> 12);
  ASSERT_EQ(cput(tree_, "max", v), VMS_OK) << lastError();
  std::string got;
  ASSERT_EQ(cget(tree_, "max", &got), VMS_OK);
  EXPECT_TRUE(got == v);
  got.clear();
  got.shrink_to_fit();
  reopen(n == VMS_MAX_VALUE_SIZE ? "pool_size=2100M" : "pool_size=160M");
  ASSERT_EQ(cget(tree_, "max", &got), VMS_OK);
  EXPECT_TRUE(got == v) << "after a reopen";
  ASSERT_EQ(cdel(tree_, "max"), VMS_OK);
}

TEST_F(CApiTest, EmptyValueAndBinaryKeys) {
  ASSERT_EQ(cput(tree_, "empty", ""), VMS_OK);
  ASSERT_EQ(vms_put(tree_, "null-val", 8, nullptr, 0), VMS_OK) << "NULL value with length 0 is the empty value";
  std::string a_nul_b("a\0b", 3);
  ASSERT_EQ(cput(tree_, a_nul_b, "with nul"), VMS_OK);
  ASSERT_EQ(cput(tree_, "a", "plain a"), VMS_OK);
  ASSERT_EQ(cput(tree_, std::string("\0", 1), "nul"), VMS_OK);
  std::string got = "junk";
  ASSERT_EQ(cget(tree_, "empty", &got), VMS_OK);
  EXPECT_EQ(got, "");
  ASSERT_EQ(cget(tree_, "null-val", &got), VMS_OK);
  EXPECT_EQ(got, "");
  ASSERT_EQ(cget(tree_, a_nul_b, &got), VMS_OK);
  EXPECT_EQ(got, "with nul");
  ASSERT_EQ(cget(tree_, "a", &got), VMS_OK);
  EXPECT_EQ(got, "plain a");
  ASSERT_EQ(cget(tree_, std::string("\0", 1), &got), VMS_OK);
  EXPECT_EQ(got, "nul");
  EXPECT_EQ(cget(tree_, std::string("\0\0", 2), &got), VMS_NOTFOUND);
  EXPECT_EQ(cget(tree_, std::string("a\0", 2), &got), VMS_NOTFOUND);
}

TEST_F(CApiTest, OverwriteWithDifferentSizes) {
  const size_t sizes[] = {1, 4000, 0, 10, 2000, 3999, 5, 4000, 100, 0, 3000, 1};
  int i = 0;
  for (size_t s : sizes) {
    std::string v = fillFor("k", i++, s);
    ASSERT_EQ(cput(tree_, "k", v), VMS_OK) << s;
    std::string got;
    ASSERT_EQ(cget(tree_, "k", &got), VMS_OK);
    EXPECT_EQ(got, v) << "after overwrite with " << s << " bytes";
  }
  EXPECT_EQ(cscan(tree_).size(), 1u);
}

TEST_F(CApiTest, GetCapSemantics) {
  std::string v = "0123456789";
  ASSERT_EQ(cput(tree_, "k", v), VMS_OK);
  size_t vlen = 12345;
  ASSERT_EQ(vms_get(tree_, "k", 1, nullptr, 0, &vlen), VMS_OK);
  EXPECT_EQ(vlen, v.size());

  char buf[32];
  std::memset(buf, '#', sizeof buf);
  vlen = 0;
  ASSERT_EQ(vms_get(tree_, "k", 1, buf, 4, &vlen), VMS_OK);
  EXPECT_EQ(vlen, v.size()) << "vlen is the full length even when cap is smaller";
  EXPECT_EQ(std::string(buf, 4), "0123");
  EXPECT_EQ(buf[4], '#') << "wrote past cap";

  std::memset(buf, '#', sizeof buf);
  ASSERT_EQ(vms_get(tree_, "k", 1, buf, sizeof buf, &vlen), VMS_OK);
  EXPECT_EQ(vlen, v.size());
  EXPECT_EQ(std::string(buf, 10), v);
  EXPECT_EQ(buf[10], '#') << "wrote past the value";

  std::memset(buf, '#', sizeof buf);
  ASSERT_EQ(vms_get(tree_, "k", 1, buf, 0, &vlen), VMS_OK);
  EXPECT_EQ(vlen, v.size());
  EXPECT_EQ(buf[0], '#') << "cap 0 copied something";

  // The same with a large value stored out of line.
  std::string big = fillFor("big", 1, 3900);
  ASSERT_EQ(cput(tree_, "big", big), VMS_OK);
  ASSERT_EQ(vms_get(tree_, "big", 3, nullptr, 0, &vlen), VMS_OK);
  EXPECT_EQ(vlen, big.size());
  std::string part(100, '#');
  part.push_back('!');
  ASSERT_EQ(vms_get(tree_, "big", 3, part.data(), 100, &vlen), VMS_OK);
  EXPECT_EQ(vlen, big.size());
  EXPECT_EQ(part.substr(0, 100), big.substr(0, 100));
  EXPECT_EQ(part[100], '!');

  // Absent key with cap 0.
  EXPECT_EQ(vms_get(tree_, "absent", 6, nullptr, 0, &vlen), VMS_NOTFOUND);
}

TEST_F(CApiTest, DeleteSemantics) {
  EXPECT_EQ(cdel(tree_, "absent"), VMS_NOTFOUND);
  ASSERT_EQ(cput(tree_, "a", "1"), VMS_OK);
  ASSERT_EQ(cput(tree_, "ab", "2"), VMS_OK);
  EXPECT_EQ(cdel(tree_, "a"), VMS_OK);
  EXPECT_EQ(cdel(tree_, "a"), VMS_NOTFOUND);
  std::string got;
  EXPECT_EQ(cget(tree_, "a", &got), VMS_NOTFOUND);
  ASSERT_EQ(cget(tree_, "ab", &got), VMS_OK) << "deleting a prefix deleted a longer key";
  EXPECT_EQ(got, "2");
  ASSERT_EQ(cput(tree_, "a", "again"), VMS_OK);
  ASSERT_EQ(cget(tree_, "a", &got), VMS_OK);
  EXPECT_EQ(got, "again");
}

// ---- iterators --------------------------------------------------------------------------

TEST_F(CApiTest, IteratorOrderIsUnsignedBytesPrefixFirst) {
  const std::vector<std::string> sorted = {
      std::string("\x00", 1), std::string("\x00\x00", 2), std::string("\x01", 1),
      "a",                    std::string("a\x00", 2),    "ab",
      "b",                    "\x7f",                     "\x80",
      "\xff",                 "\xff\xff"};
  // Insert in a scrambled order.
  const int order[] = {5, 9, 0, 3, 10, 7, 1, 6, 2, 8, 4};
  for (int i : order) ASSERT_EQ(cput(tree_, sorted[i], "v" + std::to_string(i)), VMS_OK);
  KV all = cscan(tree_);
  ASSERT_EQ(all.size(), sorted.size());
  for (size_t i = 0; i < sorted.size(); ++i) {
    EXPECT_EQ(all[i].first, sorted[i]) << "position " << i;
    EXPECT_EQ(all[i].second, "v" + std::to_string(i));
  }
}

TEST_F(CApiTest, IteratorStartPositions) {
  for (const char* k : {"b", "d", "f"}) ASSERT_EQ(cput(tree_, k, std::string("v") + k), VMS_OK);
  auto keysFrom = [&](const std::string* start) {
    std::vector<std::string> keys;
    for (auto& kv : cscan(tree_, start)) keys.push_back(kv.first);
    return keys;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(keysFrom(nullptr), (V{"b", "d", "f"}));
  std::string s;
  s = "a";
  EXPECT_EQ(keysFrom(&s), (V{"b", "d", "f"}));
  s = "b";
  EXPECT_EQ(keysFrom(&s), (V{"b", "d", "f"}));
  s = std::string("b\x00", 2);
  EXPECT_EQ(keysFrom(&s), (V{"d", "f"}));
  s = "c";
  EXPECT_EQ(keysFrom(&s), (V{"d", "f"}));
  s = "f";
  EXPECT_EQ(keysFrom(&s), (V{"f"}));
  s = "g";
  EXPECT_EQ(keysFrom(&s), V{});

  // Start past the end: the first next is NOTFOUND, and it stays at the end.
  vms_iter* it = nullptr;
  ASSERT_EQ(vms_iter_open(tree_, "zzz", 3, &it), VMS_OK);
  const void* k;
  const void* v;
  size_t kl, vl;
  EXPECT_EQ(vms_iter_next(it, &k, &kl, &v, &vl), VMS_NOTFOUND);
  EXPECT_EQ(vms_iter_next(it, &k, &kl, &v, &vl), VMS_NOTFOUND);
  vms_iter_close(it);

  // start with slen 0 (non-NULL pointer) is the first key too.
  ASSERT_EQ(vms_iter_open(tree_, "zzz", 0, &it), VMS_OK);
  ASSERT_EQ(vms_iter_next(it, &k, &kl, &v, &vl), VMS_OK);
  EXPECT_EQ(std::string(static_cast<const char*>(k), kl), "b");
  vms_iter_close(it);
}

TEST_F(CApiTest, IteratorOnEmptyTree) {
  vms_iter* it = nullptr;
  ASSERT_EQ(vms_iter_open(tree_, nullptr, 0, &it), VMS_OK);
  const void* k;
  const void* v;
  size_t kl, vl;
  EXPECT_EQ(vms_iter_next(it, &k, &kl, &v, &vl), VMS_NOTFOUND);
  vms_iter_close(it);
  // Closing an iterator that was never stepped.
  ASSERT_EQ(vms_iter_open(tree_, "a", 1, &it), VMS_OK);
  vms_iter_close(it);
}

TEST_F(CApiTest, IteratorPointersStayValidUntilTheNextCall) {
  // Enough keys and big values for several leaves and out-of-line values.
  std::map<std::string, std::string> model;
  for (int i = 0; i < 300; ++i) {
    std::string k = numKey("key", i);
    std::string v = fillFor(k, 7, i % 3 == 0 ? 3500 : 50 + i);
    model[k] = v;
    ASSERT_EQ(cput(tree_, k, v), VMS_OK);
  }
  vms_iter* it = nullptr;
  ASSERT_EQ(vms_iter_open(tree_, nullptr, 0, &it), VMS_OK);
  const void* k;
  const void* v;
  size_t kl, vl;
  auto m = model.begin();
  int n = 0;
  while (vms_iter_next(it, &k, &kl, &v, &vl) == VMS_OK) {
    ASSERT_NE(m, model.end());
    std::string key_copy(static_cast<const char*>(k), kl);
    std::string val_copy(static_cast<const char*>(v), vl);
    EXPECT_EQ(key_copy, m->first);
    EXPECT_EQ(val_copy, m->second);
    // Other calls on the tree (not on this iterator) must not invalidate the pointers:
    // writes elsewhere that split pages, reads, and an overwrite of this very key.
    if (n % 10 == 0) {
      for (int j = 0; j < 20; ++j) {
        ASSERT_EQ(cput(tree_, numKey("zz-other", n * 100 + j), std::string(200, 'o')), VMS_OK);
      }
      std::string tmp;
      ASSERT_EQ(cget(tree_, m->first, &tmp), VMS_OK);
      ASSERT_EQ(cput(tree_, m->first, m->second), VMS_OK);  // same value
    }
    EXPECT_EQ(std::string(static_cast<const char*>(k), kl), key_copy) << "key bytes changed before the next call";
    EXPECT_EQ(std::string(static_cast<const char*>(v), vl), val_copy) << "value bytes changed before the next call";
    ++m;
    ++n;
    if (m == model.end()) break;  // the "zz-other" keys written meanwhile come next
  }
  vms_iter_close(it);
  EXPECT_EQ(n, 300);
}

TEST_F(CApiTest, IteratorOverManyLeaves) {
  std::map<std::string, std::string> model;
  Rng rng(42);
  for (int i = 0; i < 5000; ++i) {
    std::string k = rng.bytes(rng.uniform(1, 40));
    std::string v = rng.bytes(rng.uniform(0, 200));
    model[k] = v;
    ASSERT_EQ(cput(tree_, k, v), VMS_OK);
  }
  EXPECT_EQ(diffKV(cscan(tree_), toKV(model)), "");
  // From many random starts.
  for (int i = 0; i < 50; ++i) {
    std::string start = rng.bytes(rng.uniform(1, 10));
    KV want(model.lower_bound(start), model.end());
    EXPECT_EQ(diffKV(cscan(tree_, &start), want), "") << "start " << show(start);
  }
}

// ---- durability and persistence -----------------------------------------------------------

TEST_F(CApiTest, SyncReturnsOk) {
  ASSERT_EQ(cput(tree_, "a", "b"), VMS_OK);
  EXPECT_EQ(vms_sync(db_), VMS_OK) << lastError();
  EXPECT_EQ(vms_sync(db_), VMS_OK) << lastError();
}

TEST(CApiPersistence, PutCloseReopenGet) {
  std::string dir = freshDir();
  std::map<std::string, std::string> model_default, model_named;
  Rng rng(7);
  {
    vms_db* db = nullptr;
    ASSERT_EQ(vms_open(dir.c_str(), "pool_size=1M", &db), VMS_OK) << lastError();
    vms_tree* d = nullptr;
    vms_tree* n = nullptr;
    ASSERT_EQ(vms_tree_open(db, "", 1, &d), VMS_OK);
    ASSERT_EQ(vms_tree_open(db, "named", 1, &n), VMS_OK);
    // More than the 1 MiB pool so that eviction writes pages before close.
    const int count = scaled(3000, 1500);
    for (int i = 0; i < count; ++i) {
      std::string k = numKey("k", rng.uniform(0, 1000000));
      std::string v = rng.bytes(rng.uniform(0, 1500));
      ASSERT_EQ(cput(d, k, v), VMS_OK);
      model_default[k] = v;
      if (i % 3 == 0) {
        ASSERT_EQ(cput(n, k, "n" + v.substr(0, 20)), VMS_OK);
        model_named[k] = "n" + v.substr(0, 20);
      }
    }
    int deleted = 0;
    for (auto it = model_default.begin(); it != model_default.end() && deleted < 200; ++deleted) {
      ASSERT_EQ(cdel(d, it->first), VMS_OK);
      it = model_default.erase(it);
    }
    ASSERT_EQ(vms_close(db), VMS_OK) << lastError();
  }
  for (int round = 0; round < 2; ++round) {
    vms_db* db = nullptr;
    ASSERT_EQ(vms_open(dir.c_str(), "pool_size=1M,create=false", &db), VMS_OK) << lastError();
    vms_tree* d = nullptr;
    vms_tree* n = nullptr;
    ASSERT_EQ(vms_tree_open(db, "", 0, &d), VMS_OK);
    ASSERT_EQ(vms_tree_open(db, "named", 0, &n), VMS_OK);
    for (auto& [k, v] : model_default) {
      std::string got;
      ASSERT_EQ(cget(d, k, &got), VMS_OK) << show(k);
      ASSERT_EQ(got, v) << show(k);
    }
    EXPECT_EQ(diffKV(cscan(d), toKV(model_default)), "");
    EXPECT_EQ(diffKV(cscan(n), toKV(model_named)), "");
    ASSERT_EQ(vms_close(db), VMS_OK) << lastError();
  }
}

TEST(CApiLimits, MaxSizeGivesEnospcAndKeepsEarlierData) {
  std::string dir = freshDir();
  vms_db* db = nullptr;
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=1M,max_size=2M", &db), VMS_OK) << lastError();
  vms_tree* t = nullptr;
  ASSERT_EQ(vms_tree_open(db, "", 1, &t), VMS_OK);
  std::vector<std::string> written;
  int rc = VMS_OK;
  for (int i = 0; i < 5000; ++i) {  // 5000 * 3000 bytes = 15 MB, far beyond 2 MiB
    std::string k = numKey("k", i);
    rc = cput(t, k, fillFor(k, 1, 3000));
    if (rc != VMS_OK) break;
    written.push_back(k);
  }
  EXPECT_EQ(rc, VMS_ENOSPC) << vms_strerror(rc) << ": " << lastError();
  EXPECT_GT(written.size(), 10u);
  EXPECT_LT(written.size() * 3000, 4u << 20) << "max_size=2M was not enforced";
  // Everything written before is still there; reads still work.
  for (const std::string& k : written) {
    std::string got;
    ASSERT_EQ(cget(t, k, &got), VMS_OK) << k;
    ASSERT_EQ(got, fillFor(k, 1, 3000)) << k;
  }
  // Deleting makes room again.
  for (size_t i = 0; i < written.size() / 2; ++i) ASSERT_EQ(cdel(t, written[i]), VMS_OK);
  EXPECT_EQ(cput(t, "after-delete", "fits"), VMS_OK) << lastError();
  EXPECT_EQ(vms_close(db), VMS_OK) << lastError();
}

}  // namespace
