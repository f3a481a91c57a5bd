// LeafHints: each thread's memory of the leaf its last write (a put, an update, a batch's
// put) to each tree went to (BTree::LeafHint), so that writes to neighbouring keys from
// one thread (an ascending insert, a transaction's order lines, the same row updated
// again, a batch that alternates between trees) latch their leaf directly instead of
// descending from the root.
//
// Contract
// - of(serial) is the calling thread's hint for the tree with that serial (TreeImpl::serial:
//   numbered once per process from 1, never reused), or an empty hint; remember(serial,
//   hint) stores one. A tree's hints are never handed to another tree (BTree::LeafHint's
//   rule): a slot answers only for the serial it holds.
// - Direct-mapped, kSlots slots per thread: trees written alternately from one thread may
//   push each other's hint out (a descent more, nothing else).
// - Thread-confined and lock-free: a caller copies the hint out, writes with the copy and
//   stores the result back. Tasks of one thread (which never change threads) share its
//   slots; one that suspends inside the write just stores its hint later.
// - A hint is only a hint: BTree checks it (the page's version, the leaf's fences) before
//   taking it, so a stale or overwritten one costs at most that check.
#pragma once

#include <cstdint>

#include "btree/btree.hpp"

namespace vmstore::internal {

class LeafHints {
 public:
  static BTree::LeafHint of(uint64_t serial) {
    const Entry& e = slots()[serial % kSlots];
    return e.serial == serial ? e.hint : BTree::LeafHint{};
  }
  static void remember(uint64_t serial, const BTree::LeafHint& hint) { slots()[serial % kSlots] = Entry{serial, hint}; }

 private:
  static constexpr unsigned kSlots = 16;
  struct Entry {
    uint64_t serial = 0;  // 0: no tree
    BTree::LeafHint hint;
  };
  static Entry* slots() {
    thread_local Entry entries[kSlots];  // constant-initialized: no guard on access
    return entries;
  }
};

}  // namespace vmstore::internal
