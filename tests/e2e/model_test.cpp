// Randomized model test: random puts, gets, deletes and scans (both directions) on two
// trees, each result compared with a std::map after every operation; periodic close and
// reopen with full-scan comparison; a delete-everything phase (merges, tree shrinking),
// a refill, and Database::check() at every phase. A small pool forces eviction.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::Database;
using vmstore::Iterator;
using vmstore::Tree;
using Model = std::map<std::string, std::string>;

// VMSTORE_MODEL_SEEDS=N runs N seeds instead (a longer hunt); VMSTORE_MODEL_SEED_BASE=B
// starts them at B.
int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}
int numSeeds() { return envInt("VMSTORE_MODEL_SEEDS", scaled(20, 4)); }
int seedBase() { return envInt("VMSTORE_MODEL_SEED_BASE", 0); }

// VMSTORE_MODEL_TRACE=1 prints every operation to stderr (to narrow down a failure).
bool tracing() {
  static const bool on = std::getenv("VMSTORE_MODEL_TRACE") != nullptr;
  return on;
}
#define TRACE_OP(...)                        \
  do {                                       \
    if (tracing()) {                         \
      std::fprintf(stderr, __VA_ARGS__);     \
      std::fputc('\n', stderr);              \
    }                                        \
  } while (0)
// Small scale keeps the ops per seed (fewer would not outgrow the 1 MiB pool) and runs fewer seeds.
int opsPerSeed() { return 5000; }

// VMSTORE_MODEL_CONFIG replaces the configuration (`make numa-test` runs the model with
// memory tiers on two NUMA nodes that way).
std::string defaultConfig() {
  const char* c = std::getenv("VMSTORE_MODEL_CONFIG");
  return c != nullptr && *c != '\0' ? c : "durability=async,pool_size=1M";
}

class ModelRun {
 public:
  ModelRun(int seed, std::string config)
      : seed_(seed), rng_(0x5EED0000ull + seed), keygen_(&rng_), config_(std::move(config)) {}

  void openDatabase() {
    db_ = openDb(dir_, config_);
    ASSERT_NE(db_, nullptr);
    for (int t = 0; t < 2; ++t) {
      VMS_ASSERT_OK(db_->openTree(t == 0 ? "" : "second", true, &trees_[t]));
    }
  }

  void reopen() {
    TRACE_OP("reopen");
    iters_[0].reset();  // iterators must not outlive their database
    iters_[1].reset();
    uint64_t ev = db_->stats().evictions;
    max_evictions_ = std::max(max_evictions_, ev);
    VMS_ASSERT_OK(db_->close());
    db_.reset();
    ASSERT_NO_FATAL_FAILURE(openDatabase());
  }

  void fullCompare(const char* when) {
    for (int t = 0; t < 2; ++t) {
      SCOPED_TRACE(std::string(when) + ", tree " + std::to_string(t));
      Status st;
      std::string d = diffKV(scanForward(trees_[t], &st), toKV(models_[t]));
      ASSERT_EQ(d, "") << "forward full scan";
      VMS_ASSERT_OK(st);
      d = diffKV(scanBackward(trees_[t], &st), reversed(toKV(models_[t])));
      ASSERT_EQ(d, "") << "backward full scan";
      VMS_ASSERT_OK(st);
    }
  }

  void check(const char* when) {
    std::vector<std::string> problems;
    Status s = db_->check(&problems);
    ASSERT_TRUE(s.ok()) << when << ": check: " << s.toString() << " (" << problems.size()
                        << " problems" << (problems.empty() ? "" : ", first: " + problems[0]) << ")";
  }

  // A key that exists in the model (if any), else a fresh random one.
  std::string existingKey(const Model& m) {
    if (m.empty()) return keygen_.next();
    auto it = m.lower_bound(rng_.bytes(rng_.uniform(1, 3)));
    if (it == m.end()) it = m.begin();
    return it->first;
  }

