// `vmstore bench --durability=sync|async|none` (EngineConfig::durability, RunOptions::
// durability): the mode reaches each engine, and the runner reports which mode it ran.
//
// - A tiny YCSB-A through the runner in each mode on vmstore and on every competitor of
//   this build: the JSON line and every CSV row name the mode, and the engine's own log
//   counters say it was honoured (none: no log bytes and no log syncs; async: log bytes,
//   few syncs; sync: log bytes and syncs). LMDB has no log and counts nothing: only the
//   reporting is checked for it.
// - Directly through the Engine interface, one thread: in sync mode every put outside
//   begin()/commit() and every commit is synced on its own (at least one log sync each);
//   in async mode the same puts are logged but not synced one by one; in none mode
//   nothing is logged.
// - hashbm (no log) refuses sync and async with std::invalid_argument.
// - vmstore in sync mode: a transaction of several writes is one batch (about one log
//   sync), and its reads and scans (both directions) see its own writes merged with the
//   stored entries; abort drops them.
// - vmstore's transactions on or off whatever the durability (EngineConfig::transactions,
//   --transactions): abort puts back only when on; none logs nothing either way.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine.hpp"
#include "runner.hpp"
#include "workload.hpp"

#ifndef VMSTORE_TEST_TMPDIR
#define VMSTORE_TEST_TMPDIR "/tmp"
#endif

