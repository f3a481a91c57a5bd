// Task mode and batched lookups (issue 7, items 2, 3 and 8): Tree::getMany and
// vms_get_many with every kind of per-key result and every bad input; the same answers
// out of memory with io=uring and io=sync; a TaskPool running many operations per thread
// against a database much larger than its pool, checked against a model; concurrent
// checkpoints while tasks write; a failed read reaching only the operation that needed
// it; and the C task API with bad input.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../e2e/test_util.hpp"
#include "os/fault_io.hpp"
#include "task/cooperative.hpp"
#include "vmstore.h"

namespace {

using namespace vmstest;
using vmstore::internal::FaultIo;
using Op = FaultIo::Op;

std::string value(uint64_t i) { return taggedValue(numKey("k", i), 7, 40 + i % 200); }

vmstore::Tree* fillOutOfMemory(vmstore::Database* db, uint64_t n);

// A fresh database with a 1 MiB pool (durability=none) and its tree "t" of n keys.
struct OutOfMemoryDb {
  explicit OutOfMemoryDb(uint64_t keys) : n(keys) {
    db = openDb(dir, "durability=none,pool_size=1M");
    if (db) t = fillOutOfMemory(db.get(), n);
  }
  std::string dir = freshDir();
  uint64_t n;
  std::unique_ptr<vmstore::Database> db;
  vmstore::Tree* t = nullptr;
};

// A tree of n keys, pushed out of a 1 MiB pool.
vmstore::Tree* fillOutOfMemory(vmstore::Database* db, uint64_t n) {
  vmstore::Tree* t = nullptr;
  EXPECT_TRUE(db->openTree("t", true, &t).ok());
  for (uint64_t i = 0; i < n; i++) EXPECT_TRUE(t->put(numKey("k", i), value(i)).ok());
  EXPECT_TRUE(db->sync().ok());
  return t;
}

TEST(GetMany, EveryKindOfResult) {
  std::string dir = freshDir();
  auto db = openDb(dir, "durability=none");
  ASSERT_TRUE(db);
  vmstore::Tree* t = fillOutOfMemory(db.get(), 100);
  std::vector<std::string_view> keys;
  std::vector<std::string> owned = {numKey("k", 5), numKey("absent", 1), "", std::string(vmstore::kMaxKeySize + 1, 'x'),
                                    numKey("k", 99)};
  for (auto& k : owned) keys.push_back(k);
  std::vector<std::string> values(keys.size(), "stale");  // an earlier call's results: replaced or emptied
  std::vector<vmstore::Status> statuses;
  VMS_ASSERT_OK(t->getMany(keys, &values, &statuses));
  ASSERT_EQ(values.size(), keys.size());
  ASSERT_EQ(statuses.size(), keys.size());
  EXPECT_TRUE(statuses[0].ok());
  EXPECT_EQ(values[0], value(5));
  EXPECT_TRUE(statuses[1].isNotFound());
  EXPECT_EQ(statuses[2].code(), vmstore::Status::Code::kInvalidArgument);
  EXPECT_EQ(statuses[3].code(), vmstore::Status::Code::kTooBig);
  EXPECT_TRUE(values[1].empty() && values[2].empty() && values[3].empty());
  EXPECT_EQ(values[4], value(99));
  EXPECT_EQ(t->getMany(keys, nullptr, &statuses).code(), vmstore::Status::Code::kInvalidArgument);
  EXPECT_EQ(t->getMany(keys, &values, nullptr).code(), vmstore::Status::Code::kInvalidArgument);
  VMS_EXPECT_OK(t->getMany({}, &values, &statuses));
  EXPECT_TRUE(values.empty());

  // Into caller buffers: lengths are full, copies are cut to the buffer.
  std::vector<std::byte> small(10), big(4096);
  std::vector<std::span<std::byte>> bufs{small, big};
  std::vector<size_t> vlens(2);
  std::vector<vmstore::Status> st2(2);
  std::vector<std::string_view> two{keys[0], keys[4]};
  VMS_ASSERT_OK(t->getMany(two, bufs, vlens, st2));
  EXPECT_EQ(vlens[0], value(5).size());
  EXPECT_EQ(std::string(reinterpret_cast<char*>(small.data()), 10), value(5).substr(0, 10));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(big.data()), vlens[1]), value(99));
  std::vector<size_t> oneLen(1);
  EXPECT_EQ(t->getMany(two, bufs, oneLen, st2).code(), vmstore::Status::Code::kInvalidArgument);
  VMS_EXPECT_OK(db->close());
}

