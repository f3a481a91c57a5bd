// Unit tests of btree/node.hpp: the slotted B+tree node on a 4 KiB buffer: fences and
// prefix truncation, key heads, hints, insert/lowerBound/remove, compaction, splits
// (and that chooseSplit's halves always fit), merges and verify(); lowerBound's two halves
// and lowerBoundNear.
#include "btree/node.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "unit_util.hpp"
#include "vmstore/limits.hpp"

namespace {

using vmstore::kMaxKeySize;
using vmstore::internal::asBytes;
using vmstore::internal::BTreeNode;
using vmstore::internal::Bytes;
using vmstore::internal::compareBytes;
using vmstore::internal::keyHead;
using vmstore::internal::kPageSize;

using Entries = std::vector<std::pair<std::string, std::string>>;

// A node on its own aligned, zeroed 4 KiB buffer.
struct Node {
  vmsunit::AlignedPages mem{1};
  BTreeNode* n = mem.as<BTreeNode>();
  Node(bool leaf, const std::string& lower = "", const std::string& upper = "") {
    n->init(leaf, asBytes(lower), asBytes(upper));
  }
  BTreeNode* operator->() const { return n; }
  std::vector<uint8_t> snapshot() const { return {mem.data(), mem.data() + kPageSize}; }
};

Bytes b(const std::string& s) { return asBytes(s); }
std::string str(Bytes x) { return std::string(reinterpret_cast<const char*>(x.data()), x.size()); }
std::string childBytes(uint64_t pid) { return std::string(reinterpret_cast<const char*>(&pid), 8); }

Entries entriesOf(const BTreeNode* n) {
  Entries out;
  for (unsigned i = 0; i < n->count; i++) {
    out.emplace_back(n->keyString(i),
                     std::string(reinterpret_cast<const char*>(n->payloadPtr(i)), n->payloadLen(i)));
  }
  return out;
}

// Inserts (asserting it fits).
void put(BTreeNode* n, const std::string& key, const std::string& payload) {
  ASSERT_TRUE(n->makeSpaceFor(static_cast<unsigned>(key.size()), static_cast<unsigned>(payload.size())))
      << "no room for key of " << key.size() << " bytes";
  n->insert(b(key), b(payload));
}

std::string numKey(const std::string& prefix, unsigned i, int width = 6) {
  std::string d = std::to_string(i);
  return prefix + std::string(width - std::min<int>(width, static_cast<int>(d.size())), '0') + d;
}

TEST(BTreeNode, InitWithFences) {
  Node leaf(true);
  EXPECT_TRUE(leaf->isLeaf());
  EXPECT_FALSE(leaf->isInner());
  EXPECT_EQ(leaf->count, 0);
  EXPECT_EQ(leaf->prefixLen, 0);
  EXPECT_TRUE(leaf->lowerFenceKey().empty());
  EXPECT_TRUE(leaf->upperFenceKey().empty());
  EXPECT_EQ(leaf->freeSpace(), kPageSize - BTreeNode::kHeaderSize);
  EXPECT_EQ(leaf->verify(), "");

  Node inner(false, "apple", "banana");
  EXPECT_TRUE(inner->isInner());
  EXPECT_EQ(str(inner->lowerFenceKey()), "apple");
  EXPECT_EQ(str(inner->upperFenceKey()), "banana");
  EXPECT_EQ(inner->prefixLen, 0);
  EXPECT_EQ(inner->freeSpace(), kPageSize - BTreeNode::kHeaderSize - 11);
  EXPECT_EQ(inner->verify(), "");

  // One open side: no prefix (every key above "abc..." is possible).
  Node open(true, "abcdef", "");
  EXPECT_EQ(open->prefixLen, 0);
  Node open2(true, "", "abcdef");
  EXPECT_EQ(open2->prefixLen, 0);
}

TEST(BTreeNode, KeyHeads) {
  auto h = [](const std::string& s) {
    return keyHead(reinterpret_cast<const uint8_t*>(s.data()), static_cast<unsigned>(s.size()));
  };
  EXPECT_EQ(h(""), 0u);
  EXPECT_EQ(h("a"), 0x61000000u);
  EXPECT_EQ(h("ab"), 0x61620000u);
  EXPECT_EQ(h("abc"), 0x61626300u);
  EXPECT_EQ(h("abcd"), 0x61626364u);
  EXPECT_EQ(h("abcdefgh"), 0x61626364u);
  EXPECT_EQ(h(std::string("\xff\x00\x01", 3)), 0xff000100u);
  // Heads order like the keys (ties allowed).
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20000; i++) {
    std::string a(rng() % 6, '\0'), c(rng() % 6, '\0');
    for (auto& ch : a) ch = static_cast<char>(rng() % 4);
    for (auto& ch : c) ch = static_cast<char>(rng() % 4);
    if (compareBytes(b(a), b(c)) < 0) {
      ASSERT_LE(h(a), h(c)) << i;
    }
  }
}

