// WriteScratch: the working memory of a write (Database::write's batch, an update's
// patch), kept from one write to the next so that a warm write allocates nothing.
//
// Contract
// - ScratchLease takes a WriteScratch from a small pool of the calling thread (or makes
//   one) and gives it back when destroyed. Each write takes its own, so tasks that
//   interleave on one thread (a write suspended on a page miss, another task's write
//   running meanwhile) never share one.
// - A returned scratch keeps its contents and capacity; its user clears what it uses.
//   One that grew past kKeptOps operations or kKeptBytes in a string (a very large batch
//   or value) is freed instead of kept, so such memory never stays with the thread.
// - At most kKept scratches are kept per thread.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "btree/btree.hpp"
#include "sync/key_locks.hpp"
#include "wal/log_record.hpp"

namespace vmstore::internal {

class TreeImpl;

struct WriteScratch {
  struct Undo {  // of the batch operation at the same index (its tree is trees[i])
    bool had = false;
    std::string old;
  };
  std::vector<TreeImpl*> trees;
  std::vector<KeySlot> slots;
  std::vector<LogOp> ops;
  std::vector<Undo> undo;  // [0, undone) in use
  size_t undone = 0;
  std::string patches;  // the patches of a batch's same-size puts, end to end
  std::string one;      // working storage of one patch (encodePatch): a batch's next, or an update's
  std::vector<std::pair<size_t, size_t>> at;  // each op's patch in patches; length 0: none
  // Each op's leaf, found side by side (BTree::locateLeaves; empty: none). index: the
  // ops grouped by tree; group: each op's group; a group is index[begin, end), watched
  // (sorted keys) until two writes in a row miss the leaf they were given. keys, pending
  // and found: the keys, op indexes and leaves of the ops being found.
  struct Group {
    size_t begin = 0;
    size_t end = 0;
    bool watch = false;
    unsigned misses = 0;
  };
  std::vector<BTree::LeafHint> leaves;
  std::vector<size_t> index;
  std::vector<size_t> group;
  std::vector<Group> groups;
  std::vector<Bytes> keys;
  std::vector<size_t> pending;
  std::vector<BTree::LeafHint> found;
  WriteScratch* nextKept = nullptr;  // in its thread's list of kept scratches (ScratchLease)
};

class ScratchLease {
 public:
  ScratchLease() {
    Kept& k = kept();
    if (k.head == nullptr) {
      scratch_ = new WriteScratch();
    } else {
      scratch_ = k.head;
      k.head = scratch_->nextKept;
      k.count--;
    }
  }
  ~ScratchLease() {
    Kept& k = kept();
    const WriteScratch& x = *scratch_;
    if (k.count < kKept && x.undo.size() <= kKeptOps && x.patches.capacity() <= kKeptBytes &&
        x.one.capacity() <= kKeptBytes) {
      scratch_->nextKept = k.head;
      k.head = scratch_;
      k.count++;
    } else {
      delete scratch_;
    }
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  WriteScratch& operator*() { return *scratch_; }

 private:
  static constexpr size_t kKept = 8;
  static constexpr size_t kKeptOps = 4096;
  static constexpr size_t kKeptBytes = 1 << 20;
  // A thread's kept scratches, a list through nextKept (a lease and its return are a few
  // loads and stores), freed when the thread ends.
  struct Kept {
    WriteScratch* head = nullptr;
    size_t count = 0;
    ~Kept() {
      while (head != nullptr) delete std::exchange(head, head->nextKept);
    }
  };
  static Kept& kept() {
    thread_local Kept k;
    return k;
  }
  WriteScratch* scratch_;
};

}  // namespace vmstore::internal
