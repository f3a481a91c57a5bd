// Durability behaviour of the database as a user sees it (issue 6): group commit, the
// bounded log, a full device and a failing device under the log, recovery statistics,
// and what each durability mode writes. Crashes and power cuts: crash_test.cpp and
// power_loss_test.cpp.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "os/fault_io.hpp"
#include "test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::internal::FaultIo;



TEST(Durability, ConcurrentSyncWritersShareLogFlushes) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=4M,durability=sync");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  const int threads = 8, each = scaled(60, 30);
  std::vector<std::thread> ts;
  std::atomic<int> failed{0};
  for (int i = 0; i < threads; i++) {
    ts.emplace_back([&, i] {
      for (int j = 0; j < each; j++) {
        if (!t->put(numKey("t" + std::to_string(i) + "-", j), "v").ok()) failed++;
      }
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(failed.load(), 0);
  vmstore::Stats s = db->stats();
  EXPECT_GT(s.log_flushes, 0u);
  EXPECT_LT(s.log_flushes, static_cast<uint64_t>(threads * each)) << "group commit: no flush served two writers";
  VMS_ASSERT_OK(db->close());
}

TEST(Durability, LogStaysBoundedInALongWriteRun) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=8M,durability=async,log_size=2M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  uint64_t before = db->stats().checkpoints;
  std::string v(500, 'v');
  const int n = scaled(40000, 15000);  // about 20 MB of log records (10 times log_size)
  uint64_t maxFile = 0;
  // The first interval has the whole budget (log_size less the 128 KiB ring), as the
  // other file is empty; the later ones about three quarters of it once the file before
  // them is covered and cut back to a quarter (in 64 KiB units), less while it is not (a
  // checkpoint late on a loaded machine lets an interval reach its limit).
  uint64_t maxFirst = 0;
  uint64_t maxLater = 0;
  for (int i = 0; i < n; i++) {
    VMS_ASSERT_OK(t->put(numKey("k", i % 5000), v));
    if (i % 500 == 0) {
      vmstore::Stats s = db->stats();
      maxFile = std::max(maxFile, s.log_file_bytes);
      uint64_t& max = s.checkpoints == before ? maxFirst : maxLater;
      max = std::max(max, s.log_bytes);
    }
  }
  vmstore::Stats s = db->stats();
  maxFile = std::max(maxFile, s.log_file_bytes);
  EXPECT_GE(s.checkpoints - before, 4u) << "the log was not recycled by checkpoints";
  EXPECT_LE(maxFile, 2ull << 20) << "the two log files together above log_size";
  const uint64_t budget = (2ull << 20) - (128ull << 10);
  const uint64_t keep = budget / 4 / (64 << 10) * (64 << 10);  // what a covered file keeps
  EXPECT_LE(maxFirst, budget) << "the first interval's log above the budget";
  EXPECT_LE(maxLater, budget - keep) << "a later interval's log above the budget less a covered file";
  VMS_ASSERT_OK(db->close());
}

TEST(Durability, NoneWritesNoLogAndSessionsThatOnlyReadCreateNone) {
  std::string dir = freshDir();
  {
    auto db = openDb(dir, "pool_size=1M,durability=none");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    VMS_ASSERT_OK(t->put("a", "b"));
    EXPECT_EQ(db->stats().log_bytes, 0u);
    VMS_ASSERT_OK(db->close());
  }
  EXPECT_FALSE(pathExists(dir + "/log-0.vms") || pathExists(dir + "/log-1.vms"));
  {
    auto db = openDb(dir, "pool_size=1M,durability=sync");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", false, &t));
    std::string v;
    VMS_ASSERT_OK(t->get("a", &v));
    VMS_ASSERT_OK(db->close());
  }
  EXPECT_FALSE(pathExists(dir + "/log-0.vms") || pathExists(dir + "/log-1.vms"))
      << "a session that only read created the log";
}

TEST(Durability, RecoveryIsReportedInStats) {
  std::string dir = freshDir();
  const int n = 500;
  pid_t pid = fork();
  if (pid == 0) {
    std::unique_ptr<vmstore::Database> db;
    if (!vmstore::Database::open(dir, "pool_size=1M,durability=async", &db).ok()) _exit(3);
    vmstore::Tree* t;
    if (!db->openTree("", true, &t).ok()) _exit(4);
    for (int i = 0; i < n; i++) {
      if (!t->put(numKey("k", i), "v").ok()) _exit(5);
    }
    raise(SIGKILL);  // acknowledged, never checkpointed
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Stats s = db->stats();
  EXPECT_EQ(s.recovered_records, static_cast<uint64_t>(n + 1));  // the tree's creation, the puts
  EXPECT_EQ(s.recovered_operations, static_cast<uint64_t>(n + 1));
  EXPECT_GT(s.recovered_bytes, 0u);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  EXPECT_EQ(scanForward(t).size(), static_cast<size_t>(n));
  VMS_ASSERT_OK(db->close());
  db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  EXPECT_EQ(db->stats().recovered_records, 0u) << "a clean close left records to replay";
  VMS_ASSERT_OK(db->close());
}

// Replay with data larger than the pool: operations are applied a window at a time,
// after the pages their keys lead to were read with many reads in flight. Every put,
// overwrite and delete after the checkpoint, on a tree that existed and on one the log
// creates, is there after the reopen, in order.
TEST(Durability, RecoveryWithDataLargerThanThePoolRestoresEveryOperation) {
  std::string dir = freshDir();
  struct Op {
    bool inB;  // tree "b" (created after the checkpoint), else the default tree
    std::string key, value;  // empty value: delete
  };
  const int base = scaled(6000, 3000);
  std::vector<Op> ops;
  std::mt19937_64 rng(7);
  for (int i = 0; i < scaled(5000, 2500); i++) {
    const bool inB = rng() % 4 == 0;
    const std::string key = numKey("k", rng() % (base + base / 4));  // mostly existing keys
    ops.push_back({inB, key, rng() % 5 == 0 ? std::string() : std::string(300 + rng() % 300, char('a' + i % 26))});
  }
  const std::string baseValue(500, 'v');
  pid_t pid = fork();
  if (pid == 0) {
    std::unique_ptr<vmstore::Database> db;
    if (!vmstore::Database::open(dir, "pool_size=1M,durability=async,log_size=256M", &db).ok()) _exit(3);
    vmstore::Tree *a, *b;
    if (!db->openTree("", true, &a).ok()) _exit(4);
    for (int i = 0; i < base; i++) {
      if (!a->put(numKey("k", i), baseValue).ok()) _exit(5);
    }
    if (!db->sync().ok() || !db->openTree("b", true, &b).ok()) _exit(6);
    for (const Op& op : ops) {
      vmstore::Tree* t = op.inB ? b : a;
      Status st = op.value.empty() ? t->del(op.key) : t->put(op.key, op.value);
      if (!st.ok() && !st.isNotFound()) _exit(7);
    }
    raise(SIGKILL);  // acknowledged after the checkpoint, never checkpointed
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  std::map<std::string, std::string> wantA, wantB;
  for (int i = 0; i < base; i++) wantA[numKey("k", i)] = baseValue;
  uint64_t logged = 1;  // the creation of "b"; a delete of an absent key logs nothing
  for (const Op& op : ops) {
    auto& want = op.inB ? wantB : wantA;
    if (op.value.empty()) {
      logged += want.erase(op.key);
    } else {
      want[op.key] = op.value;
      logged++;
    }
  }
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Stats s = db->stats();
  EXPECT_EQ(s.recovered_operations, logged);
  EXPECT_GT(s.misses, 0u) << "the data fit the pool: the test does not replay out of memory";
  for (const char* name : {"", "b"}) {
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree(name, false, &t));
    auto got = scanForward(t);
    const auto& want = *name == 0 ? wantA : wantB;
    ASSERT_EQ(got.size(), want.size()) << "tree '" << name << "'";
    size_t i = 0;
    for (const auto& [k, v] : want) {
      EXPECT_EQ(got[i].first, k);
      EXPECT_EQ(got[i].second, v) << "key " << k;
      i++;
    }
  }
  VMS_ASSERT_OK(db->close());
}

// Replay with data that fits the pool applies runs of puts and deletes of one tree in
// groups whose leaves are found side by side before the writes (DatabaseImpl::replayLog).
// Every kind of operation, mixed within runs: the same key written twice in one run,
// deletes of present and absent keys, values stored out of line, same-size updates
// (logged as patches), writes to two trees in turn, and a tree dropped and created again.
TEST(Durability, RecoveryAppliesRunsOfWritesInTheirOrder) {
  std::string dir = freshDir();
  struct Op {
    int tree;  // 0: "", 1: "x", 2: "y"; -1: drop "y" and create it again
    std::string key, value;  // empty value: delete; "=" prefix: a same-size update
  };
  std::vector<Op> ops;
  std::mt19937_64 rng(11);
  const int keys = 3000;
  for (int i = 0; i < scaled(30000, 10000); i++) {
    if (i % 9000 == 8999) {
      ops.push_back({-1, {}, {}});
      continue;
    }
    const int tree = (i / 50) % 7 == 6 ? 1 : ((i / 50) % 11 == 10 ? 2 : 0);  // runs of 50 per tree
    const std::string key = numKey("k", rng() % keys);
    const int what = static_cast<int>(rng() % 20);
    std::string value;
    if (what < 3) {
      value = "";  // delete
    } else if (what < 6) {
      value = "=" + std::string(40, char('A' + i % 26));  // update in place when 41 bytes are there
    } else if (what == 6) {
      value = std::string(5000 + rng() % 3000, char('a' + i % 26));  // out of line
    } else {
      value = std::string(41, char('a' + i % 26));
    }
    ops.push_back({tree, key, value});
    if (what == 7) ops.push_back({tree, key, std::string(41, char('0' + i % 10))});  // the same key again at once
  }
  pid_t pid = fork();
  if (pid == 0) {
    std::unique_ptr<vmstore::Database> db;
    if (!vmstore::Database::open(dir, "pool_size=64M,durability=async,log_size=256M", &db).ok()) _exit(3);
    vmstore::Tree* t[3];
    if (!db->openTree("", true, &t[0]).ok() || !db->openTree("x", true, &t[1]).ok() ||
        !db->openTree("y", true, &t[2]).ok()) {
      _exit(4);
    }
    for (const Op& op : ops) {
      Status st;
      if (op.tree < 0) {
        st = db->dropTree("y");
        if (st.ok()) st = db->openTree("y", true, &t[2]);
      } else if (op.value.empty()) {
        st = t[op.tree]->del(op.key);
      } else if (op.value[0] == '=') {
        const std::string_view now(op.value.data() + 1, op.value.size() - 1);
        st = t[op.tree]->update(op.key, [&](std::optional<std::string_view> cur) {
          return cur && cur->size() == now.size() ? vmstore::Change::put(now) : vmstore::Change::keep();
        });
      } else {
        st = t[op.tree]->put(op.key, op.value);
      }
      if (!st.ok() && !st.isNotFound()) _exit(5);
    }
    raise(SIGKILL);  // acknowledged, never checkpointed
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  std::map<std::string, std::string> want[3];
  for (const Op& op : ops) {
    if (op.tree < 0) {
      want[2].clear();
    } else if (op.value.empty()) {
      want[op.tree].erase(op.key);
    } else if (op.value[0] == '=') {
      auto it = want[op.tree].find(op.key);
      if (it != want[op.tree].end() && it->second.size() == op.value.size() - 1) it->second = op.value.substr(1);
    } else {
      want[op.tree][op.key] = op.value;
    }
  }
  auto db = openDb(dir, "pool_size=64M");
  ASSERT_TRUE(db);
  EXPECT_GT(db->stats().recovered_operations, static_cast<uint64_t>(ops.size() / 2));
  const char* names[3] = {"", "x", "y"};
  for (int i = 0; i < 3; i++) {
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree(names[i], false, &t));
    auto got = scanForward(t);
    ASSERT_EQ(got.size(), want[i].size()) << "tree '" << names[i] << "'";
    size_t j = 0;
    int wrong = 0;
    for (const auto& [k, v] : want[i]) {
      if (got[j].first != k || got[j].second != v) wrong++;
      j++;
    }
    EXPECT_EQ(wrong, 0) << "tree '" << names[i] << "'";
  }
  std::vector<std::string> problems;
  VMS_EXPECT_OK(db->check(&problems));
  VMS_ASSERT_OK(db->close());
}

TEST(Durability, FullDeviceFailsTheWriteAndKeepsEveryAcknowledgedOne) {
  FaultScope faults;
  std::string dir = freshDir();
  int acked = 0;
  {
    auto db = openDb(dir, "pool_size=16M,durability=async,log_size=64M");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    faults.io().spaceLimit(1 << 20);  // the log's first growth step fits, not the second
    std::string v(1000, 'v');
    Status s;
    for (; acked < 100000; acked++) {
      s = t->put(numKey("k", acked), v);
      if (!s.ok()) break;
    }
    ASSERT_EQ(s.code(), Status::Code::kNoSpace) << s.toString();
    std::string got;
    EXPECT_TRUE(t->get(numKey("k", acked), &got).isNotFound()) << "the failed put was applied";
    for (int i = 0; i < acked; i++) ASSERT_TRUE(t->get(numKey("k", i), &got).ok()) << i;
    db->close();  // its checkpoint may fail on the full device: the log keeps everything
  }
  faults.io().clearSpaceLimit();
  auto db = openDb(dir, "pool_size=16M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  EXPECT_EQ(scanForward(t).size(), static_cast<size_t>(acked));
  VMS_ASSERT_OK(db->close());
}

// Issue 6, item 3: a checkpoint never stops writers. Its page writes are held (the
// fault layer keeps them waiting) while the checkpoint is provably in progress; puts,
// deletes and batches with durability=sync complete meanwhile, and the checkpoint then
// commits and the database reopens with every acknowledged write.
TEST(Durability, CheckpointInProgressDoesNotStopWriters) {
  FaultScope faults;
  std::string dir = freshDir();
  {
    auto db = openDb(dir, "pool_size=64M,durability=sync");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    const int n = 3000;
    for (int i = 0; i < n; i++) VMS_ASSERT_OK(t->put(numKey("k", i), "v1"));
    uint64_t checkpoints = db->stats().checkpoints;
    faults.io().hold(FaultIo::Op::kWrite, "data.vms");  // the checkpoint's page writes wait (not the log's)
    Status synced;
    std::thread syncer([&] { synced = db->sync(); });
    for (int waited = 0; faults.io().holding() == 0 && waited < 20000; waited++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_GT(faults.io().holding(), 0u) << "the checkpoint never wrote";
    for (int i = 0; i < n; i++) VMS_ASSERT_OK(t->put(numKey("k", i), "v2"));
    for (int i = 0; i < n / 10; i++) VMS_ASSERT_OK(t->del(numKey("k", i)));
    vmstore::WriteBatch batch;
    VMS_ASSERT_OK(batch.put(t, "batch-a", "1"));
    VMS_ASSERT_OK(batch.put(t, "batch-b", "2"));
    VMS_ASSERT_OK(db->write(batch));
    EXPECT_GT(faults.io().holding(), 0u) << "the checkpoint finished while the writers ran";
    EXPECT_EQ(db->stats().checkpoints, checkpoints) << "the checkpoint committed while its writes were held";
    faults.io().unhold();
    syncer.join();
    VMS_ASSERT_OK(synced);
    EXPECT_EQ(db->stats().checkpoints, checkpoints + 1);
    expectCheckOk(db.get());
    // A crash: the device goes away (no final checkpoint at close); what the checkpoint
    // and the log hold must give every acknowledged write.
    faults.io().powerCut(7, true);
    db->close();
  }
  faults.io().revive();
  auto db = openDb(dir, "pool_size=64M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  KV got = scanForward(t);
  EXPECT_EQ(got.size(), 3000u - 300u + 2u);
  std::string v;
  VMS_ASSERT_OK(t->get(numKey("k", 2999), &v));
  EXPECT_EQ(v, "v2");
  EXPECT_TRUE(t->get(numKey("k", 0), &v).isNotFound());
  VMS_ASSERT_OK(t->get("batch-b", &v));
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

// A database left by a version with one journal file and one log file (journal.vms,
// log.vms) after a crash: the open moves them to the files of their interval and
// recovers every acknowledged write.
TEST(Durability, CrashedDatabaseOfTheOneFileLayoutRecovers) {
  std::string dir = freshDir();
  {
    FaultScope faults;
    auto db = openDb(dir, "pool_size=1M,durability=sync");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    for (int i = 0; i < 100; i++) VMS_ASSERT_OK(t->put(numKey("k", i), "v"));
    faults.io().powerCut(1, false);  // a crash: nothing more reaches the files
    db->close();
  }
  // The interval after the data file's checkpoint (the first: epoch 1) is in the files
  // of parity 1; give them the old names.
  ASSERT_TRUE(pathExists(dir + "/log-1.vms"));
  ASSERT_EQ(::rename((dir + "/log-1.vms").c_str(), (dir + "/log.vms").c_str()), 0);
  ASSERT_EQ(::rename((dir + "/journal-1.vms").c_str(), (dir + "/journal.vms").c_str()), 0);
  ::unlink((dir + "/journal-0.vms").c_str());
  ::unlink((dir + "/log-0.vms").c_str());
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  EXPECT_FALSE(pathExists(dir + "/log.vms") || pathExists(dir + "/journal.vms"));
  EXPECT_EQ(db->stats().recovered_operations, 101u);  // the tree's creation and 100 puts
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  EXPECT_EQ(scanForward(t).size(), 100u);
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

TEST(Durability, FailedLogSyncMakesTheDatabaseReadOnlyAndReopensConsistent) {
  FaultScope faults;
  std::string dir = freshDir();
  {
    // No zero-fill of the log, whose syncs would count too.
    auto db = openDb(dir, "pool_size=1M,durability=sync,log_zero_fill=false");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    faults.io().fail({FaultIo::Op::kSync, "/log-", 5, 1, EIO});
    for (int i = 0; i < 5; i++) VMS_ASSERT_OK(t->put(numKey("k", i), "v"));
    Status s = t->put(numKey("k", 5), "v");
    EXPECT_EQ(s.code(), Status::Code::kIOError) << s.toString();
    // Never retried as if nothing happened: read-only until reopened.
    EXPECT_EQ(t->put(numKey("k", 6), "v").code(), Status::Code::kIOError);
    EXPECT_EQ(db->sync().code(), Status::Code::kIOError);
    std::string v;
    VMS_EXPECT_OK(t->get(numKey("k", 0), &v));  // reads go on
    db->close();
  }
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  KV got = scanForward(t);
  EXPECT_TRUE(got.size() == 5 || got.size() == 6) << got.size() << " keys";  // the 6th: unknown
  std::string v;
  EXPECT_TRUE(t->get(numKey("k", 6), &v).isNotFound());
  expectCheckOk(db.get());
  VMS_ASSERT_OK(t->put(numKey("k", 7), "v"));
  VMS_ASSERT_OK(db->close());
}

// Under async a write returns once its record is in the log ring; a record too large for
// the ring is written to the log file at once. If that write fails, the put is not
// acknowledged: it fails, the database turns read-only, and a reopen is consistent.
TEST(Durability, AsyncRecordWrittenToTheFileThatFailsIsNotAcknowledged) {
  FaultScope faults;
  std::string dir = freshDir();
  // Over a quarter of the 64 KiB ring of log_size=1M, under the 64 KiB (log_size / 16)
  // above which a write is made durable by a checkpoint instead of the log.
  const std::string large(30 << 10, 'L');
  {
    auto db = openDb(dir, "pool_size=4M,durability=async,log_size=1M");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    for (int i = 0; i < 5; i++) VMS_ASSERT_OK(t->put(numKey("k", i), "v"));
    faults.io().fail({FaultIo::Op::kWrite, "/log-", 0, 1, EIO});
    Status s = t->put(numKey("k", 5), large);
    EXPECT_EQ(s.code(), Status::Code::kIOError) << s.toString();
    EXPECT_EQ(t->put(numKey("k", 6), "v").code(), Status::Code::kIOError);
    std::string v;
    VMS_EXPECT_OK(t->get(numKey("k", 0), &v));  // reads go on
    db->close();
  }
  auto db = openDb(dir, "pool_size=4M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  KV got = scanForward(t);
  ASSERT_EQ(got.size(), 5u);
  for (const auto& kv : got) EXPECT_EQ(kv.second, "v");
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

TEST(Durability, WriteTooLargeForTheLogIsMadeDurableByACheckpoint) {
  // A write whose record would take over 1/16 of log_size is not logged: the call
  // returns once a checkpoint holding it has committed (async durability too).
  std::string dir = freshDir();
  std::string v(4000, 'v');
  std::string big(3 << 20, 'b');  // one value of 3 MiB
  {
    FaultScope faults;
    auto db = openDb(dir, "pool_size=64M,durability=async,log_size=1M");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    vmstore::WriteBatch b;
    for (int i = 0; i < 10000; i++) VMS_ASSERT_OK(b.put(t, numKey("k", i), v));  // 40 MB of records
    uint64_t before = db->stats().checkpoints;
    VMS_ASSERT_OK(db->write(b));
    VMS_ASSERT_OK(t->put("big", big));
    EXPECT_GE(db->stats().checkpoints, before + 2) << "a checkpoint per unlogged write";
    VMS_ASSERT_OK(t->put("after", "ok"));  // small: logged as usual
    // A crash: nothing more reaches the files (no checkpoint at close).
    faults.io().powerCut(1, false);
    db->close();
  }
  auto db = openDb(dir, "pool_size=64M,durability=async,log_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string got;
  VMS_ASSERT_OK(t->get(numKey("k", 9999), &got));
  EXPECT_EQ(got, v);
  VMS_ASSERT_OK(t->get("big", &got));
  EXPECT_TRUE(got == big);
  VMS_ASSERT_OK(t->get("after", &got));
  EXPECT_EQ(scanForward(t).size(), 10002u);
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

}  // namespace