TEST(BTreeNode, InsertLowerBoundRemove) {
  Node n(true);
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 60; i++) {
    std::string k = numKey("k", static_cast<unsigned>(rng() % 1000));
    if (model.count(k)) continue;
    std::string v(rng() % 20, static_cast<char>('a' + i % 26));
    put(n.n, k, v);
    model[k] = v;
  }
  EXPECT_EQ(n->count, model.size());
  EXPECT_EQ(entriesOf(n.n), Entries(model.begin(), model.end()));
  EXPECT_EQ(n->verify(), "");
  unsigned pos = 0;
  for (auto& [k, v] : model) {
    bool found = false;
    EXPECT_EQ(n->lowerBound(b(k), &found), pos);
    EXPECT_TRUE(found) << k;
    EXPECT_EQ(str(Bytes(n->payloadPtr(pos), n->payloadLen(pos))), v);
    EXPECT_FALSE(n->outOfLine(pos));
    // Just above k: the next slot, not found.
    EXPECT_EQ(n->lowerBound(b(k + '\0'), &found), pos + 1);
    EXPECT_FALSE(found);
    pos++;
  }
  bool found = true;
  EXPECT_EQ(n->lowerBound(b("a"), &found), 0u);
  EXPECT_FALSE(found);
  EXPECT_EQ(n->lowerBound(b("z"), &found), n->count);
  // Remove some, including first and last.
  std::vector<std::string> keys;
  for (auto& kv : model) keys.push_back(kv.first);
  for (const std::string& k : {keys.front(), keys.back(), keys[keys.size() / 2]}) {
    unsigned used = n->spaceUsed;
    unsigned p = n->lowerBound(b(k), &found);
    ASSERT_TRUE(found);
    n->removeSlot(p);
    EXPECT_EQ(n->spaceUsed, used - k.size() - model[k].size());
    model.erase(k);
    n->lowerBound(b(k), &found);
    EXPECT_FALSE(found) << k;
  }
  EXPECT_EQ(entriesOf(n.n), Entries(model.begin(), model.end()));
  EXPECT_EQ(n->verify(), "");
  // Out-of-line flag.
  put(n.n, "k999999", "");
  n->removeSlot(n->lowerBound(b("k999999"), &found));
  n->insert(b("k999999"), b(std::string(12, 'r')), true);
  unsigned p = n->lowerBound(b("k999999"), &found);
  ASSERT_TRUE(found);
  EXPECT_TRUE(n->outOfLine(p));
  EXPECT_EQ(n->payloadLen(p), 12u);
}

// lowerBound, checked against its two halves (searchStart then searchFinish, as the
// B+tree's side-by-side lookups call them), and against lowerBoundNear with guesses on
// both sides of the answer and at it: all give the same position and found.
unsigned search(const BTreeNode* n, Bytes key, bool* found) {
  const unsigned pos = n->lowerBound(key, found);
  bool foundByHalves = !*found;
  EXPECT_EQ(n->searchFinish(key, n->searchStart(key), &foundByHalves), pos) << str(key);
  EXPECT_EQ(foundByHalves, *found) << str(key);
  const unsigned count = n->count;
  for (unsigned guess : {0u, pos / 2, pos > 0 ? pos - 1 : 0u, pos, pos + 1, (pos + count) / 2, count, count + 7}) {
    bool foundNear = !*found;
    EXPECT_EQ(n->lowerBoundNear(key, guess, &foundNear), pos) << str(key) << " guess " << guess;
    EXPECT_EQ(foundNear, *found) << str(key) << " guess " << guess;
  }
  return pos;
}

