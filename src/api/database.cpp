// The public C++ API: thin forwarding to DatabaseImpl / TreeImpl.
#include "vmstore/database.hpp"

#include "api/database_impl.hpp"

namespace vmstore {

using internal::DatabaseImpl;

Database::Database(std::unique_ptr<DatabaseImpl> impl) : impl_(std::move(impl)) {}
Database::~Database() = default;

Status Database::open(const std::string& dir, const Options& options, std::unique_ptr<Database>* db) {
  if (db == nullptr) return Status::InvalidArgument("db output pointer is null");
  std::unique_ptr<DatabaseImpl> impl;
  Status st = DatabaseImpl::open(dir, options, &impl);
  if (!st.ok()) return st;
  db->reset(new Database(std::move(impl)));
  return Status::OK();
}

Status Database::open(const std::string& dir, std::string_view config, std::unique_ptr<Database>* db) {
  Options options;
  Status st = Options::parse(config, &options);
  if (!st.ok()) return st;
  return open(dir, options, db);
}

Status Database::close() { return impl_->close(); }
Status Database::sync() {
  if (impl_->closed()) return Status::InvalidArgument("database is closed");
  return impl_->sync();
}
Status Database::write(const WriteBatch& batch) {
  std::vector<internal::TreeImpl*> trees;
  trees.reserve(batch.count());
  for (const WriteBatch::Op& op : batch.ops()) {
    if (op.tree->impl_->db != impl_.get()) {
      return Status::InvalidArgument("the batch holds a tree of another database; nothing was written");
    }
    trees.push_back(op.tree->impl_);
  }
  return impl_->write(batch, trees);
}

Status Database::openTree(std::string_view name, bool create, Tree** tree) {
  if (tree == nullptr) return Status::InvalidArgument("tree output pointer is null");
  if (impl_->closed()) return Status::InvalidArgument("database is closed");
  return impl_->openTree(name, create, tree);
}
Status Database::dropTree(std::string_view name) {
  if (impl_->closed()) return Status::InvalidArgument("database is closed");
  return impl_->dropTree(name);
}
Status Database::listTrees(std::vector<std::string>* names) {
  if (names == nullptr) return Status::InvalidArgument("names output pointer is null");
  if (impl_->closed()) return Status::InvalidArgument("database is closed");
  return impl_->listTrees(names);
}
Stats Database::stats() const { return impl_->closed() ? Stats{} : impl_->stats(); }
Status Database::check(std::vector<std::string>* problems) {
  std::vector<std::string> local;
  if (problems == nullptr) problems = &local;
  if (impl_->closed()) return Status::InvalidArgument("database is closed");
  return impl_->check(problems);
}

Status Tree::put(std::string_view key, std::string_view value) { return impl_->db->put(impl_, key, value); }
Status Tree::get(std::string_view key, std::string* value) const {
  if (value == nullptr) return Status::InvalidArgument("value output pointer is null");
  return impl_->db->get(impl_, key, value);
}
Status Tree::get(std::string_view key, std::span<std::byte> buf, size_t* vlen) const {
  if (vlen == nullptr) return Status::InvalidArgument("vlen output pointer is null");
  return impl_->db->get(impl_, key, buf, vlen);
}
Status Tree::getMany(std::span<const std::string_view> keys, std::vector<std::string>* values,
                     std::vector<Status>* statuses) const {
  if (values == nullptr || statuses == nullptr) return Status::InvalidArgument("getMany: values or statuses is null");
  values->resize(keys.size());
  statuses->assign(keys.size(), Status::OK());
  return impl_->db->lookupEach(keys.size(), [&](size_t i) {
    (*statuses)[i] = impl_->db->get(impl_, keys[i], &(*values)[i]);
    if (!(*statuses)[i].ok()) (*values)[i].clear();
  });
}
Status Tree::getMany(std::span<const std::string_view> keys, std::span<const std::span<std::byte>> bufs,
                     std::span<size_t> vlens, std::span<Status> statuses) const {
  if (bufs.size() != keys.size() || vlens.size() != keys.size() || statuses.size() != keys.size()) {
    return Status::InvalidArgument("getMany: bufs, vlens and statuses need one entry per key");
  }
  return impl_->db->lookupEach(keys.size(), [&](size_t i) {
    statuses[i] = impl_->db->get(impl_, keys[i], bufs[i], &vlens[i]);
  });
}
Status Tree::del(std::string_view key) { return impl_->db->del(impl_, key); }
Status Tree::update(std::string_view key, UpdateFn fn, void* ctx) { return impl_->db->update(impl_, key, fn, ctx); }
Status Tree::shape(TreeShape* out) const { return impl_->db->shape(impl_, out); }
const std::string& Tree::name() const { return impl_->name; }

}  // namespace vmstore
