// BTree: a B+tree of byte-string keys and values over the buffer manager, with
// optimistic lock coupling (paper 000 §4.2). Knows pages, guards and page ids; never
// files or system calls.
//
// Contract
// - The root page id never changes for the life of a tree (a root split moves the
//   root's content into a new child; shrinking pulls the only child back up), so the
//   catalog stores it once.
// - Lookups and leaf reads are optimistic: they retry internally on Restart and never
//   block writers. put/remove lock only the nodes they change; a split also locks the
//   parent, a merge the parent and one sibling.
// - Values whose key+value exceed BTreeNode::kMaxEntry are stored in a page of their own
//   (kMaxValueSize bounds them), a variable-size page of as many ids as the value needs
//   (contiguous in memory); the leaf keeps a reference (page id and length). A value of
//   one page is read optimistically; a larger one under a shared lock, taken while the
//   leaf is held shared so that the reference stays current.
// - Every method may throw StorageError (I/O, corruption, no space); a dropped tree
//   throws StorageError(NotFound). Nothing else escapes.
// - Keys and values must already be within the documented limits (the API checks).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "btree/node.hpp"
#include "buffer/guards.hpp"
#include "sync/page_state.hpp"

namespace vmstore::internal {

namespace btree_detail {
struct ValuePage;
}  // namespace btree_detail

// Entries copied out of one leaf for an iterator, in iteration order.
struct LeafBatch {
  // Entries [0, count) are this read's, in the read's direction; the strings past count
  // are kept only so that the next read reuses their memory.
  std::vector<std::string> keys;
  std::vector<std::string> values;
  size_t count = 0;
  // The read stopped at its entry limit: the leaf holds more entries in this direction
  // after keys[count - 1] (forward: above it, backward: below it); fence is then unset.
  bool more = false;
  // Forward: the leaf's upper fence (continue after it). Backward: its lower fence
  // (continue at or below it). Empty: this leaf was the last one in that direction.
  std::string fence;
};

// BM: BufferManager (vmcache) or HashBufferManager (bench/hashbm/, the traditional
// design, for the benchmark's control experiment); the tree code is the same for both.
template <class BM>
class BasicBTree {
 public:
  BasicBTree(BM& bm, uint64_t rootPid) : bm_(bm), root_(rootPid) {}
  // Allocates an empty tree and returns its root page id.
  static uint64_t create(BM& bm);
  uint64_t rootPid() const { return root_; }

