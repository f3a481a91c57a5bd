// Unit tests of btree/btree.hpp over a small buffer pool (eviction happens): random
// workloads against std::map, out-of-line values and their pages, growth to height >= 3
// and shrinking back, drop(), verify() and page accounting, concurrent writers.
#include "btree/btree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "unit_util.hpp"
#include "vmstore/limits.hpp"

namespace {

using vmstore::kMaxKeySize;
constexpr size_t kMaxValueSize = vmsunit::kOnePageValue;  // values of a page of their own at most
using vmstore::internal::asBytes;
using vmstore::internal::BTree;
using vmstore::internal::BTreeNode;
using vmstore::internal::BufferManager;
using vmstore::internal::Counter;
using vmstore::internal::GuardS;
using vmstore::internal::LeafBatch;
using vmstore::internal::StorageError;
using Code = vmstore::Status::Code;
using Model = std::map<std::string, std::string>;
using vmsunit::BufferEnv;

std::string randomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() % 256);
  return s;
}

std::string getValue(BTree& t, const std::string& key, bool* found) {
  std::string v;
  *found = t.getString(asBytes(key), &v);
  return v;
}

// get() into a caller buffer agrees with getString.
void expectGet(BTree& t, const std::string& key, const Model& model) {
  auto it = model.find(key);
  std::vector<uint8_t> buf(kMaxValueSize + 16, 0xEE);
  size_t vlen = 12345;
  bool found = t.get(asBytes(key), buf.data(), buf.size(), &vlen);
  ASSERT_EQ(found, it != model.end()) << "key of " << key.size() << " bytes";
  if (!found) return;
  ASSERT_EQ(vlen, it->second.size());
  ASSERT_EQ(std::string(reinterpret_cast<char*>(buf.data()), vlen), it->second);
  // A short buffer gets a prefix and the full length.
  if (vlen > 3) {
    uint8_t small[3] = {0, 0, 0};
    size_t l2 = 0;
    ASSERT_TRUE(t.get(asBytes(key), small, sizeof(small), &l2));
    ASSERT_EQ(l2, vlen);
    ASSERT_EQ(std::string(reinterpret_cast<char*>(small), 3), it->second.substr(0, 3));
  }
  bool f2;
  ASSERT_EQ(getValue(t, key, &f2), it->second);
}

// A full forward scan leaf by leaf, the way the iterator does it.
Model scanForward(BTree& t) {
  Model out;
  std::string from;
  std::string prev;
  bool first = true;
  for (int leaves = 0; leaves < 1000000; leaves++) {
    LeafBatch batch;
    t.readForward(asBytes(from), &batch);
    EXPECT_EQ(batch.keys.size(), batch.values.size());
    for (size_t i = 0; i < batch.count; i++) {
      if (!first) {
        EXPECT_LT(prev, batch.keys[i]) << "forward scan out of order";
      }
      EXPECT_GE(batch.keys[i], from);
      first = false;
      prev = batch.keys[i];
      out[batch.keys[i]] = batch.values[i];
    }
    if (batch.fence.empty()) return out;
    from = batch.fence;
    from.push_back('\0');
  }
  ADD_FAILURE() << "forward scan does not end";
  return out;
}

std::vector<std::pair<std::string, std::string>> scanBackward(BTree& t) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string from(kMaxKeySize + 1, '\xff');
  for (int leaves = 0; leaves < 1000000; leaves++) {
    LeafBatch batch;
    t.readBackward(asBytes(from), &batch);
    for (size_t i = 0; i < batch.count; i++) {
      EXPECT_LE(batch.keys[i], from);
      if (!out.empty()) {
        EXPECT_LT(batch.keys[i], out.back().first) << "backward scan out of order";
      }
      out.emplace_back(batch.keys[i], batch.values[i]);
    }
    if (batch.fence.empty()) return out;
    from = batch.fence;
  }
  ADD_FAILURE() << "backward scan does not end";
  return out;
}

void expectScansMatch(BTree& t, const Model& model) {
  EXPECT_TRUE(scanForward(t) == model) << "forward scan differs from the model";
  auto back = scanBackward(t);
  std::vector<std::pair<std::string, std::string>> want(model.rbegin(), model.rend());
  EXPECT_TRUE(back == want) << "backward scan differs from the model (" << back.size() << " vs "
                            << want.size() << " entries)";
  EXPECT_EQ(t.countKeys(), model.size());
}

// verify() finds nothing; the pages it lists and the free space together are exactly
// pages 1 .. pageCount-1 (given the trees listed are all there is), without overlap.
void expectSoundAndAccounted(BufferManager& bm, std::vector<BTree*> trees) {
  std::vector<uint64_t> pages;
  for (BTree* t : trees) {
    std::vector<std::string> problems;
    t->verify(&problems, &pages);
    EXPECT_TRUE(problems.empty()) << problems.size() << " problems, first: " << problems.front();
  }
  std::set<uint64_t> used(pages.begin(), pages.end());
  EXPECT_EQ(used.size(), pages.size()) << "a page is used twice";
  std::vector<uint64_t> freeList = bm.freeSpace().snapshot();
  std::set<uint64_t> freeSet(freeList.begin(), freeList.end());
  EXPECT_EQ(freeSet.size(), freeList.size()) << "a page is free twice";
  for (uint64_t pid : freeSet) EXPECT_EQ(used.count(pid), 0u) << "page " << pid << " is used and free";
  EXPECT_EQ(used.size() + freeSet.size(), bm.pageCount() - 1) << "pages leaked (neither used nor free)";
  EXPECT_EQ(used.count(0), 0u);
}

// The pool of the tree tests: small enough that the workloads evict (a quarter of the
// API's minimum at the small scale, where the workloads are small too).
uint64_t treePool() { return vmsunit::scaled<uint64_t>(256, 64); }

unsigned heightOf(BufferManager& bm, uint64_t root) {
  unsigned h = 1;
  uint64_t pid = root;
  for (;;) {
    GuardS<BTreeNode> n(bm, pid);
    if (n->isLeaf()) return h;
    pid = n->upper;
    h++;
  }
}

using vmsunit::codeOf;
TEST(BTree, EmptyTree) {
  BufferEnv env(treePool());
  BTree t(*env.bm, BTree::create(*env.bm));
  EXPECT_GE(t.rootPid(), 1u);
  bool found;
  getValue(t, "x", &found);
  EXPECT_FALSE(found);
  EXPECT_FALSE(t.remove(asBytes("x")));
  EXPECT_EQ(t.countKeys(), 0u);
  EXPECT_FALSE(t.isDropped());
  expectScansMatch(t, {});
  expectSoundAndAccounted(*env.bm, {&t});
}

