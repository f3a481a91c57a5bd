// Atomic read-modify-write (issue 8 item 5): Tree::update and vms_update with every
// outcome of the function (put of the same size and of another, delete, keep, abort, an
// exception, a value viewing the current one), every bad input, counters incremented by
// many threads and by many tasks that lose nothing, updates racing plain puts of the same
// keys, updates whose log file fills up, and updates surviving a crash.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../e2e/test_util.hpp"
#include "os/fault_io.hpp"
#include "vmstore.h"

namespace {

using namespace vmstest;
using vmstore::Change;
using OptView = std::optional<std::string_view>;

std::string u64(uint64_t v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}

uint64_t asU64(std::string_view s) {
  uint64_t v = 0;
  if (s.size() >= 8) std::memcpy(&v, s.data(), 8);
  return v;
}

// Adds one to the 8-byte counter at the start of the value (absent: 0), keeping the rest.
Status increment(vmstore::Tree* t, std::string_view key) {
  std::string next;
  return t->update(key, [&](OptView cur) {
    next = cur ? std::string(*cur) : u64(0);
    uint64_t v = asU64(next) + 1;
    std::memcpy(next.data(), &v, 8);
    return Change::put(next);
  });
}

// The sum of the counters "c0000000000" .. (a missing one fails the test).
uint64_t counterSum(vmstore::Tree* t, int counters) {
  uint64_t total = 0;
  for (int c = 0; c < counters; c++) {
    std::string v;
    Status s = t->get(numKey("c", c), &v);
    EXPECT_TRUE(s.ok()) << "counter " << c << ": " << s.toString();
    total += asU64(v);
  }
  return total;
}

class UpdateTest : public OneTreeTest {
 protected:
  std::string config() const override { return "pool_size=4M,durability=async"; }
  void TearDown() override {
    if (db_) VMS_EXPECT_OK(db_->close());
  }
  std::string value(std::string_view key) {
    std::string v;
    Status s = t_->get(key, &v);
    return s.ok() ? v : "<" + s.toString() + ">";
  }
};

TEST_F(UpdateTest, EveryOutcomeOfTheFunction) {
  int calls = 0;
  OptView seen;
  std::string seenCopy;
  auto run = [&](std::string_view key, auto decide) {
    calls = 0;
    return t_->update(key, [&](OptView cur) {
      calls++;
      seen = cur;
      seenCopy = cur ? std::string(*cur) : "<absent>";
      return decide(cur);
    });
  };
  // Absent key, put: inserted.
  VMS_ASSERT_OK(run("k", [](OptView) { return Change::put("first"); }));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seenCopy, "<absent>");
  EXPECT_EQ(value("k"), "first");
  // Same size, another size, a part of the current value.
  VMS_ASSERT_OK(run("k", [](OptView) { return Change::put("FIRST"); }));
  EXPECT_EQ(seenCopy, "first");
  EXPECT_EQ(value("k"), "FIRST");
  VMS_ASSERT_OK(run("k", [](OptView) { return Change::put("a longer value"); }));
  EXPECT_EQ(value("k"), "a longer value");
  VMS_ASSERT_OK(run("k", [](OptView cur) { return Change::put(cur->substr(2, 6)); }));
  EXPECT_EQ(value("k"), "longer");
  VMS_ASSERT_OK(run("k", [](OptView cur) { return Change::put(*cur); }));  // itself, same size
  EXPECT_EQ(value("k"), "longer");
  // Keep, and abort with OK, change nothing.
  VMS_ASSERT_OK(run("k", [](OptView) { return Change::keep(); }));
  EXPECT_EQ(value("k"), "longer");
  VMS_ASSERT_OK(run("k", [](OptView) { return Change::abort(Status::OK()); }));
  EXPECT_EQ(value("k"), "longer");
  // Abort returns the function's status as given.
  Status s = run("k", [](OptView) { return Change::abort(Status::Busy("mine")); });
  EXPECT_EQ(s.code(), Status::Code::kBusy);
  EXPECT_EQ(s.message(), "mine");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(value("k"), "longer");
  // A value over the limit: TooBig, nothing changed.
  vmsunit::ZeroBuffer big(vmstore::kMaxValueSize + 1);  // zero pages, refused unread
  s = run("k", [&](OptView) { return Change::put(big.view()); });
  EXPECT_EQ(s.code(), Status::Code::kTooBig) << s.toString();
  EXPECT_EQ(value("k"), "longer");
  // A large value (a page of its own, many pages) is fine; the function sees it whole.
  std::string largest(1 << 20, 'L');
  VMS_ASSERT_OK(run("k", [&](OptView) { return Change::put(largest); }));
  EXPECT_EQ(value("k"), largest);
  VMS_ASSERT_OK(run("k", [&](OptView) { return Change::put(std::string(1 << 20, 'M')); }));
  EXPECT_EQ(seenCopy, largest);
  EXPECT_EQ(value("k"), std::string(1 << 20, 'M'));
  // Delete; delete and keep of an absent key leave it absent.
  VMS_ASSERT_OK(run("k", [](OptView) { return Change::del(); }));
  EXPECT_TRUE(t_->get("k", &seenCopy).isNotFound());
  VMS_ASSERT_OK(run("k", [](OptView) { return Change::del(); }));
  EXPECT_FALSE(seen.has_value());
  VMS_ASSERT_OK(run("k", [](OptView) { return Change::keep(); }));
  EXPECT_TRUE(t_->get("k", &seenCopy).isNotFound());
  // An empty value is present, not absent.
  VMS_ASSERT_OK(t_->put("e", ""));
  VMS_ASSERT_OK(run("e", [](OptView) { return Change::keep(); }));
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seenCopy, "");
  VMS_ASSERT_OK(run("e", [](OptView) { return Change::put("x"); }));
  EXPECT_EQ(value("e"), "x");
}

