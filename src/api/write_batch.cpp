// WriteBatch: the operations of a batch, checked as they are added.
#include "vmstore/write_batch.hpp"

#include "api/validate.hpp"

namespace vmstore {

Status WriteBatch::put(Tree* tree, std::string_view key, std::string_view value) {
  if (tree == nullptr) return Status::InvalidArgument("batch put: tree is null");
  Status st = internal::validateKey(key);
  if (st.ok()) st = internal::validateValue(value);
  if (!st.ok()) return st;
  Op& op = add();
  op.tree = tree;
  op.isPut = true;
  op.key.assign(key);
  op.value.assign(value);
  return Status::OK();
}

Status WriteBatch::del(Tree* tree, std::string_view key) {
  if (tree == nullptr) return Status::InvalidArgument("batch delete: tree is null");
  Status st = internal::validateKey(key);
  if (!st.ok()) return st;
  Op& op = add();
  op.tree = tree;
  op.isPut = false;
  op.key.assign(key);
  op.value.clear();
  return Status::OK();
}

WriteBatch::Op& WriteBatch::add() {
  if (count_ == ops_.size()) ops_.emplace_back();
  return ops_[count_++];
}

}  // namespace vmstore
