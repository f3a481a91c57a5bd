// Power-loss tests of issue 6, through the fault layer (os/fault_io.hpp): a workload runs
// on a database whose every unsynced write FaultIo remembers; the power is cut after the
// Nth sync of the run (for many N, spread over every sync point of the workload), with or
// without tearing unsynced writes at 512-byte sectors; then the database is reopened with
// the real file system and must hold:
// - durability=sync: exactly every acknowledged operation;
// - durability=async and none: some prefix of the acknowledged operations (async: at most
//   sync_interval behind; none: at least up to the last completed sync), never a mix;
// and pass check. Cut points: VMSTORE_POWER_CUTS (default 16 per mode; `make crash-test`
// runs more).
#include <cstdlib>

#include "durability_workload.hpp"
#include "os/fault_io.hpp"
#include "test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::internal::FaultIo;

int powerCuts() {
  const char* env = std::getenv("VMSTORE_POWER_CUTS");
  if (env != nullptr && std::atoi(env) > 0) return std::atoi(env);
  return 16;
}

struct RunResult {
  uint64_t acked = 0;      // operations acknowledged before the cut
  uint64_t lastSync = 0;   // operations acknowledged before the last completed sync op
  uint64_t syncCalls = 0;  // fdatasync calls seen
};

// Runs up to `ops` operations with FaultIo tracking unsynced writes, stopping once
// `cutAfterSyncs` syncs were seen (0: never), then cuts the power.
RunResult runAndCut(const std::string& dir, const std::string& config, const DurabilityWorkload& w, uint64_t ops,
                    uint64_t cutAfterSyncs, uint64_t seed, bool tear) {
  FaultIo faults;
  faults.trackUnsynced();
  vmstore::internal::Io* prev = vmstore::internal::setIo(&faults);
  RunResult r;
  {
    std::unique_ptr<vmstore::Database> db = openDb(dir, config);
    if (db) {
      vmstore::Tree* trees[3];
      bool ok = true;
      for (int t = 0; t < 3 && ok; t++) ok = db->openTree(DurabilityWorkload::kTrees[t], true, &trees[t]).ok();
      EXPECT_TRUE(ok);
      for (uint64_t i = 0; ok && i < ops; i++) {
        if (cutAfterSyncs != 0 && faults.calls(FaultIo::Op::kSync) >= cutAfterSyncs) break;
        ok = w.apply(db.get(), trees, i);
        EXPECT_TRUE(ok) << "operation " << i;
        if (!ok) break;
        r.acked = i + 1;
        if (w.op(i).kind == DurabilityWorkload::Op::kSync) r.lastSync = i + 1;
      }
      r.syncCalls = faults.calls(FaultIo::Op::kSync);
      faults.powerCut(seed, tear);
      db.reset();  // every write and sync now fails: nothing more reaches storage
    }
  }
  vmstore::internal::setIo(prev);
  return r;
}

void powerLossAtSyncPoints(const std::string& durability, bool tear) {
  DurabilityWorkload w(durability.size() * 1000 + tear);
  const uint64_t ops = scaled<uint64_t>(200, 120);
  const std::string config = "pool_size=1M,log_size=1M,sync_interval=5,durability=" + durability;
  uint64_t total = runAndCut(freshDir("count"), config, w, ops, 0, 1, false).syncCalls;
  ASSERT_GT(total, 0u);
  const int cuts = powerCuts();
  int prefixesBehind = 0;
  for (int c = 1; c <= cuts; c++) {
    // Odd cuts right after a sync point (spread over all of them), even ones after an
    // operation (spread over the run), wherever the syncs are.
    uint64_t cutAt = 1 + (total - 1) * static_cast<uint64_t>(c) / static_cast<uint64_t>(cuts);
    uint64_t opsUntil = c % 2 ? ops : 1 + (ops - 1) * static_cast<uint64_t>(c) / static_cast<uint64_t>(cuts);
    SCOPED_TRACE(durability + (tear ? ", torn" : "") + ", power cut " +
                 (c % 2 ? "after sync " + std::to_string(cutAt) + " of " + std::to_string(total)
                        : "after operation " + std::to_string(opsUntil)));
    std::string dir = freshDir("cut" + std::to_string(c));
    RunResult r = runAndCut(dir, config, w, opsUntil, c % 2 ? cutAt : 0, static_cast<uint64_t>(c), tear);
    auto db = openDb(dir, "pool_size=1M,durability=none");
    ASSERT_TRUE(db);
    // The newest prefix of operations the database holds.
    DurabilityWorkload::Model model;
    std::vector<DurabilityWorkload::Model> prefixes{model};
    for (uint64_t i = 0; i < r.acked; i++) {
      w.applyToModel(&model, i);
      prefixes.push_back(model);
    }
    int64_t held = -1;
    for (int64_t k = static_cast<int64_t>(r.acked); k >= 0 && held < 0; k--) {
      if (DurabilityWorkload::diff(db.get(), prefixes[static_cast<size_t>(k)]).empty()) held = k;
    }
    ASSERT_GE(held, 0) << "the database holds no prefix of the " << r.acked << " acknowledged operations: "
                       << DurabilityWorkload::diff(db.get(), prefixes.back());
    if (durability == "sync") {
      EXPECT_EQ(static_cast<uint64_t>(held), r.acked) << "acknowledged operations lost";
    } else {
      EXPECT_GE(static_cast<uint64_t>(held), r.lastSync) << "operations before a completed sync lost";
      if (static_cast<uint64_t>(held) < r.acked) prefixesBehind++;
    }
    std::vector<std::string> problems;
    Status s = db->check(&problems);
    EXPECT_TRUE(s.ok()) << s.toString() << (problems.empty() ? "" : ": " + problems[0]);
  }
  if (durability == "none") {
    EXPECT_GT(prefixesBehind, 0) << "the test never saw a power cut lose anything";
  }
}

TEST(PowerLoss, SyncKeepsEveryAcknowledgedWrite) { powerLossAtSyncPoints("sync", false); }
TEST(PowerLoss, SyncKeepsEveryAcknowledgedWriteThroughTornWrites) { powerLossAtSyncPoints("sync", true); }
TEST(PowerLoss, AsyncKeepsAConsistentPrefix) { powerLossAtSyncPoints("async", true); }
TEST(PowerLoss, NoneKeepsTheLastCheckpoint) { powerLossAtSyncPoints("none", true); }

}  // namespace