// One string reused across gets (its room kept) takes each value's length and bytes,
// shorter or longer than the last, inline or in a value page.
TEST(BTree, GetIntoAReusedStringTakesEachValueWhole) {
  BufferEnv env(treePool());
  BTree t(*env.bm, BTree::create(*env.bm));
  const std::vector<size_t> sizes = {0, 100, 5, 3000, 17, 0, 9000, 15, 16, 1};
  for (size_t i = 0; i < sizes.size(); i++) {
    std::string v(sizes[i], static_cast<char>('a' + i));
    if (!v.empty()) v.back() = 'z';
    t.put(asBytes("k" + std::to_string(i)), asBytes(v));
  }
  std::string out(50, '#');
  for (int round = 0; round < 2; round++) {
    for (size_t i = 0; i < sizes.size(); i++) {
      std::string want(sizes[i], static_cast<char>('a' + i));
      if (!want.empty()) want.back() = 'z';
      ASSERT_TRUE(t.getString(asBytes("k" + std::to_string(i)), &out)) << i;
      ASSERT_EQ(out, want) << "value " << i << " after a value of another length";
    }
  }
}

// updateInPlace: a value of the same size is written over the old one in the leaf (the
// slot and the heap stay as they were); anything else is left to the caller.
TEST(BTree, UpdateInPlaceOverwritesOnlyInlineValuesOfTheSameSize) {
  BufferEnv env(treePool());
  BTree t(*env.bm, BTree::create(*env.bm));
  for (int i = 0; i < 20; i++) t.put(asBytes("k" + std::to_string(i)), asBytes("value" + std::to_string(i % 10)));
  std::string big(BTreeNode::kMaxEntry + 100, 'B');
  t.put(asBytes("big"), asBytes(big));
  // The root is the only leaf: its layout tells whether a slot moved.
  auto layout = [&] {
    GuardS<BTreeNode> root(*env.bm, t.rootPid());
    bool found;
    unsigned pos = root->lowerBound(asBytes("k7"), &found);
    EXPECT_TRUE(root->isLeaf() && found);
    return std::vector<unsigned>{root->count, root->dataOffset, root->spaceUsed, root->slot[pos].offset};
  };
  int calls = 0;
  std::string seen;
  auto update = [&](const std::string& key, std::optional<std::string> next) {
    calls = 0;
    return t.updateInPlace(asBytes(key), [&](const vmstore::internal::Bytes* current) -> std::optional<vmstore::internal::Bytes> {
      calls++;
      seen = current ? std::string(reinterpret_cast<const char*>(current->data()), current->size()) : "<absent>";
      if (!next) return std::nullopt;
      return asBytes(*next);
    });
  };
  bool found;
  std::vector<unsigned> before = layout();
  EXPECT_TRUE(update("k7", std::string("VALUE7")));
  EXPECT_EQ(seen, "value7");
  EXPECT_EQ(getValue(t, "k7", &found), "VALUE7");
  EXPECT_EQ(layout(), before) << "the update moved the entry";
  // put of the same size writes in place too; of a longer value it reinserts the entry
  // (the heap grows down): the contrast.
  t.put(asBytes("k7"), asBytes("value7"));
  EXPECT_EQ(layout(), before);
  t.put(asBytes("k7"), asBytes("value 7"));
  EXPECT_NE(layout(), before);
  t.put(asBytes("k7"), asBytes("value7"));
  // Another size, nullopt, an absent key, an out-of-line value: nothing written.
  before = layout();
  EXPECT_FALSE(update("k7", std::string("longer value")));
  EXPECT_FALSE(update("k7", std::nullopt));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(getValue(t, "k7", &found), "value7");
  EXPECT_EQ(layout(), before);
  // An absent key, decide giving nothing: nothing written.
  EXPECT_FALSE(update("absent", std::nullopt));
  EXPECT_EQ(seen, "<absent>");
  getValue(t, "absent", &found);
  EXPECT_FALSE(found);
  // An absent key whose value would be out of line: left to put.
  EXPECT_FALSE(update("absent", big));
  getValue(t, "absent", &found);
  EXPECT_FALSE(found);
  // An absent key with an inline value and room in the leaf: inserted there.
  EXPECT_TRUE(update("absent", std::string("x")));
  EXPECT_EQ(seen, "<absent>");
  EXPECT_EQ(getValue(t, "absent", &found), "x");
  EXPECT_TRUE(found);
  before = layout();
  EXPECT_FALSE(update("big", std::string(big.size(), 'C')));
  EXPECT_EQ(seen, big) << "decide did not see the out-of-line value whole";
  EXPECT_EQ(getValue(t, "big", &found), big);
  // The leaf changes between the read and the write (decide runs with no page held):
  // the leaf is found again and the value still written in place.
  calls = 0;
  EXPECT_TRUE(t.updateInPlace(asBytes("k3"), [&](const vmstore::internal::Bytes*) -> std::optional<vmstore::internal::Bytes> {
    calls++;
    t.put(asBytes("k30"), asBytes("another key in the same leaf"));
    return asBytes(std::string_view("VALUE3"));
  }));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(getValue(t, "k3", &found), "VALUE3");
  EXPECT_EQ(getValue(t, "k30", &found), "another key in the same leaf");
  expectSoundAndAccounted(*env.bm, {&t});
}

// updateInPlace of absent keys inserts them while their leaf has room, and leaves the
// split to put: the tree ends as a run of puts would leave it.
TEST(BTree, UpdateInPlaceInsertsAbsentKeysUntilTheLeafIsFull) {
  BufferEnv env(treePool());
  BTree t(*env.bm, BTree::create(*env.bm));
  const std::string value(100, 'v');
  unsigned inserted = 0, leftToPut = 0;
  BTree::LeafHint hint;
  for (int i = 0; i < 2000; i++) {
    const std::string key = "key" + std::to_string(100000 + i);
    bool sawAbsent = false;
    const bool inPlace = t.updateInPlace(
        asBytes(key),
        [&](const vmstore::internal::Bytes* current) {
          sawAbsent = current == nullptr;
          return std::optional(asBytes(value));
        },
        &hint);
    ASSERT_TRUE(sawAbsent) << key;
    if (inPlace) {
      inserted++;
    } else {
      leftToPut++;  // a full leaf: put splits it
      t.put(asBytes(key), asBytes(value), &hint);
    }
  }
  EXPECT_GT(inserted, 1900u);
  EXPECT_GT(leftToPut, 10u);  // 2,000 entries of 110 bytes take more than 50 leaves
  bool found;
  for (int i = 0; i < 2000; i++) {
    EXPECT_EQ(getValue(t, "key" + std::to_string(100000 + i), &found), value) << i;
  }
  // A key present is updated, not inserted twice.
  const std::string other(100, 'w');
  EXPECT_TRUE(t.updateInPlace(asBytes("key100005"), [&](const vmstore::internal::Bytes* current) {
    EXPECT_NE(current, nullptr);
    return std::optional(asBytes(other));
  }));
  EXPECT_EQ(getValue(t, "key100005", &found), other);
  expectSoundAndAccounted(*env.bm, {&t});
}

