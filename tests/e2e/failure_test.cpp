// Regression tests of issue 12: failures found by probing the C API with killed
// processes, injected I/O errors (os/fault_io.hpp under the data file and the journal),
// a full device, failed creations, huge pools, racing close and fork. Each test failed
// before its fix.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <string_view>
#include <thread>

#include "buffer/page.hpp"
#include "os/fault_io.hpp"
#include "test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::internal::FaultIo;
using Op = FaultIo::Op;

// Installs a FaultIo for the life of the object (before any database opens).


std::string key(int i) { return numKey("k", static_cast<uint64_t>(i), 8); }
std::string val(int version, int i) { return "v" + std::to_string(version) + "-" + std::to_string(i); }

// The tree's content equals exactly `version` of keys [0, n), except that key 0 holds
// `first` if given.
bool holdsVersion(vmstore::Tree* t, int version, int n, std::optional<std::string_view> first = std::nullopt) {
  KV got = scanForward(t);
  if (got.size() != static_cast<size_t>(n)) return false;
  for (int i = 0; i < n; i++) {
    const std::string want = i == 0 && first ? std::string(*first) : val(version, i);
    if (got[static_cast<size_t>(i)].first != key(i) || got[static_cast<size_t>(i)].second != want) return false;
  }
  return true;
}


// Item 1 (and 8): a failed sync never lets a crash reopen to content that no sync had.
void failedSyncThenCrash(const char* failingFile, bool mayHoldVersion1) {
  std::string dir = freshDir();
  const int n = scaled(5000, 1500);
  std::string out = runAndKill([&](int fd) {
    FaultScope faults;
    std::unique_ptr<vmstore::Database> db;
    if (!vmstore::Database::open(dir, "pool_size=1M", &db).ok()) return report(fd, 'O');
    vmstore::Tree* t;
    db->openTree("", true, &t);
    for (int i = 0; i < n; i++) t->put(key(i), val(1, i));
    report(fd, db->sync().ok() ? 's' : 'S');
    for (int i = 0; i < n; i++) t->put(key(i), val(2, i));
    faults.io().fail({Op::kSync, failingFile, 0, 1, EIO});
    report(fd, db->sync().code() == Status::Code::kIOError ? 'e' : 'E');
    // After a failed fdatasync: version 3 of half, deletes, new keys; all refused.
    bool anyAccepted = false;
    for (int i = 0; i < n / 2; i++) anyAccepted |= t->put(key(i), val(3, i)).ok();
    for (int i = 0; i < n / 4; i++) anyAccepted |= t->del(key(n - 1 - i)).ok();
    for (int i = n; i < n + n / 4; i++) anyAccepted |= t->put(key(i), val(3, i)).ok();
    report(fd, anyAccepted ? 'A' : 'r');
    // A retried sync must not report success either (fsyncgate).
    report(fd, db->sync().ok() ? 'Y' : 'y');
  });
  EXPECT_EQ(out, "sery") << "s: first sync ok, e: failed sync is EIO, r: writes refused, y: retry fails";
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  bool v1 = holdsVersion(t, 1, n);
  bool v2 = holdsVersion(t, 2, n);
  EXPECT_TRUE(v2 || (mayHoldVersion1 && v1)) << "the reopened content is no state any sync had";
  expectCheckOk(db.get());
}

TEST(Failures, FailedJournalSyncThenCrashReopensAtASyncedState) {
  // The failing fdatasync is the checkpoint's commit: version 1 or 2, never a mix.
  failedSyncThenCrash("/journal-", true);
}

TEST(Failures, FailedDataFileSyncThenCrashReopensAtTheCommittedState) {
  // The failing fdatasync comes after the commit (copying into the data file): the
  // journal still holds version 2 and the next open completes it.
  failedSyncThenCrash("data.vms", false);
}

TEST(Failures, ManyTreeDropsThenSyncReturns) {
  // Item 2: the checkpoint's free-list loop spun forever after ~508 drops.
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=4M");
  ASSERT_TRUE(db);
  const int drops = scaled(1200, 600);
  for (int i = 0; i < drops; i++) {
    vmstore::Tree* t;
    std::string name = "t" + std::to_string(i);
    VMS_ASSERT_OK(db->openTree(name, true, &t));
    VMS_ASSERT_OK(t->put("key", "value"));
    VMS_ASSERT_OK(db->dropTree(name));
  }
  auto done = std::async(std::launch::async, [&] { return db->sync(); });
  if (done.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    ADD_FAILURE() << "vms_sync did not return after " << drops << " drops";
    std::_Exit(1);
  }
  VMS_EXPECT_OK(done.get());
  expectCheckOk(db.get());
  VMS_EXPECT_OK(db->close());
  db = openDb(dir, "pool_size=4M");
  ASSERT_TRUE(db);
  std::vector<std::string> names;
  VMS_EXPECT_OK(db->listTrees(&names));
  EXPECT_TRUE(names.empty());
  expectCheckOk(db.get());
}