TEST_F(UpdateTest, AnExceptionOfTheFunctionPropagatesWithNothingChangedOrHeld) {
  VMS_ASSERT_OK(t_->put("k", "v"));
  EXPECT_THROW(t_->update("k", [](OptView) -> Change { throw std::runtime_error("no"); }), std::runtime_error);
  EXPECT_EQ(value("k"), "v");
  // The key's lock and the writer gate were let go: writes of the key and a checkpoint
  // go on.
  VMS_ASSERT_OK(t_->put("k", "w"));
  VMS_ASSERT_OK(increment(t_, "k2"));
  VMS_ASSERT_OK(db_->sync());
  EXPECT_EQ(value("k"), "w");
}

TEST_F(UpdateTest, BadInputChangesNothingAndCallsNoFunction) {
  int calls = 0;
  auto fn = [&](OptView) {
    calls++;
    return Change::put("v");
  };
  Status s = t_->update("", fn);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.toString();
  s = t_->update(std::string(vmstore::kMaxKeySize + 1, 'k'), fn);
  EXPECT_EQ(s.code(), Status::Code::kTooBig) << s.toString();
  s = t_->update("k", nullptr, nullptr);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.toString();
  EXPECT_EQ(calls, 0);
  VMS_ASSERT_OK(t_->update(std::string(vmstore::kMaxKeySize, 'k'), fn));  // the longest key is fine
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(value(std::string(vmstore::kMaxKeySize, 'k')), "v");
  std::string v;
  EXPECT_TRUE(t_->get("k", &v).isNotFound());
  // A dropped tree answers NotFound, as put does; a closed database InvalidArgument.
  vmstore::Tree* other;
  VMS_ASSERT_OK(db_->openTree("other", true, &other));
  VMS_ASSERT_OK(db_->dropTree("other"));
  s = other->update("k", fn);
  EXPECT_EQ(s.code(), Status::Code::kNotFound) << s.toString();
  VMS_ASSERT_OK(db_->close());
  calls = 0;
  s = t_->update("k", fn);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.toString();
  EXPECT_EQ(calls, 0);
  db_.reset();
}

// The C API: every return of the function and every bad input.
struct CUpdate {
  int rc = VMS_UPDATE_KEEP;
  const void* next = nullptr;
  size_t nextLen = 0;
  bool pointIntoOld = false;  // *newval = val + 1, *newlen = vlen - 1
  int calls = 0;
  std::string seen;
  bool found = false;
};

int cUpdate(void* ctx, const void* val, size_t vlen, const void** newval, size_t* newlen) {
  auto* u = static_cast<CUpdate*>(ctx);
  u->calls++;
  u->found = val != nullptr;
  u->seen = val != nullptr ? std::string(static_cast<const char*>(val), vlen) : "";
  if (u->pointIntoOld) {
    *newval = static_cast<const char*>(val) + 1;
    *newlen = vlen - 1;
  } else {
    *newval = u->next;
    *newlen = u->nextLen;
  }
  return u->rc;
}

