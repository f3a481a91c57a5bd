#include "btree/node.hpp"

#include <algorithm>

#include "vmstore/limits.hpp"

namespace vmstore::internal {

namespace {

// Room for any full key plus one byte (successor keys), used for keys copied out of nodes.
constexpr unsigned kKeyBuf = kMaxKeySize * 2;

unsigned commonPrefix(Bytes a, Bytes b) {
  unsigned n = static_cast<unsigned>(std::min(a.size(), b.size()));
  unsigned i = 0;
  while (i < n && a[i] == b[i]) i++;
  return i;
}

// A scratch node on the stack, carrying the page header of `like`.
struct ScratchNode {
  alignas(8) uint8_t bytes[kPageSize];
  BTreeNode* node() { return reinterpret_cast<BTreeNode*>(bytes); }
  explicit ScratchNode(const BTreeNode* like) { std::memcpy(bytes, like, sizeof(PageHeader)); }
};

}  // namespace

void BTreeNode::init(bool leaf, Bytes lower, Bytes upperKey) {
  page.kind = leaf ? PageKind::kBTreeLeaf : PageKind::kBTreeInner;
  upper = 0;
  count = 0;
  spaceUsed = 0;
  dataOffset = kPageSize;
  prefixLen = 0;
  flags = 0;
  std::memset(pad, 0, sizeof(pad));
  std::memset(hint, 0, sizeof(hint));
  setFences(lower, upperKey);
}

void BTreeNode::setFences(Bytes lower, Bytes upperKey) {
  dataOffset -= static_cast<uint16_t>(lower.size());
  lowerFence = {dataOffset, static_cast<uint16_t>(lower.size())};
  if (!lower.empty()) std::memcpy(ptr() + dataOffset, lower.data(), lower.size());
  dataOffset -= static_cast<uint16_t>(upperKey.size());
  upperFence = {dataOffset, static_cast<uint16_t>(upperKey.size())};
  if (!upperKey.empty()) std::memcpy(ptr() + dataOffset, upperKey.data(), upperKey.size());
  spaceUsed += static_cast<uint16_t>(lower.size() + upperKey.size());
  // Every key in (lower, upper] shares the fences' common prefix.
  prefixLen = (lower.empty() || upperKey.empty()) ? 0 : static_cast<uint16_t>(commonPrefix(lower, upperKey));
}

uint64_t BTreeNode::child(unsigned i) const {
  uint64_t pid;
  std::memcpy(&pid, payloadPtr(i), sizeof(pid));
  return pid;
}

unsigned BTreeNode::copyKey(unsigned i, uint8_t* out, unsigned cap) const {
  unsigned p = std::min<unsigned>(prefixLen, cap);
  std::memcpy(out, ptr() + lowerFence.offset, p);
  unsigned s = std::min<unsigned>(slot[i].keyLen, cap - p);
  std::memcpy(out + p, keySuffix(i), s);
  return p + s;
}

std::string BTreeNode::keyString(unsigned i) const {
  uint8_t buf[kKeyBuf];
  unsigned n = copyKey(i, buf, kKeyBuf);
  return std::string(reinterpret_cast<char*>(buf), n);
}

namespace {

// How many of the 16 ascending hints are below h (orEqual: at or below h): a binary
// search without branches (the hints of a node whose keys share their first bytes are
// often all equal, where a linear scan walks all 16).
template <bool orEqual>
unsigned hintsBelow(const uint32_t* hints, uint32_t h) {
  static_assert(BTreeNode::kHintCount == 16);
  auto below = [h](uint32_t v) { return orEqual ? v <= h : v < h; };
  unsigned p = below(hints[7]) ? 8 : 0;  // unrolled: -O2 keeps the loop
  p += below(hints[p + 3]) ? 4 : 0;
  p += below(hints[p + 1]) ? 2 : 0;
  p += below(hints[p]) ? 1 : 0;
  return p + (below(hints[p]) ? 1 : 0);
}

}  // namespace

void BTreeNode::searchHint(uint32_t h, unsigned* lo, unsigned* hi) const {
  if (count <= kHintCount * 2) return;
  unsigned dist = count / (kHintCount + 1);
  unsigned pos = hintsBelow<false>(hint, h);  // the first hint >= h
  // The first hint > h: the same one unless hints equal h (then search past them).
  unsigned pos2 = (pos < kHintCount && hint[pos] == h) ? hintsBelow<true>(hint, h) : pos;
  *lo = pos * dist;
  if (pos2 < kHintCount) *hi = (pos2 + 1) * dist;
}

// The parts of a node search, inlined into lowerBound (every descent) and into the two
// halves of searchStart / searchFinish.

// Where key goes when the node's prefix decides it: 0 or count; -1 when key starts with
// the prefix (the slots decide). Only for prefixLen > 0.
[[gnu::always_inline]] inline int BTreeNode::placeByPrefix(Bytes key) const {
  const unsigned p = prefixLen;
  size_t n = std::min<size_t>(key.size(), p);
  int cmp = compareBytes(key.first(n), Bytes(ptr() + lowerFence.offset, n));
  if (cmp < 0) return 0;
  if (cmp > 0) return count;
  if (key.size() < p) return 0;  // a proper prefix of the node prefix: below every key
  return -1;
}

// The slots a search of [lo, hi) will probe, requested together instead of one miss
// after the other (a leaf of large values has few slots, none of them cached).
[[gnu::always_inline]] inline void BTreeNode::requestSlots(unsigned lo, unsigned hi) const {
  if (hi - lo <= 64) {
    const char* from = reinterpret_cast<const char*>(&slot[lo]);
    const char* to = reinterpret_cast<const char*>(&slot[hi]);
    for (const char* c = from; c < to; c += 64) __builtin_prefetch(c);
  }
}

// The binary search of slots [lo, hi) for rest (the key without the prefix), head h.
[[gnu::always_inline]] inline unsigned BTreeNode::searchSlots(Bytes rest, uint32_t h, unsigned lo, unsigned hi,
                                                              bool* found) const {
  while (lo < hi) {
    unsigned mid = lo + (hi - lo) / 2;
    uint32_t mh = slot[mid].head;
    if (h < mh) {
      hi = mid;
    } else if (h > mh) {
      lo = mid + 1;
    } else {
      // Equal heads: the first 4 bytes (or all of a shorter key) are already equal.
      unsigned klen = slot[mid].keyLen;
      unsigned skip = static_cast<unsigned>(std::min<size_t>({rest.size(), klen, 4}));
      int c = compareBytes(rest.subspan(skip), Bytes(keySuffix(mid) + skip, klen - skip));
      if (c < 0) {
        hi = mid;
      } else if (c > 0) {
        lo = mid + 1;
      } else {
        *found = true;
        return mid;
      }
    }
  }
  return lo;
}

unsigned BTreeNode::lowerBound(Bytes key, bool* found) const {
  *found = false;
  if (prefixLen > 0) {
    if (int at = placeByPrefix(key); at >= 0) return static_cast<unsigned>(at);
  }
  Bytes rest = key.subspan(prefixLen);
  uint32_t h = keyHead(rest.data(), static_cast<unsigned>(rest.size()));
  unsigned lo = 0;
  unsigned hi = count;
  searchHint(h, &lo, &hi);
  requestSlots(lo, hi);
  return searchSlots(rest, h, lo, hi, found);
}

BTreeNode::Search BTreeNode::searchStart(Bytes key) const {
  const unsigned p = prefixLen;
  // A key shorter than the prefix is placed by the prefix alone (searchFinish).
  const Bytes rest = key.size() >= p ? key.subspan(p) : Bytes();
  Search s{keyHead(rest.data(), static_cast<unsigned>(rest.size())), 0, count};
  searchHint(s.head, &s.lo, &s.hi);
  requestSlots(s.lo, s.hi);
  if (p > 0) __builtin_prefetch(ptr() + lowerFence.offset);
  return s;
}

unsigned BTreeNode::searchFinish(Bytes key, Search s, bool* found) const {
  *found = false;
  if (prefixLen > 0) {
    if (int at = placeByPrefix(key); at >= 0) return static_cast<unsigned>(at);
  }
  return searchSlots(key.subspan(prefixLen), s.head, s.lo, s.hi, found);
}

unsigned BTreeNode::lowerBoundNear(Bytes key, unsigned guess, bool* found) const {
  *found = false;
  if (prefixLen > 0) {
    if (int at = placeByPrefix(key); at >= 0) return static_cast<unsigned>(at);
  }
  const unsigned n = count;
  guess = std::min(guess, n);
  const Bytes rest = key.subspan(prefixLen);
  const uint32_t h = keyHead(rest.data(), static_cast<unsigned>(rest.size()));
  // The answer is in [lo, hi]: a one-slot searchSlots says whether the key is above that
  // slot. Slot guess first: in an ascending run the key is never below slot guess - 1.
  unsigned lo = 0;
  unsigned hi = n;
  if (guess < n && searchSlots(rest, h, guess, guess + 1, found) != guess) {
    lo = guess + 1;  // above slot guess
  } else if (*found || guess == 0) {
    return guess;
  } else if (searchSlots(rest, h, guess - 1, guess, found) == guess - 1) {
    if (*found) return guess - 1;
    hi = guess - 1;  // at or below slot guess - 1
  } else {
    return guess;  // above slot guess - 1, at or below slot guess (or guess is count)
  }
  unsigned hintLo = 0;
  unsigned hintHi = n;
  searchHint(h, &hintLo, &hintHi);
  lo = std::max(lo, hintLo);
  return searchSlots(rest, h, lo, std::max(lo, std::min(hi, hintHi)), found);
}

uint64_t BTreeNode::lookupInner(Bytes key) const {
  bool found;
  unsigned pos = lowerBound(key, &found);
  return pos >= count ? upper : child(pos);
}

bool BTreeNode::makeSpaceFor(unsigned keyLen, unsigned payloadLen) {
  unsigned needed = spaceNeeded(keyLen, payloadLen);
  if (needed <= freeSpace()) return true;
  if (needed <= freeSpaceAfterCompaction()) {
    compactify();
    return true;
  }
  return false;
}

void BTreeNode::storeKeyValue(unsigned i, Bytes suffix, Bytes payload, uint16_t rawPayloadLen) {
  unsigned space = static_cast<unsigned>(suffix.size() + payload.size());
  dataOffset -= static_cast<uint16_t>(space);
  spaceUsed += static_cast<uint16_t>(space);
  slot[i].offset = dataOffset;
  slot[i].keyLen = static_cast<uint16_t>(suffix.size());
  slot[i].payloadLen = rawPayloadLen;
  slot[i].head = keyHead(suffix.data(), static_cast<unsigned>(suffix.size()));
  if (!suffix.empty()) std::memcpy(ptr() + dataOffset, suffix.data(), suffix.size());
  if (!payload.empty()) std::memcpy(ptr() + dataOffset + suffix.size(), payload.data(), payload.size());
}

void BTreeNode::insert(Bytes key, Bytes payload, bool outOfLineValue) {
  bool found;
  insertAt(lowerBound(key, &found), key, payload, outOfLineValue);
}

void BTreeNode::insertAt(unsigned pos, Bytes key, Bytes payload, bool outOfLineValue) {
  std::memmove(&slot[pos + 1], &slot[pos], (count - pos) * kSlotSize);
  uint16_t raw = static_cast<uint16_t>(payload.size()) | (outOfLineValue ? kOutOfLine : 0);
  storeKeyValue(pos, key.subspan(prefixLen), payload, raw);
  count++;
  lastInsert = static_cast<uint16_t>(pos + 1);
  // The hints of slots below pos still hold, if the insert left their spacing as it was.
  unsigned dist = count / (kHintCount + 1);
  bool sameSpacing = dist > 0 && (count - 1) / (kHintCount + 1) == dist;
  makeHints(sameSpacing && pos / dist > 1 ? pos / dist - 1 : 0);
}

void BTreeNode::append(Bytes key, Bytes payload, uint16_t rawPayloadLen) {
  storeKeyValue(count, key.subspan(prefixLen), payload, rawPayloadLen);
  count++;
}

void BTreeNode::removeSlot(unsigned i) {
  spaceUsed -= static_cast<uint16_t>(slot[i].keyLen + payloadLen(i));
  std::memmove(&slot[i], &slot[i + 1], (count - i - 1) * kSlotSize);
  count--;
  makeHints();
}

void BTreeNode::overwritePayload(unsigned i, Bytes payload) {
  unsigned old = payloadLen(i);
  if (!payload.empty()) std::memcpy(mutablePayload(i), payload.data(), payload.size());
  spaceUsed -= static_cast<uint16_t>(old - payload.size());
  slot[i].payloadLen = static_cast<uint16_t>(payload.size());
}

void BTreeNode::makeHints(unsigned first) {
  unsigned dist = count / (kHintCount + 1);
  for (unsigned i = first; i < kHintCount; i++) hint[i] = dist ? slot[dist * (i + 1)].head : 0;
}

void BTreeNode::compactify() {
  ScratchNode scratch(this);
  BTreeNode* tmp = scratch.node();
  tmp->init(isLeaf(), lowerFenceKey(), upperFenceKey());
  for (unsigned i = 0; i < count; i++) {
    tmp->storeKeyValue(i, Bytes(keySuffix(i), slot[i].keyLen), Bytes(payloadPtr(i), payloadLen(i)),
                       slot[i].payloadLen);
  }
  tmp->count = count;
  tmp->upper = upper;
  tmp->flags = flags;
  tmp->lastInsert = lastInsert;
  tmp->makeHints();
  std::memcpy(ptr() + sizeof(PageHeader), scratch.bytes + sizeof(PageHeader), kPageSize - sizeof(PageHeader));
}

void BTreeNode::copyContentTo(BTreeNode* dst) const {
  std::memcpy(dst->ptr() + sizeof(PageHeader), ptr() + sizeof(PageHeader), kPageSize - sizeof(PageHeader));
  dst->page.kind = page.kind;
  dst->flags = 0;
}

void BTreeNode::split(BTreeNode* left, uint64_t leftPid, BTreeNode* parent, unsigned leftCount,
                      Bytes sep) {
  uint8_t key[kKeyBuf];
  left->init(isLeaf(), lowerFenceKey(), sep);
  ScratchNode scratch(this);
  BTreeNode* right = scratch.node();
  right->init(isLeaf(), sep, upperFenceKey());
  parent->insert(sep, Bytes(reinterpret_cast<const uint8_t*>(&leftPid), sizeof(leftPid)));
  auto move = [&](BTreeNode* dst, unsigned i) {
    unsigned n = copyKey(i, key, kKeyBuf);
    dst->append(Bytes(key, n), Bytes(payloadPtr(i), payloadLen(i)), slot[i].payloadLen);
  };
  if (isLeaf()) {
    for (unsigned i = 0; i < leftCount; i++) move(left, i);
    for (unsigned i = leftCount; i < count; i++) move(right, i);
  } else {
    for (unsigned i = 0; i < leftCount; i++) move(left, i);
    left->upper = child(leftCount);  // the separator itself went up to the parent
    for (unsigned i = leftCount + 1; i < count; i++) move(right, i);
    right->upper = upper;
  }
  left->makeHints();
  right->makeHints();
  std::memcpy(ptr() + sizeof(PageHeader), scratch.bytes + sizeof(PageHeader), kPageSize - sizeof(PageHeader));
}

bool BTreeNode::mergeInto(unsigned slotInParent, BTreeNode* parent, BTreeNode* right) {
  // What the merged node needs at least: both nodes' entries as stored now (a merged key
  // keeps at least the bytes it has here, since the merged prefix is no longer than
  // either node's) and the new fences. Most attempts to merge into a full sibling end
  // here, without copying a key.
  auto entryBytes = [](const BTreeNode* n) {
    return n->spaceUsed - n->lowerFence.len - n->upperFence.len + n->count * kSlotSize;
  };
  unsigned atLeast = entryBytes(this) + entryBytes(right) + lowerFence.len + right->upperFence.len;
  if (isInner()) atLeast += kSlotSize + sizeof(uint64_t);  // the separator, with the left's upper child
  if (atLeast > kPageSize - kHeaderSize) return false;
  uint8_t key[kKeyBuf];
  ScratchNode scratch(right);
  BTreeNode* tmp = scratch.node();
  tmp->init(isLeaf(), lowerFenceKey(), right->upperFenceKey());
  auto add = [&](Bytes k, Bytes payload, uint16_t raw) {
    if (k.size() < tmp->prefixLen || tmp->spaceNeeded(static_cast<unsigned>(k.size()), static_cast<unsigned>(payload.size())) > tmp->freeSpace()) {
      return false;
    }
    tmp->append(k, payload, raw);
    return true;
  };
  auto addAll = [&](const BTreeNode* src) {
    for (unsigned i = 0; i < src->count; i++) {
      unsigned n = src->copyKey(i, key, kKeyBuf);
      if (!add(Bytes(key, n), Bytes(src->payloadPtr(i), src->payloadLen(i)), src->slot[i].payloadLen)) return false;
    }
    return true;
  };
  if (!addAll(this)) return false;
  if (isInner()) {
    unsigned n = parent->copyKey(slotInParent, key, kKeyBuf);
    uint64_t leftUpper = upper;
    if (!add(Bytes(key, n), Bytes(reinterpret_cast<const uint8_t*>(&leftUpper), sizeof(leftUpper)), sizeof(leftUpper))) return false;
  }
  if (!addAll(right)) return false;
  tmp->upper = right->upper;
  tmp->makeHints();
  parent->removeSlot(slotInParent);
  std::memcpy(right->ptr() + sizeof(PageHeader), scratch.bytes + sizeof(PageHeader), kPageSize - sizeof(PageHeader));
  return true;
}

unsigned BTreeNode::leafSeparatorLen(unsigned leftCount) const {
  // Same rule as leafSeparator, computed on the stored suffixes (both share the prefix).
  Bytes a(keySuffix(leftCount - 1), slot[leftCount - 1].keyLen);
  Bytes b(keySuffix(leftCount), slot[leftCount].keyLen);
  unsigned common = commonPrefix(a, b);
  if (a.size() > common && b.size() > common + 1) return prefixLen + common + 1;
  return prefixLen + static_cast<unsigned>(a.size());
}

unsigned BTreeNode::chooseSplit(unsigned insertPos, uint8_t* sep, unsigned* sepLen) const {
  const unsigned capacity = kPageSize - kHeaderSize;
  unsigned total = 0;
  for (unsigned i = 0; i < count; i++) total += entrySize(i);
  const unsigned newEntry = count > 0 ? total / count : 0;
  unsigned best = isLeaf() ? 1 : 0;
  unsigned bestDiff = ~0u;
  // An ascending run inside the node: keep everything before the insert on the left.
  bool run = insertPos < count && insertPos > 0 && lastInsert == insertPos;
  unsigned leftBytes = 0;
  for (unsigned lc = 0; lc < count; lc++) {
    if (lc > 0) leftBytes += entrySize(lc - 1);
    if (isLeaf() && lc == 0) continue;
    unsigned s = isLeaf() ? leafSeparatorLen(lc) : keyLen(lc);
    // Sizes are upper bounds: the halves' prefixes can only be longer than this node's.
    unsigned rightBytes = total - leftBytes - (isLeaf() ? 0 : entrySize(lc));
    unsigned leftNeed = lowerFence.len + s + leftBytes;
    unsigned rightNeed = s + upperFence.len + rightBytes;
    if (leftNeed > capacity || rightNeed > capacity) continue;
    // Even halves once the new entry is in (taken to be of the mean size), as a
    // textbook split of the full node and the new entry does.
    const unsigned leftAfter = leftNeed + (insertPos < lc ? newEntry : 0);
    const unsigned rightAfter = rightNeed + (insertPos < lc ? 0 : newEntry);
    unsigned diff = leftAfter > rightAfter ? leftAfter - rightAfter : rightAfter - leftAfter;
    if (insertPos >= count) {
      diff = count - lc;  // the largest valid left half wins
    } else if (run) {
      diff = lc <= insertPos ? insertPos - lc : count + (lc - insertPos);  // at insertPos, else nearest
    } else if (insertPos == 0) {
      diff = lc;  // the smallest valid left half wins
    }
    if (diff < bestDiff) {
      bestDiff = diff;
      best = lc;
    }
  }
  *sepLen = isLeaf() ? leafSeparator(best, sep) : copyKey(best, sep, kKeyBuf);
  return best;
}

unsigned BTreeNode::leafSeparator(unsigned leftCount, uint8_t* out) const {
  uint8_t a[kKeyBuf];
  unsigned alen = copyKey(leftCount - 1, a, kKeyBuf);
  unsigned blen = copyKey(leftCount, out, kKeyBuf);
  unsigned common = commonPrefix(Bytes(a, alen), Bytes(out, blen));
  // The shortest prefix of the right key that is still above the left key, provided it
  // is strictly below the right key (so the right key stays right of it).
  if (alen > common && blen > common + 1) return common + 1;
  std::memcpy(out, a, alen);
  return alen;
}

std::string BTreeNode::verify() const {
  if (!isLeaf() && !isInner()) return "not a B+tree node";
  if (kHeaderSize + count * kSlotSize > dataOffset || dataOffset > kPageSize) {
    return "slot array overlaps the heap (count " + std::to_string(count) + ")";
  }
  auto inHeap = [&](unsigned off, unsigned len) { return off >= dataOffset && off + len <= kPageSize; };
  if (!inHeap(lowerFence.offset, lowerFence.len) || !inHeap(upperFence.offset, upperFence.len)) {
    return "fence key outside the page";
  }
  Bytes lower = lowerFenceKey();
  Bytes upperKey = upperFenceKey();
  unsigned expectPrefix = (lower.empty() || upperKey.empty()) ? 0 : commonPrefix(lower, upperKey);
  if (prefixLen != expectPrefix) return "prefix length does not match the fences";
  if (!lower.empty() && !upperKey.empty() && compareBytes(lower, upperKey) >= 0) {
    return "lower fence is not below the upper fence";
  }
  std::string prev;
  for (unsigned i = 0; i < count; i++) {
    if (!inHeap(slot[i].offset, slot[i].keyLen + payloadLen(i))) {
      return "entry " + std::to_string(i) + " lies outside the page";
    }
    if (isInner() && payloadLen(i) != sizeof(uint64_t)) return "inner entry without a child";
    std::string k = keyString(i);
    Bytes kb = asBytes(k);
    if (slot[i].head != keyHead(keySuffix(i), slot[i].keyLen)) return "key head does not match key";
    if (i > 0 && compareBytes(asBytes(prev), kb) >= 0) return "keys out of order at entry " + std::to_string(i);
    if (!lower.empty() && compareBytes(kb, lower) <= 0) return "key at entry " + std::to_string(i) + " not above the lower fence";
    if (!upperKey.empty() && compareBytes(kb, upperKey) > 0) return "key at entry " + std::to_string(i) + " above the upper fence";
    prev = std::move(k);
  }
  if (count > kHintCount * 2) {  // where lowerBound uses them
    unsigned dist = count / (kHintCount + 1);
    for (unsigned i = 0; i < kHintCount; i++) {
      if (hint[i] != slot[dist * (i + 1)].head) return "hint " + std::to_string(i) + " does not match its slot";
    }
  }
  return {};
}

}  // namespace vmstore::internal