TEST(Failures, FailedDropChangesNothing) {
  // Item 3: a drop whose reads fail must leave the tree whole (or drop it entirely).
  FaultScope faults;
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("big", true, &t));
  const int n = scaled(20000, 8000);
  for (int i = 0; i < n; i++) VMS_ASSERT_OK(t->put(key(i), val(1, i)));
  VMS_ASSERT_OK(db->sync());
  vmstore::Tree* filler;  // push the big tree's pages out of the pool
  VMS_ASSERT_OK(db->openTree("filler", true, &filler));
  for (int i = 0; i < n; i++) VMS_ASSERT_OK(filler->put(key(i), std::string(100, 'f')));
  faults.io().fail({Op::kRead, "", 0, -1, EIO});
  Status s = db->dropTree("big");
  faults.io().clearRules();
  ASSERT_EQ(s.code(), Status::Code::kIOError) << s.toString();
  std::vector<std::string> names;
  VMS_ASSERT_OK(db->listTrees(&names));
  EXPECT_NE(std::find(names.begin(), names.end(), "big"), names.end()) << "a failed drop removed the name";
  EXPECT_TRUE(holdsVersion(t, 1, n)) << "a failed drop changed the tree";
  VMS_EXPECT_OK(t->put(key(n), val(1, n)));
  expectCheckOk(db.get());
  VMS_EXPECT_OK(db->close());
  db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  VMS_ASSERT_OK(db->openTree("big", false, &t));
  EXPECT_TRUE(holdsVersion(t, 1, n + 1));
  VMS_EXPECT_OK(db->dropTree("big"));
  expectCheckOk(db.get());
}

// Item 4: a full device must not fail reads nor lose anything stored. With durability
// none the database reopens at its last checkpoint; with the log, every acknowledged
// write survives (replaying it may need space: then open says so, and works once there is).
void fullDeviceKeepsReadsAndStoredData(const std::string& durability) {
  FaultScope faults;
  std::string dir = freshDir();
  const std::string config = "pool_size=1M,durability=" + durability;
  const int n = scaled(3000, 1500);
  {
    auto db = openDb(dir, config);
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("precious", true, &t));
    for (int i = 0; i < n; i++) VMS_ASSERT_OK(t->put(key(i), val(1, i)));
    VMS_ASSERT_OK(db->close());
  }
  auto db = openDb(dir, config);
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  vmstore::Tree* filler;
  VMS_ASSERT_OK(db->openTree("precious", false, &t));
  VMS_ASSERT_OK(db->openTree("filler", true, &filler));
  faults.io().spaceLimit(2 << 20);  // 2 MiB more, then the device is full
  Status s;
  int written = 0;  // filler puts acknowledged
  for (; written < 100000; written++) {
    s = filler->put(key(written), std::string(300, 'x'));
    if (!s.ok()) break;
  }
  ASSERT_EQ(s.code(), Status::Code::kNoSpace) << s.toString();
  // Reads of data stored before go on, however often they miss.
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < n; i++) {
      std::string v;
      Status g = t->get(key(i), &v);
      ASSERT_TRUE(g.ok()) << "read of " << key(i) << " on a full device: " << g.toString();
      ASSERT_EQ(v, val(1, i));
    }
  }
  // Writes are refused with the device's error; nothing stored is harmed. Without a log
  // a write whose page is still in memory may succeed (it lives in memory only until
  // the next checkpoint, which normally cannot happen here; reopening then shows the
  // key's old value). With the log, such a write is acknowledged when its record fits in
  // the log's file (allocated ahead), and must then survive.
  Status w = t->put(key(0), "new");
  EXPECT_TRUE(w.ok() || w.code() == Status::Code::kNoSpace) << w.toString();
  bool newAcknowledged = w.ok() && durability != "none";  // also with none if the close checkpoints
  // The precious tree as stored: version 1, key 0 as the write above left it.
  auto asStored = [&](vmstore::Tree* tree) {
    return holdsVersion(tree, 1, n, newAcknowledged ? std::optional<std::string_view>("new") : std::nullopt);
  };
  // As stored, and writable: key 0 goes back to version 1.
  auto preciousIntact = [&](vmstore::Tree* tree) {
    if (!asStored(tree)) return false;
    if (newAcknowledged && !tree->put(key(0), val(1, 0)).ok()) return false;
    return holdsVersion(tree, 1, n);
  };
  // The close's checkpoint fails for want of space, unless what it writes fits in space
  // the journal and data file had allocated ahead before the device filled (how much
  // depends on when the filler found it full); either way nothing stored is lost (below).
  Status closed = db->close();
  EXPECT_TRUE(closed.ok() || closed.code() == Status::Code::kNoSpace) << closed.toString();
  if (closed.ok() && w.ok()) newAcknowledged = true;  // the close's checkpoint holds it
  db.reset();
  // Reopen, still full.
  std::unique_ptr<vmstore::Database> full;
  Status o = vmstore::Database::open(dir, config, &full);
  if (durability == "none") {
    // The last checkpoint: precious data intact; the filler gone, unless the close's
    // checkpoint succeeded (then it holds every acknowledged filler put).
    VMS_ASSERT_OK(o);
    VMS_ASSERT_OK(full->openTree("precious", false, &t));
    EXPECT_TRUE(asStored(t));
    if (closed.ok()) {
      VMS_ASSERT_OK(full->openTree("filler", false, &filler));
      std::string v;
      for (int i = 0; i < written; i++) ASSERT_TRUE(filler->get(key(i), &v).ok()) << "filler put " << i << " lost";
    } else {
      EXPECT_TRUE(full->openTree("filler", false, &filler).isNotFound());
    }
    expectCheckOk(full.get());
    full.reset();
  } else if (!o.ok()) {
    EXPECT_EQ(o.code(), Status::Code::kNoSpace) << o.toString();
  } else {
    full.reset();
  }
  faults.io().clearSpaceLimit();
  db = openDb(dir, config);
  ASSERT_TRUE(db);
  VMS_ASSERT_OK(db->openTree("precious", false, &t));
  EXPECT_TRUE(preciousIntact(t));
  if (durability != "none") {
    VMS_ASSERT_OK(db->openTree("filler", false, &filler));
    for (int i = 0; i < written; i++) {
      std::string v;
      ASSERT_TRUE(filler->get(key(i), &v).ok()) << "acknowledged filler put " << i << " of " << written << " lost";
    }
  }
  expectCheckOk(db.get());
  VMS_EXPECT_OK(t->put(key(n), val(1, n)));
  VMS_EXPECT_OK(db->close());
}