  // Copies min(cap, length) value bytes into buf and sets *vlen. False when absent.
  bool get(Bytes key, uint8_t* buf, size_t cap, size_t* vlen);
  bool getString(Bytes key, std::string* value);
  // Zero-copy: holds key's value in place (no copy) and sets *pinned to the page to
  // release with unpin() and *data / *len to the value's bytes. The page held shared is
  // the leaf for a value stored in it (writers of that leaf wait until unpin), else the
  // value's own page. False (nothing held) when absent.
  bool pin(Bytes key, uint64_t* pinned, const uint8_t** data, size_t* len);
  void unpin(uint64_t pinned);
  // Optimistic zero-copy: calls fn(Bytes value) with key's value in place, holding
  // nothing, then validates; when the value (its leaf, or its own page) changed or went
  // meanwhile, fn runs again. So fn may run more than once, and a run that is repeated
  // may have seen bytes that were never the value (torn, or zeros of an evicted page;
  // always inside the pool's memory); the last run saw the current value. A value on a
  // page of its own that is not resident (or is locked) is read in and held shared for
  // one run instead. fn must not throw. False (fn not run) when absent.
  using Reader = void (*)(void* ctx, Bytes value);
  bool readOptimistic(Bytes key, Reader fn, void* ctx);
  template <class Fn>
  bool readOptimistic(Bytes key, Fn&& fn) {
    return readOptimistic(
        key, [](void* f, Bytes value) { (*static_cast<std::remove_reference_t<Fn>*>(f))(value); },
        static_cast<void*>(std::addressof(fn)));
  }
  // Lookups of several keys at once while what they need is in memory (Tree::getMany).
  // Up to kLookupGroup keys descend together, one step of each in turn, and each step
  // requests the lines the key's next step reads (the slots a node search will probe,
  // the child reference it finds, the child's state word and header), so that the cache
  // misses of different keys overlap instead of following one another (group
  // prefetching: AMAC, Kocberber et al., VLDB 2015). In a group of keys in ascending
  // order (a sorted batch), a key that reaches the node the key before it is in is
  // searched for first where that key was found (BTreeNode::lowerBoundNear): one or two
  // comparisons instead of a search when it goes the same way, as it mostly does in the
  // upper levels. Holds nothing, waits for nothing, reads nothing from storage. For key
  // i, out[i] says what became of it:
  // - kFound: copy(i, value) was called with its value in place, and the leaf was
  //   validated after the copy;
  // - kAbsent: not in the tree (validated);
  // - kLeft: not decided here (a page not resident or locked, a value on a page of its
  //   own, a node that changed meanwhile, a dropped or damaged tree); the caller looks
  //   it up the usual way.
  // copy may also have been called for a key that ends kLeft, with bytes that were never
  // its value (a torn read): it must only copy them out. What copy throws propagates
  // (nothing is held); out's entries are then undefined.
  enum class Lookup : uint8_t { kFound, kAbsent, kLeft };
  static constexpr size_t kLookupGroup = 16;
  using Copier = void (*)(void* ctx, size_t i, Bytes value);
  void lookupResident(std::span<const Bytes> keys, std::span<Lookup> out, Copier copy, void* ctx);
  template <class Fn>
  void lookupResident(std::span<const Bytes> keys, std::span<Lookup> out, Fn&& copy) {
    lookupResident(
        keys, out,
        [](void* f, size_t i, Bytes value) { (*static_cast<std::remove_reference_t<Fn>*>(f))(i, value); },
        static_cast<void*>(std::addressof(copy)));
  }

  // A leaf a caller has just written to, kept for its next write of a nearby key (the
  // sorted keys of a batch, Database::write): its page and the version the caller's
  // release gave it (or, from locateLeaves, the version it had when found). A page whose
  // version is still that one has not changed since, so it is the same leaf of this
  // tree with the same fences; the write then goes to it without descending from the
  // root, when the key is within its fences (and, for an insert, the entry fits).
  // Otherwise (changed, evicted, freed, another key range) the write descends as usual.
  // put, updateInPlace and remove take one (null: none) and leave in it the leaf they
  // wrote to. A hint belongs to the tree that left it: never pass it to another
  // tree (an unchanged leaf of this one could cover the other's key).
  struct LeafHint {
    uint64_t pid = kNoPage;
    uint64_t version = 0;
  };
  // The leaves the writes (puts, removes) of keys will go to, found side by side the way
  // lookupResident finds values (one step of each key in turn, each requesting what its
  // next step reads), so that a batch's writes of scattered keys do not each wait for
  // the cache misses of a descent of their own. out[i] is the hint of the leaf that
  // covered keys[i] when it was read, or an empty hint where the walk could not tell (a page
  // not resident or locked, a node that changed, a dropped tree). Holds nothing, reads
  // nothing from storage. A hint is checked when a write takes it: one made stale by a
  // write in between costs that write a descent, nothing else.
  void locateLeaves(std::span<const Bytes> keys, std::span<LeafHint> out);
  void put(Bytes key, Bytes value, LeafHint* hint = nullptr);
  // Writing a value in place (no second copy of it), in three steps: allocValue makes
  // the value's page (of a value too large for a leaf: key.size() + len >
  // BTreeNode::kMaxEntry) and calls fill(bytes) on its len bytes, before anything
  // refers to it; linkValue puts it under key like put() (freeing a value it replaces);
  // freeValue frees one never linked (fill or linkValue failed). holdValue/unpin keep
  // it resident in between (its bytes stay readable, for the log record). The bytes
  // fill gets are zero, unless fillWritesAll says that fill overwrites every one of
  // them (then they are left as the memory had them).
  uint64_t allocValue(size_t len, const std::function<void(uint8_t*)>& fill, bool fillWritesAll = false);
  void linkValue(Bytes key, uint64_t pid, size_t len);
  void freeValue(uint64_t pid, size_t len) { freeValuePage(ValueRef{pid, static_cast<uint32_t>(len)}); }
  const uint8_t* holdValue(uint64_t pid, size_t len);
  // Removes key; true if it was there. old (not null) then gets the value it had. hint:
  // as put's (taken while still valid, left naming the leaf written).
  bool remove(Bytes key, std::string* old = nullptr, LeafHint* hint = nullptr);