  std::string scanStart(const Model& m) {
    uint64_t r = rng_.uniform(0, 9);
    if (r < 3 || m.empty()) return keygen_.next();
    std::string k = existingKey(m);
    if (r < 5) return k;
    if (r < 7) return k.substr(0, rng_.uniform(1, k.size()));  // a prefix of a key
    if (r < 8) return k + std::string(1, '\0');
    std::string s = k;  // the key with its last byte changed
    s.back() = static_cast<char>(rng_.next());
    return s;
  }

  void opPut(int t) {
    Model& m = models_[t];
    std::string k = rng_.chance(0.4) ? existingKey(m) : keygen_.next();
    std::string v = randomValue(rng_);
    TRACE_OP("put tree=%d key=%s klen=%zu vlen=%zu", t, show(k, 24).c_str(), k.size(), v.size());
    Status s = trees_[t]->put(k, v);
    ASSERT_TRUE(s.ok()) << "put " << show(k) << " (" << k.size() << " B) value " << v.size()
                        << " B: " << s.toString();
    m[k] = v;
    if (rng_.chance(0.3)) {
      ASSERT_NO_FATAL_FAILURE(expectGet(t, k));
    }
  }

  void expectGet(int t, const std::string& k) {
    const Model& m = models_[t];
    std::string got;
    TRACE_OP("get tree=%d key=%s klen=%zu", t, show(k, 24).c_str(), k.size());
    Status s = trees_[t]->get(k, &got);
    auto it = m.find(k);
    if (it == m.end()) {
      ASSERT_TRUE(s.isNotFound()) << "get of absent " << show(k) << ": " << s.toString()
                                  << (s.ok() ? " value " + show(got) : "");
    } else {
      ASSERT_TRUE(s.ok()) << "get " << show(k) << ": " << s.toString();
      ASSERT_EQ(got.size(), it->second.size()) << "get " << show(k);
      ASSERT_TRUE(got == it->second) << "get " << show(k) << ": wrong value " << show(got)
                                     << ", expected " << show(it->second);
    }
  }

  void opGet(int t) {
    std::string k = rng_.chance(0.7) ? existingKey(models_[t]) : keygen_.next();
    ASSERT_NO_FATAL_FAILURE(expectGet(t, k));
  }

  void opDelete(int t) {
    Model& m = models_[t];
    std::string k = rng_.chance(0.75) ? existingKey(m) : keygen_.next();
    TRACE_OP("del tree=%d key=%s klen=%zu", t, show(k, 24).c_str(), k.size());
    Status s = trees_[t]->del(k);
    if (m.erase(k) == 1) {
      ASSERT_TRUE(s.ok()) << "del " << show(k) << ": " << s.toString();
    } else {
      ASSERT_TRUE(s.isNotFound()) << "del of absent " << show(k) << ": " << s.toString();
    }
    if (rng_.chance(0.3)) {
      ASSERT_NO_FATAL_FAILURE(expectGet(t, k));
    }
  }

