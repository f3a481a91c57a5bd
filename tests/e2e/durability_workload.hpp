// A deterministic write workload for the durability tests (crash_test.cpp,
// power_loss_test.cpp): operation i is a function of (seed, i) alone, so a test can apply
// operations to a database in one process and rebuild the expected content of any
// prefix of them in another.
//
// - Operations: puts (values from a few bytes to out-of-line sizes), deletes (often of
//   absent keys), batches of 2-8 puts and deletes across trees, read-modify-writes
//   (Tree::update) of rows, transactions (vmstore::Transaction) of 2-6 puts, deletes and
//   row updates across trees, a fifth of them aborted after their writes, a drop and
//   re-creation of tree "t3", and checkpoints (sync).
//   Three trees: "", "t2", "t3"; a key space of 400 keys per tree, so keys are
//   overwritten and deleted many times, and 60 row keys whose values keep one size per
//   key and change in a few bytes at a time (the log records such same-size changes of
//   batches and updates as patches).
// - Model: the expected content after a prefix of operations; a missing tree equals an
//   empty one (a drop and its re-creation are two calls, a crash may fall between).
#pragma once

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "vmstore/transaction.hpp"

namespace vmstest {

class DurabilityWorkload {
 public:
  static constexpr const char* kTrees[3] = {"", "t2", "t3"};
  using Model = std::map<std::string, std::map<std::string, std::string>>;

  explicit DurabilityWorkload(uint64_t seed) : seed_(seed) {}

  struct Write {
    bool put;
    int tree;
    std::string key, value;
    bool update = false;  // a row's read-modify-write (kUpdate, kTxn): salt says how
    uint64_t salt = 0;    // which bytes of the row change, and to what
  };
  struct Op {
    enum Kind { kWrite, kBatch, kUpdate, kTxn, kDropT3, kSync } kind;
    std::vector<Write> writes;  // one for kWrite and kUpdate, 2-8 for kBatch, 2-6 for kTxn
    bool abort = false;         // kTxn: aborted after its writes (changes nothing)
  };

  Op op(uint64_t i) const {
    Rng rng(mix64(seed_ ^ (i * 0x9E3779B97F4A7C15ull)));
    uint64_t r = rng.uniform(0, 999);
    Op o;
    if (r < 5) {
      o.kind = Op::kDropT3;
    } else if (r < 12) {
      o.kind = Op::kSync;
    } else if (r < 200) {
      o.kind = Op::kBatch;
      size_t n = rng.uniform(2, 8);
      for (size_t j = 0; j < n; j++) o.writes.push_back(write(rng, i));
    } else if (r < 300) {
      o.kind = Op::kUpdate;
      o.writes.push_back(rowUpdate(rng));
    } else if (r < 400) {
      o.kind = Op::kTxn;
      size_t n = rng.uniform(2, 6);
      for (size_t j = 0; j < n; j++) o.writes.push_back(rng.uniform(0, 3) == 0 ? rowUpdate(rng) : write(rng, i));
      o.abort = rng.uniform(0, 4) == 0;
    } else {
      o.kind = Op::kWrite;
      o.writes.push_back(write(rng, i));
    }
    return o;
  }

  // Applies operation i to the open trees of db (re-opening "t3" after its drop).
  // False on any error.
  bool apply(vmstore::Database* db, vmstore::Tree* trees[3], uint64_t i) const {
    Op o = op(i);
    switch (o.kind) {
      case Op::kSync:
        return db->sync().ok();
      case Op::kDropT3: {
        Status s = db->dropTree(kTrees[2]);
        if (!s.ok() && !s.isNotFound()) return false;
        return db->openTree(kTrees[2], true, &trees[2]).ok();
      }
      case Op::kWrite: {
        const Write& w = o.writes[0];
        Status s = w.put ? trees[w.tree]->put(w.key, w.value) : trees[w.tree]->del(w.key);
        return s.ok() || s.isNotFound();
      }
      case Op::kBatch: {
        vmstore::WriteBatch b;
        for (const Write& w : o.writes) {
          Status s = w.put ? b.put(trees[w.tree], w.key, w.value) : b.del(trees[w.tree], w.key);
          if (!s.ok()) return false;
        }
        return db->write(b).ok();
      }
      case Op::kUpdate: {
        const Write& w = o.writes[0];
        std::string next;
        return trees[w.tree]
            ->update(w.key,
                     [&](std::optional<std::string_view> cur) {
                       next = updatedRow(w.key, cur, w.salt);
                       return vmstore::Change::put(next);
                     })
            .ok();
      }
      case Op::kTxn: {
        // Alone in its process, a transaction never meets another's lock: every call
        // must succeed (deleting an absent key is NotFound, and changes nothing).
        vmstore::Transaction txn(db);
        for (const Write& w : o.writes) {
          Status s;
          std::string next;
          if (w.update) {
            s = txn.update(trees[w.tree], w.key, [&](std::optional<std::string_view> cur) {
              next = updatedRow(w.key, cur, w.salt);
              return vmstore::Change::put(next);
            });
          } else {
            s = w.put ? txn.put(trees[w.tree], w.key, w.value) : txn.del(trees[w.tree], w.key);
          }
          if (!s.ok() && !s.isNotFound()) return false;
        }
        return (o.abort ? txn.abort() : txn.commit()).ok();
      }
    }
    return false;
  }

