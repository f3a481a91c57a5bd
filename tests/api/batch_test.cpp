// Batches (vms_batch_*, vms_write; vmstore::WriteBatch, Database::write): bad input at
// every call, all-or-nothing application, undo on a storage error, atomicity across a
// crash, trees of another database.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "../e2e/test_util.hpp"
#include "os/fault_io.hpp"
#include "vmstore.h"

namespace {

using namespace vmstest;

std::string get(vms_tree* t, const std::string& k, int* rc) {
  char buf[4096];
  size_t len = 0;
  *rc = vms_get(t, k.data(), k.size(), buf, sizeof buf, &len);
  return *rc == VMS_OK ? std::string(buf, len) : std::string();
}

TEST(CApiBatch, BadInputIsRefusedAndChangesNothing) {
  std::string dir = freshDir();
  vms_db* db;
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=1M", &db), VMS_OK);
  vms_tree* t;
  ASSERT_EQ(vms_tree_open(db, "", 1, &t), VMS_OK);
  EXPECT_EQ(vms_batch_new(nullptr), VMS_EINVAL);
  vms_batch* b;
  ASSERT_EQ(vms_batch_new(&b), VMS_OK);
  std::string big(VMS_MAX_KEY_SIZE + 1, 'k');
  vmsunit::ZeroBuffer bigVal(VMS_MAX_VALUE_SIZE + 1);
  EXPECT_EQ(vms_batch_put(nullptr, t, "k", 1, "v", 1), VMS_EINVAL);
  EXPECT_EQ(vms_batch_put(b, nullptr, "k", 1, "v", 1), VMS_EINVAL);
  EXPECT_EQ(vms_batch_put(b, t, nullptr, 1, "v", 1), VMS_EINVAL);
  EXPECT_EQ(vms_batch_put(b, t, "k", 1, nullptr, 1), VMS_EINVAL);
  EXPECT_EQ(vms_batch_put(b, t, "", 0, "v", 1), VMS_EINVAL);
  EXPECT_EQ(vms_batch_put(b, t, big.data(), big.size(), "v", 1), VMS_ETOOBIG);
  EXPECT_EQ(vms_batch_put(b, t, "k", 1, bigVal.data(), bigVal.size()), VMS_ETOOBIG);
  EXPECT_EQ(vms_batch_delete(nullptr, t, "k", 1), VMS_EINVAL);
  EXPECT_EQ(vms_batch_delete(b, nullptr, "k", 1), VMS_EINVAL);
  EXPECT_EQ(vms_batch_delete(b, t, nullptr, 1), VMS_EINVAL);
  EXPECT_EQ(vms_batch_delete(b, t, "", 0), VMS_EINVAL);
  EXPECT_EQ(vms_batch_delete(b, t, big.data(), big.size()), VMS_ETOOBIG);
  EXPECT_EQ(vms_batch_clear(nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_write(nullptr, b), VMS_EINVAL);
  EXPECT_EQ(vms_write(db, nullptr), VMS_EINVAL);
  vms_batch_free(nullptr);  // harmless
  // Nothing refused was added: the batch is empty, and writing it changes nothing.
  EXPECT_EQ(vms_write(db, b), VMS_OK);
  vms_iter* it;
  ASSERT_EQ(vms_iter_open(t, nullptr, 0, &it), VMS_OK);
  const void *k, *v;
  size_t kl, vl;
  EXPECT_EQ(vms_iter_next(it, &k, &kl, &v, &vl), VMS_NOTFOUND);
  vms_iter_close(it);
  vms_batch_free(b);
  EXPECT_EQ(vms_close(db), VMS_OK);
}

TEST(CApiBatch, AppliesInOrderAcrossTreesAndClears) {
  std::string dir = freshDir();
  vms_db* db;
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=1M", &db), VMS_OK);
  vms_tree *a, *c;
  ASSERT_EQ(vms_tree_open(db, "a", 1, &a), VMS_OK);
  ASSERT_EQ(vms_tree_open(db, "c", 1, &c), VMS_OK);
  ASSERT_EQ(vms_put(a, "gone", 4, "x", 1), VMS_OK);
  vms_batch* b;
  ASSERT_EQ(vms_batch_new(&b), VMS_OK);
  ASSERT_EQ(vms_batch_put(b, a, "k", 1, "1", 1), VMS_OK);
  ASSERT_EQ(vms_batch_put(b, a, "k", 1, "2", 1), VMS_OK);  // later wins
  ASSERT_EQ(vms_batch_put(b, c, "k", 1, "c", 1), VMS_OK);
  ASSERT_EQ(vms_batch_delete(b, a, "gone", 4), VMS_OK);
  ASSERT_EQ(vms_batch_delete(b, a, "absent", 6), VMS_OK);  // not an error
  ASSERT_EQ(vms_write(db, b), VMS_OK);
  int rc;
  EXPECT_EQ(get(a, "k", &rc), "2");
  EXPECT_EQ(get(c, "k", &rc), "c");
  get(a, "gone", &rc);
  EXPECT_EQ(rc, VMS_NOTFOUND);
  ASSERT_EQ(vms_batch_clear(b), VMS_OK);
  ASSERT_EQ(vms_batch_put(b, a, "k", 1, "3", 1), VMS_OK);
  ASSERT_EQ(vms_write(db, b), VMS_OK);
  EXPECT_EQ(get(a, "k", &rc), "3");
  ASSERT_EQ(vms_close(db), VMS_OK);
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=1M", &db), VMS_OK);
  ASSERT_EQ(vms_tree_open(db, "c", 0, &c), VMS_OK);
  EXPECT_EQ(get(c, "k", &rc), "c");
  vms_batch_free(b);
  EXPECT_EQ(vms_close(db), VMS_OK);
}

TEST(CApiBatch, TreeOfAnotherDatabaseWritesNothing) {
  std::string dir1 = freshDir("1");
  std::string dir2 = freshDir("2");
  vms_db *db1, *db2;
  ASSERT_EQ(vms_open(dir1.c_str(), "pool_size=1M", &db1), VMS_OK);
  ASSERT_EQ(vms_open(dir2.c_str(), "pool_size=1M", &db2), VMS_OK);
  vms_tree *t1, *t2;
  ASSERT_EQ(vms_tree_open(db1, "", 1, &t1), VMS_OK);
  ASSERT_EQ(vms_tree_open(db2, "", 1, &t2), VMS_OK);
  vms_batch* b;
  ASSERT_EQ(vms_batch_new(&b), VMS_OK);
  ASSERT_EQ(vms_batch_put(b, t1, "k", 1, "1", 1), VMS_OK);
  ASSERT_EQ(vms_batch_put(b, t2, "k", 1, "2", 1), VMS_OK);
  EXPECT_EQ(vms_write(db1, b), VMS_EINVAL);
  EXPECT_NE(std::string(vms_last_error()).find("another database"), std::string::npos);
  int rc;
  get(t1, "k", &rc);
  EXPECT_EQ(rc, VMS_NOTFOUND);
  get(t2, "k", &rc);
  EXPECT_EQ(rc, VMS_NOTFOUND);
  vms_batch_free(b);
  EXPECT_EQ(vms_close(db1), VMS_OK);
  EXPECT_EQ(vms_close(db2), VMS_OK);
}

TEST(CApiBatch, StorageErrorPartWayUndoesTheBatch) {
  FaultScope scope;
  vmstore::internal::FaultIo& faults = scope.io();
  std::string dir = freshDir();
  vms_db* db;
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=1M", &db), VMS_OK);
  vms_tree* t;
  ASSERT_EQ(vms_tree_open(db, "", 1, &t), VMS_OK);
  const int n = scaled(6000, 3000);
  for (int i = 0; i < n; i++) {
    std::string k = numKey("k", i, 8);
    ASSERT_EQ(vms_put(t, k.data(), k.size(), "old", 3), VMS_OK);
  }
  ASSERT_EQ(vms_sync(db), VMS_OK);
  vms_tree* filler;  // push the tree out of the pool, so the batch must read it
  ASSERT_EQ(vms_tree_open(db, "filler", 1, &filler), VMS_OK);
  for (int i = 0; i < 12000; i++) {  // 2.4 MB of filler through a 1 MiB pool
    std::string k = numKey("f", i, 8);
    ASSERT_EQ(vms_put(filler, k.data(), k.size(), std::string(200, 'f').data(), 200), VMS_OK);
  }
  vms_batch* b;
  ASSERT_EQ(vms_batch_new(&b), VMS_OK);
  for (int i = 0; i < n; i += 7) {
    std::string k = numKey("k", i, 8);
    ASSERT_EQ((i % 2) ? vms_batch_delete(b, t, k.data(), k.size()) : vms_batch_put(b, t, k.data(), k.size(), "new", 3),
              VMS_OK);
  }
  uint64_t readsBefore = faults.calls(vmstore::internal::FaultIo::Op::kRead);
  faults.fail({vmstore::internal::FaultIo::Op::kRead, "", 2, -1, EIO});  // two reads succeed first
  EXPECT_EQ(vms_write(db, b), VMS_EIO);
  EXPECT_GT(faults.calls(vmstore::internal::FaultIo::Op::kRead) - readsBefore, 2u)
      << "the batch failed before its third read: the test proves less than it says";
  faults.clearRules();
  int wrong = 0;
  for (int i = 0; i < n; i++) {
    std::string k = numKey("k", i, 8);
    int rc;
    if (get(t, k, &rc) != "old") wrong++;
  }
  EXPECT_EQ(wrong, 0) << "keys changed by a batch that failed";
  EXPECT_EQ(vms_write(db, b), VMS_OK);  // the same batch, now without faults
  vms_batch_free(b);
  EXPECT_EQ(vms_close(db), VMS_OK);
}

TEST(CApiBatch, KilledProcessLeavesEachBatchWholeOrAbsent) {
  // Batches of 200 keys, each batch stamping all its keys with one version; syncs now
  // and then. After SIGKILL every batch is whole or absent: all keys carry one version.
  std::string dir = freshDir();
  const int keys = 200;
  for (int cycle = 0; cycle < scaled(6, 3); cycle++) {
    pid_t pid = fork();
    if (pid == 0) {
      vms_db* db;
      if (vms_open(dir.c_str(), "pool_size=1M", &db) != VMS_OK) _exit(3);
      vms_tree* t;
      if (vms_tree_open(db, "", 1, &t) != VMS_OK) _exit(4);
      vms_batch* b;
      vms_batch_new(&b);
      for (int version = 0;; version++) {
        vms_batch_clear(b);
        std::string v = "v" + std::to_string(cycle) + "." + std::to_string(version);
        for (int i = 0; i < keys; i++) {
          std::string k = numKey("k", i, 4);
          vms_batch_put(b, t, k.data(), k.size(), v.data(), v.size());
        }
        if (vms_write(db, b) != VMS_OK) _exit(5);
        if (version % 3 == 0 && vms_sync(db) != VMS_OK) _exit(6);
      }
    }
    usleep(20000 + 15000 * cycle);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited " << WEXITSTATUS(status);
    vms_db* db;
    ASSERT_EQ(vms_open(dir.c_str(), "pool_size=1M", &db), VMS_OK) << vms_last_error();
    vms_tree* t;
    if (vms_tree_open(db, "", 0, &t) == VMS_OK) {
      std::set<std::string> versions;
      size_t count = 0;
      vms_iter* it;
      ASSERT_EQ(vms_iter_open(t, nullptr, 0, &it), VMS_OK);
      const void *k, *v;
      size_t kl, vl;
      while (vms_iter_next(it, &k, &kl, &v, &vl) == VMS_OK) {
        versions.insert(std::string(static_cast<const char*>(v), vl));
        count++;
      }
      vms_iter_close(it);
      EXPECT_TRUE(count == 0 || count == static_cast<size_t>(keys)) << "cycle " << cycle << ": " << count << " keys";
      EXPECT_LE(versions.size(), 1u) << "cycle " << cycle << ": a batch was split";
    }
    ASSERT_EQ(vms_close(db), VMS_OK);
  }
}

TEST(CppBatch, WriteBatchChecksWhenAdding) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  vmstore::WriteBatch b;
  EXPECT_EQ(b.put(nullptr, "k", "v").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(b.put(t, "", "v").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(b.put(t, std::string(vmstore::kMaxKeySize + 1, 'k'), "v").code(), Status::Code::kTooBig);
  EXPECT_EQ(b.del(t, "").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(b.count(), 0u);
  VMS_EXPECT_OK(b.put(t, "a", "1"));
  VMS_EXPECT_OK(b.del(t, "b"));
  EXPECT_EQ(b.count(), 2u);
  VMS_EXPECT_OK(db->write(b));
  std::string v;
  VMS_EXPECT_OK(t->get("a", &v));
  EXPECT_EQ(v, "1");
  // A dropped tree: NotFound, and nothing of the batch stays.
  vmstore::Tree* gone;
  VMS_ASSERT_OK(db->openTree("gone", true, &gone));
  VMS_ASSERT_OK(db->dropTree("gone"));
  b.clear();
  VMS_EXPECT_OK(b.put(t, "x", "1"));
  VMS_EXPECT_OK(b.put(gone, "y", "1"));
  EXPECT_EQ(db->write(b).code(), Status::Code::kNotFound);
  EXPECT_TRUE(t->get("x", &v).isNotFound());
  VMS_EXPECT_OK(db->close());
}

}  // namespace