TEST(BTreeNode, PrefixTruncation) {
  Node n(true, "user:0100", "user:0200");
  EXPECT_EQ(n->prefixLen, 6);
  EXPECT_EQ(str(n->prefix()), "user:0");
  std::vector<std::string> keys = {"user:0150", "user:0101", "user:0200", "user:0100a", "user:0199x"};
  for (auto& k : keys) put(n.n, k, "v" + k);
  std::sort(keys.begin(), keys.end());
  ASSERT_EQ(n->count, keys.size());
  for (unsigned i = 0; i < n->count; i++) {
    EXPECT_EQ(n->slot[i].keyLen, keys[i].size() - 6) << "stored without the prefix";
    EXPECT_EQ(n->keyLen(i), keys[i].size());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(n->keySuffix(i)), n->slot[i].keyLen), keys[i].substr(6));
    EXPECT_EQ(n->keyString(i), keys[i]) << "copyKey restores the prefix";
    uint8_t buf[64];
    unsigned len = n->copyKey(i, buf, sizeof(buf));
    EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), len), keys[i]);
    // Truncated copies stop at the capacity.
    len = n->copyKey(i, buf, 4);
    EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), len), keys[i].substr(0, 4));
    len = n->copyKey(i, buf, 7);
    EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), len), keys[i].substr(0, 7));
    EXPECT_EQ(n->slot[i].head, keyHead(n->keySuffix(i), n->slot[i].keyLen)) << "head of the suffix";
    bool found;
    EXPECT_EQ(search(n.n, b(keys[i]), &found), i);
    EXPECT_TRUE(found);
  }
  bool found;
  EXPECT_EQ(search(n.n, b("user"), &found), 0u) << "a proper prefix of the node prefix";
  EXPECT_EQ(search(n.n, b("user:0"), &found), 0u);
  EXPECT_EQ(search(n.n, b("user:00"), &found), 0u);
  EXPECT_EQ(search(n.n, b("aaaa"), &found), 0u);
  EXPECT_EQ(search(n.n, b("user:1"), &found), n->count);
  EXPECT_EQ(search(n.n, b("zzz"), &found), n->count);
  EXPECT_EQ(search(n.n, b("user:0199"), &found), 3u);
  EXPECT_FALSE(found);
  EXPECT_EQ(n->verify(), "");
  // Space accounting uses the truncated length.
  EXPECT_EQ(n->spaceNeeded(9, 5), BTreeNode::kSlotSize + 3 + 5);
}

TEST(BTreeNode, HintsFindEveryKey) {
  for (int variant = 0; variant < 3; variant++) {
    Node n(true);
    std::set<std::string> model;
    std::mt19937_64 rng(10 + variant);
    const int target = variant == 0 ? 50 : 200;
    while (static_cast<int>(model.size()) < target) {
      std::string k;
      if (variant == 2 && rng() % 2) {
        k = "same" + numKey("", static_cast<unsigned>(rng() % 100000));  // equal heads
      } else {
        k = std::string(1 + rng() % 8, '\0');
        for (auto& c : k) c = static_cast<char>(rng() % 256);
      }
      if (!model.insert(k).second) continue;
      put(n.n, k, "");
    }
    ASSERT_GT(n->count, 40);
    unsigned dist = n->count / (BTreeNode::kHintCount + 1);
    for (unsigned i = 0; i < BTreeNode::kHintCount; i++) {
      EXPECT_EQ(n->hint[i], n->slot[dist * (i + 1)].head) << "hint " << i;
    }
    unsigned pos = 0;
    for (const std::string& k : model) {
      bool found = false;
      ASSERT_EQ(search(n.n, b(k), &found), pos) << "variant " << variant;
      ASSERT_TRUE(found);
      std::string above = k + '\0';
      ASSERT_EQ(search(n.n, b(above), &found), pos + 1);
      ASSERT_FALSE(found);
      pos++;
    }
    // Absent random keys land where std::set says.
    for (int i = 0; i < 2000; i++) {
      std::string k(1 + rng() % 8, '\0');
      for (auto& c : k) c = static_cast<char>(rng() % 256);
      if (variant == 2 && i % 2) k = "same" + numKey("", static_cast<unsigned>(rng() % 100000)) + "x";
      bool found;
      unsigned got = search(n.n, b(k), &found);
      unsigned want = static_cast<unsigned>(std::distance(model.begin(), model.lower_bound(k)));
      ASSERT_EQ(got, want) << "variant " << variant;
      ASSERT_EQ(found, model.count(k) == 1);
    }
    EXPECT_EQ(n->verify(), "");
  }
}