// put of an existing key whose inline value is at least as long as the new one writes
// the new value where the old one is: no slot moves, the heap does not grow, and a
// shorter value's tail counts as free space (the next compaction reclaims it). A longer
// value, or an out-of-line one either side, reinserts the entry.
TEST(BTree, PutOfAValueNoLongerThanTheOldOneOverwritesItInPlace) {
  BufferEnv env(treePool());
  BTree t(*env.bm, BTree::create(*env.bm));
  for (int i = 0; i < 20; i++) t.put(asBytes("k" + std::to_string(i)), asBytes(std::string(40, 'a' + i)));
  struct Layout {
    unsigned count, dataOffset, spaceUsed, offset, len;
  };
  auto layout = [&](const std::string& key) {
    GuardS<BTreeNode> root(*env.bm, t.rootPid());
    bool found;
    unsigned pos = root->lowerBound(asBytes(key), &found);
    EXPECT_TRUE(root->isLeaf() && found);
    return Layout{root->count, root->dataOffset, root->spaceUsed, root->slot[pos].offset, root->payloadLen(pos)};
  };
  bool found;
  Layout before = layout("k5");
  t.put(asBytes("k5"), asBytes(std::string(40, 'X')));
  Layout same = layout("k5");
  EXPECT_EQ(getValue(t, "k5", &found), std::string(40, 'X'));
  EXPECT_EQ(same.offset, before.offset);
  EXPECT_EQ(same.dataOffset, before.dataOffset);
  EXPECT_EQ(same.spaceUsed, before.spaceUsed);
  t.put(asBytes("k5"), asBytes("short"));
  Layout shorter = layout("k5");
  EXPECT_EQ(getValue(t, "k5", &found), "short");
  EXPECT_EQ(shorter.offset, before.offset);
  EXPECT_EQ(shorter.dataOffset, before.dataOffset);
  EXPECT_EQ(shorter.spaceUsed, before.spaceUsed - 35);
  EXPECT_EQ(shorter.len, 5u);
  t.put(asBytes("k5"), asBytes(""));
  EXPECT_EQ(getValue(t, "k5", &found), "");
  EXPECT_TRUE(found);
  EXPECT_EQ(layout("k5").spaceUsed, before.spaceUsed - 40);
  // Longer again: reinserted lower in the heap.
  t.put(asBytes("k5"), asBytes(std::string(41, 'Y')));
  Layout longer = layout("k5");
  EXPECT_EQ(getValue(t, "k5", &found), std::string(41, 'Y'));
  EXPECT_LT(longer.dataOffset, before.dataOffset);
  EXPECT_EQ(longer.spaceUsed, before.spaceUsed + 1);
  // An out-of-line value replaced by a short one, and back: never written in place.
  std::string big(BTreeNode::kMaxEntry + 100, 'B');
  t.put(asBytes("k6"), asBytes(big));
  EXPECT_EQ(getValue(t, "k6", &found), big);
  t.put(asBytes("k6"), asBytes("x"));
  EXPECT_EQ(getValue(t, "k6", &found), "x");
  // Shrunk entries leave holes that a compaction reclaims: fill the leaf until it must
  // compact, every value still intact.
  Model model;
  for (int i = 0; i < 20; i++) {
    std::string key = "k" + std::to_string(i);
    model[key] = i == 5 ? std::string(41, 'Y') : i == 6 ? "x" : std::string(40, 'a' + i);
    t.put(asBytes(key), asBytes(std::string(i % 3 == 0 ? 1 : 7, 'z')));
    model[key] = std::string(i % 3 == 0 ? 1 : 7, 'z');
  }
  for (int i = 20; i < 200; i++) {
    std::string key = "k" + std::to_string(i);
    model[key] = std::string(10, 'n');
    t.put(asBytes(key), asBytes(model[key]));
  }
  for (const auto& [k, v] : model) expectGet(t, k, model);
  expectScansMatch(t, model);
  expectSoundAndAccounted(*env.bm, {&t});
}

// "k" and i in eight digits: keys in i's order.
std::string key8(uint64_t i) {
  char b[16];
  std::snprintf(b, sizeof b, "k%08llu", static_cast<unsigned long long>(i));
  return std::string(b);
}

// LeafHint: a put or updateInPlace given the hint of the last write goes to that leaf
// without descending only while it is unchanged and covers the key; a leaf changed by
// others, split, merged away, evicted or of another key range is found from the root.
// Whatever the hint, the tree ends as a map given the same writes says.
TEST(BTree, LeafHintsAreTakenOnlyWhileTheLeafIsUnchangedAndCoversTheKey) {
  const auto key = key8;
  BufferEnv env(treePool());
  BTree t(*env.bm, BTree::create(*env.bm));
  Model model;
  // Ascending inserts: with the hint, each goes to the leaf the last one wrote, so
  // each touches one page (without it, a descent touches every level).
  auto hits = [&] { return env.bm->counters().sum(Counter::kHits); };
  BTree::LeafHint hint;
  for (uint64_t i = 0; i < 3000; i++) {
    std::string v(40, static_cast<char>('a' + i % 26));
    t.put(asBytes(key(i * 2)), asBytes(v), &hint);
    model[key(i * 2)] = v;
  }
  {
    std::vector<std::string> problems;
    std::vector<uint64_t> pages;
    vmstore::TreeShape shape;
    t.verify(&problems, &pages, &shape);
    ASSERT_GE(shape.height, 2u) << "one leaf: nothing to skip";
  }
  uint64_t before = hits();
  for (uint64_t i = 3000; i < 3100; i++) {
    std::string v(40, 'z');
    t.put(asBytes(key(i * 2)), asBytes(v), &hint);
    model[key(i * 2)] = v;
  }
  const uint64_t hinted = hits() - before;
  before = hits();
  for (uint64_t i = 3100; i < 3200; i++) {
    std::string v(40, 'z');
    t.put(asBytes(key(i * 2)), asBytes(v));
    model[key(i * 2)] = v;
  }
  const uint64_t descended = hits() - before;
  EXPECT_LT(hinted * 3, descended * 2) << "the hint was not taken (" << hinted << " page hits against " << descended
                                       << " without it)";
  // A random mix: hinted puts and updates (same size and not), plain puts and removes
  // in between that change, split and merge leaves, and a pool small enough to evict.
  std::mt19937_64 rng(7);
  for (int op = 0; op < 20000; op++) {
    uint64_t i = rng() % 7000;
    if (rng() % 4 == 0) i = (rng() % 2 == 0 ? i + 1 : i) % 7000;  // runs of nearby keys
    const std::string k = key(i);
    switch (rng() % 5) {
      case 0:
      case 1: {
        std::string v(1 + rng() % 60, static_cast<char>('A' + rng() % 26));
        t.put(asBytes(k), asBytes(v), &hint);
        model[k] = v;
        break;
      }
      case 2: {
        std::string v(rng() % 2 == 0 ? 40 : 41, 'u');
        bool inPlace = t.updateInPlace(
            asBytes(k), [&](const vmstore::internal::Bytes*) { return std::optional(asBytes(v)); }, &hint);
        if (!inPlace) t.put(asBytes(k), asBytes(v), &hint);
        model[k] = v;
        break;
      }
      case 3: {
        std::string v(20, 'p');
        t.put(asBytes(k), asBytes(v));  // not hinted: the hinted leaf may change under the hint
        model[k] = v;
        break;
      }
      default:
        t.remove(asBytes(k));
        model.erase(k);
    }
  }
  bool found;
  for (const auto& [k, v] : model) ASSERT_EQ(getValue(t, k, &found), v) << k;
  EXPECT_EQ(t.countKeys(), model.size());
  expectSoundAndAccounted(*env.bm, {&t});
}

