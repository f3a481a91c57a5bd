// vmstore::WriteBatch: puts and deletes applied together, all or nothing.
//
// Contract
// - put()/del() check each key and value when added (InvalidArgument for the empty key
//   or a null tree, TooBig beyond the limits) and change nothing stored; a valid batch
//   fails at Database::write() only on storage errors, with InvalidArgument when one of
//   its trees belongs to another database (nothing is written), or with NotFound when
//   one of its trees was dropped (the batch is undone).
// - Database::write(batch) applies the operations in order. Deleting an absent key is
//   not an error. If an operation fails, the ones before it are undone and the error is
//   returned: nothing of the batch stays. (If even the undo fails, the database turns
//   read-only until reopened, and the reopened database holds none of the batch.)
// - After a crash a batch is either wholly present or wholly absent: it is one log record
//   (appended once all of it applied; present if write() returned OK under durability
//   sync), and no checkpoint falls inside it.
// - While write() runs, writers of the batch's keys wait (it holds their locks); writes
//   of other keys, and other batches, go on beside it. Readers are not blocked and may
//   see some of the batch's changes before others, and never a change undone later
//   except while a failing batch is being undone.
// - A batch is a value: copy, move, reuse after clear(). It references its trees (the
//   handles must outlive it) but no database state; one batch belongs to one thread.
//   clear() keeps the memory of its operations, so a batch reused for batches of similar
//   sizes allocates nothing once it has held one as large.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vmstore/status.hpp"

namespace vmstore {

class Tree;

class WriteBatch {
 public:
  Status put(Tree* tree, std::string_view key, std::string_view value);
  Status del(Tree* tree, std::string_view key);
  void clear() { count_ = 0; }
  size_t count() const { return count_; }

  struct Op {
    Tree* tree;
    bool isPut;
    std::string key;
    std::string value;
  };
  std::span<const Op> ops() const { return {ops_.data(), count_}; }

 private:
  Op& add();  // the next operation's slot (a kept one when there is one)
  std::vector<Op> ops_;  // [0, count_) the batch; the rest kept for reuse
  size_t count_ = 0;
};

}  // namespace vmstore