TEST_F(UpdateTest, CApiOutcomesAndBadInput) {
  vms_tree* t = reinterpret_cast<vms_tree*>(t_);
  CUpdate u;
  auto get = [&](const char* key) {
    char buf[64];
    size_t len = 0;
    int rc = vms_get(t, key, std::strlen(key), buf, sizeof buf, &len);
    return rc == VMS_OK ? std::string(buf, std::min(len, sizeof buf)) : "<" + std::to_string(rc) + ">";
  };
  // Put on an absent key, then the same size, then a suffix of the current value.
  u.rc = VMS_UPDATE_PUT;
  u.next = "hello";
  u.nextLen = 5;
  EXPECT_EQ(vms_update(t, "k", 1, cUpdate, &u), VMS_OK);
  EXPECT_FALSE(u.found);
  EXPECT_EQ(get("k"), "hello");
  u.next = "HELLO";
  EXPECT_EQ(vms_update(t, "k", 1, cUpdate, &u), VMS_OK);
  EXPECT_TRUE(u.found);
  EXPECT_EQ(u.seen, "hello");
  EXPECT_EQ(get("k"), "HELLO");
  u.pointIntoOld = true;
  EXPECT_EQ(vms_update(t, "k", 1, cUpdate, &u), VMS_OK);
  EXPECT_EQ(get("k"), "ELLO");
  u.pointIntoOld = false;
  // An empty value: NULL with length 0 is fine.
  u.next = nullptr;
  u.nextLen = 0;
  EXPECT_EQ(vms_update(t, "e", 1, cUpdate, &u), VMS_OK);
  EXPECT_EQ(get("e"), "");
  // Keep.
  u.rc = VMS_UPDATE_KEEP;
  EXPECT_EQ(vms_update(t, "k", 1, cUpdate, &u), VMS_OK);
  EXPECT_EQ(get("k"), "ELLO");
  // Abort with the caller's code: returned as is, nothing changed.
  u.rc = VMS_EUSER - 3;
  u.next = "zz";
  u.nextLen = 2;
  EXPECT_EQ(vms_update(t, "k", 1, cUpdate, &u), VMS_EUSER - 3);
  EXPECT_STREQ(vms_strerror(VMS_EUSER - 3), "error code of the caller");
  EXPECT_NE(std::string(vms_last_error()).find("-103"), std::string::npos) << vms_last_error();
  EXPECT_EQ(get("k"), "ELLO");
  // A return value that is no outcome, a NULL value with a length, a value too big.
  u.calls = 0;
  u.rc = 7;
  EXPECT_EQ(vms_update(t, "k", 1, cUpdate, &u), VMS_EINVAL);
  EXPECT_NE(std::string(vms_last_error()).find("returned 7"), std::string::npos) << vms_last_error();
  u.rc = VMS_UPDATE_PUT;
  u.next = nullptr;
  u.nextLen = 3;
  EXPECT_EQ(vms_update(t, "k", 1, cUpdate, &u), VMS_EINVAL);
  vmsunit::ZeroBuffer big(VMS_MAX_VALUE_SIZE + 1);  // zero pages, refused unread
  u.next = big.data();
  u.nextLen = big.size();
  EXPECT_EQ(vms_update(t, "k", 1, cUpdate, &u), VMS_ETOOBIG);
  EXPECT_EQ(u.calls, 3);
  EXPECT_EQ(get("k"), "ELLO");
  // Delete, then delete of the absent key.
  u.rc = VMS_UPDATE_DELETE;
  EXPECT_EQ(vms_update(t, "k", 1, cUpdate, &u), VMS_OK);
  EXPECT_EQ(get("k"), "<1>");
  EXPECT_EQ(vms_update(t, "k", 1, cUpdate, &u), VMS_OK);
  EXPECT_FALSE(u.found);
  // Bad arguments: the function is never called.
  u.calls = 0;
  u.rc = VMS_UPDATE_PUT;
  u.next = "v";
  u.nextLen = 1;
  EXPECT_EQ(vms_update(nullptr, "k", 1, cUpdate, &u), VMS_EINVAL);
  EXPECT_EQ(vms_update(t, nullptr, 1, cUpdate, &u), VMS_EINVAL);
  EXPECT_EQ(vms_update(t, "k", 1, nullptr, &u), VMS_EINVAL);
  EXPECT_EQ(vms_update(t, "k", 0, cUpdate, &u), VMS_EINVAL);
  std::string longKey(VMS_MAX_KEY_SIZE + 1, 'k');
  EXPECT_EQ(vms_update(t, longKey.data(), longKey.size(), cUpdate, &u), VMS_ETOOBIG);
  EXPECT_EQ(u.calls, 0);
  EXPECT_EQ(get("k"), "<1>");
}

