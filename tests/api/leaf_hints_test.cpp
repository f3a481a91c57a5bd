// Leaf hints across calls (api/leaf_hints.hpp): a thread's put or update goes straight to
// the leaf its last write to the same tree went to while that leaf is unchanged and
// covers the key. Tested: the per-thread slots themselves (a slot answers only for its
// tree), ascending puts and repeated updates that touch one page instead of a descent,
// two trees written alternately with interleaved keys (a hint never carries a key into
// the other tree), by single writes and by batches, and writers of several threads whose hints go stale under each other.
#include "api/leaf_hints.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../e2e/test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::internal::BTree;
using vmstore::internal::LeafHints;

TEST(LeafHints, ASlotAnswersOnlyForItsTreeAndOnlyInItsThread) {
  const uint64_t a = (uint64_t{1} << 62) + 1;  // far above any serial a test opens
  EXPECT_EQ(LeafHints::of(a).pid, vmstore::internal::kNoPage);
  LeafHints::remember(a, BTree::LeafHint{42, 7});
  EXPECT_EQ(LeafHints::of(a).pid, 42u);
  EXPECT_EQ(LeafHints::of(a).version, 7u);
  std::thread([&] { EXPECT_EQ(LeafHints::of(a).pid, vmstore::internal::kNoPage); }).join();
  // Another tree whose slot is the same one pushes the hint out; it never answers for a.
  uint64_t b = a + 16;
  EXPECT_EQ(LeafHints::of(b).pid, vmstore::internal::kNoPage);
  LeafHints::remember(b, BTree::LeafHint{43, 8});
  EXPECT_EQ(LeafHints::of(a).pid, vmstore::internal::kNoPage);
  EXPECT_EQ(LeafHints::of(b).pid, 43u);
}

class LeafHintsDb : public OneTreeTest {
 protected:
  std::string config() const override { return "pool_size=64M,durability=none"; }
  uint64_t hits() const { return db_->stats().hits; }
};

// A tree of height three or more, then more ascending keys: with hints a put latches its
// leaf (one page access, a descent only when the leaf splits); without, every put reads
// every level. The same for updates of one key.
TEST_F(LeafHintsDb, AscendingPutsAndRepeatedUpdatesTakeTheirLeafWithoutDescending) {
  std::string value(100, 'v');
  const int loaded = 60000;
  for (int i = 0; i < loaded; i++) VMS_ASSERT_OK(t_->put(numKey("k", i), value));
  vmstore::TreeShape shape;
  VMS_ASSERT_OK(t_->shape(&shape));
  ASSERT_GE(shape.height, 3u);
  const int more = 2000;
  uint64_t before = hits();
  for (int i = loaded; i < loaded + more; i++) VMS_ASSERT_OK(t_->put(numKey("k", i), value));
  double perPut = static_cast<double>(hits() - before) / more;
  EXPECT_LT(perPut, 1.5) << "page accesses per ascending put, height " << shape.height;

  before = hits();
  for (int i = 0; i < more; i++) {
    VMS_ASSERT_OK(t_->update(numKey("k", 777), [&](std::optional<std::string_view> cur) {
      std::string next(*cur);
      next[0] = static_cast<char>('a' + i % 26);
      return vmstore::Change::put(std::move(next));
    }));
  }
  double perUpdate = static_cast<double>(hits() - before) / more;
  EXPECT_LT(perUpdate, 1.5) << "page accesses per update (read, then written in place), height " << shape.height;

  std::string got;
  VMS_ASSERT_OK(t_->get(numKey("k", 777), &got));
  EXPECT_EQ(got[0], static_cast<char>('a' + (more - 1) % 26));
  for (int i = 0; i < loaded + more; i += 997) {
    VMS_ASSERT_OK(t_->get(numKey("k", i), &got));
    EXPECT_EQ(got.size(), value.size());
  }
}