  // Read-modify-write of one key, for a caller that keeps every other writer of key out
  // until it returns (the API layer holds the key's lock). Copies the key's value with an
  // optimistic read, then calls decide(current) with no page locked: current points to
  // the copy, or is null when key is absent. If the value is stored inline in its leaf
  // and decide returns a value of the same size, that value is written over it in place
  // under the leaf's exclusive lock, with no slot removed or inserted (the optimistic read
  // is upgraded if the leaf has not changed since, else the leaf is found again), and
  // updateInPlace returns true. If key is absent and decide returns a value that put
  // would store inline (key.size() + value size <= BTreeNode::kMaxEntry), it is inserted
  // into that leaf the same way when the leaf has room (an insert needs no second search),
  // and updateInPlace returns true. Otherwise it writes nothing, leaves in hint (not null)
  // the leaf it read (as of the read: a put or remove of the key next goes straight to
  // it if it has not changed since), and returns false: decide
  // returned nullopt, or a value of another size, or the value is out of line, or an
  // insert found no room (a split is due) or found the key present after all; the caller
  // then applies its change with put or remove. decide is called exactly once, unless the
  // read throws before it; what decide throws propagates (nothing written).
  using Decide = std::optional<Bytes> (*)(void* ctx, const Bytes* current);
  bool updateInPlace(Bytes key, Decide decide, void* ctx, LeafHint* hint = nullptr);
  template <class Fn>
  bool updateInPlace(Bytes key, Fn&& decide, LeafHint* hint = nullptr) {
    return updateInPlace(
        key, [](void* f, const Bytes* current) { return (*static_cast<std::remove_reference_t<Fn>*>(f))(current); },
        &decide, hint);
  }

