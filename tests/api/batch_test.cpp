// Batches (vms_batch_*, vms_write; vmstore::WriteBatch, Database::write): bad input at
// every call, all-or-nothing application, undo on a storage error, atomicity across a
// crash, trees of another database, batches of several threads over the same keys.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
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
  // An empty batch: nothing applied or logged, commit point 0.
  vmstore::WriteBatch empty;
  uint64_t commit = 99;
  VMS_EXPECT_OK(db->writeNoWait(empty, &commit));
  EXPECT_EQ(commit, 0u);
  VMS_EXPECT_OK(db->write(empty));
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

// A batch reused after clear() holds only what was added since: the operations it keeps
// for their memory are never applied, logged or seen through ops(); a copy is the same.
TEST(CppBatch, AReusedBatchAppliesOnlyWhatWasAddedSinceClear) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=1M,durability=sync");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  vmstore::WriteBatch b;
  for (int i = 0; i < 5; i++) VMS_ASSERT_OK(b.put(t, "old" + std::to_string(i), std::string(100, 'o')));
  b.clear();
  EXPECT_EQ(b.count(), 0u);
  EXPECT_TRUE(b.ops().empty());
  VMS_ASSERT_OK(b.put(t, "new", "n"));
  VMS_ASSERT_OK(b.del(t, "absent"));
  ASSERT_EQ(b.count(), 2u);
  ASSERT_EQ(b.ops().size(), 2u);
  EXPECT_EQ(b.ops()[0].key, "new");
  EXPECT_TRUE(b.ops()[1].value.empty()) << "a delete reusing a put's slot has no value";
  vmstore::WriteBatch copy = b;
  EXPECT_EQ(copy.count(), 2u);
  VMS_ASSERT_OK(db->write(copy));
  // Reused again, for a smaller batch.
  b.clear();
  VMS_ASSERT_OK(b.put(t, "again", "a"));
  VMS_ASSERT_OK(db->write(b));
  std::string v;
  for (int i = 0; i < 5; i++) EXPECT_TRUE(t->get("old" + std::to_string(i), &v).isNotFound()) << i;
  VMS_EXPECT_OK(t->get("new", &v));
  VMS_EXPECT_OK(t->get("again", &v));
  VMS_ASSERT_OK(db->close());
  // The log holds the same: a process killed after such writes recovers only them.
  std::string out = runAndKill([&](int fd) {
    std::unique_ptr<vmstore::Database> child;
    if (!vmstore::Database::open(dir, "pool_size=1M,durability=sync", &child).ok()) return report(fd, 'O');
    vmstore::Tree* ct;
    if (!child->openTree("", false, &ct).ok()) return report(fd, 'T');
    vmstore::WriteBatch cb;
    for (int i = 0; i < 5; i++) (void)cb.put(ct, "stale" + std::to_string(i), std::string(100, 's'));
    cb.clear();
    (void)cb.put(ct, "logged", "l");
    if (!child->write(cb).ok()) return report(fd, 'W');
    report(fd, 'w');
    (void)child.release();  // killed with it open: recovery replays the log
  });
  ASSERT_EQ(out, "w");
  db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  VMS_ASSERT_OK(db->openTree("", false, &t));
  for (int i = 0; i < 5; i++) EXPECT_TRUE(t->get("stale" + std::to_string(i), &v).isNotFound()) << i;
  VMS_EXPECT_OK(t->get("logged", &v));
  EXPECT_EQ(scanForward(t).size(), 3u);
  VMS_EXPECT_OK(db->close());
}