// locateLeaves finds, side by side, the leaf each key's write goes to: an in-place update
// given a found hint writes that leaf (the hint it leaves names the same page), and one
// given a fresh hint touches that page alone. Hints made stale by the writes in between
// (splits, merges, removes) still send every put and remove to its own leaf, and a
// remove hands back the value it removed.
TEST(BTree, LocateLeavesFindsTheLeafEachKeyIsWrittenTo) {
  const auto key = key8;
  BufferEnv env(1024);  // pages: the whole tree stays resident (nothing is left unfound)
  BTree t(*env.bm, BTree::create(*env.bm));
  Model model;
  for (uint64_t i = 0; i < 6000; i++) {
    std::string v(40, static_cast<char>('a' + i % 26));
    t.put(asBytes(key(i * 2)), asBytes(v));
    model[key(i * 2)] = v;
  }
  vmstore::TreeShape shape;
  {
    std::vector<std::string> problems;
    std::vector<uint64_t> pages;
    t.verify(&problems, &pages, &shape);
    ASSERT_GE(shape.height, 2u) << "one leaf: nothing to find";
  }
  std::mt19937_64 rng(11);
  auto locate = [&](const std::vector<std::string>& keys) {
    std::vector<vmstore::internal::Bytes> views;
    for (const std::string& k : keys) views.push_back(asBytes(k));
    std::vector<BTree::LeafHint> found(keys.size());
    t.locateLeaves(views, found);
    return found;
  };
  // 300 present keys in no order (more than one group of kLookupGroup): every one found,
  // in the leaf its update then writes.
  std::vector<std::string> keys;
  for (int i = 0; i < 300; i++) keys.push_back(key((rng() % 6000) * 2));
  std::vector<BTree::LeafHint> found = locate(keys);
  for (size_t i = 0; i < keys.size(); i++) {
    ASSERT_NE(found[i].pid, vmstore::internal::kNoPage) << keys[i] << ": everything is resident";
    BTree::LeafHint h = found[i];  // stale once another key of its leaf was written
    std::string v(40, 'x');
    ASSERT_TRUE(t.updateInPlace(asBytes(keys[i]), [&](const vmstore::internal::Bytes*) { return std::optional(asBytes(v)); }, &h));
    EXPECT_EQ(h.pid, found[i].pid) << keys[i] << " was found in another leaf than the one it is in";
    model[keys[i]] = v;
  }
  // Fresh hints of keys in different leaves: one page access per update.
  keys.clear();
  for (uint64_t i = 0; i < 6000; i += 37) keys.push_back(key(i * 2));
  found = locate(keys);
  std::set<uint64_t> used;
  auto hits = [&] { return env.bm->counters().sum(Counter::kHits); };
  uint64_t updates = 0;
  const uint64_t before = hits();
  for (size_t i = 0; i < keys.size(); i++) {
    if (!used.insert(found[i].pid).second) continue;  // its leaf was written: the hint is stale
    BTree::LeafHint h = found[i];
    std::string v(40, 'y');
    ASSERT_TRUE(t.updateInPlace(asBytes(keys[i]), [&](const vmstore::internal::Bytes*) { return std::optional(asBytes(v)); }, &h));
    model[keys[i]] = v;
    updates++;
  }
  ASSERT_GE(updates, 10u);
  EXPECT_LT(static_cast<double>(hits() - before) / static_cast<double>(updates), 1.5)
      << "page accesses per update with a found hint, height " << shape.height;
  // Absent keys and present ones, found, then written after other writes have split,
  // merged and changed their leaves: each lands where it belongs.
  for (int round = 0; round < 20; round++) {
    keys.clear();
    for (int i = 0; i < 64; i++) keys.push_back(key(rng() % 12000));
    found = locate(keys);
    for (int i = 0; i < 200; i++) {  // other writes in between
      const std::string k = key(rng() % 12000);
      if (rng() % 3 == 0) {
        t.remove(asBytes(k));
        model.erase(k);
      } else {
        std::string v(1 + rng() % 200, 'o');
        t.put(asBytes(k), asBytes(v));
        model[k] = v;
      }
    }
    for (size_t i = 0; i < keys.size(); i++) {
      BTree::LeafHint h = found[i];
      if (i % 3 == 0) {  // a remove through the hint, handing back what it removed
        std::string old;
        const auto it = model.find(keys[i]);
        ASSERT_EQ(t.remove(asBytes(keys[i]), &old, &h), it != model.end()) << keys[i];
        if (it != model.end()) {
          EXPECT_EQ(old, it->second) << keys[i];
          model.erase(it);
        }
        continue;
      }
      // Now and then a value on a page of its own (removed above with its copy).
      std::string v(i % 7 == 1 ? 6000 : 1 + rng() % 120, static_cast<char>('A' + i % 26));
      t.put(asBytes(keys[i]), asBytes(v), &h);
      model[keys[i]] = v;
    }
  }
  bool present;
  for (const auto& [k, v] : model) ASSERT_EQ(getValue(t, k, &present), v) << k;
  EXPECT_EQ(t.countKeys(), model.size());
  expectSoundAndAccounted(*env.bm, {&t});
}

