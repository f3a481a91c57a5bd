// A deterministic write workload for the durability tests (crash_test.cpp,
// power_loss_test.cpp): operation i is a function of (seed, i) alone, so a test can apply
// operations to a database in one process and rebuild the expected content of any
// prefix of them in another.
//
// - Operations: puts (values from a few bytes to out-of-line sizes), deletes (often of
//   absent keys), batches of 2-8 puts and deletes across trees, a drop and re-creation of
//   tree "t3", and checkpoints (sync). Three trees: "", "t2", "t3"; a key space of 400
//   keys per tree, so keys are overwritten and deleted many times.
// - Model: the expected content after a prefix of operations; a missing tree equals an
//   empty one (a drop and its re-creation are two calls, a crash may fall between).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "test_util.hpp"

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
  };
  struct Op {
    enum Kind { kWrite, kBatch, kDropT3, kSync } kind;
    std::vector<Write> writes;  // one for kWrite, 2-8 for kBatch
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
    }
    return false;
  }

  void applyToModel(Model* m, uint64_t i) const {
    Op o = op(i);
    if (o.kind == Op::kDropT3) (*m)[kTrees[2]].clear();
    for (const Write& w : o.writes) {
      auto& t = (*m)[kTrees[w.tree]];
      if (w.put) {
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
  Write write(Rng& rng, uint64_t i) const {
    Write w;
    w.put = rng.uniform(0, 99) < 70;
    w.tree = static_cast<int>(rng.uniform(0, 2));
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