TEST(BTreeNode, CompactifyKeepsContent) {
  Node n(true, "f", "t");
  std::map<std::string, std::string> model;
  for (unsigned i = 0; i < 100; i++) {
    std::string k = numKey("g", i);
    std::string v(20, static_cast<char>('A' + i % 26));
    put(n.n, k, v);
    model[k] = v;
  }
  bool found;
  for (unsigned i = 0; i < 100; i += 2) {
    std::string k = numKey("g", i);
    n->removeSlot(n->lowerBound(b(k), &found));
    model.erase(k);
  }
  EXPECT_LT(n->freeSpace(), n->freeSpaceAfterCompaction());
  unsigned after = n->freeSpaceAfterCompaction();
  n->compactify();
  EXPECT_EQ(n->freeSpace(), after);
  EXPECT_EQ(n->freeSpaceAfterCompaction(), after);
  EXPECT_EQ(entriesOf(n.n), Entries(model.begin(), model.end()));
  EXPECT_EQ(str(n->lowerFenceKey()), "f");
  EXPECT_EQ(str(n->upperFenceKey()), "t");
  EXPECT_TRUE(n->isLeaf());
  EXPECT_EQ(n->verify(), "");
  // makeSpaceFor compacts when that is what it takes, and refuses when nothing helps.
  Node m(true);
  unsigned i = 0;
  while (m->makeSpaceFor(10, 100)) put(m.n, numKey("k", i++, 9), std::string(100, 'x'));
  EXPECT_LT(m->freeSpace(), BTreeNode::kSlotSize + 110);
  for (unsigned j = 0; j < i; j += 3) m->removeSlot(m->lowerBound(b(numKey("k", j, 9)), &found));
  EXPECT_TRUE(m->makeSpaceFor(10, 100));
  EXPECT_GE(m->freeSpace(), BTreeNode::kSlotSize + 110u) << "makeSpaceFor compacted";
  EXPECT_EQ(m->verify(), "");
}

// The byte size a node with these fences and entries needs (independent of the engine).
unsigned nodeBytes(const std::string& lower, const std::string& upper, const Entries& entries) {
  unsigned prefix = 0;
  if (!lower.empty() && !upper.empty()) {
    while (prefix < lower.size() && prefix < upper.size() && lower[prefix] == upper[prefix]) prefix++;
  }
  unsigned bytes = BTreeNode::kHeaderSize + static_cast<unsigned>(lower.size() + upper.size());
  for (auto& [k, v] : entries) bytes += BTreeNode::kSlotSize + static_cast<unsigned>(k.size() - prefix + v.size());
  return bytes;
}

TEST(BTreeNode, SplitLeaf) {
  Node n(true, "b", "y");
  Entries all;
  for (unsigned i = 0; i < 50; i++) {
    std::string k = numKey("c", i * 3);
    std::string v(30, static_cast<char>('a' + i % 26));
    put(n.n, k, v);
    all.emplace_back(k, v);
  }
  uint8_t sep[2 * kMaxKeySize];
  unsigned sepLen = 0;
  unsigned lc = n->chooseSplit(25, sep, &sepLen);  // inserting in the middle: even halves
  ASSERT_GE(lc, 1u);
  ASSERT_LT(lc, 50u);
  {
    // Inserting at the end (ascending) keeps the left half as full as possible, at the
    // start the right half.
    uint8_t tmp[2 * kMaxKeySize];
    unsigned tmpLen = 0;
    EXPECT_GE(n->chooseSplit(50, tmp, &tmpLen), 45u);
    EXPECT_LE(n->chooseSplit(0, tmp, &tmpLen), 5u);
    EXPECT_GE(n->chooseSplit(0, tmp, &tmpLen), 1u);
  }
  EXPECT_GE(lc, 20u) << "halves about even";
  EXPECT_LE(lc, 30u) << "halves about even";
  std::string s(reinterpret_cast<char*>(sep), sepLen);
  EXPECT_LE(compareBytes(b(all[lc - 1].first), b(s)), 0);
  EXPECT_LT(compareBytes(b(s), b(all[lc].first)), 0);
  // A truncated separator: "c000NN" keys differ in the last digits only.
  EXPECT_LE(s.size(), all[lc].first.size());

  Node parent(false);
  parent->upper = 999;
  Node left(true);
  n->split(left.n, 1000, parent.n, lc, b(s));
  EXPECT_EQ(left->verify(), "");
  EXPECT_EQ(n->verify(), "");
  EXPECT_EQ(parent->verify(), "");
  EXPECT_TRUE(left->isLeaf());
  EXPECT_TRUE(n->isLeaf());
  EXPECT_EQ(str(left->lowerFenceKey()), "b");
  EXPECT_EQ(str(left->upperFenceKey()), s);
  EXPECT_EQ(str(n->lowerFenceKey()), s);
  EXPECT_EQ(str(n->upperFenceKey()), "y");
  EXPECT_EQ(entriesOf(left.n), Entries(all.begin(), all.begin() + lc));
  EXPECT_EQ(entriesOf(n.n), Entries(all.begin() + lc, all.end()));
  ASSERT_EQ(parent->count, 1);
  EXPECT_EQ(parent->keyString(0), s);
  EXPECT_EQ(parent->child(0), 1000u);
  EXPECT_EQ(parent->upper, 999u);
  EXPECT_EQ(parent->lookupInner(b(all[0].first)), 1000u);
  EXPECT_EQ(parent->lookupInner(b(all[lc - 1].first)), 1000u);
  EXPECT_EQ(parent->lookupInner(b(all[lc].first)), 999u);
  // The halves are usable: both have prefixes from their new fences.
  bool found;
  for (unsigned i = 0; i < lc; i++) {
    left->lowerBound(b(all[i].first), &found);
    EXPECT_TRUE(found);
  }
}