// A hint is kept only while its leaf is unchanged: a leaf merged away, its page freed
// and taken by another tree for a leaf whose fences cover the key, is not written to.
TEST(BTree, ALeafHintToALeafFreedAndReusedIsNotTaken) {
  BufferEnv env(treePool());
  BTree a(*env.bm, BTree::create(*env.bm));
  BTree b(*env.bm, BTree::create(*env.bm));
  auto key = [](int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "k%06d", i);
    return std::string(buf);
  };
  for (int i = 0; i < 3000; i++) a.put(asBytes(key(i)), asBytes(std::string(40, 'a')));
  BTree::LeafHint hint;
  a.put(asBytes(key(1500)), asBytes(std::string(40, 'h')), &hint);  // the hint: 1500's leaf
  for (int i = 100; i < 2900; i++) a.remove(asBytes(key(i)));        // that leaf merges away
  for (int i = 0; i < 3000; i++) b.put(asBytes(key(i)), asBytes(std::string(40, 'b')));  // B takes its page
  // The hinted page is a leaf of B now: a key within its fences.
  std::string target;
  {
    auto g = vmstore::internal::GuardO<BTreeNode>::ifResident(*env.bm, hint.pid);
    ASSERT_TRUE(g.held());
    ASSERT_TRUE(g->isLeaf()) << "B did not take the freed page; the test needs it to";
    vmstore::internal::Bytes upper = g->upperFenceKey();
    vmstore::internal::Bytes lower = g->lowerFenceKey();
    target = !upper.empty() ? std::string(reinterpret_cast<const char*>(upper.data()), upper.size())
                            : std::string(reinterpret_cast<const char*>(lower.data()), lower.size()) + "z";
  }
  a.put(asBytes(target), asBytes(std::string(40, 'n')), &hint);
  bool found;
  EXPECT_EQ(getValue(a, target, &found), std::string(40, 'n'));
  EXPECT_NE(getValue(b, target, &found), std::string(40, 'n')) << "written into the other tree's leaf";
  expectSoundAndAccounted(*env.bm, {&a, &b});
}

TEST(BTree, RandomWorkloadMatchesMap) {
  BufferEnv env(treePool());
  BufferManager& bm = *env.bm;
  BTree t(bm, BTree::create(bm));
  Model model;
  std::mt19937_64 rng(2024);
  const int ops = vmsunit::scaled(25000, 5000);
  std::vector<std::string> keys;
  for (int i = 0; i < ops; i++) {
    unsigned r = rng() % 100;
    if (r < 55 || keys.empty()) {
      std::string k;
      if (!keys.empty() && rng() % 4 == 0) {
        k = keys[rng() % keys.size()];  // overwrite
      } else {
        size_t len = rng() % 8 == 0 ? 1 + rng() % kMaxKeySize : 1 + rng() % 24;
        k = randomBytes(rng, len);
        keys.push_back(k);
      }
      size_t vlen = rng() % 16 == 0 ? rng() % (kMaxValueSize + 1) : rng() % 120;
      std::string v = randomBytes(rng, vlen);
      t.put(asBytes(k), asBytes(v));
      model[k] = v;
    } else if (r < 75) {
      const std::string& k = keys[rng() % keys.size()];
      bool want = model.erase(k) > 0;
      ASSERT_EQ(t.remove(asBytes(k)), want) << "op " << i;
    } else {
      const std::string& k = rng() % 8 ? keys[rng() % keys.size()] : randomBytes(rng, 1 + rng() % 10);
      expectGet(t, k, model);
      if (HasFatalFailure()) FAIL() << "op " << i;
    }
    if (i % 5000 == 4999) {
      expectScansMatch(t, model);
      expectSoundAndAccounted(bm, {&t});
    }
  }
  for (auto& [k, v] : model) {
    expectGet(t, k, model);
    if (HasFatalFailure()) return;
  }
  expectScansMatch(t, model);
  expectSoundAndAccounted(bm, {&t});
  EXPECT_GT(bm.counters().sum(Counter::kEvictions), 0u) << "the pool was not small enough";
  // Partial reads from the middle.
  for (int i = 0; i < 50 && !model.empty(); i++) {
    std::string from = randomBytes(rng, 1 + rng() % 6);
    LeafBatch batch;
    t.readForward(asBytes(from), &batch);
    auto it = model.lower_bound(from);
    for (size_t j = 0; j < batch.count; j++, ++it) {
      ASSERT_NE(it, model.end());
      ASSERT_EQ(batch.keys[j], it->first);
      ASSERT_EQ(batch.values[j], it->second);
    }
    if (!batch.fence.empty() && it != model.end()) {
      EXPECT_GT(it->first, batch.fence);
    }
    t.readBackward(asBytes(from), &batch);
    auto rit = std::make_reverse_iterator(model.upper_bound(from));
    for (size_t j = 0; j < batch.count; j++, ++rit) {
      ASSERT_NE(rit, model.rend());
      ASSERT_EQ(batch.keys[j], rit->first);
    }
    if (!batch.fence.empty() && rit != model.rend()) {
      EXPECT_LE(rit->first, batch.fence);
    }
  }
  // scan() starts with a read of a few entries (kFirstReadEntries) and goes on from its
  // last key: both directions see exactly the model.
  std::vector<std::string> want;
  for (const auto& [k, v] : model) want.push_back(k);
  std::vector<std::string> got;
  t.scan(asBytes(""), true, [&](std::string_view k, std::string_view) {
    got.emplace_back(k);
    return true;
  });
  EXPECT_EQ(got, want);
  const std::string top(kMaxKeySize + 1, '\xff');
  got.clear();
  t.scan(asBytes(top), false, [&](std::string_view k, std::string_view) {
    got.emplace_back(k);
    return true;
  });
  std::reverse(want.begin(), want.end());
  EXPECT_EQ(got, want);
  // A read limited to a few entries stops with `more` (no fence) where the leaf has more.
  for (int i = 0; i < 50 && !model.empty(); i++) {
    std::string from = randomBytes(rng, 1 + rng() % 6);
    const unsigned limit = 1 + static_cast<unsigned>(rng() % 4);
    LeafBatch full, part;
    t.readForward(asBytes(from), &full);
    t.readForward(asBytes(from), &part, 0, limit);
    EXPECT_EQ(part.count, std::min<size_t>(full.count, limit));
    EXPECT_EQ(part.more, full.count > limit);
    for (size_t j = 0; j < part.count; j++) ASSERT_EQ(part.keys[j], full.keys[j]);
    if (part.more) {
      EXPECT_TRUE(part.fence.empty());
    } else {
      EXPECT_EQ(part.fence, full.fence);
    }
    t.readBackward(asBytes(from), &full);
    t.readBackward(asBytes(from), &part, 0, limit);
    EXPECT_EQ(part.count, std::min<size_t>(full.count, limit));
    EXPECT_EQ(part.more, full.count > limit);
    for (size_t j = 0; j < part.count; j++) ASSERT_EQ(part.keys[j], full.keys[j]);
  }
}

