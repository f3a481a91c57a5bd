// BTreeNode: a B+tree node laid over one 4 KiB page (slotted page, as in the vmcache and
// LeanStore B-trees).
//
// Layout: header, then the slot array growing up and the heap (keys, payloads, fence
// keys) growing down from the page end. Each node covers the key range
// (lowerFence, upperFence]; an empty lower fence is -infinity, an empty upper fence
// +infinity (the empty key is not a valid user key). The bytes both fences share are the
// node's prefix: keys are stored without it (prefix truncation). Each slot keeps the
// first 4 bytes of its stored key as a big-endian "head" so most comparisons touch no
// heap, and 16 hints narrow the binary search.
//
// Inner nodes: slot i holds separator s_i and child c_i (keys k <= s_i, k > s_{i-1});
// `upper` is the child for keys above the last separator. Leaves: slot i holds key and
// payload; bit 15 of payloadLen marks a payload that is an out-of-line value reference.
//
// Reads of a node may race with writers (optimistic lock coupling): every read here is
// bounded to the page plus the VM guard area and never writes outside caller buffers,
// so a torn read only yields garbage that the caller's validation then discards.
// Mutating methods require the exclusive lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "buffer/page.hpp"

namespace vmstore::internal {

using Bytes = std::span<const uint8_t>;

inline Bytes asBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// *out = the n bytes at p. A string reused across reads (as callers of get do) has the
// room already: its length is set and the bytes copied, without std::string::assign's
// general path (40 of a lookup's 1,739 instructions, callgrind).
inline void assignBytes(std::string* out, const uint8_t* p, size_t n) {
  if (n > out->capacity()) {
    out->assign(reinterpret_cast<const char*>(p), n);
    return;
  }
  out->resize(n);
  std::memcpy(out->data(), p, n);
}

struct BTreeNode {
  struct Slot {
    uint16_t offset;
    uint16_t keyLen;
    uint16_t payloadLen;  // bit 15: out-of-line value
    uint32_t head;
  } __attribute__((packed));
  struct Fence {
    uint16_t offset;
    uint16_t len;
  };

  static constexpr unsigned kHintCount = 16;
  static constexpr uint16_t kOutOfLine = 0x8000;
  static constexpr uint8_t kDropped = 1;  // flags: the tree of this root was dropped

  PageHeader page;
  uint64_t upper;  // inner only
  Fence lowerFence;
  Fence upperFence;
  uint16_t count;
  uint16_t spaceUsed;   // heap bytes in use (entries and fences)
  uint16_t dataOffset;  // start of the heap
  uint16_t prefixLen;
  uint8_t flags;
  uint8_t pad[5];
  uint16_t lastInsert;  // 1 + the slot of the last insert (0: none); see chooseSplit
  uint32_t hint[kHintCount];
  union {
    Slot slot[1];  // count slots
    uint8_t heap[1];
  };

  static constexpr unsigned kHeaderSize = 128;
  static constexpr unsigned kSlotSize = sizeof(Slot);
  // Largest key+payload stored in one slot. With two fences of up to kMaxKeySize, a node
  // always has room for one such entry, which is what makes every split terminate.
  static constexpr unsigned kMaxEntry = 1536;
  // Whether a value of valueLen bytes under a key of keyLen is stored in its leaf (else
  // in a page of its own, the leaf holding a reference).
  static constexpr bool storedInline(size_t keyLen, size_t valueLen) { return keyLen + valueLen <= kMaxEntry; }
  // A node whose entries (not counting its fences) take at most this many bytes is
  // merged with a sibling when the two fit in one page.
  static constexpr unsigned kUnderfullBytes = kPageSize / 4;

  bool isLeaf() const { return page.kind == PageKind::kBTreeLeaf; }
  bool isInner() const { return page.kind == PageKind::kBTreeInner; }
  bool dropped() const { return (flags & kDropped) != 0; }
  uint8_t* ptr() { return reinterpret_cast<uint8_t*>(this); }
  const uint8_t* ptr() const { return reinterpret_cast<const uint8_t*>(this); }

  // --- construction (exclusive) ---
  void init(bool leaf, Bytes lower, Bytes upperKey);