TEST(Failures, FullDeviceKeepsReadsAndReopensAtTheLastCheckpoint) { fullDeviceKeepsReadsAndStoredData("none"); }
TEST(Failures, FullDeviceKeepsReadsAndEveryAcknowledgedWrite) { fullDeviceKeepsReadsAndStoredData("async"); }

// A checkpoint that failed on a full device leaves its snapshot pending. Changing a
// large value (a page of its own, whose snapshot image is written, not copied, before
// it changes) then failed in the middle of the change: the call returned NoSpace but the
// new value was in place, and the old value's pages leaked (a putReserve even freed the
// new value's pages while its key referred to them). Now such a write first finishes
// the snapshot and, while it cannot, changes nothing.
TEST(Failures, WritesAfterAFailedCheckpointChangeNothingOrAll) {
  FaultScope faults;
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=16M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  const size_t n = (1 << 20) + 123;
  auto value = [&](char c) { return std::string(n, c); };
  for (int i = 0; i < 4; i++) VMS_ASSERT_OK(t->put("k" + std::to_string(i), value('1')));
  VMS_ASSERT_OK(db->sync());
  for (int i = 0; i < 4; i++) VMS_ASSERT_OK(t->put("k" + std::to_string(i), value('2')));  // acknowledged
  faults.io().spaceLimit(0);  // the device is full from now on
  EXPECT_EQ(db->sync().code(), Status::Code::kNoSpace);
  // Each kind of write of k0 fails with the device's error and leaves version 2.
  std::vector<std::pair<std::string, std::function<Status()>>> writes = {
      {"put", [&] { return t->put("k0", value('3')); }},
      {"small put", [&] { return t->put("k0", "small"); }},
      {"delete", [&] { return t->del("k0"); }},
      {"putReserve", [&] {
         return t->putReserve("k0", n, [](std::span<std::byte> b) {
           std::memset(b.data(), '3', b.size());
           return Status::OK();
         });
       }},
      {"batch", [&] {
         vmstore::WriteBatch b;
         (void)b.put(t, "k0", "3");
         (void)b.put(t, "k1", "3");
         return db->write(b);
       }}};
  for (auto& [what, write] : writes) {
    Status s = write();
    EXPECT_EQ(s.code(), Status::Code::kNoSpace) << what << ": " << s.toString();
    std::string v;
    Status g = t->get("k0", &v);
    ASSERT_TRUE(g.ok()) << what << ": " << g.toString();
    EXPECT_TRUE(v == value('2')) << what << " changed k0 although it failed";
  }
  // With room again, writes and checkpoints work and nothing is damaged.
  faults.io().clearSpaceLimit();
  VMS_EXPECT_OK(t->putReserve("k0", n, [](std::span<std::byte> b) {
    std::memset(b.data(), '4', b.size());
    return Status::OK();
  }));
  VMS_EXPECT_OK(db->sync());
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
  db = openDb(dir, "pool_size=16M");
  ASSERT_TRUE(db);
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string v;
  VMS_ASSERT_OK(t->get("k0", &v));
  EXPECT_TRUE(v == value('4'));
  VMS_ASSERT_OK(t->get("k1", &v));
  EXPECT_TRUE(v == value('2'));
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

TEST(Failures, FailedCloseSyncReopensAtTheLastGoodCheckpoint) {
  // Item 4, second half: one failed fdatasync inside close lost a key closed before.
  FaultScope faults;
  std::string dir = freshDir();
  {
    auto db = openDb(dir, "pool_size=1M");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    VMS_ASSERT_OK(t->put("old", "kept"));
    VMS_ASSERT_OK(db->close());
  }
  {
    // No zero-fill of the log: the failing sync is the close's, not the preparer's.
    auto db = openDb(dir, "pool_size=1M,log_zero_fill=false");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    VMS_ASSERT_OK(t->put("new", "maybe"));
    faults.io().fail({Op::kSync, "", 0, 1, EIO});
    EXPECT_EQ(db->close().code(), Status::Code::kIOError);
  }
  faults.io().clearRules();
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string v;
  VMS_EXPECT_OK(t->get("old", &v));
  EXPECT_EQ(v, "kept");
  expectCheckOk(db.get());
}

// The bytes of the files in dir: what FaultIo's space limit counts (their sizes).
uint64_t dirBytes(const std::string& dir) {
  uint64_t sum = 0;
  for (const fs::path& p : regularFiles(dir)) sum += fileSize(p);
  return sum;
}

// A database killed with acknowledged writes in its log since the last checkpoint must
// recover on open, which needs space (the replay's evictions, its checkpoint). On a full
// device that open fails with NoSpace, saying what to do; the user frees space and opens
// again. A failed attempt must not keep space it does not reuse, or "free space and open
// again" needs more than the recovery needs, more with every attempt. Here the device
// has a page, half, or all but a page of what the recovery needs (found on copies, to
// the page); three opens fail, then exactly the missing space is freed: the open
// succeeds with every acknowledged write. The space part held before (a guard: an
// attempt's pages written past the data file's end are written again by the next at
// the same place, its journal frames are truncated by the next); the message did not:
// it was the bare write's ("write of page 415: No space left on device"), naming
// neither the file nor what to do.
TEST(Failures, RecoveryOnAFullDeviceSucceedsOnceTheSpaceItNeedsIsFree) {
  std::string dir = freshDir();
  const int n = scaled(3000, 1000);
  const std::string value(300, 'x');
  // The writer's pool holds everything (its journal gets nothing after the checkpoint);
  // the recovering opens' small pool makes the replay evict.
  std::string out = runAndKill([&](int fd) {
    std::unique_ptr<vmstore::Database> db;
    if (!vmstore::Database::open(dir, "pool_size=64M,durability=async", &db).ok()) return report(fd, 'O');
    vmstore::Tree* t;
    if (!db->openTree("", true, &t).ok()) return report(fd, 'T');
    for (int i = 0; i < n; i++) {
      if (!t->put(key(i), val(1, i) + value).ok()) return report(fd, 'P');
    }
    report(fd, db->sync().ok() ? 's' : 'S');
    bool ok = true;
    for (int i = 0; i < 2 * n; i++) ok &= t->put(key(i), val(2, i) + value).ok();
    report(fd, ok ? 'w' : 'W');  // acknowledged: in the log (the page cache), not checkpointed
    raise(SIGKILL);              // before db's close checkpoints them
  });
  ASSERT_EQ(out, "sw");
  const std::string config = "pool_size=1M,durability=async";
  FaultScope faults;
  // Opens dir with `free` bytes left on the device; the status, the database on success.
  auto openWith = [&](const std::string& d, uint64_t free, std::unique_ptr<vmstore::Database>* db) {
    faults.io().spaceLimit(free);
    Status s = vmstore::Database::open(d, config, db);
    faults.io().clearSpaceLimit();
    return s;
  };
  // The least space the recovery needs, to the page, found on copies of dir.
  std::string trial = freshDir("trial");
  auto recoversWith = [&](uint64_t free) {
    copyDir(dir, trial);
    std::unique_ptr<vmstore::Database> db;
    Status s = openWith(trial, free, &db);
    EXPECT_TRUE(s.ok() || s.code() == Status::Code::kNoSpace) << s.toString();
    return s.ok();
  };
  uint64_t lo = 0;            // pages known too few
  uint64_t hi = 64 << 20 >> 12;  // pages known enough
  ASSERT_TRUE(recoversWith(hi << 12));
  ASSERT_FALSE(recoversWith(0)) << "the recovery needs no space: the test shows nothing";
  while (hi - lo > 1) {
    uint64_t mid = (lo + hi) / 2;
    (recoversWith(mid << 12) ? hi : lo) = mid;
  }
  const uint64_t need = hi << 12;
  // With `first` bytes free at first (and the device's size fixed: what an attempt keeps
  // is not free for the next), three opens fail; then exactly the missing space is freed.
  std::string work = freshDir("attempts");
  auto failThenRecover = [&](uint64_t first) {
    SCOPED_TRACE("recovery needs " + std::to_string(need) + " bytes, " + std::to_string(first) + " free at first");
    copyDir(dir, work);
    const uint64_t start = dirBytes(work);
    uint64_t capacity = start + first;
    std::vector<uint64_t> held;  // the directory's bytes after each failed attempt
    for (int attempt = 0; attempt < 3; attempt++) {
      std::unique_ptr<vmstore::Database> db;
      Status s = openWith(work, capacity - std::min(capacity, dirBytes(work)), &db);
      ASSERT_EQ(s.code(), Status::Code::kNoSpace) << "attempt " << attempt << ": " << s.toString();
      EXPECT_NE(s.message().find("free space"), std::string::npos) << "the message does not say what to do: " << s.toString();
      held.push_back(dirBytes(work));
    }
    EXPECT_LE(held[1], held[0]) << "a failed attempt kept space the next did not reuse";
    EXPECT_LE(held[2], held[0]) << "a failed attempt kept space the next did not reuse";
    // Free exactly what was missing: the device now has what the recovery needs.
    capacity = start + need;
    std::unique_ptr<vmstore::Database> db;
    Status s = openWith(work, capacity - std::min(capacity, dirBytes(work)), &db);
    ASSERT_TRUE(s.ok()) << "with the space the recovery needs free again: " << s.toString();
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", false, &t));
    KV got = scanForward(t);
    ASSERT_EQ(got.size(), static_cast<size_t>(2 * n));
    for (int i = 0; i < 2 * n; i++) {
      ASSERT_EQ(got[static_cast<size_t>(i)].first, key(i));
      ASSERT_EQ(got[static_cast<size_t>(i)].second, val(2, i) + value) << "acknowledged put of " << key(i) << " lost";
    }
    expectCheckOk(db.get());
    VMS_ASSERT_OK(db->close());
  };
  // Failing early in the replay, half way, and at the last page (the checkpoint's commit).
  for (uint64_t first : {uint64_t{4096}, need / 2 / 4096 * 4096, need - 4096}) failThenRecover(first);
}

TEST(Failures, FailedCreationLeavesNothingBehind) {
  // Item 5: a failed or killed first open poisoned the directory for good.
  std::string dir = freshDir();
  std::string dir2 = freshDir("2");
  std::string dir3 = freshDir("3");
  std::unique_ptr<vmstore::Database> db;
  Status s = vmstore::Database::open(dir, "pool_size=64T", &db);
  EXPECT_EQ(s.code(), Status::Code::kNoMemory) << s.toString();
  EXPECT_FALSE(pathExists(dir + "/data.vms"));
  s = vmstore::Database::open(dir, "max_size=64T,pool_size=1M", &db);  // ok or ENOMEM, never EIO
  EXPECT_TRUE(s.ok() || s.code() == Status::Code::kNoMemory) << s.toString();
  if (s.ok()) VMS_EXPECT_OK(db->close());
  db.reset();
  {
    FaultScope faults;  // an I/O error while creating
    faults.io().fail({Op::kSync, "data.vms.tmp", 0, 1, EIO});
    s = vmstore::Database::open(dir2, "pool_size=1M", &db);
    EXPECT_EQ(s.code(), Status::Code::kIOError) << s.toString();
    EXPECT_FALSE(pathExists(dir2 + "/data.vms"));
  }
  // A creation killed half-way (just before its rename) leaves at most a temporary file.
  struct KillAtRename : vmstore::internal::Io {
    int rename(const std::string&, const std::string&) override {
      raise(SIGKILL);
      return -1;
    }
    bool usesKernelOnly() const override { return false; }
  };
  std::string out = runAndKill([&](int fd) {
    KillAtRename killer;
    vmstore::internal::setIo(&killer);
    report(fd, 'c');
    std::unique_ptr<vmstore::Database> d;
    report(fd, vmstore::Database::open(dir3, "pool_size=1M", &d).ok() ? 'o' : 'f');
  });
  EXPECT_EQ(out, "c") << "the child died in the middle of creating";
  EXPECT_FALSE(pathExists(dir3 + "/data.vms"));
  // A step after the data file is in place fails: the database this open created goes
  // again (found by probing: a trace file that cannot be created left a whole database,
  // which a later create=false open took for one).
  std::string dir4 = freshDir("4");
  s = vmstore::Database::open(dir4, "pool_size=1M,trace=" + dir4 + "/no/such/dir/trace", &db);
  EXPECT_EQ(s.code(), Status::Code::kIOError) << s.toString();
  EXPECT_FALSE(pathExists(dir4 + "/data.vms"));
  s = vmstore::Database::open(dir4, "pool_size=1M,create=false", &db);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.toString();
  std::string dir5 = freshDir("5");
  {
    FaultScope faults;  // the journal cannot be created
    faults.io().fail({Op::kOpen, "journal-", 0, 1, EIO});
    s = vmstore::Database::open(dir5, "pool_size=1M,durability=sync", &db);
    EXPECT_EQ(s.code(), Status::Code::kIOError) << s.toString();
  }
  for (const char* name : {"data.vms", "journal-0.vms", "journal-1.vms", "log-0.vms", "log-1.vms"}) {
    EXPECT_FALSE(pathExists(dir5 + "/" + name)) << name;
  }
  s = vmstore::Database::open(dir5, "pool_size=1M,create=false", &db);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.toString();
  for (const std::string& d : {dir, dir2, dir3, dir4, dir5}) {
    auto opened = openDb(d, "pool_size=1M");
    ASSERT_TRUE(opened) << d;
    vmstore::Tree* t;
    VMS_EXPECT_OK(opened->openTree("", true, &t));
    VMS_EXPECT_OK(t->put("a", "b"));
    VMS_EXPECT_OK(opened->close());
  }
}

TEST(Failures, PoolLargerThanMemoryIsRefusedUpFront) {
  // Item 6: a pool beyond memory committed bookkeeping at open (OOM in a cgroup).
  std::string dir = freshDir();
  std::unique_ptr<vmstore::Database> db;
  for (const char* cfg : {"pool_size=4T", "pool_size=1T", "pool_size=256G"}) {
    Status s = vmstore::Database::open(dir, cfg, &db);
    EXPECT_EQ(s.code(), Status::Code::kNoMemory) << cfg << ": " << s.toString();
    EXPECT_NE(s.message().find("memory"), std::string::npos) << s.toString();
  }
  EXPECT_FALSE(pathExists(dir));
}

TEST(Failures, OutOfLineValueChangeWithFailingReadsLeaksNothing) {
  // Item 7: deleting or overwriting an out-of-line value read its page first; a failed
  // read returned EIO after applying the change and leaked the page.
  FaultScope faults;
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  const int n = 200;
  for (int i = 0; i < n; i++) VMS_ASSERT_OK(t->put(key(i), std::string(3000, static_cast<char>('a' + i % 26))));
  VMS_ASSERT_OK(db->sync());
  vmstore::Tree* filler;  // evict the value pages
  VMS_ASSERT_OK(db->openTree("filler", true, &filler));
  for (int i = 0; i < scaled(6000, 4000); i++) VMS_ASSERT_OK(filler->put(key(i), std::string(200, 'f')));
  // Fail every read: changes that need no read succeed; others fail and change nothing.
  faults.io().fail({Op::kRead, "", 0, -1, EIO});
  std::map<std::string, std::string> expect;
  for (int i = 0; i < n; i++) expect[key(i)] = std::string(3000, static_cast<char>('a' + i % 26));
  for (int i = 0; i < n; i++) {
    Status s = (i % 2 == 0) ? t->del(key(i)) : t->put(key(i), "short");
    if (s.ok()) {
      if (i % 2 == 0) {
        expect.erase(key(i));
      } else {
        expect[key(i)] = "short";
      }
    } else {
      EXPECT_EQ(s.code(), Status::Code::kIOError) << s.toString();
    }
  }
  faults.io().clearRules();
  EXPECT_EQ(scanForward(t), toKV(expect)) << "an operation that returned an error changed the tree";
  expectCheckOk(db.get());
  VMS_EXPECT_OK(db->close());
  db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  VMS_ASSERT_OK(db->openTree("", false, &t));
  EXPECT_EQ(scanForward(t), toKV(expect));
  expectCheckOk(db.get());
}

TEST(Failures, CloseWhileOtherThreadsCallNeverCrashes) {
  // Item 9: vms_close with calls in flight was a use-after-free.
  for (int round = 0; round < scaled(5, 2); round++) {
    std::string dir = freshDir(std::to_string(round));
    vms_db* db;
    ASSERT_EQ(vms_open(dir.c_str(), "pool_size=2M", &db), VMS_OK);
    vms_tree* t;
    ASSERT_EQ(vms_tree_open(db, "", 1, &t), VMS_OK);
    std::atomic<bool> stop{false};
    std::atomic<int> closedSeen{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < 3; w++) {
      threads.emplace_back([&, w] {
        char buf[64];
        size_t len;
        for (uint64_t i = 0; !stop; i++) {
          std::string k = key(static_cast<int>(i % 5000));
          int rc = (w == 0) ? vms_put(t, k.data(), k.size(), "v", 1) : vms_get(t, k.data(), k.size(), buf, sizeof buf, &len);
          if (rc == VMS_EINVAL) {
            closedSeen++;
            return;
          }
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(vms_close(db), VMS_OK);
    for (auto& th : threads) th.join();
    EXPECT_EQ(closedSeen.load(), 3) << "every thread sees the database closed";
  }
}

TEST(Failures, ForkedChildDoesNotKeepTheLock) {
  // Item 10: a child forked without exec kept the directory lock after the parent closed.
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  int toChild[2];
  ASSERT_EQ(pipe(toChild), 0);
  pid_t child = fork();
  if (child == 0) {
    char c;
    (void)!read(toChild[0], &c, 1);  // lives until the parent is done
    _exit(0);
  }
  VMS_ASSERT_OK(db->close());
  db.reset();
  std::unique_ptr<vmstore::Database> again;
  Status s = vmstore::Database::open(dir, "pool_size=1M", &again);
  EXPECT_TRUE(s.ok()) << "the child still holds the lock: " << s.toString();
  // A second open in this process is still refused while one is open.
  std::unique_ptr<vmstore::Database> twice;
  EXPECT_EQ(vmstore::Database::open(dir, "pool_size=1M", &twice).code(), Status::Code::kBusy);
  (void)!write(toChild[1], "x", 1);
  waitpid(child, nullptr, 0);
  close(toChild[0]);
  close(toChild[1]);
}

// A log file of another database (copied in, or left from an earlier one) whose records
// are whole and of the expected interval is refused, not replayed into this database.
TEST(Failures, ALogOfAnotherDatabaseIsRefusedNotReplayed) {
  const std::string base = freshDir();
  const std::string a = base + "/a";
  const std::string b = base + "/b";
  // A and B: each killed after acknowledged writes, so each log holds its writes, in the
  // same interval (the first after creation).
  for (const std::string& dir : {a, b}) {
    std::string out = runAndKill([&](int fd) {
      std::unique_ptr<vmstore::Database> db;
      if (!vmstore::Database::open(dir, "pool_size=1M,durability=sync", &db).ok()) return report(fd, 'O');
      vmstore::Tree* t;
      db->openTree("", true, &t);
      for (int i = 0; i < 10; i++) t->put(key(i), val(dir == a ? 0 : 1, i));
      report(fd, 'w');
      (void)db.release();  // killed with it open: no close, no checkpoint
    });
    ASSERT_EQ(out, "w");
  }
  std::vector<std::string> logs;
  for (const char* name : {"log-0.vms", "log-1.vms"}) {
    if (fs::exists(b + "/" + name) && fs::file_size(b + "/" + name) > 0) logs.push_back(name);
  }
  ASSERT_FALSE(logs.empty()) << "B left no log";
  for (const std::string& name : logs) fs::copy_file(b + "/" + name, a + "/" + name, fs::copy_options::overwrite_existing);

  std::unique_ptr<vmstore::Database> db;
  Status s = vmstore::Database::open(a, "pool_size=1M", &db);
  EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.toString();
  EXPECT_NE(s.message().find("log of another database"), std::string::npos) << s.toString();
  ASSERT_FALSE(db);
  // Moved away, A opens with none of B's writes: at its last checkpoint, or with its own
  // writes (its log file was overwritten by the copy, but A's log ring still holds them).
  for (const std::string& name : logs) fs::rename(a + "/" + name, a + "/" + name + ".foreign");
  db = openDb(a, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  if (db->openTree("", false, &t).ok()) {
    EXPECT_TRUE(scanForward(t).empty() || holdsVersion(t, 0, 10)) << "B's writes in A";
  }
  VMS_ASSERT_OK(db->close());
  // B itself recovers its writes from the same log.
  db = openDb(b, "pool_size=1M");
  ASSERT_TRUE(db);
  VMS_ASSERT_OK(db->openTree("", false, &t));
  EXPECT_TRUE(holdsVersion(t, 1, 10));
  VMS_ASSERT_OK(db->close());
}

// A log file of another database whose records are of an interval this database would
// not replay (so recovery would not read it, and the next cut would overwrite it) is
// refused too, whichever of the two log files it is copied in as.
TEST(Failures, ALogOfAnotherDatabaseFromAnotherIntervalIsRefusedNotOverwritten) {
  const std::string base = freshDir();
  const std::string a = base + "/a";
  const std::string b = base + "/b";
  {  // A: several checkpoints, so its interval is past B's first one
    std::unique_ptr<vmstore::Database> db = openDb(a, "pool_size=1M,durability=sync");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    for (int round = 0; round < 4; round++) {
      VMS_ASSERT_OK(t->put(key(round), val(0, round)));
      VMS_ASSERT_OK(db->sync());
    }
    VMS_ASSERT_OK(db->close());
  }
  std::string out = runAndKill([&](int fd) {  // B: killed in its first interval
    std::unique_ptr<vmstore::Database> db;
    if (!vmstore::Database::open(b, "pool_size=1M,durability=sync", &db).ok()) return report(fd, 'O');
    vmstore::Tree* t;
    db->openTree("", true, &t);
    for (int i = 0; i < 10; i++) t->put(key(i), val(1, i));
    report(fd, 'w');
    (void)db.release();
  });
  ASSERT_EQ(out, "w");
  std::string bLog;
  for (const char* name : {"log-0.vms", "log-1.vms"}) {
    if (fs::exists(b + "/" + name) && fs::file_size(b + "/" + name) > 0) bLog = name;
  }
  ASSERT_FALSE(bLog.empty()) << "B left no log";
  for (const char* name : {"log-0.vms", "log-1.vms"}) {
    SCOPED_TRACE(name);
    fs::copy_file(b + "/" + bLog, a + "/" + name, fs::copy_options::overwrite_existing);
    const uintmax_t size = fs::file_size(a + "/" + name);
    std::unique_ptr<vmstore::Database> db;
    Status s = vmstore::Database::open(a, "pool_size=1M", &db);
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.toString();
    EXPECT_NE(s.message().find("log of another database"), std::string::npos) << s.toString();
    EXPECT_FALSE(db);
    EXPECT_EQ(fs::file_size(a + "/" + name), size) << "the foreign log was changed";
    fs::rename(a + "/" + name, base + "/" + name + ".foreign");
  }
  // Without it, A opens with its own four writes.
  std::unique_ptr<vmstore::Database> db = openDb(a, "pool_size=1M");
  ASSERT_TRUE(db);
  vmstore::Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  EXPECT_TRUE(holdsVersion(t, 0, 4));
  VMS_ASSERT_OK(db->close());
}

// Rewrites the superblock of the closed database in dir as format version 3 wrote it:
// version 3 and no database id (the bytes after `clean` were zero).
void makeFormatVersion3(const std::string& dir) {
  constexpr size_t kVersionAt = 40, kIdAt = 96;  // in api/superblock.cpp's SuperblockPage
  vmstore::internal::Page page;
  {
    std::ifstream in(dir + "/data.vms", std::ios::binary);
    ASSERT_TRUE(in.read(reinterpret_cast<char*>(&page), sizeof page));
  }
  auto* b = reinterpret_cast<uint8_t*>(&page);
  uint32_t version;
  std::memcpy(&version, b + kVersionAt, 4);
  ASSERT_EQ(version, 4u) << "this build's format";
  version = 3;
  std::memcpy(b + kVersionAt, &version, 4);
  std::memset(b + kIdAt, 0, 8);
  vmstore::internal::sealPage(&page, 0, page.header.epoch);
  std::fstream out(dir + "/data.vms", std::ios::binary | std::ios::in | std::ios::out);
  ASSERT_TRUE(out.write(reinterpret_cast<const char*>(&page), sizeof page));
}

uint64_t superblockWord(const std::string& dir, size_t at) {
  uint64_t v = 0;
  std::ifstream in(dir + "/data.vms", std::ios::binary);
  in.seekg(static_cast<std::streamoff>(at));
  in.read(reinterpret_cast<char*>(&v), 8);
  return v;
}

// A database of format version 3 (no id) recovers its log, takes version 4 at its next
// checkpoint keeping id 0, and its later sessions' logs are still recovered: an id given
// to it later would make a running session's records look foreign.
TEST(Failures, ADatabaseOfFormatVersion3KeepsRecoveringItsLogWithoutAnId) {
  const std::string dir = freshDir();
  {
    auto db = openDb(dir, "pool_size=1M");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    for (int i = 0; i < 10; i++) VMS_ASSERT_OK(t->put(key(i), val(1, i)));
    VMS_ASSERT_OK(db->close());
  }
  makeFormatVersion3(dir);
  for (int version = 2; version <= 3; version++) {
    std::string out = runAndKill([&](int fd) {
      std::unique_ptr<vmstore::Database> db;
      if (!vmstore::Database::open(dir, "pool_size=1M,durability=sync", &db).ok()) return report(fd, 'O');
      vmstore::Tree* t;
      db->openTree("", false, &t);
      for (int i = 0; i < 10; i++) t->put(key(i), val(version, i));
      report(fd, 'w');
      (void)db.release();  // killed with it open: the log holds the writes
    });
    ASSERT_EQ(out, "w");
    auto db = openDb(dir, "pool_size=1M");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", false, &t));
    EXPECT_TRUE(holdsVersion(t, version, 10)) << "the log of session " << version << " was not replayed";
    VMS_ASSERT_OK(db->close());
    EXPECT_EQ(superblockWord(dir, 40) & 0xffffffff, 4u) << "version 4 after the checkpoint";
    EXPECT_EQ(superblockWord(dir, 96), 0u) << "no id given to an existing database";
  }
}

TEST(Failures, AnotherProcessIsRefusedWhileOpen) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=1M");
  ASSERT_TRUE(db);
  std::string out = runAndKill([&](int fd) {
    // A forked child does not hold the parent's lock but sees it as another process.
    vms_db* other;
    report(fd, vms_open(dir.c_str(), "pool_size=1M", &other) == VMS_EBUSY ? 'b' : 'x');
  });
  EXPECT_EQ(out, "b");
}

}  // namespace

namespace {

using namespace vmstest;

TEST(Failures, ReadOnlySessionWritesNothing) {
  // A session that only reads must not write: a kill during its close cannot hurt.
  std::string dir = freshDir();
  {
    auto db = openDb(dir, "pool_size=1M");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    VMS_ASSERT_OK(t->put("a", "b"));
    VMS_ASSERT_OK(db->close());
  }
  FaultScope faults;
  {
    auto db = openDb(dir, "pool_size=1M");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", false, &t));
    std::string v;
    VMS_ASSERT_OK(t->get("a", &v));
    VMS_ASSERT_OK(db->sync());
    VMS_ASSERT_OK(db->close());
  }
  EXPECT_EQ(faults.io().calls(Op::kWrite), 0u);
  EXPECT_EQ(faults.io().calls(Op::kSync), 0u);
}

// Without the log (durability none; crash_test.cpp covers the logged modes): kills a
// process that writes numbered versions of a key set and syncs after each, at
// random moments (during writes, evictions, checkpoints, backfills). Every reopen must
// find exactly the last version whose sync returned, or the one after it (a sync that was
// cut short may have committed), never a mix, and check must pass.
TEST(Failures, KilledWritersReopenAtACommittedCheckpoint) {
  std::string dir = freshDir();
  const int n = scaled(3000, 1000);
  const int cycles = scaled(20, 8);
  std::mt19937_64 rng(12345);
  int lastSeen = 0;
  for (int cycle = 0; cycle < cycles; cycle++) {
    KilledChild child = killAfter(std::chrono::milliseconds(5 + rng() % 200), [&](int fd) {
      std::unique_ptr<vmstore::Database> db;
      if (!vmstore::Database::open(dir, "pool_size=1M,durability=none", &db).ok()) _exit(3);
      vmstore::Tree* t;
      if (!db->openTree("", true, &t).ok()) _exit(4);
      for (int version = lastSeen + 1;; version++) {
        for (int i = 0; i < n; i++) {
          if (!t->put(key(i), val(version, i)).ok()) _exit(5);
        }
        if (!db->sync().ok()) _exit(6);
        uint32_t v = static_cast<uint32_t>(version);
        (void)!write(fd, &v, sizeof v);
      }
    });
    ASSERT_TRUE(child.killed) << "the writer failed on its own: exit " << child.exitCode;
    int synced = lastSeen;
    for (size_t at = 0; at + sizeof(uint32_t) <= child.out.size(); at += sizeof(uint32_t)) {
      uint32_t v;
      std::memcpy(&v, child.out.data() + at, sizeof v);
      synced = static_cast<int>(v);
    }
    auto db = openDb(dir, "pool_size=1M,durability=none");
    ASSERT_TRUE(db) << "cycle " << cycle;
    vmstore::Tree* t;
    Status s = db->openTree("", false, &t);
    if (synced == 0 && s.isNotFound()) continue;  // killed before the first checkpoint
    VMS_ASSERT_OK(s);
    int found = -1;
    if (synced == 0 && scanForward(t).empty()) found = 0;
    for (int cand : {synced, synced + 1}) {
      if (cand > 0 && holdsVersion(t, cand, n)) found = cand;
    }
    ASSERT_NE(found, -1) << "cycle " << cycle << ": content is neither version " << synced << " nor "
                         << synced + 1;
    expectCheckOk(db.get());
    lastSeen = std::max(found, 0);
  }
}

}  // namespace

namespace {

using namespace vmstest;

TEST(Failures, ConcurrentCreationOfOnePathKeepsTheWinnersDatabase) {
  // Several threads create the same new database at once: one wins, the others get
  // Busy, and no loser removes what the winner created.
  for (int round = 0; round < scaled(20, 8); round++) {
    std::string dir = freshDir(std::to_string(round));
    std::vector<std::unique_ptr<vmstore::Database>> dbs(4);
    std::vector<Status> results(4);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; i++) {
      threads.emplace_back([&, i] { results[i] = vmstore::Database::open(dir, "pool_size=1M", &dbs[i]); });
    }
    for (auto& th : threads) th.join();
    int winners = 0;
    for (int i = 0; i < 4; i++) {
      if (results[i].ok()) {
        winners++;
        vmstore::Tree* t;
        VMS_ASSERT_OK(dbs[i]->openTree("", true, &t));
        VMS_ASSERT_OK(t->put("k", "v"));
        VMS_ASSERT_OK(dbs[i]->close());
      } else {
        EXPECT_EQ(results[i].code(), Status::Code::kBusy) << results[i].toString();
      }
    }
    EXPECT_EQ(winners, 1);
    auto db = openDb(dir, "pool_size=1M");
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", false, &t));
    std::string v;
    VMS_EXPECT_OK(t->get("k", &v));
  }
}

}  // namespace
