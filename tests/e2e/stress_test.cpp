// Concurrency stress: 4 threads on one shared tree, bounded by operation count. Each
// thread owns the keys with its own prefix and checks them exactly against its own
// std::map; in the shared range every value carries a tag of its key, so any value read
// there can be checked to belong to that key. The pool is small so eviction runs
// concurrently with everything else. Afterwards every range is validated by scan and
// get, check() runs, and the same again after a reopen.
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::Database;
using vmstore::Iterator;
using vmstore::Tree;
using Model = std::map<std::string, std::string>;

constexpr int kThreads = 4;
constexpr const char* kSharedPrefix = "s/";
constexpr int kSharedKeys = 2000;

std::string ownPrefix(int id) { return "t" + std::to_string(id) + "/"; }

bool hasPrefix(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

struct Worker {
  int id = 0;
  Tree* tree = nullptr;
  Database* db = nullptr;
  int ops = 0;
  int own_keys = 0;
  Model own;
  std::vector<std::string> errors;
  uint64_t shared_reads_validated = 0;
  uint64_t own_scans = 0;

  // Records a failure; the worker stops at its first one.
  bool fail(const std::string& what) {
    errors.push_back("thread " + std::to_string(id) + ": " + what);
    return false;
  }

  bool run(uint64_t seed) {
    Rng rng(seed);
    const std::string prefix = ownPrefix(id);
    for (int i = 0; i < ops; ++i) {
      uint64_t r = rng.uniform(0, 99);
      bool ok = true;
      if (r < 28) {
        ok = ownPut(rng, prefix);
      } else if (r < 46) {
        ok = ownGet(rng, prefix);
      } else if (r < 55) {
        ok = ownDel(rng, prefix);
      } else if (r < 60) {
        ok = ownScan(rng, prefix);
      } else if (r < 75) {
        ok = sharedPut(rng);
      } else if (r < 87) {
        ok = sharedGet(rng);
      } else if (r < 93) {
        ok = sharedDel(rng);
      } else if (r < 98) {
        ok = sharedScan(rng);
      } else {
        vmstore::Stats s = db->stats();
        if (s.resident_pages > s.pool_pages) {
          ok = fail("resident_pages " + std::to_string(s.resident_pages) + " > pool_pages " +
                    std::to_string(s.pool_pages));
        }
      }
      if (!ok) return false;
    }
    return true;
  }

  std::string ownKey(Rng& rng, const std::string& prefix) {
    return prefix + numKey("", rng.uniform(0, own_keys - 1), 6);
  }
  static std::string sharedKey(Rng& rng) {
    return kSharedPrefix + numKey("", rng.uniform(0, kSharedKeys - 1), 5);
  }

  bool ownPut(Rng& rng, const std::string& prefix) {
    std::string k = ownKey(rng, prefix);
    size_t len = rng.chance(0.05) ? rng.uniform(3000, kOnePageValue) : rng.uniform(0, 1200);
    std::string v = fillFor(k, rng.next(), len);
    Status s = tree->put(k, v);
    if (!s.ok()) return fail("put " + k + ": " + s.toString());
    own[k] = v;
    return true;
  }

  bool ownGet(Rng& rng, const std::string& prefix) {
    std::string k = ownKey(rng, prefix);
    std::string got;
    Status s = tree->get(k, &got);
    auto it = own.find(k);
    if (it == own.end()) {
      if (!s.isNotFound()) return fail("get of absent " + k + ": " + s.toString());
    } else {
      if (!s.ok()) return fail("get " + k + ": " + s.toString());
      if (got != it->second) {
        return fail("get " + k + ": wrong value " + show(got) + " (" + std::to_string(got.size()) +
                    " B), expected " + std::to_string(it->second.size()) + " B");
      }
    }
    return true;
  }

  bool ownDel(Rng& rng, const std::string& prefix) {
    std::string k = ownKey(rng, prefix);
    Status s = tree->del(k);
    if (own.erase(k) == 1) {
      if (!s.ok()) return fail("del " + k + ": " + s.toString());
    } else if (!s.isNotFound()) {
      return fail("del of absent " + k + ": " + s.toString());
    }
    return true;
  }

  bool ownScan(Rng& rng, const std::string& prefix) {
    ++own_scans;
    std::string start = ownKey(rng, prefix);
    size_t limit = rng.uniform(1, 60);
    Iterator it = tree->newIterator();
    if (rng.chance(0.5)) {
      it.seek(start);
      auto m = own.lower_bound(start);
      for (size_t n = 0; n < limit; ++n, ++m, it.next()) {
        bool in_range = it.valid() && hasPrefix(it.key(), prefix);
        if (m == own.end()) {
          if (in_range) return fail("forward scan from " + start + ": extra key " + std::string(it.key()));
          break;
        }
        if (!in_range) {
          return fail("forward scan from " + start + ": missing " + m->first + " (" +
                      (it.valid() ? "got " + show(it.key()) : "end: " + it.status().toString()) + ")");
        }
        if (it.key() != m->first) {
          return fail("forward scan from " + start + ": key " + std::string(it.key()) + ", expected " + m->first);
        }
        if (it.value() != m->second) return fail("forward scan: wrong value for " + m->first);
      }
    } else {
      it.seekForPrev(start);
      auto m = own.upper_bound(start);
      for (size_t n = 0; n < limit; ++n, it.prev()) {
        bool in_range = it.valid() && hasPrefix(it.key(), prefix);
        if (m == own.begin()) {
          if (in_range) return fail("backward scan from " + start + ": extra key " + std::string(it.key()));
          break;
        }
        --m;
        if (!in_range) {
          return fail("backward scan from " + start + ": missing " + m->first + " (" +
                      (it.valid() ? "got " + show(it.key()) : "end: " + it.status().toString()) + ")");
        }
        if (it.key() != m->first) {
          return fail("backward scan from " + start + ": key " + std::string(it.key()) + ", expected " + m->first);
        }
        if (it.value() != m->second) return fail("backward scan: wrong value for " + m->first);
      }
    }
    if (!it.status().ok()) return fail("scan status " + it.status().toString());
    return true;
  }

  bool sharedPut(Rng& rng) {
    std::string k = sharedKey(rng);
    size_t len = rng.chance(0.05) ? rng.uniform(3000, kOnePageValue) : rng.uniform(kTagSize, 800);
    Status s = tree->put(k, taggedValue(k, static_cast<uint32_t>(rng.next()), len));
    if (!s.ok()) return fail("shared put " + k + ": " + s.toString());
    return true;
  }

  bool sharedGet(Rng& rng) {
    std::string k = sharedKey(rng);
    std::string got;
    Status s = tree->get(k, &got);
    if (s.isNotFound()) return true;
    if (!s.ok()) return fail("shared get " + k + ": " + s.toString());
    if (!isTaggedValueOf(k, got)) return fail("shared get " + k + ": value of another key or torn: " + show(got));
    ++shared_reads_validated;
    return true;
  }

  bool sharedDel(Rng& rng) {
    std::string k = sharedKey(rng);
    Status s = tree->del(k);
    if (!s.ok() && !s.isNotFound()) return fail("shared del " + k + ": " + s.toString());
    return true;
  }

  bool sharedScan(Rng& rng) {
    std::string start = sharedKey(rng);
    size_t limit = rng.uniform(1, 80);
    bool forward = rng.chance(0.5);
    Iterator it = tree->newIterator();
    if (forward) {
      it.seek(start);
    } else {
      it.seekForPrev(start);
    }
    std::string last;
    for (size_t n = 0; n < limit && it.valid(); ++n) {
      std::string k(it.key());
      if (!hasPrefix(k, kSharedPrefix)) break;
      if (!last.empty() && (forward ? !(k > last) : !(k < last))) {
        return fail(std::string(forward ? "forward" : "backward") + " shared scan: " + k + " after " + last);
      }
      if (n == 0 && (forward ? k < start : k > start)) {
        return fail("shared scan from " + start + " started at " + k);
      }
      if (!isTaggedValueOf(k, it.value())) return fail("shared scan: value of " + k + " is not its own");
      ++shared_reads_validated;
      last = k;
      if (forward) {
        it.next();
      } else {
        it.prev();
      }
    }
    if (!it.status().ok()) return fail("shared scan status " + it.status().toString());
    return true;
  }
};

// Validates every thread's range and the shared range after the threads stopped.
void validateAll(Tree* tree, const std::vector<Worker>& workers) {
  for (const Worker& w : workers) {
    const std::string prefix = ownPrefix(w.id);
    KV got;
    Iterator it = tree->newIterator();
    for (it.seek(prefix); it.valid() && hasPrefix(it.key(), prefix); it.next()) {
      got.emplace_back(std::string(it.key()), std::string(it.value()));
    }
    VMS_ASSERT_OK(it.status());
    ASSERT_EQ(diffKV(got, toKV(w.own)), "") << "thread " << w.id << " range";
    KV back;
    for (it.seekForPrev(prefix + "\xff"); it.valid() && hasPrefix(it.key(), prefix); it.prev()) {
      back.emplace_back(std::string(it.key()), std::string(it.value()));
    }
    VMS_ASSERT_OK(it.status());
    ASSERT_EQ(diffKV(back, reversed(toKV(w.own))), "") << "thread " << w.id << " range, backward";
    for (int i = 0; i < w.own_keys; ++i) {
      std::string k = prefix + numKey("", i, 6);
      std::string v;
      Status s = tree->get(k, &v);
      auto m = w.own.find(k);
      if (m == w.own.end()) {
        ASSERT_TRUE(s.isNotFound()) << k << ": " << s.toString();
      } else {
        ASSERT_TRUE(s.ok()) << k << ": " << s.toString();
        ASSERT_TRUE(v == m->second) << k << ": wrong value";
      }
    }
  }
  Iterator it = tree->newIterator();
  size_t shared = 0;
  std::string last;
  for (it.seek(kSharedPrefix); it.valid() && hasPrefix(it.key(), kSharedPrefix); it.next()) {
    std::string k(it.key());
    ASSERT_TRUE(last.empty() || k > last);
    ASSERT_TRUE(isTaggedValueOf(k, it.value())) << "shared " << k;
    std::string v;
    VMS_ASSERT_OK(tree->get(k, &v));
    ASSERT_TRUE(v == it.value()) << "shared " << k << ": get and scan disagree";
    last = k;
    ++shared;
  }
  VMS_ASSERT_OK(it.status());
  EXPECT_GT(shared, 0u);
}

TEST(Stress, FourThreadsMixedOnASharedTree) {
  const std::string dir = freshDir();
  std::unique_ptr<Database> db = openDb(dir, "durability=async,pool_size=1M");
  ASSERT_NE(db, nullptr);

  std::vector<Worker> workers(kThreads);
  std::vector<Tree*> opened(kThreads, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int t = 0; t < kThreads; ++t) {
    Worker& w = workers[t];
    w.id = t;
    w.db = db.get();
    w.ops = scaled(15000, 4000);
    w.own_keys = scaled(2500, 800);
    threads.emplace_back([&, t] {
      Worker& me = workers[t];
      // All threads open (and create) the same tree at once: one tree, one handle.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      Status s = me.db->openTree("stress", true, &opened[t]);
      if (!s.ok()) {
        me.fail("openTree: " + s.toString());
        return;
      }
      me.tree = opened[t];
      me.run(0xABCD00ull + t);
    });
  }
  for (auto& th : threads) th.join();

  bool failed = false;
  for (const Worker& w : workers) {
    for (const std::string& e : w.errors) {
      ADD_FAILURE() << e;
      failed = true;
    }
  }
  ASSERT_FALSE(failed);
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(opened[t], opened[0]) << "two handles for one tree";
  uint64_t validated = 0;
  for (const Worker& w : workers) validated += w.shared_reads_validated;
  EXPECT_GT(validated, 0u);

  Tree* tree = opened[0];
  vmstore::Stats s = db->stats();
  EXPECT_GT(s.evictions, 0u) << "the pool was never full: the test is too small";
  EXPECT_LE(s.resident_pages, s.pool_pages);

  ASSERT_NO_FATAL_FAILURE(validateAll(tree, workers));
  std::vector<std::string> problems;
  Status c = db->check(&problems);
  ASSERT_TRUE(c.ok()) << c.toString() << (problems.empty() ? "" : ": " + problems[0]);

  VMS_ASSERT_OK(db->close());

  db.reset();  // (close() releasing the lock is tested in cpp_api_test)
  db = openDb(dir, "durability=async,pool_size=1M,create=false");
  ASSERT_NE(db, nullptr);
  VMS_ASSERT_OK(db->openTree("stress", false, &tree));
  ASSERT_NO_FATAL_FAILURE(validateAll(tree, workers));
  problems.clear();
  c = db->check(&problems);
  ASSERT_TRUE(c.ok()) << c.toString() << (problems.empty() ? "" : ": " + problems[0]);
  VMS_ASSERT_OK(db->close());
}

// Readers scan the whole tree over and over while writers insert, overwrite and delete:
// every scan must be strictly ordered and every value must belong to its key.
TEST(Stress, ScansDuringWritesStayOrdered) {
  const std::string dir = freshDir();
  std::unique_ptr<Database> db = openDb(dir, "durability=async,pool_size=1M");
  ASSERT_NE(db, nullptr);
  Tree* tree = nullptr;
  VMS_ASSERT_OK(db->openTree("", true, &tree));
  const int keys = scaled(6000, 1500);
  for (int i = 0; i < keys; i += 2) {
    std::string k = numKey("k", i, 8);
    VMS_ASSERT_OK(tree->put(k, taggedValue(k, 0, 100)));
  }
  std::atomic<int> writers_done{0};
  std::mutex mu;
  std::vector<std::string> errors;
  auto record = [&](std::string e) {
    std::lock_guard<std::mutex> lock(mu);
    if (errors.size() < 10) errors.push_back(std::move(e));
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      Rng rng(77 + w);
      const int ops = scaled(30000, 5000);
      for (int i = 0; i < ops; ++i) {
        std::string k = numKey("k", rng.uniform(0, keys - 1), 8);
        Status s;
        if (rng.chance(0.3)) {
          s = tree->del(k);
          if (s.isNotFound()) s = Status::OK();
        } else {
          size_t len = rng.chance(0.1) ? 3900 : rng.uniform(kTagSize, 600);
          s = tree->put(k, taggedValue(k, static_cast<uint32_t>(i), len));
        }
        if (!s.ok()) {
          record("writer: " + k + ": " + s.toString());
          break;
        }
      }
      writers_done.fetch_add(1);
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      int scans = 0;
      while (writers_done.load() < 2 || scans < 2) {
        Iterator it = tree->newIterator();
        bool forward = (scans + r) % 2 == 0;
        std::string last;
        size_t n = 0;
        for (forward ? it.seekToFirst() : it.seekToLast(); it.valid(); forward ? it.next() : it.prev()) {
          std::string k(it.key());
          if (!last.empty() && (forward ? !(k > last) : !(k < last))) {
            record("reader: " + k + " after " + last);
            return;
          }
          if (!isTaggedValueOf(k, it.value())) {
            record("reader: value of " + k + " is not its own");
            return;
          }
          last = k;
          ++n;
        }
        if (!it.status().ok()) {
          record("reader: status " + it.status().toString());
          return;
        }
        ++scans;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const std::string& e : errors) ADD_FAILURE() << e;
  ASSERT_TRUE(errors.empty());
  std::vector<std::string> problems;
  Status c = db->check(&problems);
  ASSERT_TRUE(c.ok()) << c.toString() << (problems.empty() ? "" : ": " + problems[0]);
  VMS_ASSERT_OK(db->close());
}

}  // namespace