  // --- reading (optimistic or locked) ---
  Bytes prefix() const { return {ptr() + lowerFence.offset, prefixLen}; }
  Bytes lowerFenceKey() const { return {ptr() + lowerFence.offset, lowerFence.len}; }
  Bytes upperFenceKey() const { return {ptr() + upperFence.offset, upperFence.len}; }
  const uint8_t* keySuffix(unsigned i) const { return ptr() + slot[i].offset; }
  unsigned keyLen(unsigned i) const { return prefixLen + slot[i].keyLen; }  // full length
  const uint8_t* payloadPtr(unsigned i) const { return ptr() + slot[i].offset + slot[i].keyLen; }
  uint8_t* mutablePayload(unsigned i) { return ptr() + slot[i].offset + slot[i].keyLen; }  // exclusive
  unsigned payloadLen(unsigned i) const { return slot[i].payloadLen & ~kOutOfLine; }
  bool outOfLine(unsigned i) const { return (slot[i].payloadLen & kOutOfLine) != 0; }
  uint64_t child(unsigned i) const;
  // The full key of slot i into out (capacity cap); returns its length, truncated to cap.
  unsigned copyKey(unsigned i, uint8_t* out, unsigned cap) const;
  std::string keyString(unsigned i) const;

  // First slot whose key >= key (count if none); *found when equal.
  unsigned lowerBound(Bytes key, bool* found) const;
  // lowerBound in two halves, for a caller that interleaves the searches of several keys
  // (BasicBTree::lookupResident) so that their cache misses overlap. searchStart reads
  // the header only (the key's head, the slot range the hints leave) and requests the
  // lines of those slots and of the prefix; searchFinish compares the prefix and
  // searches the range. lowerBound(key) is searchFinish(key, searchStart(key), found).
  struct Search {
    uint32_t head;
    unsigned lo;
    unsigned hi;
  };
  Search searchStart(Bytes key) const;
  unsigned searchFinish(Bytes key, Search s, bool* found) const;
  // lowerBound with a guess at the answer (where a nearby key was found, as the key
  // before it in a batch): the slots on either side of `guess` are compared first, and
  // only when the key is not between them is it searched for, on its side of them. Any
  // guess gives lowerBound's answer; a right one costs one or two comparisons.
  unsigned lowerBoundNear(Bytes key, unsigned guess, bool* found) const;
  // The child to descend to for key.
  uint64_t lookupInner(Bytes key) const;

  // --- space ---
  unsigned freeSpace() const { return dataOffset - (kHeaderSize + count * kSlotSize); }
  unsigned freeSpaceAfterCompaction() const {
    return kPageSize - (kHeaderSize + count * kSlotSize) - spaceUsed;
  }
  bool underfull() const {
    unsigned entries = spaceUsed - lowerFence.len - upperFence.len + count * kSlotSize;
    return entries <= kUnderfullBytes;
  }
  unsigned spaceNeeded(unsigned keyLen, unsigned payloadLen) const {
    return kSlotSize + (keyLen - prefixLen) + payloadLen;
  }
  // True if an entry fits, compacting the heap first if that is what it takes.
  bool makeSpaceFor(unsigned keyLen, unsigned payloadLen);

  // --- modification (exclusive) ---
  // Inserts key (full key, within the fences) with payload at its sorted position.
  // The caller made sure it fits (makeSpaceFor). flagsOutOfLine sets the value flag.
  void insert(Bytes key, Bytes payload, bool outOfLineValue = false);
  // The same at pos, which must be lowerBound(key) (the caller has just searched).
  void insertAt(unsigned pos, Bytes key, Bytes payload, bool outOfLineValue = false);
  void removeSlot(unsigned i);
  // Replaces the inline payload of slot i with one no longer than it, where it is: the
  // slot and the heap keep their layout; a shorter payload frees its tail (counted
  // free again, reclaimed by the next compaction). The slot must not be out of line.
  void overwritePayload(unsigned i, Bytes payload);
  // Appends an entry after all others (the caller keeps keys ascending).
  void append(Bytes key, Bytes payload, uint16_t rawPayloadLen);
  void compactify();
  // Sets hints [first, kHintCount) from the slots (the ones below first must be current).
  void makeHints(unsigned first = 0);
  // Copies this node's fences, entries and upper into dst (a freshly initialized node
  // with the same fences), used to move a root's content into a new page.
  void copyContentTo(BTreeNode* dst) const;

