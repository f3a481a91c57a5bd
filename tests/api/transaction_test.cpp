// Transactions (vms_txn_*; vmstore::Transaction): bad input at every call, writes in
// place that commit together or are undone by abort, reads of a transaction's own
// writes, reuse, the calls that refuse on a thread holding one, two transactions waiting
// for each other (one gets Busy), no lost update and no half transfer under concurrency,
// a storage error part-way, and atomicity across a killed process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../e2e/test_util.hpp"
#include "os/fault_io.hpp"
#include "sync/key_locks.hpp"
#include "task/scheduler.hpp"
#include "vmstore.h"
#include "vmstore/vmstore.hpp"

namespace {

using namespace vmstest;
using vmstore::Change;
using vmstore::Status;
using vmstore::Transaction;

std::string cget(vms_tree* t, const std::string& k, int* rc) {
  char buf[4096];
  size_t len = 0;
  *rc = vms_get(t, k.data(), k.size(), buf, sizeof buf, &len);
  return *rc == VMS_OK ? std::string(buf, len) : std::string();
}

int appendX(void*, const void* val, size_t vlen, const void** newval, size_t* newlen) {
  static thread_local std::string next;
  next.assign(static_cast<const char*>(val), val ? vlen : 0);
  next += "x";
  *newval = next.data();
  *newlen = next.size();
  return VMS_UPDATE_PUT;
}

TEST(CApiTransaction, BadInputIsRefusedAndChangesNothing) {
  CDb a;
  CDb other;
  EXPECT_EQ(vms_txn_new(a.db, nullptr), VMS_EINVAL);
  vms_txn* txn = reinterpret_cast<vms_txn*>(1);
  EXPECT_EQ(vms_txn_new(nullptr, &txn), VMS_EINVAL);
  EXPECT_EQ(txn, nullptr);
  ASSERT_EQ(vms_txn_new(a.db, &txn), VMS_OK);
  std::string big(VMS_MAX_KEY_SIZE + 1, 'k');
  vmsunit::ZeroBuffer bigVal(VMS_MAX_VALUE_SIZE + 1);
  char buf[16];
  size_t vlen = 0;
  uint64_t commit = 0;
  EXPECT_EQ(vms_txn_put(nullptr, a.t, "k", 1, "v", 1), VMS_EINVAL);
  EXPECT_EQ(vms_txn_put(txn, nullptr, "k", 1, "v", 1), VMS_EINVAL);
  EXPECT_EQ(vms_txn_put(txn, a.t, nullptr, 1, "v", 1), VMS_EINVAL);
  EXPECT_EQ(vms_txn_put(txn, a.t, "k", 1, nullptr, 1), VMS_EINVAL);
  EXPECT_EQ(vms_txn_put(txn, a.t, "", 0, "v", 1), VMS_EINVAL);
  EXPECT_EQ(vms_txn_put(txn, a.t, big.data(), big.size(), "v", 1), VMS_ETOOBIG);
  EXPECT_EQ(vms_txn_put(txn, a.t, "k", 1, bigVal.data(), bigVal.size()), VMS_ETOOBIG);
  EXPECT_EQ(vms_txn_put(txn, other.t, "k", 1, "v", 1), VMS_EINVAL);  // another database's tree
  EXPECT_EQ(vms_txn_delete(nullptr, a.t, "k", 1), VMS_EINVAL);
  EXPECT_EQ(vms_txn_delete(txn, nullptr, "k", 1), VMS_EINVAL);
  EXPECT_EQ(vms_txn_delete(txn, a.t, nullptr, 1), VMS_EINVAL);
  EXPECT_EQ(vms_txn_delete(txn, a.t, "", 0), VMS_EINVAL);
  EXPECT_EQ(vms_txn_delete(txn, a.t, big.data(), big.size()), VMS_ETOOBIG);
  EXPECT_EQ(vms_txn_delete(txn, other.t, "k", 1), VMS_EINVAL);
  EXPECT_EQ(vms_txn_get(nullptr, a.t, "k", 1, buf, sizeof buf, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_txn_get(txn, nullptr, "k", 1, buf, sizeof buf, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_txn_get(txn, a.t, nullptr, 1, buf, sizeof buf, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_txn_get(txn, a.t, "k", 1, nullptr, 4, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_txn_get(txn, a.t, "k", 1, buf, sizeof buf, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_txn_get(txn, a.t, "", 0, buf, sizeof buf, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_txn_get(txn, other.t, "k", 1, buf, sizeof buf, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_txn_update(nullptr, a.t, "k", 1, appendX, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_txn_update(txn, nullptr, "k", 1, appendX, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_txn_update(txn, a.t, nullptr, 1, appendX, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_txn_update(txn, a.t, "k", 1, nullptr, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_txn_update(txn, a.t, "", 0, appendX, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_txn_update(txn, other.t, "k", 1, appendX, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_txn_commit(nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_txn_commit_nowait(nullptr, &commit), VMS_EINVAL);
  EXPECT_EQ(vms_txn_commit_nowait(txn, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_txn_abort(nullptr), VMS_EINVAL);
  vms_txn_free(nullptr);  // harmless
  // An update whose function returns nonsense changes nothing.
  EXPECT_EQ(vms_txn_update(
                txn, a.t, "k", 1,
                [](void*, const void*, size_t, const void** nv, size_t* nl) {
                  *nv = nullptr;
                  *nl = 5;
                  return static_cast<int>(VMS_UPDATE_PUT);
                },
                nullptr),
            VMS_EINVAL);
  EXPECT_EQ(vms_txn_update(
                txn, a.t, "k", 1, [](void*, const void*, size_t, const void**, size_t*) { return 7; }, nullptr),
            VMS_EINVAL);
  // Nothing refused was written: the commit logs nothing, and the key is absent.
  ASSERT_EQ(vms_txn_commit_nowait(txn, &commit), VMS_OK);
  EXPECT_EQ(commit, 0u);
  int rc;
  cget(a.t, "k", &rc);
  EXPECT_EQ(rc, VMS_NOTFOUND);
  // After close: every call refuses.
  ASSERT_EQ(vms_close(a.db), VMS_OK);
  EXPECT_EQ(vms_txn_put(txn, a.t, "k", 1, "v", 1), VMS_EINVAL);
  EXPECT_EQ(vms_txn_commit(txn), VMS_OK);  // nothing open
  a.db = nullptr;
  vms_txn_free(txn);
}

TEST(CApiTransaction, CommitKeepsAndAbortPutsBackEveryKindOfWrite) {
  CDb d("pool_size=64M,durability=sync");
  ASSERT_EQ(vms_put(d.t, "a", 1, "old-a", 5), VMS_OK);
  ASSERT_EQ(vms_put(d.t, "b", 1, "old-b", 5), VMS_OK);
  ASSERT_EQ(vms_put(d.t, "c", 1, "old-c", 5), VMS_OK);
  vms_txn* txn;
  ASSERT_EQ(vms_txn_new(d.db, &txn), VMS_OK);
  for (int round = 0; round < 2; round++) {
    const bool commit = round == 1;
    ASSERT_EQ(vms_txn_put(txn, d.t, "a", 1, "new-a", 5), VMS_OK);        // same size: in place
    ASSERT_EQ(vms_txn_put(txn, d.t, "n", 1, "new", 3), VMS_OK);          // a new key
    ASSERT_EQ(vms_txn_delete(txn, d.t, "b", 1), VMS_OK);
    ASSERT_EQ(vms_txn_delete(txn, d.t, "z", 1), VMS_NOTFOUND);           // absent: nothing
    ASSERT_EQ(vms_txn_update(txn, d.t, "c", 1, appendX, nullptr), VMS_OK);  // another size
    ASSERT_EQ(vms_txn_update(txn, d.t, "c", 1, appendX, nullptr), VMS_OK);  // twice
    ASSERT_EQ(vms_txn_put(txn, d.t, "b", 1, "back", 4), VMS_OK);         // deleted, then put
    // The transaction reads its own writes; so does everyone else (no isolation).
    char buf[16];
    size_t vlen;
    ASSERT_EQ(vms_txn_get(txn, d.t, "c", 1, buf, sizeof buf, &vlen), VMS_OK);
    EXPECT_EQ(std::string(buf, vlen), "old-cxx");
    int rc;
    EXPECT_EQ(cget(d.t, "n", &rc), "new");
    // Plain writes in the thread that holds it refuse, writing nothing.
    EXPECT_EQ(vms_put(d.t, "p", 1, "plain", 5), VMS_EBUSY);
    EXPECT_EQ(vms_delete(d.t, "a", 1), VMS_EBUSY);
    EXPECT_EQ(cget(d.t, "p", &rc), "");
    EXPECT_EQ(rc, VMS_NOTFOUND);
    if (commit) {
      ASSERT_EQ(vms_txn_commit(txn), VMS_OK);
    } else {
      ASSERT_EQ(vms_txn_abort(txn), VMS_OK);
    }
    EXPECT_EQ(cget(d.t, "a", &rc), commit ? "new-a" : "old-a");
    EXPECT_EQ(cget(d.t, "b", &rc), commit ? "back" : "old-b");
    EXPECT_EQ(cget(d.t, "c", &rc), commit ? "old-cxx" : "old-c");
    cget(d.t, "n", &rc);
    EXPECT_EQ(rc, commit ? VMS_OK : VMS_NOTFOUND);
  }
  vms_txn_free(txn);
  // What was committed is what a reopened database holds.
  ASSERT_EQ(vms_close(d.db), VMS_OK);
  ASSERT_EQ(vms_open(d.dir.c_str(), "pool_size=64M", &d.db), VMS_OK);
  ASSERT_EQ(vms_tree_open(d.db, "", 0, &d.t), VMS_OK);
  int rc;
  EXPECT_EQ(cget(d.t, "c", &rc), "old-cxx");
  EXPECT_EQ(cget(d.t, "b", &rc), "back");
}

TEST(CppTransaction, CallsThatWouldWaitForItRefuseOnItsThread) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=64M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  vmstore::Tree* u;
  VMS_ASSERT_OK(db->openTree("u", true, &u));
  {
    Transaction txn(db.get());
    VMS_ASSERT_OK(txn.put(t, "k", "v"));
    EXPECT_TRUE(db->sync().code() == Status::Code::kBusy);
    EXPECT_TRUE(db->dropTree("u").code() == Status::Code::kBusy);
    EXPECT_TRUE(db->check(nullptr).code() == Status::Code::kBusy);
    EXPECT_TRUE(db->close().code() == Status::Code::kBusy);
    EXPECT_EQ(txn.count(), 1u);
    // Another thread's sync waits for the commit, then holds the transaction's write.
    std::atomic<bool> synced{false};
    std::thread syncer([&] {
      EXPECT_TRUE(db->sync().ok());
      synced = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(synced.load()) << "a checkpoint's cut fell inside an open transaction";
    VMS_ASSERT_OK(txn.commit());
    syncer.join();
    EXPECT_EQ(txn.count(), 0u);
  }  // destroyed after its commit: nothing to undo
  VMS_EXPECT_OK(db->sync());
  VMS_EXPECT_OK(db->dropTree("u"));
  std::string v;
  VMS_ASSERT_OK(t->get("k", &v));
  EXPECT_EQ(v, "v");
  {
    Transaction txn(db.get());
    VMS_ASSERT_OK(txn.put(t, "k", "w"));
  }  // destroyed open: aborted
  VMS_ASSERT_OK(t->get("k", &v));
  EXPECT_EQ(v, "v");
  VMS_EXPECT_OK(db->close());
}

// A plain write (put, delete, update, putReserve, a batch, creating a tree) in the thread
// that holds an open transaction would wait for the transaction's own key lock, or for a
// checkpoint that waits for it: it refuses (Busy) and writes nothing. Reads and opening
// an existing tree go on; other threads write (waiting for the transaction's keys); once
// the transaction ends, or moves to another thread, this thread writes again.
TEST(CppTransaction, PlainWritesRefuseInTheThreadThatHoldsIt) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=64M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  VMS_ASSERT_OK(t->put("old", "1"));
  Transaction txn(db.get());
  VMS_ASSERT_OK(txn.put(t, "k", "txn"));
  auto busy = [](const Status& st) { return st.code() == Status::Code::kBusy; };
  EXPECT_TRUE(busy(t->put("k", "plain"))) << "the transaction's own key: would wait for itself";
  EXPECT_TRUE(busy(t->put("other", "plain")));
  EXPECT_TRUE(busy(t->del("old")));
  EXPECT_TRUE(busy(t->update("old", [](std::optional<std::string_view>) { return Change::put("2"); })));
  EXPECT_TRUE(busy(t->putReserve("other", 4, [](std::span<std::byte> b) {
    std::memset(b.data(), 'x', b.size());
    return Status::OK();
  })));
  vmstore::WriteBatch batch;
  VMS_ASSERT_OK(batch.put(t, "other", "batch"));
  EXPECT_TRUE(busy(db->write(batch)));
  uint64_t commit = 0;
  EXPECT_TRUE(busy(db->writeNoWait(batch, &commit)));
  vmstore::Tree* made = nullptr;
  EXPECT_TRUE(busy(db->openTree("new", true, &made)));
  // Reads, and opening a tree that exists, go on.
  vmstore::Tree* again = nullptr;
  VMS_EXPECT_OK(db->openTree("", false, &again));
  EXPECT_EQ(again, t);
  std::string v;
  VMS_EXPECT_OK(t->get("old", &v));
  EXPECT_EQ(v, "1");
  EXPECT_TRUE(t->get("other", &v).isNotFound()) << "a refused write wrote";
  // Another thread writes; on the transaction's key it waits for the commit.
  std::thread other([&] { VMS_EXPECT_OK(t->put("other", "thread")); });
  other.join();
  std::atomic<bool> wrote{false};
  std::thread waiter([&] {
    VMS_EXPECT_OK(t->put("k", "after"));
    wrote = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(wrote.load()) << "a plain write of the transaction's key did not wait for it";
  // Moved to another thread: this one writes again, that one refuses.
  std::thread mover([&] {
    VMS_EXPECT_OK(txn.put(t, "k2", "txn"));
    EXPECT_TRUE(busy(t->put("x", "plain")));
  });
  mover.join();
  VMS_EXPECT_OK(t->put("x", "here"));
  VMS_ASSERT_OK(txn.commit());
  waiter.join();
  VMS_EXPECT_OK(t->put("old", "3"));
  VMS_EXPECT_OK(db->openTree("new", true, &made));
  VMS_ASSERT_OK(t->get("k", &v));
  EXPECT_EQ(v, "after");
  VMS_ASSERT_OK(t->get("k2", &v));
  EXPECT_EQ(v, "txn");
  VMS_EXPECT_OK(db->close());
}

// In task mode a caller is a task: another task of the thread that holds a transaction
// writes (its wait for the transaction's key suspends only itself), while the task that
// holds it is refused.
TEST(CppTransaction, InTaskModeOnlyTheTaskThatHoldsItIsRefused) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=64M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  std::unique_ptr<vmstore::TaskPool> pool;
  VMS_ASSERT_OK(vmstore::TaskPool::create(1, 4, &pool));
  std::atomic<int> step{0};
  Transaction txn(db.get());
  Status holderPlain, otherKey, sameKey;
  pool->submit([&] {  // holds the transaction
    VMS_EXPECT_OK(txn.put(t, "k", "txn"));
    holderPlain = t->put("z", "plain");
    step = 1;
    while (step.load() < 2) vmstore::internal::task::Scheduler::current()->yield();
    VMS_EXPECT_OK(txn.commit());
  });
  pool->submit([&] {  // another task of the same (only) thread
    while (step.load() < 1) vmstore::internal::task::Scheduler::current()->yield();
    otherKey = t->put("y", "task");
    step = 2;
    sameKey = t->put("k", "task");  // suspends until the holder commits
  });
  VMS_ASSERT_OK(pool->wait());
  EXPECT_TRUE(holderPlain.code() == Status::Code::kBusy) << holderPlain.toString();
  VMS_EXPECT_OK(otherKey);
  VMS_EXPECT_OK(sameKey);
  std::string v;
  VMS_ASSERT_OK(t->get("k", &v));
  EXPECT_EQ(v, "task");
  EXPECT_TRUE(t->get("z", &v).isNotFound());
  pool.reset();
  VMS_EXPECT_OK(db->close());
}

// A transaction may go on from another thread: the calls that refuse on the thread of
// an open transaction follow it there, and its first thread is free again.
TEST(CppTransaction, ATransactionMovedToAnotherThreadIsOpenThereOnly) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=64M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  Transaction txn(db.get());
  VMS_ASSERT_OK(txn.put(t, "a", "1"));
  EXPECT_TRUE(db->sync().code() == Status::Code::kBusy);
  std::thread other([&] {
    VMS_EXPECT_OK(txn.put(t, "b", "2"));
    EXPECT_TRUE(db->sync().code() == Status::Code::kBusy) << "the transaction's thread is now this one";
    VMS_EXPECT_OK(txn.commit());
    VMS_EXPECT_OK(db->sync());
  });
  other.join();
  EXPECT_TRUE(db->sync().ok()) << "the first thread still counted a transaction that ended elsewhere";
  std::string v;
  VMS_ASSERT_OK(t->get("b", &v));
  EXPECT_EQ(v, "2");
  // Begun on a thread that has exited since, ended here.
  std::thread begin([&] { VMS_EXPECT_OK(txn.put(t, "c", "3")); });
  begin.join();
  VMS_EXPECT_OK(txn.abort());
  EXPECT_FALSE(t->get("c", &v).ok());
  VMS_EXPECT_OK(db->close());
}

// A drop waits for open transactions. openTree on the thread of an open transaction
// meanwhile works, for a listed tree, one only the catalog lists and the one being
// dropped (whose handle the drop then marks), and the drop completes once the
// transaction ends.
TEST(CppTransaction, OpeningATreeWhileADropWaitsForTheTransactionWorks) {
  std::string dir = freshDir();
  {
    auto db = openDb(dir, "pool_size=64M");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("cold", true, &t));
    VMS_ASSERT_OK(t->put("x", "1"));
    VMS_ASSERT_OK(db->close());
  }
  auto db = openDb(dir, "pool_size=64M");
  ASSERT_TRUE(db);
  vmstore::Tree *t, *u;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  VMS_ASSERT_OK(db->openTree("u", true, &u));
  Transaction txn(db.get());
  VMS_ASSERT_OK(txn.put(t, "k", "v"));
  std::atomic<bool> dropped{false};
  std::thread dropper([&] {
    VMS_EXPECT_OK(db->dropTree("u"));
    dropped = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the drop waits for txn
  vmstore::Tree *again = nullptr, *cold = nullptr, *doomed = nullptr;
  VMS_EXPECT_OK(db->openTree("", false, &again));
  EXPECT_EQ(again, t);
  VMS_EXPECT_OK(db->openTree("cold", false, &cold));
  VMS_EXPECT_OK(db->openTree("u", false, &doomed));
  EXPECT_EQ(doomed, u);
  Status st = db->openTree("new", true, &again);
  EXPECT_TRUE(st.code() == Status::Code::kBusy) << "creating is a plain write: " << st.toString();
  EXPECT_FALSE(dropped.load());
  VMS_ASSERT_OK(txn.commit());
  dropper.join();
  EXPECT_TRUE(dropped.load());
  std::string v;
  VMS_EXPECT_OK(cold->get("x", &v));
  EXPECT_EQ(v, "1");
  EXPECT_FALSE(u->get("x", &v).ok()) << "the dropped tree's handle still reads";
  EXPECT_TRUE(db->openTree("u", false, &again).isNotFound());
  VMS_EXPECT_OK(db->close());
}

// A tree creation that finds the log file full waits, holding the right to change the
// list of trees, for a checkpoint, which waits for every open transaction. openTree on
// the thread of an open transaction still works (before, it waited for the creation:
// a deadlock, which this test would show by hanging; a watchdog then aborts).
TEST(CppTransaction, OpeningATreeWhileACreationWaitsForACheckpointWorks) {
  std::string dir = freshDir();
  {
    auto db = openDb(dir, "pool_size=64M,log_size=1M");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("cold", true, &t));
    VMS_ASSERT_OK(db->close());
  }
  auto db = openDb(dir, "pool_size=64M,log_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  std::atomic<int> created{0};
  std::atomic<bool> stop{false};
  std::thread creator([&] {
    // Long names: a few thousand creations fill a log file of 512 KiB.
    for (int i = 0; !stop.load(); i++) {
      vmstore::Tree* n;
      Status st = db->openTree(numKey(std::string(200, 'n'), i, 8), true, &n);
      if (!st.ok()) {
        ADD_FAILURE() << st.toString();
        return;
      }
      created.fetch_add(1);
    }
  });
  std::atomic<bool> done{false};
  bool stalled = false;
  int createdWhileOpening = -1;
  std::thread holder([&] {
    Transaction txn(db.get());
    VMS_EXPECT_OK(txn.put(t, "k", "v"));
    // Until the creator stops making progress (it waits for the checkpoint), at most 60 s.
    int last = -1;
    for (int i = 0; i < 600 && !stalled; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const int now = created.load();
      stalled = now == last && now > 0;
      last = now;
    }
    vmstore::Tree *again = nullptr, *cold = nullptr;
    VMS_EXPECT_OK(db->openTree("", false, &again));
    VMS_EXPECT_OK(db->openTree("cold", false, &cold));  // listed by the catalog only
    createdWhileOpening = created.load() - last;
    VMS_EXPECT_OK(txn.commit());
    done = true;
  });
  for (int i = 0; i < 1200 && !done.load(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (!done.load()) {
    std::fprintf(stderr, "openTree on the thread of a transaction waited for a tree creation for 2 minutes\n");
    std::abort();  // the threads cannot be joined
  }
  holder.join();
  stop = true;
  creator.join();
  EXPECT_TRUE(stalled) << "no creation waited for the transaction: the test proves less than it says";
  EXPECT_EQ(createdWhileOpening, 0) << "the creator was not waiting while the opens ran";
  std::vector<std::string> names;
  VMS_ASSERT_OK(db->listTrees(&names));
  EXPECT_EQ(names.size(), static_cast<size_t>(created.load()) + 2);
  VMS_EXPECT_OK(db->close());
}

TEST(CppTransaction, TwoTransactionsWaitingForEachOtherEndWithBusyForOne) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=64M,durability=async");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  std::atomic<int> ready{0};
  std::atomic<int> busy{0};
  auto run = [&](const char* first, const char* second) {
    Transaction txn(db.get());
    EXPECT_TRUE(txn.put(t, first, "1").ok());
    ready++;
    while (ready.load() < 2) std::this_thread::yield();
    Status st = txn.put(t, second, "2");
    if (st.code() == Status::Code::kBusy) {
      busy++;
      EXPECT_TRUE(txn.abort().ok());
    } else {
      EXPECT_TRUE(st.ok()) << st.toString();
      EXPECT_TRUE(txn.commit().ok());
    }
  };
  // Keys in different lock slots, taken in opposite orders.
  ASSERT_NE(vmstore::internal::KeyLocks::slotOf("x1"), vmstore::internal::KeyLocks::slotOf("y1"));
  std::thread a(run, "x1", "y1");
  std::thread b(run, "y1", "x1");
  a.join();
  b.join();
  EXPECT_GE(busy.load(), 1);
  // One that went on committed both keys; one that gave up left no trace (both may give
  // up, when their waits end together).
  std::string x, y;
  Status sx = t->get("x1", &x);
  Status sy = t->get("y1", &y);
  if (busy.load() == 1) {
    VMS_ASSERT_OK(sx);
    VMS_ASSERT_OK(sy);
    EXPECT_NE(x, y) << "both keys from one transaction: 1 then 2 or 2 then 1";
  } else {
    EXPECT_TRUE(sx.isNotFound() && sy.isNotFound()) << "an aborted transaction left a key";
  }
}

// Transfers between accounts: each transaction moves an amount from one account to
// another (two updates), the sum of all accounts stays the same, and with increments of
// a counter no update is lost.
constexpr int kAccounts = 16;
constexpr long kStart = 1000;

std::string account(int i) { return numKey("acct", static_cast<uint64_t>(i), 4); }
long amountOf(std::string_view v) { return std::stol(std::string(v)); }
std::string amountText(long a) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%012ld", a);  // fixed size: updated in place
  return buf;
}

// One transfer; Busy: aborted, false.
bool transfer(Transaction& txn, vmstore::Tree* t, vmstore::Tree* counter, int from, int to, long amount) {
  auto add = [&](int who, long delta) {
    return txn.update(t, account(who), [&](std::optional<std::string_view> cur) {
      return Change::put(amountText(amountOf(*cur) + delta));
    });
  };
  Status st = add(from, -amount);
  if (st.ok()) st = add(to, amount);
  if (st.ok()) {
    st = txn.update(counter, "n", [&](std::optional<std::string_view> cur) {
      return Change::put(amountText(cur ? amountOf(*cur) + 1 : 1));
    });
  }
  if (st.code() == Status::Code::kBusy) {
    EXPECT_TRUE(txn.abort().ok());
    return false;
  }
  EXPECT_TRUE(st.ok()) << st.toString();
  st = txn.commit();
  EXPECT_TRUE(st.ok()) << st.toString();
  return st.ok();
}

long sumOf(vmstore::Tree* t) {
  long sum = 0;
  for (int i = 0; i < kAccounts; i++) {
    std::string v;
    EXPECT_TRUE(t->get(account(i), &v).ok());
    sum += amountOf(v);
  }
  return sum;
}

TEST(CppTransaction, ConcurrentTransfersLoseNoUpdateAndKeepTheSum) {
  for (const char* durability : {"none", "async", "sync"}) {
    SCOPED_TRACE(durability);
    std::string dir = freshDir();
    auto db = openDb(dir, std::string("pool_size=64M,durability=") + durability);
    ASSERT_TRUE(db);
    vmstore::Tree *t, *counter;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    VMS_ASSERT_OK(db->openTree("counter", true, &counter));
    for (int i = 0; i < kAccounts; i++) VMS_ASSERT_OK(t->put(account(i), amountText(kStart)));
    const int threads = 4;
    const int each = scaled(2000, 300);
    std::atomic<long> committed{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < threads; w++) {
      workers.emplace_back([&, w] {
        std::mt19937 rng(w);
        Transaction txn(db.get());
        for (int i = 0; i < each; i++) {
          int from = static_cast<int>(rng() % kAccounts);
          int to = static_cast<int>((from + 1 + rng() % (kAccounts - 1)) % kAccounts);
          if (transfer(txn, t, counter, from, to, static_cast<long>(rng() % 50))) committed++;
          // A reader outside the transactions never fails.
          std::string v;
          EXPECT_TRUE(t->get(account(from), &v).ok());
        }
      });
    }
    for (auto& w : workers) w.join();
    EXPECT_EQ(sumOf(t), kAccounts * kStart);
    std::string n;
    VMS_ASSERT_OK(counter->get("n", &n));
    EXPECT_EQ(amountOf(n), committed.load()) << "an update was lost";
    EXPECT_GT(committed.load(), each);  // most transfers go through
    VMS_ASSERT_OK(db->close());
  }
}

TEST(CppTransaction, AStorageErrorPartWayFailsTheCallAndAbortPutsEverythingBack) {
  FaultScope scope;
  vmstore::internal::FaultIo& faults = scope.io();
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree *t, *filler;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  const int n = scaled(6000, 3000);
  for (int i = 0; i < n; i++) VMS_ASSERT_OK(t->put(numKey("k", i, 8), "old"));
  VMS_ASSERT_OK(db->sync());
  VMS_ASSERT_OK(db->openTree("filler", true, &filler));  // push the tree out of the pool
  for (int i = 0; i < 12000; i++) VMS_ASSERT_OK(filler->put(numKey("f", i, 8), std::string(200, 'f')));
  Transaction txn(db.get());
  faults.fail({vmstore::internal::FaultIo::Op::kRead, "", 2, -1, EIO});  // two reads succeed first
  int i = 0;
  Status st;
  for (; i < n; i += 7) {
    st = (i % 2) ? txn.del(t, numKey("k", i, 8)) : txn.put(t, numKey("k", i, 8), "new");
    if (!st.ok()) break;
  }
  EXPECT_TRUE(st.code() == Status::Code::kIOError) << st.toString();
  EXPECT_GT(i, 14) << "the transaction failed at its first writes: the test proves less than it says";
  faults.clearRules();
  VMS_ASSERT_OK(txn.abort());
  int wrong = 0;
  for (int k = 0; k < n; k++) {
    std::string v;
    if (!t->get(numKey("k", k, 8), &v).ok() || v != "old") wrong++;
  }
  EXPECT_EQ(wrong, 0) << "keys changed by an aborted transaction";
  VMS_EXPECT_OK(db->close());
}

TEST(CppTransaction, AWriteTooLargeForTheLogIsRefused) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=64M,log_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  Transaction txn(db.get());
  VMS_ASSERT_OK(txn.put(t, "small", "v"));
  Status st = txn.put(t, "large", std::string(100 << 10, 'x'));  // over 1M / 16
  EXPECT_TRUE(st.code() == Status::Code::kTooBig) << st.toString();
  VMS_ASSERT_OK(txn.commit());
  std::string v;
  EXPECT_TRUE(t->get("large", &v).isNotFound());
  VMS_ASSERT_OK(t->get("small", &v));
}

TEST(CppTransaction, KilledProcessLeavesEveryTransactionWholeOrAbsent) {
  // Transfers in a child process, killed at random moments: after each reopen the sum
  // is unchanged (no half transfer), and every commit the child reported (a byte on a
  // pipe after commit returned, durability sync) is there (the counter is at least it).
  std::string dir = freshDir();
  {
    auto db = openDb(dir, "pool_size=8M");
    ASSERT_TRUE(db);
    vmstore::Tree *t, *counter;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    VMS_ASSERT_OK(db->openTree("counter", true, &counter));
    for (int i = 0; i < kAccounts; i++) VMS_ASSERT_OK(t->put(account(i), amountText(kStart)));
    VMS_ASSERT_OK(db->close());
  }
  long acknowledged = 0;
  for (int cycle = 0; cycle < scaled(8, 3); cycle++) {
    KilledChild child = killAfter(std::chrono::microseconds(30000 + 20000 * cycle), [&](int fd) {
      std::unique_ptr<vmstore::Database> db;
      if (!vmstore::Database::open(dir, "pool_size=8M,durability=sync", &db).ok()) _exit(3);
      vmstore::Tree *t, *counter;
      if (!db->openTree("", false, &t).ok() || !db->openTree("counter", false, &counter).ok()) _exit(4);
      std::mt19937 rng(cycle);
      Transaction txn(db.get());
      for (int i = 0;; i++) {
        int from = static_cast<int>(rng() % kAccounts);
        int to = static_cast<int>((from + 1 + rng() % (kAccounts - 1)) % kAccounts);
        if (transfer(txn, t, counter, from, to, 1 + static_cast<long>(rng() % 50))) {
          char c = 1;
          if (write(fd, &c, 1) != 1) _exit(5);
        }
        if (i % 97 == 0 && !db->sync().ok()) _exit(6);
      }
    });
    ASSERT_TRUE(child.killed) << "writer exited " << child.exitCode;
    acknowledged += static_cast<long>(child.out.size());
    auto db = openDb(dir, "pool_size=8M");
    ASSERT_TRUE(db);
    vmstore::Tree *t, *counter;
    VMS_ASSERT_OK(db->openTree("", false, &t));
    VMS_ASSERT_OK(db->openTree("counter", false, &counter));
    EXPECT_EQ(sumOf(t), kAccounts * kStart) << "cycle " << cycle << ": half a transfer survived";
    std::string n;
    long count = counter->get("n", &n).ok() ? amountOf(n) : 0;
    EXPECT_GE(count, acknowledged) << "cycle " << cycle << ": an acknowledged commit was lost";
    acknowledged = count;  // the next cycle counts on from what is there
    VMS_ASSERT_OK(db->close());
  }
  EXPECT_GT(acknowledged, 0);
}

}  // namespace