  void opScan(int t) {
    const Model& m = models_[t];
    std::string start = scanStart(m);
    bool forward = rng_.chance(0.5);
    size_t limit = rng_.uniform(1, 80);
    uint64_t how = rng_.uniform(0, 9);
    // A fresh iterator or the long-lived one (re-seeked after modifications).
    std::optional<Iterator> fresh;
    Iterator* it;
    if (how < 5 || !iters_[t]) {
      fresh.emplace(trees_[t]->newIterator());
      it = &*fresh;
      if (how < 5) iters_[t].emplace(trees_[t]->newIterator());
    } else {
      it = &*iters_[t];
    }
    Model::const_iterator mi;
    bool at_end = false;
    std::string what;
    if (how == 9) {
      what = forward ? "seekToFirst" : "seekToLast";
      if (forward) {
        it->seekToFirst();
        mi = m.begin();
        at_end = mi == m.end();
      } else {
        it->seekToLast();
        at_end = m.empty();
        if (!at_end) mi = std::prev(m.end());
      }
    } else if (forward) {
      what = "seek";
      it->seek(start);
      mi = m.lower_bound(start);
      at_end = mi == m.end();
    } else {
      what = "seekForPrev";
      it->seekForPrev(start);
      mi = m.upper_bound(start);
      at_end = mi == m.begin();
      if (!at_end) --mi;
    }
    TRACE_OP("scan tree=%d %s start=%s slen=%zu limit=%zu %s", t, what.c_str(), show(start, 24).c_str(),
             start.size(), limit, fresh ? "fresh" : "reused");
    for (size_t step = 0; step < limit; ++step) {
      if (at_end) {
        ASSERT_FALSE(it->valid()) << what << "(" << show(start) << ") step " << step
                                  << ": expected the end, got key " << show(it->key());
        VMS_ASSERT_OK(it->status());
        return;
      }
      ASSERT_TRUE(it->valid()) << what << "(" << show(start) << ") step " << step << ": expected key "
                               << show(mi->first) << ", got the end: " << it->status().toString();
      ASSERT_TRUE(it->key() == mi->first) << what << "(" << show(start) << ") step " << step << ": key "
                                          << show(it->key()) << ", expected " << show(mi->first);
      ASSERT_TRUE(it->value() == mi->second) << what << "(" << show(start) << ") step " << step
                                             << " key " << show(mi->first) << ": value "
                                             << show(it->value()) << ", expected " << show(mi->second);
      if (forward) {
        it->next();
        ++mi;
        at_end = mi == m.end();
      } else {
        it->prev();
        at_end = mi == m.begin();
        if (!at_end) --mi;
      }
    }
  }

  void randomOps(int count, const char* phase) {
    for (int i = 0; i < count; ++i) {
      int t = rng_.chance(0.75) ? 0 : 1;
      uint64_t r = rng_.uniform(0, 99);
      SCOPED_TRACE(std::string(phase) + " op " + std::to_string(i));
      if (r < 50) {
        ASSERT_NO_FATAL_FAILURE(opPut(t));
      } else if (r < 68) {
        ASSERT_NO_FATAL_FAILURE(opGet(t));
      } else if (r < 83) {
        ASSERT_NO_FATAL_FAILURE(opDelete(t));
      } else {
        ASSERT_NO_FATAL_FAILURE(opScan(t));
      }
      if (i > 0 && i % (count / 4 + 1) == 0) {
        iters_[0].reset();
        iters_[1].reset();
        ASSERT_NO_FATAL_FAILURE(fullCompare("before reopen"));
        ASSERT_NO_FATAL_FAILURE(reopen());
        ASSERT_NO_FATAL_FAILURE(fullCompare("after reopen"));
      }
    }
  }

  void deleteEverything() {
    for (int t = 0; t < 2; ++t) {
      std::vector<std::string> keys;
      for (auto& kv : models_[t]) keys.push_back(kv.first);
      std::shuffle(keys.begin(), keys.end(), rng_.engine());
      for (size_t i = 0; i < keys.size(); ++i) {
        SCOPED_TRACE("delete-all, tree " + std::to_string(t) + ", key " + std::to_string(i));
        Status s = trees_[t]->del(keys[i]);
        ASSERT_TRUE(s.ok()) << "del " << show(keys[i]) << ": " << s.toString();
        models_[t].erase(keys[i]);
        if (rng_.chance(0.05)) {
      ASSERT_NO_FATAL_FAILURE(expectGet(t, keys[i]));
    }
        if (rng_.chance(0.03)) {
      ASSERT_NO_FATAL_FAILURE(opScan(t));
    }
        if (rng_.chance(0.01)) {
      ASSERT_NO_FATAL_FAILURE(opGet(t));
    }
      }
      ASSERT_TRUE(models_[t].empty());
    }
  }