// Many threads add to a few counters through update while others insert keys into the
// same leaves (splits) and read: no increment is lost, in every durability mode.
void countersLoseNothing(const std::string& dir, const std::string& config) {
  auto db = openDb(dir, config);
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  const int threads = 6, counters = 5;
  const int each = config.find("durability=sync") != std::string::npos ? scaled(150, 50) : scaled(3000, 600);
  std::atomic<int> failed{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; i++) {
    ts.emplace_back([&, i] {
      for (int j = 0; j < each; j++) {
        // Values of two sizes, so that both the in-place and the put path race.
        std::string key = numKey("c", (i + j) % counters);
        std::string next;
        Status s = t->update(key, [&](OptView cur) {
          uint64_t v = cur ? asU64(*cur) + 1 : 1;
          next = u64(v) + std::string(v % 7 == 0 ? 20 : 4, 'p');
          return Change::put(next);
        });
        if (!s.ok()) failed++;
      }
    });
  }
  std::thread inserter([&] {
    for (int j = 0; !stop.load(); j++) {
      if (!t->put(numKey("c", j % counters) + numKey("-filler", j), std::string(100, 'f')).ok()) failed++;
    }
  });
  std::thread reader([&] {
    std::string v;
    uint64_t last[counters] = {};
    while (!stop.load()) {
      for (int c = 0; c < counters; c++) {
        if (t->get(numKey("c", c), &v).ok()) {
          if (asU64(v) < last[c]) failed++;  // a counter never goes back
          last[c] = asU64(v);
        }
      }
    }
  });
  for (auto& th : ts) th.join();
  stop = true;
  inserter.join();
  reader.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(counterSum(t, counters), static_cast<uint64_t>(threads) * each) << config;
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

TEST(UpdateConcurrency, CountersLoseNothingWithoutLog) {
  countersLoseNothing(freshDir(), "pool_size=8M,durability=none");
}
TEST(UpdateConcurrency, CountersLoseNothingWithAsyncLog) {
  countersLoseNothing(freshDir(), "pool_size=8M,durability=async");
}
TEST(UpdateConcurrency, CountersLoseNothingWithSyncLog) {
  countersLoseNothing(freshDir(), "pool_size=8M,durability=sync");
}

// Many tasks on two threads add to the same counters: a task that waits for a key's
// lock held by another task of its thread lets that one go on.
TEST(UpdateConcurrency, CountersLoseNothingInTaskMode) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=8M,durability=async");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  std::unique_ptr<vmstore::TaskPool> pool;
  VMS_ASSERT_OK(vmstore::TaskPool::create(2, 32, &pool));
  const int tasks = 64, each = scaled(300, 100), counters = 3;
  std::atomic<int> failed{0};
  for (int k = 0; k < tasks; k++) {
    pool->submit([&, k] {
      for (int j = 0; j < each; j++) {
        if (!increment(t, numKey("c", (k + j) % counters)).ok()) failed++;
        if (j % 50 == 0 && !t->put(numKey("f", k * each + j), "filler").ok()) failed++;
      }
    });
  }
  VMS_ASSERT_OK(db->sync());  // a checkpoint while the tasks update
  VMS_ASSERT_OK(pool->wait());
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(counterSum(t, counters), static_cast<uint64_t>(tasks) * each);
  VMS_ASSERT_OK(db->close());
}