TEST(BTree, OutOfLineValuesRoundTripAndAreFreed) {
  BufferEnv env(treePool());
  BufferManager& bm = *env.bm;
  BTree t(bm, BTree::create(bm));
  std::mt19937_64 rng(8);
  Model model;
  auto usedPages = [&] { return bm.pageCount() - 1 - bm.freeSpace().size(); };
  // A few small entries so the root stays one leaf.
  for (int i = 0; i < 5; i++) {
    std::string k = "small" + std::to_string(i);
    t.put(asBytes(k), asBytes("v"));
    model[k] = "v";
  }
  ASSERT_EQ(usedPages(), 1u);
  // New out-of-line values: one page each.
  const int n = 20;
  for (int i = 0; i < n; i++) {
    std::string k = "big" + std::to_string(i);
    std::string v = randomBytes(rng, BTreeNode::kMaxEntry + 1 + rng() % (kMaxValueSize - BTreeNode::kMaxEntry));
    uint64_t before = usedPages();
    t.put(asBytes(k), asBytes(v));
    model[k] = v;
    expectGet(t, k, model);
    // One value page, plus a node if the leaf split.
    EXPECT_GE(usedPages(), before + 1);
    EXPECT_LE(usedPages(), before + 3);
  }
  expectSoundAndAccounted(bm, {&t});
  // Overwrite out-of-line with out-of-line: the old value page is freed.
  for (int i = 0; i < n; i += 2) {
    std::string k = "big" + std::to_string(i);
    std::string v = randomBytes(rng, kMaxValueSize);
    uint64_t before = usedPages();
    t.put(asBytes(k), asBytes(v));
    model[k] = v;
    EXPECT_EQ(usedPages(), before) << "overwrite leaked or lost a value page";
    expectGet(t, k, model);
  }
  // Overwrite out-of-line with inline and inline with out-of-line.
  for (int i = 1; i < n; i += 4) {
    std::string k = "big" + std::to_string(i);
    uint64_t before = usedPages();
    t.put(asBytes(k), asBytes("tiny"));
    model[k] = "tiny";
    EXPECT_EQ(usedPages(), before - 1) << "the value page was not freed";
    expectGet(t, k, model);
  }
  {
    uint64_t before = usedPages();
    std::string v = randomBytes(rng, 3000);
    t.put(asBytes("small0"), asBytes(v));
    model["small0"] = v;
    EXPECT_EQ(usedPages(), before + 1);
  }
  // A key near the maximum size with a value that just does not fit beside it.
  {
    std::string k(kMaxKeySize, 'K');
    std::string v = randomBytes(rng, BTreeNode::kMaxEntry - kMaxKeySize + 1);
    t.put(asBytes(k), asBytes(v));
    model[k] = v;
    expectGet(t, k, model);
  }
  expectScansMatch(t, model);
  expectSoundAndAccounted(bm, {&t});
  // Evict everything and read it back.
  std::vector<uint64_t> pages;
  std::vector<std::string> problems;
  t.verify(&problems, &pages);
  ASSERT_TRUE(vmsunit::evictAll(bm, pages));
  for (auto& [k, v] : model) expectGet(t, k, model);
  // Delete: value pages freed.
  for (int i = 0; i < n; i++) {
    std::string k = "big" + std::to_string(i);
    bool ool = model[k].size() + k.size() > BTreeNode::kMaxEntry;
    uint64_t before = usedPages();
    ASSERT_TRUE(t.remove(asBytes(k)));
    model.erase(k);
    if (ool) {
      EXPECT_LE(usedPages(), before - 1) << "delete did not free the value page";
    }
  }
  expectScansMatch(t, model);
  expectSoundAndAccounted(bm, {&t});
}

// Inserts keys (random order) with values of valueLen bytes until height >= 3, then
// deletes them all: the tree must shrink back to its root leaf, every other page free.
void growAndShrink(std::vector<std::string> keys, size_t valueLen) {
  BufferEnv env(treePool());
  BufferManager& bm = *env.bm;
  BTree t(bm, BTree::create(bm));
  std::mt19937_64 rng(77);
  std::shuffle(keys.begin(), keys.end(), rng);
  Model model;
  for (auto& k : keys) {
    std::string v = randomBytes(rng, valueLen / 2 + rng() % valueLen);
    t.put(asBytes(k), asBytes(v));
    model[k] = v;
  }
  unsigned height = heightOf(bm, t.rootPid());
  std::printf("[ BTree    ] %zu keys: height %u, %llu pages\n", keys.size(), height,
              static_cast<unsigned long long>(bm.pageCount()));
  EXPECT_GE(height, 3u);
  expectScansMatch(t, model);
  expectSoundAndAccounted(bm, {&t});
  // Delete everything in random order, checking along the way.
  std::shuffle(keys.begin(), keys.end(), rng);
  for (size_t i = 0; i < keys.size(); i++) {
    ASSERT_TRUE(t.remove(asBytes(keys[i]))) << i;
    model.erase(keys[i]);
    if (i % 500 == 0) {
      bool found;
      getValue(t, keys[i], &found);
      EXPECT_FALSE(found);
      expectSoundAndAccounted(bm, {&t});
    }
  }
  EXPECT_EQ(t.countKeys(), 0u);
  EXPECT_EQ(heightOf(bm, t.rootPid()), 1u) << "the root did not shrink back to a leaf";
  std::vector<uint64_t> pages;
  std::vector<std::string> problems;
  t.verify(&problems, &pages);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(pages.size(), 1u) << "an empty tree is its root leaf, not " << pages.size() << " pages";
  EXPECT_EQ(bm.freeSpace().size(), bm.pageCount() - 2) << "all pages but superblock and root are free";
  expectSoundAndAccounted(bm, {&t});
  // And it works again.
  t.put(asBytes("again"), asBytes("yes"));
  bool found;
  EXPECT_EQ(getValue(t, "again", &found), "yes");
}