// Keys of two trees interleave (a's "k0005" lies between b's "k0004" and "k0006"): had a
// put of one tree taken the other's hint, its key would land in the other tree.
TEST_F(LeafHintsDb, TwoTreesWrittenAlternatelyKeepTheirOwnKeys) {
  vmstore::Tree* b = nullptr;
  VMS_ASSERT_OK(db_->openTree("b", true, &b));
  std::map<std::string, std::string> wantA, wantB;
  for (int i = 0; i < 20000; i++) {
    vmstore::Tree* t = i % 2 == 0 ? t_ : b;
    auto& want = i % 2 == 0 ? wantA : wantB;
    std::string key = numKey("k", i);
    std::string value = taggedValue(key, static_cast<uint32_t>(i), 40 + i % 50);
    VMS_ASSERT_OK(t->put(key, value));
    want[key] = value;
    if (i % 7 == 0) {  // updates too, of the other tree's neighbour keys
      std::string other = numKey("k", i > 0 ? i - 1 : 1);
      auto& otherWant = i % 2 == 0 ? wantB : wantA;
      vmstore::Tree* ot = i % 2 == 0 ? b : t_;
      VMS_ASSERT_OK(ot->update(other, [&](std::optional<std::string_view> cur) {
        std::string next = cur ? std::string(*cur) : std::string("new");
        next += "+";
        otherWant[other] = next;
        return vmstore::Change::put(std::move(next));
      }));
    }
  }
  EXPECT_EQ(diffKV(scanForward(t_), toKV(wantA)), "");
  EXPECT_EQ(diffKV(scanForward(b), toKV(wantB)), "");
}

// Batches (Database::write) take and leave the same hints: one batch alternating between
// two trees with interleaved keys, then single puts after it, then batches again. Each
// tree ends with its own keys, and ascending one-put batches latch the leaf the batch
// before left (fewer page accesses per put than a descent of this height).
TEST_F(LeafHintsDb, BatchesAlternatingBetweenTreesKeepTheirOwnKeysAndShareHintsWithSinglePuts) {
  vmstore::Tree* b = nullptr;
  VMS_ASSERT_OK(db_->openTree("b", true, &b));
  std::map<std::string, std::string> wantA, wantB;
  vmstore::WriteBatch batch;
  int i = 0;
  for (int round = 0; round < 400; round++) {
    batch.clear();
    for (int j = 0; j < 50; j++, i++) {
      vmstore::Tree* t = i % 2 == 0 ? t_ : b;
      auto& want = i % 2 == 0 ? wantA : wantB;
      std::string key = numKey("k", i);
      std::string value = taggedValue(key, static_cast<uint32_t>(round), 40 + i % 50);
      VMS_ASSERT_OK(batch.put(t, key, value));
      want[key] = value;
      if (j % 9 == 0 && i > 0) {  // a same-size rewrite of the other tree's neighbour
        std::string other = numKey("k", i - 1);
        auto& otherWant = i % 2 == 0 ? wantB : wantA;
        std::string next = otherWant[other];
        next[0] = static_cast<char>('a' + round % 26);
        VMS_ASSERT_OK(batch.put(i % 2 == 0 ? b : t_, other, next));
        otherWant[other] = next;
      }
    }
    VMS_ASSERT_OK(db_->write(batch));
    if (round % 10 == 0) {  // a single put between batches, of either tree
      std::string key = numKey("k", i++);
      vmstore::Tree* t = round % 20 == 0 ? t_ : b;
      VMS_ASSERT_OK(t->put(key, "single"));
      (round % 20 == 0 ? wantA : wantB)[key] = "single";
    }
  }
  EXPECT_EQ(diffKV(scanForward(t_), toKV(wantA)), "");
  EXPECT_EQ(diffKV(scanForward(b), toKV(wantB)), "");

  vmstore::TreeShape shape;
  VMS_ASSERT_OK(t_->shape(&shape));
  ASSERT_GE(shape.height, 3u);
  const int more = 2000;
  uint64_t before = hits();
  for (int k = 0; k < more; k++, i++) {
    batch.clear();
    VMS_ASSERT_OK(batch.put(t_, numKey("k", i), std::string(100, 'w')));
    VMS_ASSERT_OK(db_->write(batch));
  }
  // A batch's put of a new key touches its leaf twice (the read for its undo image, then
  // the insert), each through the hint; from the root it would take height + 1 or more.
  double perPut = static_cast<double>(hits() - before) / more;
  EXPECT_LT(perPut, 2.5) << "page accesses per ascending one-put batch, height " << shape.height;
}