// Updates race plain puts of the same keys. Each value is (generation, count, padding of
// a varying size): updates add to count and keep the generation they read; a writer puts
// ever newer generations with count 0. Once a put of generation g has returned, no update
// may see an older generation (it would have overwritten the put with a value computed
// from the one before), and at the end each key's count is exactly the number of
// increments the updates applied to its last generation.
TEST(UpdateConcurrency, UpdatesAndPutsOfTheSameKeysLoseNothing) {
  for (std::string mode : {"none", "async"}) {
    std::string config = "pool_size=8M,durability=" + mode;
    SCOPED_TRACE(config);
    std::string dir = freshDir(mode);
    auto db = openDb(dir, config);
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    const int keys = 4, threads = 4, each = scaled(4000, 800);
    auto encode = [](uint64_t gen, uint64_t count, size_t pad) { return u64(gen) + u64(count) + std::string(pad, 'p'); };
    std::atomic<uint64_t> published[keys];
    for (int k = 0; k < keys; k++) {
      published[k] = 0;
      VMS_ASSERT_OK(t->put(numKey("g", k), encode(0, 0, 0)));
    }
    std::atomic<int> stale{0}, failed{0};
    std::atomic<bool> stop{false};
    // applied[i][k]: increments thread i applied to the generation it saw last.
    std::vector<std::vector<std::vector<uint64_t>>> applied(threads, std::vector<std::vector<uint64_t>>(keys));
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; i++) {
      ts.emplace_back([&, i] {
        for (int j = 0; j < each; j++) {
          int k = (i + j) % keys;
          uint64_t floor = published[k].load();
          uint64_t gen = 0;
          std::string next;
          Status s = t->update(numKey("g", k), [&](OptView cur) {
            gen = asU64(cur->substr(0, 8));
            if (gen < floor) stale++;
            if (j % 8 == 0) std::this_thread::yield();  // a wider window for a racing put
            uint64_t count = asU64(cur->substr(8, 8)) + 1;
            next = encode(gen, count, (count % 3) * 8);
            return Change::put(next);
          });
          if (!s.ok()) {
            failed++;
            continue;
          }
          auto& per = applied[i][k];
          if (per.size() <= gen) per.resize(gen + 1);
          per[gen]++;
        }
      });
    }
    std::thread putter([&] {
      for (uint64_t gen = 1; !stop.load(); gen++) {
        int k = static_cast<int>(gen % keys);
        if (!t->put(numKey("g", k), encode(gen, 0, gen % 2 * 4)).ok()) failed++;
        published[k] = gen;
        std::this_thread::yield();
      }
    });
    for (auto& th : ts) th.join();
    stop = true;
    putter.join();
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(stale.load(), 0) << "an update saw a generation older than a put that had returned";
    for (int k = 0; k < keys; k++) {
      std::string v;
      VMS_ASSERT_OK(t->get(numKey("g", k), &v));
      uint64_t gen = asU64(v.substr(0, 8)), count = asU64(v.substr(8, 8));
      EXPECT_EQ(gen, published[k].load()) << "the last put of key " << k << " was lost";
      uint64_t sum = 0;
      for (int i = 0; i < threads; i++) sum += applied[i][k].size() > gen ? applied[i][k][gen] : 0;
      EXPECT_EQ(count, sum) << "key " << k << ", generation " << gen;
    }
    VMS_ASSERT_OK(db->close());
  }
}

// A log file that fills up while updates run: the update that finds it full lets a
// checkpoint switch files and calls its function again on the value as it is then.
// Nothing is lost, and every update returns OK. The checkpoints' page writes are held
// (the fault layer keeps them waiting) until the updates stop making progress, so the
// log file fills before a checkpoint can let it switch, however fast the checkpointer
// is beside the updates (under ThreadSanitizer it used to keep up).
TEST(UpdateDurability, FullLogFileReRunsTheFunctionAndLosesNothing) {
  FaultScope faults;
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=8M,durability=async,log_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  faults.io().hold(vmstore::internal::FaultIo::Op::kWrite, "data.vms");
  std::atomic<uint64_t> calls{0};
  std::atomic<bool> done{false};
  std::thread releaser([&] {
    // The updater waits for the held checkpoint once the log file is full: no call for
    // 200 ms while a page write is held. Then the checkpoint may go on.
    uint64_t last = calls.load();
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const uint64_t now = calls.load();
      if (now == last && faults.io().holding() > 0) break;
      last = now;
    }
    faults.io().unhold();
  });
  struct Release {  // on every way out, before the database closes
    std::atomic<bool>& done;
    std::thread& releaser;
    ~Release() {
      done = true;
      if (releaser.joinable()) releaser.join();
    }
  } release{done, releaser};
  uint64_t updates = 0;
  uint64_t expect = 0;
  for (; updates < 20000 && (calls.load() == updates || updates < 2000); updates++) {
    std::string next;
    VMS_ASSERT_OK(t->update("counter", [&](OptView cur) {
      calls++;
      uint64_t v = cur ? asU64(*cur) + 1 : 1;
      next = u64(v) + std::string(3000 + v % 2, 'x');  // about 3 KiB of log per update
      return Change::put(next);
    }));
    expect++;
  }
  done = true;
  releaser.join();
  EXPECT_GT(calls.load(), updates) << "the log file never filled up before its checkpoint; the re-run was not exercised";
  std::string v;
  VMS_ASSERT_OK(t->get("counter", &v));
  EXPECT_EQ(asU64(v), expect);
  VMS_ASSERT_OK(db->close());
}

