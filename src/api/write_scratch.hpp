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
#include <memory>
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
  std::string one;      // one patch (a batch's next, or an update's)
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
};

class ScratchLease {
 public:
  ScratchLease() {
    if (pool().empty()) {
      scratch_ = std::make_unique<WriteScratch>();
    } else {
      scratch_ = std::move(pool().back());
      pool().pop_back();
    }
  }
  ~ScratchLease() {
    const WriteScratch& x = *scratch_;
    if (pool().size() < kKept && x.undo.size() <= kKeptOps && x.patches.capacity() <= kKeptBytes &&
        x.one.capacity() <= kKeptBytes) {
      pool().push_back(std::move(scratch_));
    }
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  WriteScratch& operator*() { return *scratch_; }

 private:
  static constexpr size_t kKept = 8;
  static constexpr size_t kKeptOps = 4096;
  static constexpr size_t kKeptBytes = 1 << 20;
  static std::vector<std::unique_ptr<WriteScratch>>& pool() {
    thread_local std::vector<std::unique_ptr<WriteScratch>> kept;
    return kept;
  }
  std::unique_ptr<WriteScratch> scratch_;
};

}  // namespace vmstore::internal