  // Splits this node: entries [0, leftCount) move to `left` (freshly allocated page);
  // for inner nodes the entry at leftCount moves up (its child becomes left's upper).
  // sep is the separator placed into parent with left's pid; this node keeps the rest.
  void split(BTreeNode* left, uint64_t leftPid, BTreeNode* parent, unsigned leftCount, Bytes sep);
  // Merges this node (the left one, child at parent slot `slotInParent`) into `right`,
  // removing the parent's separator. False (nothing changed) if it does not fit.
  bool mergeInto(unsigned slotInParent, BTreeNode* parent, BTreeNode* right);

  // Separator for a leaf split with leftCount entries on the left: a truncated key when
  // possible. Writes it to out (capacity >= kMaxKeySize + 1), returns its length.
  unsigned leafSeparator(unsigned leftCount, uint8_t* out) const;
  // For a node with count >= 2 (leaf) or >= 1 (inner): a split point whose two halves
  // both fit in a page, and its separator (written to sep, capacity >= 2 * kMaxKeySize).
  // One always exists because an entry is at most kMaxEntry and a fence at most
  // kMaxKeySize. insertPos is where the key that caused the split goes: at the end
  // (ascending inserts) the left half is kept as full as possible, at the start the
  // right half. Right after the last insert (lastInsert: an ascending run that ends
  // before other keys, as when several writers each load an ascending range) the split
  // falls at insertPos, the left half as full as possible. Otherwise the halves are as
  // even as possible.
  unsigned chooseSplit(unsigned insertPos, uint8_t* sep, unsigned* sepLen) const;

  // Structural check for `vmstore check` (exclusive or shared lock held): key order,
  // keys within fences, heap bounds. Empty string when sound, else what is wrong.
  std::string verify() const;

 private:
  void storeKeyValue(unsigned i, Bytes keySuffix, Bytes payload, uint16_t rawPayloadLen);
  void setFences(Bytes lower, Bytes upperKey);
  void searchHint(uint32_t keyHead, unsigned* lo, unsigned* hi) const;
  int placeByPrefix(Bytes key) const;
  void requestSlots(unsigned lo, unsigned hi) const;
  unsigned searchSlots(Bytes rest, uint32_t h, unsigned lo, unsigned hi, bool* found) const;
  unsigned leafSeparatorLen(unsigned leftCount) const;
  unsigned entrySize(unsigned i) const { return kSlotSize + slot[i].keyLen + payloadLen(i); }
  void updateHint(unsigned changedSlot);
};

static_assert(offsetof(BTreeNode, slot) == BTreeNode::kHeaderSize);

// The first 4 bytes of a key as a big-endian number (zero-padded): comparing heads
// orders keys like comparing their first 4 bytes.
inline uint32_t keyHead(const uint8_t* key, unsigned len) {
  switch (len) {
    case 0:
      return 0;
    case 1:
      return static_cast<uint32_t>(key[0]) << 24;
    case 2:
      return (static_cast<uint32_t>(key[0]) << 24) | (static_cast<uint32_t>(key[1]) << 16);
    case 3:
      return (static_cast<uint32_t>(key[0]) << 24) | (static_cast<uint32_t>(key[1]) << 16) |
             (static_cast<uint32_t>(key[2]) << 8);
    default: {
      uint32_t v;
      std::memcpy(&v, key, 4);
      return __builtin_bswap32(v);
    }
  }
}

// Unsigned-byte order, a proper prefix first; word-wise (keys are often short and
// share long prefixes, where a memcmp call costs more than the comparison).
inline int compareBytes(Bytes a, Bytes b) {
  size_t n = a.size() < b.size() ? a.size() : b.size();
  const uint8_t* pa = a.data();
  const uint8_t* pb = b.data();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x, y;
    std::memcpy(&x, pa + i, 8);
    std::memcpy(&y, pb + i, 8);
    if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
  }
  if (i + 4 <= n) {  // a 4-byte rest is common: a key of 8 bytes past its 4-byte head
    uint32_t x, y;
    std::memcpy(&x, pa + i, 4);
    std::memcpy(&y, pb + i, 4);
    if (x != y) return __builtin_bswap32(x) < __builtin_bswap32(y) ? -1 : 1;
    i += 4;
  }
  for (; i < n; i++) {
    if (pa[i] != pb[i]) return pa[i] < pb[i] ? -1 : 1;
  }
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

}  // namespace vmstore::internal