// Updates survive a crash: the log holds each change as the put or delete it was, and
// nothing for an update that kept or aborted.
TEST(UpdateDurability, ChangesSurviveACrashAndKeepsAndAbortsLogNothing) {
  std::string dir = freshDir();
  const int n = 300;
  pid_t pid = fork();
  if (pid == 0) {
    std::unique_ptr<vmstore::Database> db;
    if (!vmstore::Database::open(dir, "pool_size=4M,durability=async", &db).ok()) _exit(3);
    vmstore::Tree* t;
    if (!db->openTree("", true, &t).ok()) _exit(4);
    for (int i = 0; i < n; i++) {
      if (!increment(t, "counter").ok()) _exit(5);                                       // logged
      if (!t->update("counter", [](OptView) { return Change::keep(); }).ok()) _exit(6);  // not logged
      if (t->update("counter", [](OptView) { return Change::abort(Status::Busy("x")); }).code() !=
          Status::Code::kBusy) {
        _exit(7);
      }
    }
    if (!increment(t, "gone").ok()) _exit(8);
    if (!t->update("gone", [](OptView) { return Change::del(); }).ok()) _exit(9);
    if (!t->update("never", [](OptView) { return Change::del(); }).ok()) _exit(10);  // absent: not logged
    std::string grown;
    if (!t->update("grown", [&](OptView) { return Change::put(grown = std::string(2000, 'g')); }).ok()) _exit(11);
    raise(SIGKILL);  // acknowledged, never checkpointed
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  auto db = openDb(dir, "pool_size=4M");
  ASSERT_TRUE(db);
  // The tree's creation, n increments, the put and delete of "gone", the put of "grown".
  EXPECT_EQ(db->stats().recovered_records, static_cast<uint64_t>(n + 4));
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string v;
  VMS_ASSERT_OK(t->get("counter", &v));
  EXPECT_EQ(asU64(v), static_cast<uint64_t>(n));
  EXPECT_TRUE(t->get("gone", &v).isNotFound());
  EXPECT_TRUE(t->get("never", &v).isNotFound());
  VMS_ASSERT_OK(t->get("grown", &v));
  EXPECT_EQ(v, std::string(2000, 'g'));
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

TEST(UpdateDurability, AValueTooLargeForTheLogIsMadeDurableByACheckpoint) {
  // An update whose put would take over log_size / 16 is not logged (as a put of it
  // would not be): it returns after a checkpoint that holds it, and survives a crash.
  std::string dir = freshDir();
  const std::string big(3 << 20, 'u');
  pid_t pid = fork();
  if (pid == 0) {
    std::unique_ptr<vmstore::Database> db;
    if (!vmstore::Database::open(dir, "pool_size=64M,durability=sync,log_size=16M", &db).ok()) _exit(3);
    vmstore::Tree* t;
    if (!db->openTree("", true, &t).ok()) _exit(4);
    if (!t->put("k", "small").ok()) _exit(5);
    uint64_t before = db->stats().checkpoints;
    if (!t->update("k", [&](OptView) { return Change::put(big); }).ok()) _exit(6);
    if (db->stats().checkpoints <= before) _exit(7);
    raise(SIGKILL);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  auto db = openDb(dir, "pool_size=64M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string v;
  VMS_ASSERT_OK(t->get("k", &v));
  EXPECT_TRUE(v == big);
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

// A same-size change (an update's or a batch's put over a value of its size) is logged as
// the bytes that changed: the log after a checkpoint holds a fraction of the rows it
// changed, and replaying it gives every row exactly, also rows that changed size, were
// deleted or were changed twice in one batch.
TEST(UpdateDurability, SameSizeChangesAreLoggedAsTheirChangedBytes) {
  std::string dir = freshDir();
  const int rows = 200, updates = 2000, batches = 100;
  const size_t rowSize = 300;
  using Model = std::map<std::string, std::string>;
  using BatchOps = std::vector<std::pair<std::string, std::optional<std::string>>>;
  auto changed = [](std::string v, size_t at, uint64_t bytes) {
    if (v.size() >= at + 8) std::memcpy(v.data() + at, &bytes, 8);
    return v;
  };
  // The test's changes, applied to *model as they are made; the child also makes them in
  // the database (onUpdate, onBatch). Returns how many rows were changed.
  auto run = [&](Model* model, auto&& onUpdate, auto&& onBatch) {
    for (int r = 0; r < rows; r++) (*model)[numKey("row", r)] = std::string(rowSize, static_cast<char>('A' + r % 26));
    uint64_t changes = 0;
    Rng rng(11);
    for (int i = 0; i < updates; i++) {
      std::string key = numKey("row", rng.uniform(0, rows - 1));
      size_t at = rng.uniform(0, rowSize - 8);
      uint64_t bytes = rng.next();
      onUpdate(key, at, bytes);
      if (auto it = model->find(key); it != model->end()) {
        it->second = changed(it->second, at, bytes);
        changes++;
      }
      if (i % (updates / batches) != 0) continue;
      BatchOps b;
      for (int j = 0; j < 5; j++) {
        key = numKey("row", rng.uniform(0, rows - 1));
        uint64_t kind = rng.uniform(0, 9);
        auto it = model->find(key);
        if (kind == 0) {
          b.push_back({key, std::nullopt});                        // a delete
        } else if (kind == 1 || it == model->end()) {
          b.push_back({key, std::string(rowSize + 7 * (kind == 1), 'n')});  // another size, or new
        } else {
          b.push_back({key, changed(it->second, rng.uniform(0, rowSize - 8), rng.next())});  // a row update
        }
      }
      b.push_back(b.back());  // a key twice in one batch
      if (b.back().second) (*b.back().second)[0] = 'Z';
      for (const auto& [k, v] : b) {
        if (v) {
          (*model)[k] = *v;
        } else {
          model->erase(k);
        }
        changes++;
      }
      onBatch(b);
    }
    return changes;
  };
  pid_t pid = fork();
  if (pid == 0) {
    std::unique_ptr<vmstore::Database> db;
    if (!vmstore::Database::open(dir, "pool_size=8M,durability=async", &db).ok()) _exit(3);
    vmstore::Tree* t;
    if (!db->openTree("", true, &t).ok()) _exit(4);
    Model model;
    bool ok = true;
    bool loaded = false;
    run(
        &model,
        [&](const std::string& key, size_t at, uint64_t bytes) {
          if (!loaded) {  // the rows, then a checkpoint: the log from here holds only changes
            for (const auto& [k, v] : model) ok = ok && t->put(k, v).ok();
            ok = ok && db->sync().ok();
            loaded = true;
          }
          std::string next;
          ok = ok && t->update(key, [&](OptView cur) {
                        if (!cur) return Change::keep();
                        next = changed(std::string(*cur), at, bytes);
                        return Change::put(next);
                      }).ok();
        },
        [&](const BatchOps& ops) {
          vmstore::WriteBatch b;
          for (const auto& [key, value] : ops) ok = ok && (value ? b.put(t, key, *value) : b.del(t, key)).ok();
          ok = ok && db->write(b).ok();
        });
    if (!ok) _exit(7);
    raise(SIGKILL);
  }
  Model model;
  uint64_t changes = run(&model, [](const std::string&, size_t, uint64_t) {}, [](const BatchOps&) {});
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  auto db = openDb(dir, "pool_size=8M");
  ASSERT_TRUE(db);
  vmstore::Stats st = db->stats();
  // Whole values would take over 300 bytes per changed row; patches under 100.
  EXPECT_GE(st.recovered_operations, changes);
  EXPECT_LT(st.recovered_bytes, changes * 100) << changes << " rows changed";
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  Status it;
  KV want(model.begin(), model.end());
  KV got = scanForward(t, &it);
  VMS_ASSERT_OK(it);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "the replayed rows differ from the model";
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
  // Reopened after the clean close: the same rows.
  db = openDb(dir, "pool_size=8M");
  ASSERT_TRUE(db);
  VMS_ASSERT_OK(db->openTree("", false, &t));
  EXPECT_TRUE(scanForward(t, &it) == want);
  VMS_ASSERT_OK(db->close());
}

}  // namespace