// A batch takes the locks of all its keys before it applies any of them: while an
// update of one of its keys runs its function (holding that key's lock), none of the
// batch's other keys is written either.
TEST(CppBatch, ABatchWaitsForTheLocksOfAllItsKeysBeforeApplyingAny) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=4M,durability=async");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  VMS_ASSERT_OK(t->put("held", "0"));
  std::atomic<bool> inFn{false};
  std::atomic<bool> letGo{false};
  std::thread updater([&] {
    VMS_EXPECT_OK(t->update("held", [&](std::optional<std::string_view>) {
      inFn = true;
      while (!letGo) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return vmstore::Change::put("updated");
    }));
  });
  while (!inFn) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::atomic<bool> written{false};
  std::thread batcher([&] {
    vmstore::WriteBatch b;
    VMS_EXPECT_OK(b.put(t, "first", "batch"));  // applied before "held" if nothing waited
    VMS_EXPECT_OK(b.put(t, "held", "batch"));
    VMS_EXPECT_OK(db->write(b));
    written = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string v;
  EXPECT_TRUE(t->get("first", &v).isNotFound()) << "the batch applied a key while another of its keys was locked";
  EXPECT_FALSE(written.load());
  letGo = true;
  updater.join();
  batcher.join();
  VMS_EXPECT_OK(t->get("first", &v));
  EXPECT_EQ(v, "batch");
  VMS_EXPECT_OK(t->get("held", &v));
  EXPECT_EQ(v, "batch");  // the update came first, the batch after it
  VMS_EXPECT_OK(db->close());
}

// Batches of several threads over the same keys, beside single puts and updates of
// them: each batch writes one stamp to both keys (in either order) of three of kPairs
// pairs (a..i and b..i), so the two keys of a pair are equal whenever no batch is half applied or
// logged out of the order applied. Checked in memory, then after SIGKILL and the log's
// replay (durability async: the log keeps every acknowledged write), over several kills.
TEST(CppBatch, ConcurrentBatchesOnSharedKeysStayWholeInMemoryAndAfterAKill) {
  constexpr int kPairs = 8;
  constexpr int kThreads = 3;
  auto pairKey = [](char side, int i) { return std::string(1, side) + numKey("", i, 3); };
  auto run = [&](vmstore::Database* db, vmstore::Tree* t, int thread, int batches, std::atomic<bool>* stop) {
    std::mt19937 rng(1234 + thread);
    vmstore::WriteBatch b;
    for (int n = 0; (batches < 0 || n < batches) && !(stop && stop->load()); n++) {
      b.clear();
      // Large enough that the pairs' keys sit in leaves of their own (a batch's puts
      // then run beside another's instead of waiting for one leaf's latch).
      std::string stamp = std::to_string(thread) + "." + std::to_string(n) + std::string(1200 + rng() % 40, 's');
      for (int j = 0; j < 3; j++) {
        int i = static_cast<int>(rng() % kPairs);
        char first = rng() % 2 ? 'a' : 'b';  // in either order, so batches cross each other
        if (!b.put(t, pairKey(first, i), stamp).ok() || !b.put(t, pairKey('a' + 'b' - first, i), stamp).ok()) {
          return false;
        }
      }
      if (!db->write(b).ok()) return false;
      // Writes of other keys in the same leaves, some of them read-modify-writes.
      std::string other = "c" + std::to_string(rng() % 50);
      if (n % 2 == 0 && !t->put(other, stamp).ok()) return false;
      if (n % 2 == 1 && !t->update(other, [](std::optional<std::string_view> cur) {
                           return vmstore::Change::put(std::string(cur.value_or("")).substr(0, 30) + "+");
                         }).ok()) {
        return false;
      }
    }
    return true;
  };
  auto checkPairs = [&](vmstore::Tree* t, const std::string& when) {
    for (int i = 0; i < kPairs; i++) {
      std::string a, b;
      Status sa = t->get(pairKey('a', i), &a);
      Status sb = t->get(pairKey('b', i), &b);
      ASSERT_EQ(sa.code(), sb.code()) << when << ": pair " << i;
      EXPECT_EQ(a, b) << when << ": pair " << i << " was split between two batches";
    }
  };
  std::string dir = freshDir();
  {  // in memory, then after a clean close
    auto db = openDb(dir, "pool_size=4M,durability=async");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    std::vector<std::thread> threads;
    std::atomic<int> failed{0};
    for (int th = 0; th < kThreads; th++) {
      threads.emplace_back([&, th] {
        if (!run(db.get(), t, th, scaled(3000, 300), nullptr)) failed++;
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_EQ(failed.load(), 0);
    checkPairs(t, "in memory");
    VMS_ASSERT_OK(db->close());
  }
  for (int cycle = 0; cycle < scaled(4, 2); cycle++) {
    pid_t pid = fork();
    if (pid == 0) {
      std::unique_ptr<vmstore::Database> db;
      vmstore::Options o;
      o.pool_size = 4 << 20;
      o.durability = vmstore::Durability::kAsync;
      if (!vmstore::Database::open(dir, o, &db).ok()) _exit(3);
      vmstore::Tree* t;
      if (!db->openTree("", true, &t).ok()) _exit(4);
      std::vector<std::thread> threads;
      for (int th = 0; th < kThreads; th++) {
        threads.emplace_back([&, th] {
          if (!run(db.get(), t, 10 * (cycle + 1) + th, -1, nullptr)) _exit(5);
        });
      }
      for (auto& th : threads) th.join();
      _exit(6);
    }
    usleep(30000 + 20000 * cycle);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited " << WEXITSTATUS(status);
    auto db = openDb(dir, "pool_size=4M,durability=async");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    checkPairs(t, "after kill " + std::to_string(cycle));
    VMS_ASSERT_OK(db->close());
  }
}

}  // namespace