TEST(BTreeNode, SplitInner) {
  Node n(false, "", "");
  n->upper = 7777;
  Entries all;
  for (unsigned i = 0; i < 40; i++) {
    std::string k = numKey("sep", i * 10);
    put(n.n, k, childBytes(100 + i));
    all.emplace_back(k, childBytes(100 + i));
  }
  uint8_t sep[2 * kMaxKeySize];
  unsigned sepLen = 0;
  unsigned lc = n->chooseSplit(20, sep, &sepLen);
  ASSERT_LT(lc, 40u);
  std::string s(reinterpret_cast<char*>(sep), sepLen);
  EXPECT_EQ(s, all[lc].first) << "an inner split moves the entry at leftCount up";
  Node parent(false);
  parent->upper = 1;
  Node left(false);
  n->split(left.n, 2000, parent.n, lc, b(s));
  EXPECT_EQ(left->verify(), "");
  EXPECT_EQ(n->verify(), "");
  EXPECT_EQ(entriesOf(left.n), Entries(all.begin(), all.begin() + lc));
  EXPECT_EQ(left->upper, 100u + lc) << "the separator's child becomes left's upper";
  EXPECT_EQ(entriesOf(n.n), Entries(all.begin() + lc + 1, all.end()));
  EXPECT_EQ(n->upper, 7777u);
  EXPECT_EQ(str(left->upperFenceKey()), s);
  EXPECT_EQ(str(n->lowerFenceKey()), s);
  EXPECT_TRUE(left->lowerFenceKey().empty());
  EXPECT_TRUE(n->upperFenceKey().empty());
  ASSERT_EQ(parent->count, 1);
  EXPECT_EQ(parent->keyString(0), s);
  EXPECT_EQ(parent->child(0), 2000u);
  // Routing through the split inner nodes gives the same children as before.
  EXPECT_EQ(left->lookupInner(b(all[0].first)), 100u);
  EXPECT_EQ(left->lookupInner(b(s)), 100u + lc);
  EXPECT_EQ(n->lookupInner(b(s + "x")), lc + 1 < 40 ? 100u + lc + 1 : 7777u);
  EXPECT_EQ(n->lookupInner(b("zzz")), 7777u);
}

// Random fences and entries (key up to kMaxKeySize, key+payload <= kMaxEntry) filling a
// node; every split point chooseSplit returns must give two halves that fit.
struct RandomNodeGen {
  std::mt19937_64 rng;
  explicit RandomNodeGen(uint64_t seed) : rng(seed) {}
  std::string bytes(size_t n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 256);
    return s;
  }
  size_t len(size_t lo, size_t hi) {  // biased towards short and long
    if (hi <= lo) return lo;
    switch (rng() % 3) {
      case 0: return lo + rng() % std::min<size_t>(hi - lo + 1, 16);
      case 1: return hi - rng() % std::min<size_t>(hi - lo + 1, 16);
      default: return lo + rng() % (hi - lo + 1);
    }
  }
};