// Batches of scattered keys, several per tree (so each tree's leaves are found side by
// side: BTree::locateLeaves, at once for keys in no order, after two missed writes for
// keys in order), from two threads whose keys interleave in two trees with interleaved
// keys: values of every size (leaves split and merge under the found hints), deletes,
// and the same key twice in a batch. Each tree ends as the writes say.
TEST_F(LeafHintsDb, BatchesOfScatteredKeysFromTwoThreadsEndAsTheirWritesSay) {
  vmstore::Tree* b = nullptr;
  VMS_ASSERT_OK(db_->openTree("b", true, &b));
  const int threads = 2;
  std::vector<std::map<std::string, std::string>> wantA(threads), wantB(threads);
  std::vector<std::thread> ts;
  for (int th = 0; th < threads; th++) {
    ts.emplace_back([&, th] {
      std::mt19937_64 rng(100 + th);
      vmstore::WriteBatch batch;
      for (int round = 0; round < 600; round++) {
        batch.clear();
        std::vector<std::tuple<vmstore::Tree*, std::string, std::optional<std::string>>> done;
        const int ops = 4 + static_cast<int>(rng() % 40);
        for (int i = 0; i < ops; i++) {
          vmstore::Tree* t = rng() % 2 == 0 ? t_ : b;
          // Keys of the two threads interleave (even and odd), in a range the splits cover.
          std::string key = numKey("k", (rng() % 20000) * threads + th);
          if (i > 0 && rng() % 10 == 0) key = std::get<1>(done[rng() % done.size()]);  // again
          if (rng() % 8 == 0) {
            done.emplace_back(t, key, std::nullopt);
          } else {
            done.emplace_back(t, key, taggedValue(key, static_cast<uint32_t>(round), 1 + rng() % 300));
          }
        }
        // Every other batch in key order (stable: a key's writes keep their order), whose
        // scattered keys are found side by side only once two writes missed their leaf.
        if (round % 2 == 1) {
          std::stable_sort(done.begin(), done.end(), [](const auto& x, const auto& y) {
            return std::get<1>(x) < std::get<1>(y);
          });
        }
        for (auto& [t, key, value] : done) {
          Status s = value ? batch.put(t, key, *value) : batch.del(t, key);
          if (!s.ok()) ADD_FAILURE() << s.toString();
        }
        Status s = db_->write(batch);
        if (!s.ok()) {
          ADD_FAILURE() << s.toString();
          return;
        }
        for (auto& [t, key, value] : done) {
          auto& want = t == t_ ? wantA[th] : wantB[th];
          if (value) {
            want[key] = *value;
          } else {
            want.erase(key);
          }
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  std::map<std::string, std::string> allA, allB;
  for (int th = 0; th < threads; th++) {
    allA.insert(wantA[th].begin(), wantA[th].end());
    allB.insert(wantB[th].begin(), wantB[th].end());
  }
  EXPECT_EQ(diffKV(scanForward(t_), toKV(allA)), "");
  EXPECT_EQ(diffKV(scanForward(b), toKV(allB)), "");
  std::vector<std::string> problems;
  VMS_EXPECT_OK(db_->check(&problems));
  for (const std::string& p : problems) ADD_FAILURE() << p;
}

// Several threads insert ascending keys of their own, interleaved in one key space, and
// update shared rows: every hint goes stale under the others' splits and writes.
TEST_F(LeafHintsDb, WritersOfSeveralThreadsEndAsTheirWritesSay) {
  const int threads = 4;
  const int perThread = 15000;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < perThread; i++) {
        std::string key = numKey("k", static_cast<uint64_t>(i) * threads + t);
        Status s = t_->put(key, taggedValue(key, 1, 30 + (i + t) % 40));
        if (!s.ok()) ADD_FAILURE() << s.toString();
        if (i % 10 == 0) {
          s = t_->update(numKey("shared", i % 5), [](std::optional<std::string_view> cur) {
            uint64_t n = 0;
            if (cur && cur->size() == 8) std::memcpy(&n, cur->data(), 8);
            n++;
            std::string next(8, '\0');
            std::memcpy(next.data(), &n, 8);
            return vmstore::Change::put(std::move(next));
          });
          if (!s.ok()) ADD_FAILURE() << s.toString();
        }
      }
    });
  }
  for (auto& th : ts) th.join();
  KV all = scanForward(t_);
  size_t rows = 0;
  uint64_t counted = 0;
  for (const auto& [k, v] : all) {
    if (k.rfind("shared", 0) == 0) {
      uint64_t n = 0;
      std::memcpy(&n, v.data(), 8);
      counted += n;
      continue;
    }
    rows++;
    EXPECT_TRUE(isTaggedValueOf(k, v)) << show(k);
  }
  EXPECT_EQ(rows, static_cast<size_t>(threads) * perThread);
  EXPECT_EQ(counted, static_cast<uint64_t>(threads) * (perThread / 10));
}

}  // namespace
