// Early lock release (vms_write_nowait / vms_wait_durable; Database::writeNoWait /
// waitDurable): bad input, what is visible and durable before and after the wait in each
// durability mode, power cuts through the fault layer, a failed flush, and many tasks
// sharing flushes.
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "../e2e/test_util.hpp"
#include "os/fault_io.hpp"
#include "task/scheduler.hpp"
#include "vmstore.h"
#include "vmstore/tasks.hpp"

namespace {

using namespace vmstest;
using vmstore::internal::FaultIo;

TEST(CApiWriteNoWait, BadInputIsRefused) {
  std::string dir = freshDir();
  vms_db* db;
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=1M", &db), VMS_OK);
  vms_tree* t;
  ASSERT_EQ(vms_tree_open(db, "", 1, &t), VMS_OK);
  vms_batch* b;
  ASSERT_EQ(vms_batch_new(&b), VMS_OK);
  ASSERT_EQ(vms_batch_put(b, t, "k", 1, "v", 1), VMS_OK);
  uint64_t commit = 0;
  EXPECT_EQ(vms_write_nowait(nullptr, b, &commit), VMS_EINVAL);
  EXPECT_EQ(vms_write_nowait(db, nullptr, &commit), VMS_EINVAL);
  EXPECT_EQ(vms_write_nowait(db, b, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_wait_durable(nullptr, 1), VMS_EINVAL);
  // Nothing refused was written.
  char buf[8];
  size_t len;
  EXPECT_EQ(vms_get(t, "k", 1, buf, sizeof buf, &len), VMS_NOTFOUND);
  EXPECT_EQ(vms_wait_durable(db, 0), VMS_OK);
  ASSERT_EQ(vms_write_nowait(db, b, &commit), VMS_OK);
  EXPECT_GT(commit, 0u);
  EXPECT_EQ(vms_get(t, "k", 1, buf, sizeof buf, &len), VMS_OK);
  EXPECT_EQ(vms_wait_durable(db, commit + 1000000), VMS_EINVAL);
  EXPECT_NE(std::string(vms_last_error()).find("not returned by this database"), std::string::npos);
  EXPECT_EQ(vms_wait_durable(db, commit), VMS_OK);
  EXPECT_EQ(vms_wait_durable(db, commit), VMS_OK);  // again: nothing to do
  vms_batch_free(b);
  EXPECT_EQ(vms_close(db), VMS_OK);
}

TEST(WriteNoWait, ClosedDatabaseAndNullCommitAreInvalid) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  ASSERT_TRUE(db->openTree("", true, &t).ok());
  vmstore::WriteBatch b;
  ASSERT_TRUE(b.put(t, "k", "v").ok());
  EXPECT_EQ(db->writeNoWait(b, nullptr).code(), Status::Code::kInvalidArgument);
  uint64_t commit = 0;
  ASSERT_TRUE(db->writeNoWait(b, &commit).ok());
  ASSERT_TRUE(db->close().ok());
  EXPECT_EQ(db->waitDurable(commit).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(db->writeNoWait(b, &commit).code(), Status::Code::kInvalidArgument);
}

// With durability none nothing is logged: commit points are 0; async: a position, and
// the wait returns at once. Neither flushes the log.
TEST(WriteNoWait, NoneAndAsyncDoNotFlush) {
  for (std::string mode : {"none", "async"}) {
    SCOPED_TRACE(mode);
    std::string dir = freshDir(mode);
    auto db = openDb(dir, "pool_size=1M,sync_interval=60000,durability=" + mode);
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    ASSERT_TRUE(db->openTree("", true, &t).ok());
    vmstore::WriteBatch b;
    ASSERT_TRUE(b.put(t, "k", "v").ok());
    uint64_t flushes = db->stats().log_flushes;
    uint64_t commit = 1;
    ASSERT_TRUE(db->writeNoWait(b, &commit).ok());
    if (mode == "none") {
      EXPECT_EQ(commit, 0u);
    } else {
      EXPECT_GT(commit, 0u);
    }
    EXPECT_TRUE(db->waitDurable(commit).ok());
    EXPECT_EQ(db->stats().log_flushes, flushes);
    std::string v;
    EXPECT_TRUE(t->get("k", &v).ok());
    ASSERT_TRUE(db->close().ok());
  }
}

struct PowerCutDb {
  FaultIo faults;
  vmstore::internal::Io* prev = nullptr;
  std::unique_ptr<vmstore::Database> db;
  vmstore::Tree* t = nullptr;
  explicit PowerCutDb(const std::string& dir) {
    faults.trackUnsynced();
    prev = vmstore::internal::setIo(&faults);
    db = openDb(dir, "pool_size=1M,durability=sync");
    if (db && !db->openTree("t", true, &t).ok()) db.reset();
  }
  Status write(std::string_view key, bool wait, uint64_t* commit = nullptr) {
    vmstore::WriteBatch b;
    Status s = b.put(t, key, std::string(key) + "-value");
    if (s.ok()) s = b.put(t, std::string(key) + "-twin", "x");  // a batch of two keys
    if (!s.ok()) return s;
    if (wait) return db->write(b);
    return db->writeNoWait(b, commit);
  }
  void cut() {
    faults.powerCut(7, false);
    db.reset();
    vmstore::internal::setIo(prev);
  }
  ~PowerCutDb() {
    if (db) cut();
  }
};

// The keys of tree t after reopening dir with the real file system.
std::vector<std::string> keysAfterPowerCut(const std::string& dir) {
  auto db = openDb(dir, "pool_size=1M,durability=none");
  std::vector<std::string> keys;
  if (!db) return {"(does not open)"};
  vmstore::Tree* t;
  if (!db->openTree("t", false, &t).ok()) return {"(no tree)"};
  for (const auto& [k, v] : scanForward(t)) keys.push_back(k);
  expectCheckOk(db.get());
  return keys;
}

TEST(WriteNoWait, SyncIsVisibleAtOnceAndDurableOnlyAfterTheWait) {
  std::string dir = freshDir();
  {
    PowerCutDb p(dir);
    ASSERT_TRUE(p.db);
    ASSERT_TRUE(p.write("a", true).ok());
    uint64_t flushes = p.db->stats().log_flushes;
    uint64_t b = 0, c = 0;
    ASSERT_TRUE(p.write("b", false, &b).ok());
    ASSERT_TRUE(p.write("c", false, &c).ok());
    EXPECT_LT(b, c);
    std::string v;
    ASSERT_TRUE(p.t->get("b", &v).ok());  // readers see it before it is durable
    EXPECT_EQ(v, "b-value");
    EXPECT_EQ(p.db->stats().log_flushes, flushes) << "writeNoWait flushed the log";
    // Waiting for c covers b (one sequence): one flush for both.
    ASSERT_TRUE(p.db->waitDurable(c).ok());
    EXPECT_EQ(p.db->stats().log_flushes, flushes + 1);
    ASSERT_TRUE(p.db->waitDurable(b).ok());
    EXPECT_EQ(p.db->stats().log_flushes, flushes + 1);
    uint64_t d = 0;
    ASSERT_TRUE(p.write("d", false, &d).ok());  // never waited for: lost with the power
    p.cut();
  }
  EXPECT_EQ(keysAfterPowerCut(dir),
            (std::vector<std::string>{"a", "a-twin", "b", "b-twin", "c", "c-twin"}));
}

TEST(WriteNoWait, FailedFlushIsReturnedByTheWait) {
  std::string dir = freshDir();
  FaultIo faults;
  vmstore::internal::Io* prev = vmstore::internal::setIo(&faults);
  {
    // No zero-fill of the log: the failing sync is the flush's.
    auto db = openDb(dir, "pool_size=1M,durability=sync,log_zero_fill=false");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    ASSERT_TRUE(db->openTree("t", true, &t).ok());
    vmstore::WriteBatch b;
    ASSERT_TRUE(b.put(t, "k", "v").ok());
    uint64_t commit = 0;
    ASSERT_TRUE(db->writeNoWait(b, &commit).ok());
    faults.fail({FaultIo::Op::kSync, "log-", 0, 1, EIO});
    Status s = db->waitDurable(commit);
    EXPECT_EQ(s.code(), Status::Code::kIOError) << s.toString();
    EXPECT_EQ(db->waitDurable(commit).code(), Status::Code::kIOError);  // never retried as if fine
    EXPECT_EQ(db->write(b).code(), Status::Code::kIOError);             // read-only now
    db->close();
  }
  vmstore::internal::setIo(prev);
}

// Tasks that release their own lock before waiting: the next task's batch joins the
// flush of the one before it, so one flush carries many batches.
TEST(WriteNoWait, TasksReleasingTheirLockEarlyShareFlushes) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=4M,durability=sync");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  ASSERT_TRUE(db->openTree("t", true, &t).ok());
  const int kTasks = 32;
  const int kEach = scaled(40, 10);
  std::atomic<int> failures{0};
  uint64_t flushes = db->stats().log_flushes;
  {
    std::unique_ptr<vmstore::TaskPool> pool;
    ASSERT_TRUE(vmstore::TaskPool::create(1, kTasks, &pool).ok());
    for (int task = 0; task < kTasks; task++) {
      pool->submit([&, task] {
        for (int i = 0; i < kEach; i++) {
          vmstore::WriteBatch b;
          std::string key = numKey("k", static_cast<uint64_t>(task * kEach + i));
          uint64_t commit = 0;
          if (!b.put(t, key, key).ok() || !db->writeNoWait(b, &commit).ok() || !db->waitDurable(commit).ok()) {
            failures++;
          }
        }
      });
    }
    ASSERT_TRUE(pool->wait().ok());
  }
  EXPECT_EQ(failures.load(), 0);
  uint64_t used = db->stats().log_flushes - flushes;
  EXPECT_GT(used, 0u);
  EXPECT_LT(used, static_cast<uint64_t>(kTasks * kEach) / 4) << "batches did not share flushes";
  ASSERT_TRUE(db->close().ok());
}

// Group commit in task mode (commit_delay): a thread's tasks that commit in one round
// share one flush, the committer waiting until the last of them finds nothing else to
// run; a task alone on its thread never waits for the delay.
TEST(WriteNoWait, TasksOfOneRoundShareOneFlushAndALoneTaskIsNotDelayed) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=4M,durability=sync,commit_delay=100000");  // 100 ms
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  ASSERT_TRUE(db->openTree("t", true, &t).ok());
  std::atomic<int> failures{0};
  auto putAndWait = [&](const std::string& key) {
    vmstore::WriteBatch b;
    uint64_t commit = 0;
    if (!b.put(t, key, key).ok() || !db->writeNoWait(b, &commit).ok() || !db->waitDurable(commit).ok()) failures++;
  };
  const int kTasks = 8;
  uint64_t flushes = db->stats().log_flushes;
  {
    std::unique_ptr<vmstore::TaskPool> pool;
    ASSERT_TRUE(vmstore::TaskPool::create(1, kTasks, &pool).ok());
    std::atomic<int> started{0};
    for (int task = 0; task < kTasks; task++) {
      pool->submit([&, task] {
        // All of them ready before any commits: each but the last leaves others to run.
        started++;
        while (started.load() < kTasks) vmstore::internal::task::Scheduler::current()->yield();
        putAndWait(numKey("round", static_cast<uint64_t>(task)));
      });
    }
    ASSERT_TRUE(pool->wait().ok());
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(db->stats().log_flushes - flushes, 1u) << "one round of commits, one flush";

  const int kCommits = 10;  // at 100 ms each if the delay applied: 1 s
  flushes = db->stats().log_flushes;
  auto begin = std::chrono::steady_clock::now();
  {
    std::unique_ptr<vmstore::TaskPool> pool;
    ASSERT_TRUE(vmstore::TaskPool::create(1, 1, &pool).ok());
    pool->submit([&] {
      for (int i = 0; i < kCommits; i++) putAndWait(numKey("lone", static_cast<uint64_t>(i)));
    });
    ASSERT_TRUE(pool->wait().ok());
  }
  auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(db->stats().log_flushes - flushes, static_cast<uint64_t>(kCommits));
  EXPECT_LT(took, std::chrono::milliseconds(500)) << "a lone task waited for the commit delay";
  ASSERT_TRUE(db->close().ok());
  db = openDb(dir, "pool_size=4M");
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->openTree("t", false, &t).ok());
  std::string v;
  for (int i = 0; i < kTasks; i++) {
    std::string key = numKey("round", static_cast<uint64_t>(i));
    EXPECT_TRUE(t->get(key, &v).ok() && v == key) << key;
  }
  for (int i = 0; i < kCommits; i++) {
    std::string key = numKey("lone", static_cast<uint64_t>(i));
    EXPECT_TRUE(t->get(key, &v).ok() && v == key) << key;
  }
}

}  // namespace