namespace vmstore::bench {
namespace {

constexpr Durability kModes[] = {Durability::kNone, Durability::kAsync, Durability::kSync};

bool built(const std::string& engine) {
  std::vector<std::string> names = engineNames();
  return std::find(names.begin(), names.end(), engine) != names.end();
}

// The raw value of "field" in a flat JSON object ("" when absent; strings keep quotes).
std::string jsonField(const std::string& json, const std::string& field) {
  const std::string key = "\"" + field + "\":";
  size_t at = json.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  size_t end = json.find_first_of(",}", at);
  return json.substr(at, end - at);
}

uint64_t jsonCount(const std::string& json, const std::string& field) {
  const std::string v = jsonField(json, field);
  EXPECT_FALSE(v.empty()) << field << " missing in " << json;
  return std::strtoull(v.c_str(), nullptr, 10);
}

std::string scratch(const std::string& what) {
  std::string dir = std::string(VMSTORE_TEST_TMPDIR) + "/durability_" + what + "_" +
                    std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(BenchDurability, NamesRoundTripAndBadOnesAreRefused) {
  for (Durability d : kModes) {
    Durability back = d == Durability::kSync ? Durability::kNone : Durability::kSync;
    ASSERT_TRUE(parseDurability(durabilityName(d), &back)) << durabilityName(d);
    EXPECT_EQ(back, d);
  }
  EXPECT_STREQ(durabilityName(Durability::kSync), "sync");
  EXPECT_STREQ(durabilityName(Durability::kAsync), "async");
  EXPECT_STREQ(durabilityName(Durability::kNone), "none");
  Durability d = Durability::kNone;
  for (const char* bad : {"", "SYNC", "fsync", "sync ", "off", "true"}) {
    EXPECT_FALSE(parseDurability(bad, &d)) << bad;
  }
  EXPECT_EQ(RunOptions{}.durability, Durability::kNone);  // existing figures stay comparable
  EXPECT_EQ(EngineConfig{}.durability, Durability::kNone);
}

TEST(BenchDurability, HashbmHasNoLog) {
  if (!built("hashbm")) GTEST_SKIP() << "hashbm is not in this build";
  std::unique_ptr<Engine> e = makeEngine("hashbm");
  EXPECT_TRUE(e->supports(Durability::kNone));
  EXPECT_FALSE(e->supports(Durability::kSync));
  EXPECT_FALSE(e->supports(Durability::kAsync));
  RunOptions opts;
  opts.workload = "ycsb-a";
  opts.engine = "hashbm";
  opts.data = 100;
  opts.seconds = 0.1;
  opts.durability = Durability::kSync;
  std::ostringstream out;
  try {
    runBenchmark(opts, RunnerIo{&out, nullptr, false});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("durability=sync"), std::string::npos) << err.what();
  }
  EXPECT_TRUE(out.str().empty());
  for (const std::string& name : engineNames()) {
    if (name == "hashbm") continue;
    EXPECT_TRUE(makeEngine(name)->supports(Durability::kSync)) << name;
    EXPECT_TRUE(makeEngine(name)->supports(Durability::kAsync)) << name;
  }
}

struct Case {
  std::string engine;
  Durability durability;
};

std::string caseName(const testing::TestParamInfo<Case>& info) {
  return info.param.engine + "_" + durabilityName(info.param.durability);
}

std::vector<Case> ycsbCases() {
  std::vector<Case> out;
  for (const char* e : {"vmstore", "rocksdb", "wiredtiger", "lmdb"}) {
    for (Durability d : kModes) out.push_back({e, d});
  }
  return out;
}

class DurableYcsb : public testing::TestWithParam<Case> {};

// A tiny YCSB-A in each mode: the mode is reported and reaches the engine.
TEST_P(DurableYcsb, ModeReachesTheEngine) {
  const Case& c = GetParam();
  if (!built(c.engine)) GTEST_SKIP() << c.engine << " is not in this build";
  const std::string mode = durabilityName(c.durability);
  RunOptions opts;
  opts.workload = "ycsb-a";
  opts.engine = c.engine;
  opts.threads = 2;
  opts.data = 2000;
  opts.pool = 16ull << 20;
  opts.seconds = 0.4;
  opts.durability = c.durability;
  opts.dir = scratch(c.engine + "_" + mode);
  std::ostringstream out, log;
  RunResult result = runBenchmark(opts, RunnerIo{&out, &log, false});
  std::filesystem::remove_all(opts.dir);
  ASSERT_GT(result.totalTx, 0u);

  // Reported: the progress header, every CSV row, the JSON line.
  EXPECT_NE(log.str().find("durability " + mode), std::string::npos) << log.str();
  std::istringstream rows(out.str());
  std::string line;
  ASSERT_TRUE(std::getline(rows, line));
  EXPECT_EQ(line, kCsvHeader);
  EXPECT_TRUE(line.ends_with(",durability"));
  int dataRows = 0;
  while (std::getline(rows, line)) {
    if (line.empty() || line[0] == '{') continue;
    EXPECT_TRUE(line.ends_with("," + mode)) << line;
    ++dataRows;
  }
  EXPECT_GT(dataRows, 0);
  EXPECT_EQ(jsonField(result.json, "durability"), "\"" + mode + "\"");

  // Honoured: the engine's log counters over the measured phase (about tx/2 updates).
  const uint64_t logBytes = jsonCount(result.json, "log_bytes");
  const uint64_t logSyncs = jsonCount(result.json, "log_syncs");
  if (c.engine == "lmdb") {  // no log, no counters
    EXPECT_EQ(logBytes, 0u);
    EXPECT_EQ(logSyncs, 0u);
    return;
  }
  const uint64_t updates = result.totalTx / 4;  // a safe floor of YCSB-A's 50% updates
  switch (c.durability) {
    case Durability::kNone:
      EXPECT_EQ(logBytes, 0u) << result.json;
      EXPECT_EQ(logSyncs, 0u) << result.json;
      break;
    case Durability::kAsync:
      EXPECT_GT(logBytes, updates * 100) << result.json;  // 120-byte values, each logged
      EXPECT_LT(logSyncs, updates / 10 + 1) << result.json;
      break;
    case Durability::kSync:
      EXPECT_GT(logBytes, updates * 100) << result.json;
      EXPECT_GT(logSyncs, 0u) << result.json;
      break;
  }
  // Where the CPU went: the bench's workers by name, and vmstore's log threads.
  EXPECT_NE(result.json.find("\"cpu.bench-worker.threads\":2"), std::string::npos) << result.json;
  if (c.engine == "vmstore" && c.durability == Durability::kSync) {
    EXPECT_NE(result.json.find("\"cpu.vms-log-commit.sys_s\":"), std::string::npos) << result.json;
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, DurableYcsb, testing::ValuesIn(ycsbCases()), caseName);

class DurablePuts : public testing::TestWithParam<std::string> {};

// One thread, so there is nothing to group: in sync mode each put outside a transaction
// and each commit needs a log sync of its own before it returns.
TEST_P(DurablePuts, EachCommittedWriteIsSyncedInSyncModeOnly) {
  const std::string name = GetParam();
  if (!built(name)) GTEST_SKIP() << name << " is not in this build";
  constexpr uint64_t kPuts = 40, kCommits = 10;
  for (Durability d : kModes) {
    SCOPED_TRACE(durabilityName(d));
    std::unique_ptr<Engine> engine = makeEngine(name);
    EngineConfig config;
    config.dir = scratch(name + "_puts_" + durabilityName(d));
    config.poolBytes = 16 << 20;
    config.threads = 1;
    config.durability = d;
    engine->open(config, {"t"});
    const EngineStats before = engine->stats();
    {
      std::unique_ptr<Session> s = engine->session();
      for (uint64_t i = 0; i < kPuts; ++i) s->put(0, "key" + std::to_string(i), "value");
      for (uint64_t i = 0; i < kCommits; ++i) {
        s->begin();
        s->put(0, "txn" + std::to_string(i), "value");
        s->commit();
      }
    }
    const EngineStats after = engine->stats();
    engine->close();
    std::filesystem::remove_all(config.dir);
    const uint64_t syncs = after.logSyncs - before.logSyncs;
    const uint64_t bytes = after.logBytes - before.logBytes;
    switch (d) {
      case Durability::kNone:
        EXPECT_EQ(after.logBytes, 0u);
        EXPECT_EQ(after.logSyncs, 0u);
        break;
      case Durability::kAsync:
        EXPECT_GT(bytes, (kPuts + kCommits) * 5);
        EXPECT_LT(syncs, (kPuts + kCommits) / 2);
        break;
      case Durability::kSync:
        EXPECT_GT(bytes, (kPuts + kCommits) * 5);
        EXPECT_GE(syncs, kPuts + kCommits);
        break;
    }
  }
}

// A load's group under sync (beginLoad) is one batch, buffered in the session until
// commit: the session's reads (scans included) see its writes, others nothing.
TEST(BenchDurability, VmstoreSyncLoadGroupIsOneBatchThatSeesItsOwnWrites) {
  std::unique_ptr<Engine> engine = EngineRegistry::instance().make("vmstore");
  ASSERT_NE(engine, nullptr);
  EngineConfig config;
  config.dir = scratch("vmstore_txn");
  config.poolBytes = 16 << 20;
  config.threads = 1;
  config.durability = Durability::kSync;
  engine->open(config, {"a", "b"});
  auto s = engine->session();
  auto other = engine->session();
  for (const char* k : {"b", "d", "f"}) s->put(0, k, std::string("stored-") + k);
  auto scan = [&](Session& in, bool reverse, std::string_view start) {
    std::string out;
    auto fn = [&](std::string_view k, std::string_view v) {
      out += std::string(k) + "=" + std::string(v) + " ";
      return true;
    };
    reverse ? in.scanReverse(0, start, fn) : in.scan(0, start, fn);
    return out;
  };
  const uint64_t syncsBefore = engine->stats().logSyncs;
  s->beginLoad();
  s->put(0, "a", "new-a");
  s->put(0, "d", "new-d");  // replaces a stored entry
  EXPECT_TRUE(s->del(0, "f"));
  EXPECT_FALSE(s->del(0, "zz"));  // absent
  s->put(0, "g", "new-g");
  s->put(1, "x", "other table");
  std::string v;
  ASSERT_TRUE(s->get(0, "d", &v));
  EXPECT_EQ(v, "new-d");
  EXPECT_FALSE(s->get(0, "f", &v));
  EXPECT_EQ(scan(*s, false, ""), "a=new-a b=stored-b d=new-d g=new-g ");
  EXPECT_EQ(scan(*s, false, "c"), "d=new-d g=new-g ");
  EXPECT_EQ(scan(*s, true, "zz"), "g=new-g d=new-d b=stored-b a=new-a ");
  EXPECT_EQ(scan(*s, true, "e"), "d=new-d b=stored-b a=new-a ");
  std::vector<std::string> values;
  std::vector<bool> found;
  s->getMany(0, {"a", "f", "b"}, &values, &found);
  EXPECT_EQ(found, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(values[0], "new-a");
  // Nothing is stored before commit.
  EXPECT_EQ(scan(*other, false, ""), "b=stored-b d=stored-d f=stored-f ");
  s->commit();
  EXPECT_LE(engine->stats().logSyncs - syncsBefore, 2u) << "one batch, one group commit";
  EXPECT_EQ(scan(*other, false, ""), "a=new-a b=stored-b d=new-d g=new-g ");
  ASSERT_TRUE(other->get(1, "x", &v));
  EXPECT_EQ(v, "other table");
  s->beginLoad();
  s->put(0, "h", "dropped");
  s->del(0, "a");
  s->abort();
  EXPECT_EQ(scan(*other, false, ""), "a=new-a b=stored-b d=new-d g=new-g ");
  engine->close();
  std::filesystem::remove_all(config.dir);
}

// A transaction (begin) under sync and async is a vmstore::Transaction: each write in
// place (seen by other sessions at once; a first put at the next call), one log record
// and (sync) one flush at commit, every value put back by abort.
TEST(BenchDurability, VmstoreTransactionWritesInPlaceCommitsOnceAndAbortPutsBack) {
  for (Durability d : {Durability::kSync, Durability::kAsync}) {
    SCOPED_TRACE(durabilityName(d));
    std::unique_ptr<Engine> engine = EngineRegistry::instance().make("vmstore");
    ASSERT_NE(engine, nullptr);
    EngineConfig config;
    config.dir = scratch("vmstore_txn_in_place");
    config.poolBytes = 16 << 20;
    config.threads = 1;
    config.durability = d;
    engine->open(config, {"a", "b"});
    auto s = engine->session();
    auto other = engine->session();
    for (const char* k : {"b", "d", "f"}) s->put(0, k, std::string("stored-") + k);
    std::string v;
    const uint64_t syncsBefore = engine->stats().logSyncs;
    const uint64_t logBefore = engine->stats().logBytes;
    s->begin();
    s->put(0, "a", "new-a");
    s->put(0, "d", "new-d");
    EXPECT_TRUE(s->del(0, "f"));
    EXPECT_FALSE(s->del(0, "zz"));  // absent
    EXPECT_TRUE(s->update(1, "x", [](std::string&) { return true; }) == false);  // absent: nothing
    s->put(1, "x", "other table");
    ASSERT_TRUE(other->get(0, "d", &v));  // in place: seen before the commit
    EXPECT_EQ(v, "new-d");
    EXPECT_FALSE(other->get(0, "f", &v));
    EXPECT_EQ(engine->stats().logBytes, logBefore) << "logged before the commit";
    s->commit();
    EXPECT_GT(engine->stats().logBytes, logBefore);
    if (d == Durability::kSync) {
      EXPECT_LE(engine->stats().logSyncs - syncsBefore, 2u) << "one record, one group commit";
    }
    s->begin();
    s->put(0, "h", "dropped");
    s->del(0, "a");
    EXPECT_TRUE(s->update(0, "b", [](std::string& value) {
      value = "changed-b";
      return true;
    }));
    s->abort();
    EXPECT_FALSE(other->get(0, "h", &v));
    ASSERT_TRUE(other->get(0, "a", &v));
    EXPECT_EQ(v, "new-a");
    ASSERT_TRUE(other->get(0, "b", &v));
    EXPECT_EQ(v, "stored-b");
    // A transaction of one put: the put is written at commit (a plain put), or not at all.
    s->begin();
    s->put(0, "one", "1");
    EXPECT_FALSE(other->get(0, "one", &v)) << "the first put waits for the transaction's next call";
    s->abort();
    EXPECT_FALSE(other->get(0, "one", &v));
    s->begin();
    s->put(0, "one", "1");
    s->commit();
    ASSERT_TRUE(other->get(0, "one", &v));
    EXPECT_EQ(v, "1");
    // Its next call writes it through the transaction first: the session reads it back.
    s->begin();
    s->put(0, "two", "2");
    ASSERT_TRUE(s->get(0, "two", &v));
    EXPECT_EQ(v, "2");
    s->abort();
    EXPECT_FALSE(other->get(0, "two", &v));
    engine->close();
    std::filesystem::remove_all(config.dir);
  }
}

// EngineConfig::transactions (--transactions): on with none, a transaction's writes go
// through a vmstore::Transaction (abort puts them back) and nothing is logged; off with
// async, every write is its own (abort keeps them).
TEST(BenchDurability, VmstoreTransactionsOnOrOffWhateverTheDurability) {
  for (const auto& [d, on] : {std::pair{Durability::kNone, true}, std::pair{Durability::kAsync, false}}) {
    SCOPED_TRACE(std::string(durabilityName(d)) + (on ? ", transactions on" : ", transactions off"));
    std::unique_ptr<Engine> engine = makeEngine("vmstore");
    EngineConfig config;
    config.dir = scratch(std::string("vmstore_txn_") + durabilityName(d));
    config.poolBytes = 16 << 20;
    config.threads = 1;
    config.durability = d;
    config.transactions = on;
    engine->open(config, {"t"});
    std::unique_ptr<Session> s = engine->session();
    std::string v;
    s->begin();
    s->put(0, "one", "1");
    s->put(0, "two", "2");
    s->del(0, "absent");
    s->abort();
    EXPECT_EQ(s->get(0, "one", &v), !on);
    EXPECT_EQ(s->get(0, "two", &v), !on);
    s->begin();
    s->put(0, "three", "3");
    s->put(0, "four", "4");
    s->commit();
    ASSERT_TRUE(s->get(0, "four", &v));
    EXPECT_EQ(v, "4");
    s.reset();
    const EngineStats stats = engine->stats();
    if (d == Durability::kNone) {
      EXPECT_EQ(stats.logBytes, 0u) << "a transaction without the log logged";
    }
    engine->close();
    std::filesystem::remove_all(config.dir);
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, DurablePuts,
                         testing::Values(std::string("vmstore"), std::string("rocksdb"),
                                         std::string("wiredtiger")),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace vmstore::bench