  void applyToModel(Model* m, uint64_t i) const {
    Op o = op(i);
    if (o.kind == Op::kDropT3) (*m)[kTrees[2]].clear();
    if (o.abort) return;
    for (const Write& w : o.writes) {
      auto& t = (*m)[kTrees[w.tree]];
      if (w.update) {
        auto it = t.find(w.key);
        t[w.key] = updatedRow(w.key, it == t.end() ? std::nullopt : std::optional<std::string_view>(it->second), w.salt);
      } else if (w.put) {
        t[w.key] = w.value;
      } else {
        t.erase(w.key);
      }
    }
  }

  // Empty when db holds exactly the model, else the first difference.
  static std::string diff(vmstore::Database* db, const Model& m) {
    for (int t = 0; t < 3; t++) {
      vmstore::Tree* tree = nullptr;
      Status s = db->openTree(kTrees[t], false, &tree);
      KV got;
      if (s.ok()) {
        Status it;
        got = scanForward(tree, &it);
        if (!it.ok()) return "scan of tree '" + std::string(kTrees[t]) + "': " + it.toString();
      } else if (!s.isNotFound()) {
        return "open tree '" + std::string(kTrees[t]) + "': " + s.toString();
      }
      auto mt = m.find(kTrees[t]);
      KV want;
      if (mt != m.end()) want.assign(mt->second.begin(), mt->second.end());
      if (got == want) continue;
      size_t j = 0;
      while (j < got.size() && j < want.size() && got[j] == want[j]) j++;
      std::string where = "tree '" + std::string(kTrees[t]) + "' has " + std::to_string(got.size()) +
                          " keys, expected " + std::to_string(want.size());
      if (j < got.size()) where += "; first unexpected " + show(got[j].first);
      if (j < want.size()) where += "; first missing or different " + show(want[j].first);
      return where;
    }
    return {};
  }

 private:
  static constexpr uint64_t kRows = 60;
  static std::string rowKey(uint64_t row) { return numKey("r", row, 2); }
  // A row's value: one size per row key, its bytes the row's base with 8 bytes set by i.
  static std::string rowValue(std::string_view key, uint64_t i) {
    std::string v = taggedValue(key, 0, 100 + hash64(key) % 300);
    uint64_t h = mix64(i);
    std::memcpy(v.data() + kTagSize + h % (v.size() - kTagSize - 8), &h, 8);
    return v;
  }
  // What an update with this salt makes of a row: 4 bytes of it set (an absent row: its
  // base value first).
  static std::string updatedRow(std::string_view key, std::optional<std::string_view> cur, uint64_t salt) {
    std::string v = cur ? std::string(*cur) : rowValue(key, 0);
    if (v.size() < kTagSize + 4) return v + "!";  // not a row value (never here): grows
    uint32_t bytes = static_cast<uint32_t>(salt >> 32);
    std::memcpy(v.data() + kTagSize + salt % (v.size() - kTagSize - 4 + 1), &bytes, 4);
    return v;
  }

  Write rowUpdate(Rng& rng) const {
    Write w{true, static_cast<int>(rng.uniform(0, 2)), rowKey(rng.uniform(0, kRows - 1)), {}};
    w.update = true;
    w.salt = rng.next();
    return w;
  }

  Write write(Rng& rng, uint64_t i) const {
    Write w;
    w.put = rng.uniform(0, 99) < 70;
    w.tree = static_cast<int>(rng.uniform(0, 2));
    if (rng.uniform(0, 99) < 30) {  // a row
      w.key = rowKey(rng.uniform(0, kRows - 1));
      if (w.put) w.value = rowValue(w.key, i);
      return w;
    }
    w.key = numKey("k", rng.uniform(0, 399), 4);
    if (w.put) {
      uint64_t r = rng.uniform(0, 99);
      size_t len = r < 70 ? rng.uniform(8, 120) : (r < 90 ? rng.uniform(120, 1500) : rng.uniform(1500, 4000));
      w.value = taggedValue(w.key, static_cast<uint32_t>(i), len);
    }
    return w;
  }

  uint64_t seed_;
};

}  // namespace vmstest