// Out of memory, every answer is the same with io=uring and io=sync, in one call of
// many keys and in many calls from two threads.
TEST(GetMany, OutOfMemoryAnswersMatchInBothIoModes) {
  for (const char* io : {"uring", "sync"}) {
    SCOPED_TRACE(io);
    std::string dir = freshDir(io);
    auto db = openDb(dir, std::string("durability=none,pool_size=1M,io=") + io);
    ASSERT_TRUE(db);
    const uint64_t n = scaled<uint64_t>(60000, 20000);  // several times the pool
    vmstore::Tree* t = fillOutOfMemory(db.get(), n);
    vmstore::Stats before = db->stats();
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int th = 0; th < 2; th++) {
      threads.emplace_back([&, th] {
        Rng rng(100 + th);
        for (int call = 0; call < 40; call++) {
          std::vector<std::string> owned;
          std::vector<uint64_t> ids;
          for (int i = 0; i < 64; i++) {
            uint64_t id = (rng.next() % (n + n / 10));  // some absent
            ids.push_back(id);
            owned.push_back(numKey("k", id));
          }
          std::vector<std::string_view> keys(owned.begin(), owned.end());
          std::vector<std::string> values;
          std::vector<vmstore::Status> statuses;
          if (!t->getMany(keys, &values, &statuses).ok()) wrong++;
          for (size_t i = 0; i < keys.size(); i++) {
            bool present = ids[i] < n;
            if (present ? !(statuses[i].ok() && values[i] == value(ids[i])) : !statuses[i].isNotFound()) wrong++;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
    vmstore::Stats after = db->stats();
    EXPECT_GT(after.misses, before.misses) << "the lookups did not run out of memory";
    VMS_EXPECT_OK(db->close());
  }
}

TEST(GetMany, CApiBadInputAndResults) {
  std::string dir = freshDir();
  vms_db* db = nullptr;
  ASSERT_EQ(vms_open(dir.c_str(), "durability=none", &db), VMS_OK);
  vms_tree* t = nullptr;
  ASSERT_EQ(vms_tree_open(db, "", 1, &t), VMS_OK);
  ASSERT_EQ(vms_put(t, "a", 1, "alpha", 5), VMS_OK);
  const void* keys[4] = {"a", "b", nullptr, ""};
  size_t klens[4] = {1, 1, 1, 0};
  char b0[3], b1[8], b2[8], b3[8];
  void* bufs[4] = {b0, b1, b2, b3};
  size_t caps[4] = {sizeof b0, sizeof b1, sizeof b2, sizeof b3};
  size_t vlens[4];
  int rcs[4];
  EXPECT_EQ(vms_get_many(nullptr, 4, keys, klens, bufs, caps, vlens, rcs), VMS_EINVAL);
  EXPECT_EQ(vms_get_many(t, 4, nullptr, klens, bufs, caps, vlens, rcs), VMS_EINVAL);
  EXPECT_EQ(vms_get_many(t, 4, keys, nullptr, bufs, caps, vlens, rcs), VMS_EINVAL);
  EXPECT_EQ(vms_get_many(t, 4, keys, klens, bufs, caps, nullptr, rcs), VMS_EINVAL);
  EXPECT_EQ(vms_get_many(t, 4, keys, klens, bufs, caps, vlens, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_get_many(t, 4, keys, klens, nullptr, caps, vlens, rcs), VMS_EINVAL);
  EXPECT_EQ(vms_get_many(t, 4, keys, klens, bufs, nullptr, vlens, rcs), VMS_EINVAL);
  EXPECT_EQ(vms_get_many(t, 0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr), VMS_OK);
  ASSERT_EQ(vms_get_many(t, 4, keys, klens, bufs, caps, vlens, rcs), VMS_OK);
  EXPECT_EQ(rcs[0], VMS_OK);
  EXPECT_EQ(vlens[0], 5u);
  EXPECT_EQ(std::string(b0, 3), "alp");
  EXPECT_EQ(rcs[1], VMS_NOTFOUND);
  EXPECT_EQ(rcs[2], VMS_EINVAL);
  EXPECT_EQ(rcs[3], VMS_EINVAL);
  // Lengths only.
  ASSERT_EQ(vms_get_many(t, 2, keys, klens, nullptr, nullptr, vlens, rcs), VMS_OK);
  EXPECT_EQ(rcs[0], VMS_OK);
  EXPECT_EQ(vlens[0], 5u);
  // A NULL buffer with a capacity is that entry's error.
  void* nullBuf[1] = {nullptr};
  size_t cap1[1] = {4};
  ASSERT_EQ(vms_get_many(t, 1, keys, klens, nullBuf, cap1, vlens, rcs), VMS_OK);
  EXPECT_EQ(rcs[0], VMS_EINVAL);
  EXPECT_EQ(vms_close(db), VMS_OK);
}

// Many operations in flight per thread against data several times the pool: puts,
// gets and deletes of per-task key ranges, checked against each task's model, while
// checkpoints run; then everything is read back after reopening.
TEST(TaskMode, ManyOperationsInFlightOutOfMemoryMatchTheModel) {
  std::string dir = freshDir();
  auto db = openDb(dir, "durability=async,pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("t", true, &t));
  std::unique_ptr<vmstore::TaskPool> pool;
  VMS_ASSERT_OK(vmstore::TaskPool::create(2, 32, &pool));
  const int tasks = 64;
  const int keysPerTask = scaled(400, 150);
  std::vector<std::map<std::string, std::string>> models(tasks);
  std::atomic<int> wrong{0};
  for (int k = 0; k < tasks; k++) {
    pool->submit([&, k] {
      Rng rng(k);
      auto& model = models[k];
      for (int op = 0; op < keysPerTask * 3; op++) {
        std::string key = numKey("t" + std::to_string(k) + "-", (rng.next() % (keysPerTask)));
        int what = static_cast<int>((rng.next() % (10)));
        if (what < 6) {
          std::string v = randomValue(rng, 300);
          if (!t->put(key, v).ok()) wrong++;
          model[key] = v;
        } else if (what < 8) {
          vmstore::Status s = t->del(key);
          if (model.erase(key) ? !s.ok() : !s.isNotFound()) wrong++;
        } else {
          std::string v;
          vmstore::Status s = t->get(key, &v);
          auto it = model.find(key);
          if (it == model.end() ? !s.isNotFound() : !(s.ok() && v == it->second)) wrong++;
        }
      }
    });
  }
  for (int i = 0; i < 3; i++) VMS_EXPECT_OK(db->sync());  // checkpoints while tasks write
  VMS_ASSERT_OK(pool->wait());
  EXPECT_EQ(wrong.load(), 0);
  vmstore::Stats stats = db->stats();
  EXPECT_GT(stats.evictions, 0u) << "the data never exceeded the pool";
  VMS_ASSERT_OK(db->close());
  db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  VMS_ASSERT_OK(db->openTree("t", false, &t));
  std::map<std::string, std::string> all;
  for (auto& m : models) all.insert(m.begin(), m.end());
  KV expected(all.begin(), all.end());
  EXPECT_TRUE(scanForward(t) == expected) << "the tree differs from the model after reopening";
  VMS_EXPECT_OK(db->close());
}

TEST(TaskMode, GetManyInsideATaskAndWaitFromATask) {
  OutOfMemoryDb o(scaled<uint64_t>(30000, 10000));
  ASSERT_TRUE(o.db);
  auto& db = o.db;
  const uint64_t n = o.n;
  vmstore::Tree* t = o.t;
  std::unique_ptr<vmstore::TaskPool> pool;
  VMS_ASSERT_OK(vmstore::TaskPool::create(1, 8, &pool));
  std::atomic<int> wrong{0};
  vmstore::Status inner;
  for (int k = 0; k < 8; k++) {
    pool->submit([&, k] {
      std::vector<std::string> owned;
      for (int i = 0; i < 50; i++) owned.push_back(numKey("k", (k * 7919 + i * 104729) % n));
      std::vector<std::string_view> keys(owned.begin(), owned.end());
      std::vector<std::string> values;
      std::vector<vmstore::Status> statuses;
      if (!t->getMany(keys, &values, &statuses).ok()) wrong++;
      for (size_t i = 0; i < keys.size(); i++) {
        if (!statuses[i].ok() || !isTaggedValueOf(keys[i], values[i])) wrong++;
      }
      if (k == 0) inner = pool->wait();
    });
  }
  VMS_ASSERT_OK(pool->wait());
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(inner.code(), vmstore::Status::Code::kInvalidArgument) << inner.toString();
  VMS_EXPECT_OK(db->close());
}

TEST(TaskMode, AnExceptionInATaskIsReportedByWait) {
  std::unique_ptr<vmstore::TaskPool> pool;
  EXPECT_EQ(vmstore::TaskPool::create(0, 1, &pool).code(), vmstore::Status::Code::kInvalidArgument);
  EXPECT_EQ(vmstore::TaskPool::create(1, 0, &pool).code(), vmstore::Status::Code::kInvalidArgument);
  EXPECT_EQ(vmstore::TaskPool::create(1, 5000, &pool).code(), vmstore::Status::Code::kInvalidArgument);
  EXPECT_EQ(vmstore::TaskPool::create(1, 1, nullptr).code(), vmstore::Status::Code::kInvalidArgument);
  VMS_ASSERT_OK(vmstore::TaskPool::create(2, 4, &pool));
  std::atomic<int> ran{0};
  pool->submit([] { throw std::runtime_error("boom"); });
  for (int i = 0; i < 20; i++) pool->submit([&] { ran++; });
  vmstore::Status s = pool->wait();
  EXPECT_EQ(s.code(), vmstore::Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("boom"), std::string::npos) << s.toString();
  EXPECT_EQ(ran.load(), 20);
  VMS_EXPECT_OK(pool->wait());  // reported once
}

// A read that fails reaches the task that needed it as an I/O error; the other tasks
// and later reads of the same page go on.
TEST(TaskMode, AFailedReadReachesOnlyTheOperationThatNeededIt) {
  FaultScope faults;
  OutOfMemoryDb o(scaled<uint64_t>(30000, 10000));
  ASSERT_TRUE(o.db);
  auto& db = o.db;
  const uint64_t n = o.n;
  vmstore::Tree* t = o.t;
  std::unique_ptr<vmstore::TaskPool> pool;
  VMS_ASSERT_OK(vmstore::TaskPool::create(1, 16, &pool));
  faults.io().fail({Op::kRead, "", 20, 5, EIO});  // five reads fail, after twenty
  std::atomic<int> ioErrors{0}, ok{0}, wrong{0};
  for (int k = 0; k < 200; k++) {
    pool->submit([&, k] {
      std::string key = numKey("k", (k * 7919) % n);
      std::string v;
      vmstore::Status s = t->get(key, &v);
      if (s.ok()) {
        ok++;
        if (!isTaggedValueOf(key, v)) wrong++;
      } else if (s.code() == vmstore::Status::Code::kIOError) {
        ioErrors++;
      } else {
        wrong++;
      }
    });
  }
  VMS_ASSERT_OK(pool->wait());
  faults.io().clearRules();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GE(ioErrors.load(), 1);
  EXPECT_LE(ioErrors.load(), 5);
  EXPECT_EQ(ok.load() + ioErrors.load(), 200);
  for (int k = 0; k < 200; k++) {  // every page is readable again
    std::string key = numKey("k", (k * 7919) % n);
    std::string v;
    VMS_ASSERT_OK(t->get(key, &v));
    EXPECT_TRUE(isTaggedValueOf(key, v));
  }
  expectCheckOk(db.get());
  VMS_EXPECT_OK(db->close());
}

// Work submitted while every task of the pool that runs is busy (suspended, waiting)
// is still taken by one of the pool's other tasks: here the first task can only finish
// once the second, submitted later, has run.
TEST(TaskMode, WorkSubmittedWhileTheOthersWaitIsTaken) {
  std::unique_ptr<vmstore::TaskPool> pool;
  VMS_ASSERT_OK(vmstore::TaskPool::create(1, 4, &pool));
  std::atomic<bool> flag{false};
  pool->submit([&] {
    while (!flag.load()) vmstore::internal::task::pause();  // waits as a task
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the first is waiting now
  pool->submit([&] { flag.store(true); });
  VMS_EXPECT_OK(pool->wait());
  EXPECT_TRUE(flag.load());
}

void bump(void* arg) { static_cast<std::atomic<int>*>(arg)->fetch_add(1); }

TEST(TaskMode, CApi) {
  vms_tasks* pool = reinterpret_cast<vms_tasks*>(1);
  EXPECT_EQ(vms_tasks_new(0, 4, &pool), VMS_EINVAL);
  EXPECT_EQ(pool, nullptr);
  EXPECT_EQ(vms_tasks_new(1, 0, &pool), VMS_EINVAL);
  EXPECT_EQ(vms_tasks_new(1, 4, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_tasks_submit(nullptr, bump, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_tasks_wait(nullptr), VMS_EINVAL);
  vms_tasks_free(nullptr);
  ASSERT_EQ(vms_tasks_new(2, 8, &pool), VMS_OK);
  EXPECT_EQ(vms_tasks_submit(pool, nullptr, nullptr), VMS_EINVAL);
  std::atomic<int> count{0};
  for (int i = 0; i < 100; i++) ASSERT_EQ(vms_tasks_submit(pool, bump, &count), VMS_OK);
  EXPECT_EQ(vms_tasks_wait(pool), VMS_OK);
  EXPECT_EQ(count.load(), 100);
  for (int i = 0; i < 10; i++) ASSERT_EQ(vms_tasks_submit(pool, bump, &count), VMS_OK);
  vms_tasks_free(pool);  // waits for them
  EXPECT_EQ(count.load(), 110);
}

}  // namespace