TEST(BTreeNode, ChooseSplitHalvesAlwaysFit) {
  const int iterations = vmsunit::scaled(600, 100);
  RandomNodeGen g(12345);
  int splits = 0;
  for (int it = 0; it < iterations; it++) {
    const bool leaf = it % 3 != 0;
    // Fences: a shared prefix P, lower = P 0x10 ..., upper = P 0xf0 ...; either may be open.
    size_t pl = g.len(0, 1000);
    std::string P = g.bytes(pl);
    int mode = static_cast<int>(g.rng() % 4);
    std::string lower = (mode & 1) ? P + '\x10' + g.bytes(g.len(0, kMaxKeySize - pl - 1)) : "";
    std::string upper = (mode & 2) ? P + '\xf0' + g.bytes(g.len(0, kMaxKeySize - pl - 1)) : "";
    Node n(leaf, lower, upper);
    std::map<std::string, std::string> model;
    int failures = 0;
    while (failures < 4) {
      std::string k = P + static_cast<char>(0x11 + g.rng() % (0xef - 0x11 + 1));
      k += g.bytes(g.len(0, kMaxKeySize - k.size()));
      std::string v = leaf ? g.bytes(g.len(0, BTreeNode::kMaxEntry - k.size())) : childBytes(g.rng() % 100000);
      if (model.count(k)) continue;
      if (!n->makeSpaceFor(static_cast<unsigned>(k.size()), static_cast<unsigned>(v.size()))) {
        failures++;
        continue;
      }
      n->insert(b(k), b(v));
      model[k] = v;
    }
    n->upper = 424242;
    ASSERT_EQ(n->verify(), "") << "iteration " << it;
    Entries all(model.begin(), model.end());
    ASSERT_EQ(entriesOf(n.n), all);
    if (all.size() < (leaf ? 2u : 1u)) continue;

    // Every kind of insert position: start, end, middle, random.
    const unsigned count = n->count;
    for (unsigned insertPos : {0u, count, count / 2, static_cast<unsigned>(g.rng() % (count + 1))}) {
      Node work(leaf);
      std::memcpy(work.mem.data(), n.mem.data(), kPageSize);
      uint8_t sep[2 * kMaxKeySize];
      unsigned sepLen = 0;
      unsigned lc = work->chooseSplit(insertPos, sep, &sepLen);
      std::string s(reinterpret_cast<char*>(sep), sepLen);
      SCOPED_TRACE("iteration " + std::to_string(it) + (leaf ? " leaf" : " inner") + ", " +
                   std::to_string(all.size()) + " entries, insertPos " + std::to_string(insertPos) +
                   ", split at " + std::to_string(lc) + ", separator " + std::to_string(sepLen) +
                   " bytes, fences " + std::to_string(lower.size()) + "/" + std::to_string(upper.size()));
      ASSERT_LT(lc, all.size());
      if (leaf) {
        ASSERT_GE(lc, 1u);
      }
      ASSERT_GT(sepLen, 0u);
      ASSERT_LE(sepLen, kMaxKeySize);
      // The separator routes correctly.
      if (lc > 0) {
        ASSERT_LE(compareBytes(b(all[lc - 1].first), b(s)), 0);
      }
      if (leaf) {
        ASSERT_LT(compareBytes(b(s), b(all[lc].first)), 0);
      } else {
        ASSERT_EQ(s, all[lc].first);
      }
      Entries leftE(all.begin(), all.begin() + lc);
      Entries rightE(all.begin() + lc + (leaf ? 0 : 1), all.end());
      unsigned leftBytes = nodeBytes(lower, s, leftE);
      unsigned rightBytes = nodeBytes(s, upper, rightE);
      ASSERT_LE(leftBytes, kPageSize) << "left half does not fit";
      ASSERT_LE(rightBytes, kPageSize) << "right half does not fit";
      // Build them.
      Node parent(false);
      parent->upper = 1;
      Node left(leaf);
      work->split(left.n, 77, parent.n, lc, b(s));
      ASSERT_EQ(left->verify(), "");
      ASSERT_EQ(work->verify(), "");
      ASSERT_EQ(parent->verify(), "");
      ASSERT_EQ(entriesOf(left.n), leftE);
      ASSERT_EQ(entriesOf(work.n), rightE);
      ASSERT_EQ(str(left->lowerFenceKey()), lower);
      ASSERT_EQ(str(left->upperFenceKey()), s);
      ASSERT_EQ(str(work->lowerFenceKey()), s);
      ASSERT_EQ(str(work->upperFenceKey()), upper);
      if (!leaf) {
        uint64_t c;
        std::memcpy(&c, all[lc].second.data(), 8);
        ASSERT_EQ(left->upper, c);
        ASSERT_EQ(work->upper, 424242u);
      }
      ASSERT_EQ(parent->count, 1);
      ASSERT_EQ(parent->keyString(0), s);
      ASSERT_EQ(parent->child(0), 77u);
      splits++;
    }
  }
  EXPECT_GT(splits, iterations * 2);
}