  // The entries >= from of the leaf that holds `from`, ascending; at most maxEntries of
  // them (then out->more).
  // readAhead > 0 (a scan that goes on from the leaf before): if the leaf after this one
  // is still on storage, the next readAhead leaves under the same parent are read in
  // together before returning (BufferManager::readAhead), so a long scan waits for one
  // batch of reads every readAhead leaves instead of for each leaf.
  void readForward(Bytes from, LeafBatch* out, unsigned readAhead = 0, unsigned maxEntries = kAllEntries) {
    readLeaf(from, true, out, readAhead, maxEntries);
  }
  // The entries <= from of the leaf that holds `from`, descending (read-ahead leftwards).
  void readBackward(Bytes from, LeafBatch* out, unsigned readAhead = 0, unsigned maxEntries = kAllEntries) {
    readLeaf(from, false, out, readAhead, maxEntries);
  }
  static constexpr unsigned kAllEntries = ~0u;
  // The entries a scan copies from its first leaf: most scans end within a few entries,
  // so a seek does not copy a whole leaf; the reads after it take whole leaves.
  static constexpr unsigned kFirstReadEntries = 8;
  // The read-ahead of a scan's next leaf, given the last one (0 at its first leaf): none
  // for the first leaf (most scans end in it), then 4 leaves, doubling with each leaf
  // crossed, up to the buffer manager's readAheadPages() (config read_ahead).
  unsigned nextReadAhead(unsigned last) const {
    unsigned max = readAheadLimit();
    return last == 0 ? std::min(4u, max) : std::min(last * 2, max);
  }
  // Calls fn(key, value) for the entries >= from ascending (forward) or <= from
  // descending, a leaf at a time, until fn returns false.
  template <class Fn>
  void scan(Bytes from, bool forward, Fn&& fn) {
    LeafBatch batch;
    std::string at(reinterpret_cast<const char*>(from.data()), from.size());
    bool skipAt = false;  // backward after a partial read: at itself was handed out
    unsigned limit = kFirstReadEntries;
    for (unsigned ahead = 0;; ahead = batch.more ? ahead : nextReadAhead(ahead), limit = kAllEntries) {
      readLeaf(asBytes(at), forward, &batch, ahead, limit);
      size_t i = skipAt && batch.count > 0 && batch.keys[0] == at ? 1 : 0;
      for (; i < batch.count; i++) {
        if (!fn(std::string_view(batch.keys[i]), std::string_view(batch.values[i]))) return;
      }
      skipAt = false;
      if (batch.more) {  // the rest of the same leaf
        at = forward ? batch.keys[batch.count - 1] + '\0' : batch.keys[batch.count - 1];
        skipAt = !forward;
        continue;
      }
      if (batch.fence.empty()) return;
      // Forward: the smallest key above the upper fence. Backward: keys <= the lower
      // fence live in the leaves to the left.
      at = forward ? batch.fence + '\0' : batch.fence;
    }
  }

  // Zero-copy: calls fn(key, value) for the entries >= from, ascending, until fn returns
  // false. Each leaf is held shared while fn runs on its entries, and a value stored in
  // a page of its own is held shared too for its call; value is the bytes in place, key
  // a copy (prefix and suffix joined) on the stack, both valid for the call only. The
  // entries of one leaf are one consistent state; leaves are read one after another, as
  // the iterator does, with the same read-ahead from the second leaf on. fn must not
  // write to this tree (a writer of a held leaf waits for it). An exception from fn
  // propagates with nothing held.
  using Visit = bool (*)(void* ctx, Bytes key, Bytes value);
  void scanInPlace(Bytes from, Visit visit, void* ctx);
  template <class Fn>
  void scanInPlace(Bytes from, Fn&& fn) {
    scanInPlace(
        from, [](void* f, Bytes key, Bytes value) { return (*static_cast<std::remove_reference_t<Fn>*>(f))(key, value); },
        &fn);
  }

  // Marks the root dropped (later calls throw NotFound) and lists every other page of
  // the tree (nodes and value pages) in *pages for the caller to free; the root's former
  // content goes to *savedRoot. If a page cannot be read, the root is restored and the
  // error thrown: nothing changed. undrop() restores a dropped root from savedRoot.
  void drop(std::vector<PageRun>* pages, Page* savedRoot);
  void undrop(const Page* savedRoot);
  bool isDropped();

  // Walks the tree (shared locks): appends problems found and the ids of all pages it
  // uses (nodes and value pages) to the vectors; fills *shape if given. Throws (a
  // StorageError, NoMemory) instead when the pool cannot hold a page it must read, such
  // as a value larger than half the pool: that is no problem of the tree.
  void verify(std::vector<std::string>* problems, std::vector<uint64_t>* pages, TreeShape* shape = nullptr);
  // Number of keys (a full walk of the leaves).
  uint64_t countKeys();