  void run() {
    SCOPED_TRACE("seed " + std::to_string(seed_));
    dir_ = freshDir();
    ASSERT_NO_FATAL_FAILURE(openDatabase());
    const int ops = opsPerSeed();

    ASSERT_NO_FATAL_FAILURE(randomOps(ops, "random"));
    iters_[0].reset();
    iters_[1].reset();
    ASSERT_NO_FATAL_FAILURE(fullCompare("after random ops"));
    ASSERT_NO_FATAL_FAILURE(check("after random ops"));
    ASSERT_NO_FATAL_FAILURE(reopen());
    ASSERT_NO_FATAL_FAILURE(fullCompare("after random ops + reopen"));

    ASSERT_NO_FATAL_FAILURE(deleteEverything());
    iters_[0].reset();
    iters_[1].reset();
    ASSERT_NO_FATAL_FAILURE(fullCompare("after deleting everything"));
    for (int t = 0; t < 2; ++t) {
      Iterator it = trees_[t]->newIterator();
      it.seekToLast();
      EXPECT_FALSE(it.valid());
      it.seek(std::string(1, '\0'));
      EXPECT_FALSE(it.valid());
    }
    ASSERT_NO_FATAL_FAILURE(check("after deleting everything"));
    vmstore::Stats empty_stats = db_->stats();
    EXPECT_GT(empty_stats.free_pages, 0u) << "deleting everything freed no page";
    ASSERT_NO_FATAL_FAILURE(reopen());
    ASSERT_NO_FATAL_FAILURE(fullCompare("empty, after reopen"));
    ASSERT_NO_FATAL_FAILURE(check("empty, after reopen"));

    // Refill: only puts at first, then the mix again.
    for (int i = 0; i < ops / 2; ++i) {
      SCOPED_TRACE("refill op " + std::to_string(i));
      ASSERT_NO_FATAL_FAILURE(opPut(rng_.chance(0.75) ? 0 : 1));
    }
    ASSERT_NO_FATAL_FAILURE(randomOps(ops / 2, "after refill"));
    iters_[0].reset();
    iters_[1].reset();
    ASSERT_NO_FATAL_FAILURE(fullCompare("after refill"));
    vmstore::Stats refill_stats = db_->stats();
    EXPECT_LE(refill_stats.resident_pages, refill_stats.pool_pages);
    ASSERT_NO_FATAL_FAILURE(reopen());
    ASSERT_NO_FATAL_FAILURE(fullCompare("after refill + reopen"));
    ASSERT_NO_FATAL_FAILURE(check("at the end"));
    max_evictions_ = std::max(max_evictions_, db_->stats().evictions);
    VMS_ASSERT_OK(db_->close());
    db_.reset();
  }

  uint64_t maxEvictions() const { return max_evictions_; }

 private:
  int seed_;
  Rng rng_;
  KeyGen keygen_;
  std::string dir_;
  std::string config_;
  std::unique_ptr<Database> db_;
  Tree* trees_[2] = {nullptr, nullptr};
  Model models_[2];
  std::optional<Iterator> iters_[2];
  uint64_t max_evictions_ = 0;
};

class ModelTest : public ::testing::TestWithParam<int> {};

TEST_P(ModelTest, RandomOperationsMatchStdMap) {
  ModelRun run(seedBase() + GetParam(), defaultConfig());
  run.run();
  if (!HasFailure()) {
    EXPECT_GT(run.maxEvictions(), 0u) << "the data never exceeded the pool: the test is too small";
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, ModelTest, ::testing::Range(0, numSeeds()));

// With two memory tiers on this machine's first node (migrations succeed without moving
// anything here; the accounting, demotion, promotion and checks all run): pages go down a
// tier and leave memory from the last one. check() (at every reopen) also checks that
// each page is in one tier and each tier within its budget.
class TieredModelTest : public ::testing::TestWithParam<int> {};

TEST_P(TieredModelTest, RandomOperationsMatchStdMap) {
  ModelRun run(seedBase() + GetParam(), "durability=async,tiers=0:1M+0:1M,migrate_batch=16");
  run.run();
  if (!HasFailure()) {
    EXPECT_GT(run.maxEvictions(), 0u) << "the data never left the last tier";
  }
}

INSTANTIATE_TEST_SUITE_P(TieredSeeds, TieredModelTest, ::testing::Range(0, std::max(1, numSeeds() / 4)));

}  // namespace