TEST(BTreeNode, MergeLeaves) {
  Node parent(false);
  put(parent.n, "m", childBytes(10));
  parent->upper = 11;
  Node left(true, "", "m"), right(true, "m", "");
  Entries all;
  for (char c = 'a'; c <= 'z'; c++) {
    std::string k(1, c);
    std::string v = "value-" + k;
    put(c <= 'm' ? left.n : right.n, k, v);
    all.emplace_back(k, v);
  }
  ASSERT_TRUE(left->mergeInto(0, parent.n, right.n));
  EXPECT_EQ(parent->count, 0);
  EXPECT_EQ(parent->upper, 11u);
  EXPECT_EQ(entriesOf(right.n), all);
  EXPECT_TRUE(right->lowerFenceKey().empty());
  EXPECT_TRUE(right->upperFenceKey().empty());
  EXPECT_EQ(right->verify(), "");
  EXPECT_EQ(parent->verify(), "");
}

TEST(BTreeNode, MergeLeavesWithPrefixes) {
  Node parent(false, "key000", "key999");
  put(parent.n, "key100", childBytes(1));
  put(parent.n, "key200", childBytes(2));
  parent->upper = 3;
  Node left(true, "key100", "key200"), right(true, "key200", "key300");
  EXPECT_EQ(left->prefixLen, 3);  // "key"
  Entries all;
  for (unsigned i = 101; i < 300; i += 7) {
    std::string k = numKey("key", i, 3) + "suffix";
    put(i <= 200 ? left.n : right.n, k, "v");
    all.emplace_back(k, "v");
  }
  ASSERT_TRUE(left->mergeInto(1, parent.n, right.n));
  EXPECT_EQ(entriesOf(right.n), all);
  EXPECT_EQ(str(right->lowerFenceKey()), "key100");
  EXPECT_EQ(str(right->upperFenceKey()), "key300");
  EXPECT_EQ(right->prefixLen, 3);
  EXPECT_EQ(right->verify(), "");
  ASSERT_EQ(parent->count, 1);
  EXPECT_EQ(parent->keyString(0), "key100");
  EXPECT_EQ(parent->verify(), "");
}

TEST(BTreeNode, MergeInnerPullsDownSeparator) {
  Node parent(false);
  put(parent.n, "m", childBytes(500));
  parent->upper = 501;
  Node left(false, "", "m"), right(false, "m", "");
  put(left.n, "c", childBytes(1));
  put(left.n, "f", childBytes(2));
  left->upper = 3;
  put(right.n, "p", childBytes(4));
  right->upper = 5;
  ASSERT_TRUE(left->mergeInto(0, parent.n, right.n));
  Entries want = {{"c", childBytes(1)}, {"f", childBytes(2)}, {"m", childBytes(3)}, {"p", childBytes(4)}};
  EXPECT_EQ(entriesOf(right.n), want);
  EXPECT_EQ(right->upper, 5u);
  EXPECT_TRUE(right->isInner());
  EXPECT_EQ(parent->count, 0);
  EXPECT_EQ(right->verify(), "");
}

TEST(BTreeNode, MergeRefusesWhenItDoesNotFitAndChangesNothing) {
  for (bool leaf : {true, false}) {
    Node parent(false);
    put(parent.n, "m", childBytes(10));
    parent->upper = 11;
    Node left(leaf, "", "m"), right(leaf, "m", "");
    // Each about 60% full.
    std::string big(leaf ? 1200 : 1000, 'p');
    for (int i = 0; i < 2; i++) {
      std::string lk = std::string("a") + char('a' + i) + (leaf ? "" : big);
      std::string rk = std::string("n") + char('a' + i) + (leaf ? "" : big);
      put(left.n, lk, leaf ? big : childBytes(20 + i));
      put(right.n, rk, leaf ? big : childBytes(30 + i));
    }
    left->upper = leaf ? 0 : 21;
    right->upper = leaf ? 0 : 31;
    auto l0 = left.snapshot(), r0 = right.snapshot(), p0 = parent.snapshot();
    EXPECT_FALSE(left->mergeInto(0, parent.n, right.n)) << (leaf ? "leaf" : "inner");
    EXPECT_TRUE(left.snapshot() == l0) << "left changed";
    EXPECT_TRUE(right.snapshot() == r0) << "right changed";
    EXPECT_TRUE(parent.snapshot() == p0) << "parent changed";
  }
}