 private:
  // lookupResident (kLocate false: out) and locateLeaves (kLocate true: leaves, each
  // key's walk ending at its leaf).
  template <bool kLocate>
  void walkResident(std::span<const Bytes> keys, Lookup* out, LeafHint* leaves, Copier copy, void* ctx);
  // Puts savedRoot's content back into the (exclusively held) root: undoes drop().
  static void restoreRoot(BTreeNode* root, const Page* savedRoot);
  struct ValueRef {
    uint64_t pid;
    uint32_t len;
  } __attribute__((packed));
  // The reference stored as the payload of an out-of-line value in leaf slot i.
  static ValueRef valueRefAt(const BTreeNode* leaf, unsigned i) {
    ValueRef ref;
    std::memcpy(&ref, leaf->payloadPtr(i), sizeof(ref));
    return ref;
  }

  using NodeO = GuardO<BTreeNode, BM>;
  using NodeX = GuardX<BTreeNode, BM>;
  void descend(Bytes key, NodeO* parent, NodeO* node, uint64_t stopAt);
  void readLeaf(Bytes from, bool forward, LeafBatch* out, unsigned readAhead, unsigned maxEntries);
  // Up to n children of parent after (forward) or before the one for key, into *out,
  // if the first of them is still on storage; else none. Validates parent.
  void leavesAhead(NodeO& parent, Bytes key, bool forward, unsigned n, std::vector<uint64_t>* out);
  unsigned readAheadLimit() const {
    if constexpr (requires(BM& bm) { bm.readAheadPages(); }) {
      return bm_.readAheadPages();
    } else {
      return 0;  // a buffer manager without read-ahead (bench/hashbm)
    }
  }
  // Returns the value the new entry replaced (to free; pid kNoPage if none).
  ValueRef insertEntry(Bytes key, Bytes payload, bool outOfLine, LeafHint* hint = nullptr);
  // The hinted leaf (see LeafHint), held optimistically in *leaf, if it is unchanged and
  // key is within its fences; false (nothing held) otherwise.
  bool leafFromHint(Bytes key, const LeafHint& hint, NodeO* leaf);
  // The hint a write leaves after holding leaf pid exclusively, upgraded from an
  // optimistic read at state word `begin`: the release adds one to the version.
  static LeafHint hintAfterRelease(uint64_t pid, uint64_t begin) { return {pid, PageState::nextVersion(begin)}; }
  // Splits node (parent may be unheld only for the root). False if the parent had to be
  // split first; either way the caller restarts its operation.
  bool split(NodeX& node, NodeX& parent, Bytes key);
  void ensureSpace(uint64_t pid, Bytes key, unsigned payloadLen);
  void mergeUnderfull(Bytes key, uint64_t pid);
  void shrinkRoot();
  uint64_t writeValuePage(Bytes value);
  void freeValuePage(ValueRef ref);
  void copyValue(NodeO& leaf, unsigned pos, std::string* out);
  // Hands the out-of-line value ref of leaf to fn in pieces, in order:
  // fn(at, bytes, n, len) with bytes [at, at + n) of the value's len, from at 0 to len
  // (one call when it is resident). fn must only copy: it may see torn bytes of a
  // one-page value (validation follows, and a restart calls it again from at 0), and a
  // value being read in is handed on as it arrives, before its checksum is checked (a
  // failed check then throws).
  template <class Fn>
  void withValue(NodeO& leaf, ValueRef ref, Fn&& fn);
  // Descends to key's leaf (*pos: its slot there); false, validated, when key is absent.
  bool findInLeaf(Bytes key, NodeO* leaf, unsigned* pos);
  // The caller holds leaf leafPid shared and read ref from it: fixes the value shared
  // (reading it in if need be), then lets the leaf go (also on failure). Corruption if
  // the page is not that value.
  const btree_detail::ValuePage* fixValueAndReleaseLeaf(uint64_t leafPid, ValueRef ref,
                                                        const SpanArrival* arrival = nullptr);
  [[noreturn]] void throwCorrupt(uint64_t pid, const std::string& what);

  BM& bm_;
  uint64_t root_;
};

using BTree = BasicBTree<BufferManager>;
extern template class BasicBTree<BufferManager>;

}  // namespace vmstore::internal