TEST(BTree, GrowsToHeightThreeAndShrinksBack) {
  std::mt19937_64 rng(7);
  std::set<std::string> keys;
  const size_t n = vmsunit::scaled<size_t>(5000, 2500);
  while (keys.size() < n) keys.insert(randomBytes(rng, 8 + rng() % 16));
  growAndShrink({keys.begin(), keys.end()}, 400);
}

// Long keys with long common prefixes: separators and fences of ~700-900 bytes.
TEST(BTree, GrowsToHeightThreeAndShrinksBackWithLongKeys) {
  std::mt19937_64 rng(8);
  const int n = vmsunit::scaled(3000, 800);
  std::vector<std::string> keys;
  for (int i = 0; i < n; i++) {
    std::string d = std::to_string(i * 7919 % 1000003);
    keys.push_back(std::string(700, 'k') + std::string(10 - d.size(), '0') + d + randomBytes(rng, rng() % 200));
  }
  growAndShrink(keys, 200);
}

TEST(BTree, DropFreesAllButRoot) {
  BufferEnv env(treePool());
  BufferManager& bm = *env.bm;
  BTree keep(bm, BTree::create(bm));
  BTree t(bm, BTree::create(bm));
  std::mt19937_64 rng(5);
  Model keepModel;
  const int n = vmsunit::scaled(3000, 800);
  for (int i = 0; i < n; i++) {
    std::string k = randomBytes(rng, 1 + rng() % 40);
    std::string v = randomBytes(rng, i % 10 == 0 ? 2000 + rng() % 2000 : rng() % 200);
    t.put(asBytes(k), asBytes(v));
    if (i % 4 == 0) {
      keep.put(asBytes(k), asBytes(v));
      keepModel[k] = v;
    }
  }
  ASSERT_GE(heightOf(bm, t.rootPid()), 2u);
  expectSoundAndAccounted(bm, {&keep, &t});
  std::vector<uint64_t> keepPages;
  std::vector<std::string> problems;
  keep.verify(&problems, &keepPages);

  std::vector<vmstore::internal::PageRun> dropped;
  auto savedRoot = std::make_unique<vmstore::internal::Page>();
  t.drop(&dropped, savedRoot.get());
  for (const auto& r : dropped) bm.freeSpan(r.pid, r.pages);
  EXPECT_TRUE(t.isDropped());
  EXPECT_FALSE(keep.isDropped());
  // Every page but the root (and the other tree's pages and the superblock) is free.
  EXPECT_EQ(bm.freeSpace().size(), bm.pageCount() - 1 - 1 - keepPages.size());
  std::vector<uint64_t> freeList = bm.freeSpace().snapshot();
  std::set<uint64_t> freeSet(freeList.begin(), freeList.end());
  EXPECT_EQ(freeSet.count(t.rootPid()), 0u);
  for (uint64_t pid : keepPages) EXPECT_EQ(freeSet.count(pid), 0u);
  // Later calls: NotFound.
  uint8_t buf[16];
  size_t vlen;
  std::string s;
  LeafBatch batch;
  EXPECT_EQ(codeOf([&] { t.get(asBytes("a"), buf, sizeof(buf), &vlen); }), Code::kNotFound);
  EXPECT_EQ(codeOf([&] { t.getString(asBytes("a"), &s); }), Code::kNotFound);
  EXPECT_EQ(codeOf([&] { t.put(asBytes("a"), asBytes("b")); }), Code::kNotFound);
  EXPECT_EQ(codeOf([&] { t.put(asBytes("a"), asBytes(std::string(3000, 'x'))); }), Code::kNotFound);
  EXPECT_EQ(codeOf([&] { t.remove(asBytes("a")); }), Code::kNotFound);
  EXPECT_EQ(codeOf([&] { t.readForward(asBytes(""), &batch); }), Code::kNotFound);
  EXPECT_EQ(codeOf([&] { t.readBackward(asBytes("z"), &batch); }), Code::kNotFound);
  EXPECT_EQ(codeOf([&] { t.drop(&dropped, savedRoot.get()); }), Code::kNotFound);
  // A failed out-of-line put on a dropped tree leaks no value page.
  EXPECT_EQ(bm.freeSpace().size(), bm.pageCount() - 1 - 1 - keepPages.size());
  // The other tree is untouched.
  expectScansMatch(keep, keepModel);
  // Allocations reuse the freed pages: the file does not grow.
  uint64_t count = bm.pageCount();
  for (int i = 0; i < 100; i++) keep.put(asBytes(randomBytes(rng, 30)), asBytes(std::string(3000, 'y')));
  EXPECT_EQ(bm.pageCount(), count);
}