// The quick refusal counts the bytes stored now; keys that lose their prefix in the merged
// node grow, so a merge can pass that count and still not fit: the full attempt refuses.
TEST(BTreeNode, MergeRefusesWhenLostPrefixesMakeItTooLargeAndChangesNothing) {
  const std::string stem(200, 'k');
  Node parent(false);
  put(parent.n, stem + "5", childBytes(10));
  parent->upper = 11;
  Node left(true, stem + "0", stem + "5"), right(true, stem + "5", "z");
  ASSERT_EQ(left->prefixLen, 200u);
  ASSERT_EQ(right->prefixLen, 0u);
  for (int i = 0; i < 20; i++) put(left.n, stem + "1" + char('a' + i), "v");
  // Each stored left key is 2 bytes past its prefix; merged (no prefix) each is 202.
  unsigned storedLeft = left->spaceUsed - left->lowerFence.len - left->upperFence.len;
  ASSERT_LT(storedLeft, 200u);
  put(right.n, "y", std::string(500, 'r'));
  auto l0 = left.snapshot(), r0 = right.snapshot(), p0 = parent.snapshot();
  EXPECT_FALSE(left->mergeInto(0, parent.n, right.n));
  EXPECT_TRUE(left.snapshot() == l0) << "left changed";
  EXPECT_TRUE(right.snapshot() == r0) << "right changed";
  EXPECT_TRUE(parent.snapshot() == p0) << "parent changed";
}

// insert() refreshes only the hints from the insert position on, while their spacing
// stays; after every insert, in any order, they must equal a full rebuild (verify()).
TEST(BTreeNode, HintsAfterEachInsertEqualAFullRebuild) {
  for (int order = 0; order < 3; order++) {  // ascending, descending, shuffled
    std::vector<unsigned> ids(180);
    for (unsigned i = 0; i < ids.size(); i++) ids[i] = i;
    if (order == 1) std::reverse(ids.begin(), ids.end());
    if (order == 2) std::shuffle(ids.begin(), ids.end(), std::mt19937(7));
    Node n(true, "a", "z");
    for (unsigned id : ids) {
      put(n.n, numKey("k", id), "v");
      ASSERT_EQ(n->verify(), "") << "order " << order << ", after key " << id;
    }
  }
}

TEST(BTreeNode, VerifyDetectsDamage) {
  Node n(true, "a", "z");
  for (unsigned i = 0; i < 30; i++) put(n.n, numKey("k", i), "v");
  ASSERT_EQ(n->verify(), "");
  // Swap two slots: out of order.
  std::swap(n->slot[3], n->slot[4]);
  std::string err = n->verify();
  EXPECT_NE(err, "");
  EXPECT_NE(err.find("out of order"), std::string::npos) << err;
  std::swap(n->slot[3], n->slot[4]);
  ASSERT_EQ(n->verify(), "");
  // A duplicate key is out of order too.
  BTreeNode::Slot saved = n->slot[5];
  n->slot[5] = n->slot[4];
  EXPECT_NE(n->verify(), "");
  n->slot[5] = saved;
  // A stale head.
  n->slot[7].head ^= 1;
  EXPECT_NE(n->verify(), "");
  n->slot[7].head ^= 1;
  // An entry pointing outside the page.
  uint16_t off = n->slot[2].offset;
  n->slot[2].offset = kPageSize - 1;
  EXPECT_NE(n->verify(), "");
  n->slot[2].offset = off;
  // A key beyond the upper fence.
  Node m(true, "a", "ab");
  m->append(b("b"), b(""), 0);  // append does not check: "b" > "ab"
  EXPECT_NE(m->verify(), "");
  // Not a node at all.
  Node k(true);
  k->page.kind = vmstore::internal::PageKind::kValue;
  EXPECT_NE(k->verify(), "");
  ASSERT_EQ(n->verify(), "");
}

}  // namespace