TEST(BTree, ConcurrentWritersOnDisjointRanges) {
  BufferEnv env(treePool());
  BufferManager& bm = *env.bm;
  BTree t(bm, BTree::create(bm));
  const int threads = 4;
  const int ops = vmsunit::scaled(12000, 2500);
  std::vector<Model> models(threads);
  std::atomic<int> mismatches{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> workers;
  for (int id = 0; id < threads; id++) {
    workers.emplace_back([&, id] {
      std::mt19937_64 rng(500 + id);
      Model& model = models[id];
      std::vector<std::string> keys;
      try {
        for (int i = 0; i < ops; i++) {
          unsigned r = rng() % 100;
          if (r < 50 || keys.empty()) {
            std::string k = std::string(1, static_cast<char>('A' + id)) + randomBytes(rng, 1 + rng() % 30);
            if (!keys.empty() && rng() % 4 == 0) k = keys[rng() % keys.size()];
            else keys.push_back(k);
            std::string v = randomBytes(rng, rng() % 20 == 0 ? 1600 + rng() % 2000 : rng() % 100);
            t.put(asBytes(k), asBytes(v));
            model[k] = v;
          } else if (r < 75) {
            const std::string& k = keys[rng() % keys.size()];
            bool want = model.erase(k) > 0;
            if (t.remove(asBytes(k)) != want) mismatches++;
          } else {
            const std::string& k = keys[rng() % keys.size()];
            std::string v;
            bool found = t.getString(asBytes(k), &v);
            auto it = model.find(k);
            if (found != (it != model.end()) || (found && v != it->second)) mismatches++;
          }
        }
      } catch (const StorageError& e) {
        ADD_FAILURE() << "thread " << id << ": " << e.status().toString();
        errors++;
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0) << "a reader saw something other than its own last write";
  Model all;
  for (auto& m : models) all.insert(m.begin(), m.end());
  expectScansMatch(t, all);
  expectSoundAndAccounted(bm, {&t});
  EXPECT_GT(bm.counters().sum(Counter::kEvictions), 0u);
}

}  // namespace

namespace {

// Issue 7, item 1: a compact tree. Loading keys as several writers each loading an
// ascending range does (here interleaved deterministically: one key of each range in
// turn) must give about the pages of one ascending load; random inserts must leave
// leaves at least as full as a textbook B+tree (about 69%).
vmstore::TreeShape loadShape(const std::vector<std::string>& keys) {
  BufferEnv env(vmsunit::scaled<uint64_t>(16384, 4096));
  BTree t(*env.bm, BTree::create(*env.bm));
  for (const std::string& k : keys) t.put(asBytes(k), asBytes(std::string(40, 'v')));
  std::vector<std::string> problems;
  std::vector<uint64_t> pages;
  vmstore::TreeShape shape;
  t.verify(&problems, &pages, &shape);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(shape.keys, keys.size());
  return shape;
}

std::string rangeKey(int range, int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "r%02d-%09d", range, i);
  return buf;
}

TEST(BTree, InterleavedAscendingRangesLoadAsCompactlyAsOne) {
  const int perRange = vmsunit::scaled(40000, 10000);
  for (int ranges : {2, 4}) {
    std::vector<std::string> one;
    std::vector<std::string> interleaved;
    for (int r = 0; r < ranges; r++) {
      for (int i = 0; i < perRange; i++) one.push_back(rangeKey(r, i));
    }
    for (int i = 0; i < perRange; i++) {
      for (int r = 0; r < ranges; r++) interleaved.push_back(rangeKey(r, i));
    }
    vmstore::TreeShape a = loadShape(one);
    vmstore::TreeShape b = loadShape(interleaved);
    std::printf("[  BTree   ] %d ranges: one load %llu leaves (%.0f%% full), interleaved %llu leaves (%.0f%% full)\n",
                ranges, static_cast<unsigned long long>(a.leaf_pages), 100 * a.leaf_fill,
                static_cast<unsigned long long>(b.leaf_pages), 100 * b.leaf_fill);
    EXPECT_LE(static_cast<double>(b.leaf_pages + b.inner_pages),
              1.05 * static_cast<double>(a.leaf_pages + a.inner_pages))
        << ranges << " interleaved ascending ranges";
  }
}

// The leaves a textbook B+tree makes of keys inserted in this order: each leaf holds up
// to `capacity` entries stored whole, and a full leaf splits evenly (the new entry
// included; with largerLeft the odd entry goes left). Only the leaf level is modelled;
// inner nodes do not change it.
size_t textbookLeaves(const std::vector<std::string>& keys, size_t capacity, bool largerLeft = false) {
  std::vector<std::vector<std::string>> leaves(1);
  std::vector<std::string> lows{""};  // each leaf's lowest possible key
  for (const std::string& k : keys) {
    size_t i = static_cast<size_t>(std::upper_bound(lows.begin(), lows.end(), k) - lows.begin()) - 1;
    std::vector<std::string>& leaf = leaves[i];
    leaf.insert(std::upper_bound(leaf.begin(), leaf.end(), k), k);
    if (leaf.size() > capacity) {
      const size_t left = (leaf.size() + (largerLeft ? 1 : 0)) / 2;
      std::vector<std::string> right(leaf.begin() + static_cast<long>(left), leaf.end());
      leaf.resize(left);
      lows.insert(lows.begin() + static_cast<long>(i) + 1, right.front());
      leaves.insert(leaves.begin() + static_cast<long>(i) + 1, std::move(right));
    }
  }
  return leaves.size();
}

// Random inserts of n keys: decimal ones with a common prefix (which prefix truncation
// shortens), or random ones of 13 letters (which it barely can).
std::vector<std::string> randomInsertKeys(int n, bool randomLetters) {
  std::vector<std::string> keys;
  std::mt19937_64 rng(7);
  std::set<std::string> seen;
  for (int i = 0; i < n; i++) {
    if (!randomLetters) {
      keys.push_back(rangeKey(0, i));
      continue;
    }
    std::string k(13, 'a');
    do {
      for (char& c : k) c = static_cast<char>('a' + rng() % 26);
    } while (!seen.insert(k).second);
    keys.push_back(k);
  }
  std::shuffle(keys.begin(), keys.end(), rng);
  return keys;
}

class RandomInserts : public ::testing::TestWithParam<bool> {};

TEST_P(RandomInserts, FillLeavesLikeATextbookTree) {
  // Not scaled down in sanitizer builds: the shape is deterministic for these keys, and
  // a smaller tree moves further from the textbook's either way by chance (20,000 keys:
  // 463 leaves against 457).
  const int n = 80000;
  std::vector<std::string> keys = randomInsertKeys(n, GetParam());
  vmstore::TreeShape s = loadShape(keys);
  // A textbook leaf of this page format: the header, then slots and whole keys and
  // values (loadShape's 40-byte values), without fences (which only favours it).
  const size_t entry = BTreeNode::kSlotSize + keys[0].size() + 40;
  const size_t capacity = (vmstore::internal::kPageSize - BTreeNode::kHeaderSize) / entry;
  const size_t textbook = textbookLeaves(keys, capacity);
  std::printf("[  BTree   ] random inserts: %llu leaves (%.1f entries each, %.1f%% of the bytes in use), height %u; "
              "a textbook tree: %zu leaves of up to %zu entries (%.1f each, %.1f%% full; %zu with the larger half "
              "left)\n",
              static_cast<unsigned long long>(s.leaf_pages), static_cast<double>(n) / static_cast<double>(s.leaf_pages),
              100 * s.leaf_fill, s.height, textbook, capacity, static_cast<double>(n) / static_cast<double>(textbook),
              100.0 * static_cast<double>(n) / static_cast<double>(textbook * capacity),
              textbookLeaves(keys, capacity, true));
  // The target: leaves at least as full as a textbook tree's (ln 2, about 69%), counted
  // as pages for the same keys in the same order. Where prefix truncation shortens the
  // keys, this tree's leaves hold more entries in fewer bytes (about 69% of the bytes in
  // use, 15% fewer leaves). Random letters it barely shortens: there the two are level,
  // within the 1% by which the textbook count itself moves with its tie rule (the
  // larger half left or right) on the same keys.
  EXPECT_LE(static_cast<double>(s.leaf_pages), 1.01 * static_cast<double>(textbook));
  EXPECT_GE(s.leaf_fill, 0.66);  // a regression guard on the bytes in use
  EXPECT_GE(s.height, 2u);
}

INSTANTIATE_TEST_SUITE_P(BTree, RandomInserts, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return std::string(p.param ? "RandomLetterKeys" : "DecimalKeys");
                         });

}  // namespace
