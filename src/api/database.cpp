// The public C++ API: thin forwarding to DatabaseImpl / TreeImpl.
#include "vmstore/database.hpp"

#include <algorithm>
#include <cstring>

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
namespace {
// Database::write (commit null: the call waits for durability itself) and writeNoWait.
Status writeBatch(internal::DatabaseImpl* db, const WriteBatch& batch, uint64_t* commit) {
  if (batch.count() == 0) {  // nothing to apply or log: commit point 0
    if (db->closed()) return Status::InvalidArgument("database is closed");
    if (commit != nullptr) *commit = 0;
    return Status::OK();
  }
  return db->write(batch, commit);  // checks that its trees are the database's
}
}  // namespace

Status Database::write(const WriteBatch& batch) { return writeBatch(impl_.get(), batch, nullptr); }
Status Database::writeNoWait(const WriteBatch& batch, uint64_t* commit) {
  if (commit == nullptr) return Status::InvalidArgument("writeNoWait: commit output pointer is null");
  return writeBatch(impl_.get(), batch, commit);
}
Status Database::waitDurable(uint64_t commit) {
  if (impl_->closed()) return Status::InvalidArgument("database is closed");
  return impl_->waitDurable(commit);
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
  Status st = impl_->db->getMany(
      impl_, keys, *statuses,
      [&](size_t i, internal::Bytes value) { internal::assignBytes(&(*values)[i], value.data(), value.size()); },
      [&](size_t i) { return impl_->db->get(impl_, keys[i], &(*values)[i]); });
  // Empty unless OK (values may hold a caller's earlier results, or a torn copy).
  for (size_t i = 0; i < keys.size(); i++) {
    if (!(*statuses)[i].ok()) (*values)[i].clear();
  }
  return st;
}
Status Tree::getMany(std::span<const std::string_view> keys, std::span<const std::span<std::byte>> bufs,
                     std::span<size_t> vlens, std::span<Status> statuses) const {
  if (bufs.size() != keys.size() || vlens.size() != keys.size() || statuses.size() != keys.size()) {
    return Status::InvalidArgument("getMany: bufs, vlens and statuses need one entry per key");
  }
  std::fill(vlens.begin(), vlens.end(), size_t{0});
  return impl_->db->getMany(
      impl_, keys, statuses,
      [&](size_t i, internal::Bytes value) {
        if (!bufs[i].empty()) std::memcpy(bufs[i].data(), value.data(), std::min(value.size(), bufs[i].size()));
        vlens[i] = value.size();
      },
      [&](size_t i) {
        vlens[i] = 0;  // a copy of torn bytes may have set it; get sets it only when found
        return impl_->db->get(impl_, keys[i], bufs[i], &vlens[i]);
      });
}
Status Tree::putReserve(std::string_view key, size_t len,
                        const std::function<Status(std::span<std::byte>)>& fill) {
  if (!fill) return Status::InvalidArgument("putReserve: the fill function is empty");
  return impl_->db->putReserve(impl_, key, len, fill);
}

Status Tree::getView(std::string_view key, ValueView* view) const {
  if (view == nullptr) return Status::InvalidArgument("view output pointer is null");
  view->release();
  uint64_t pinned = 0;
  const std::byte* data = nullptr;
  size_t len = 0;
  Status st = impl_->db->getView(impl_, key, &pinned, &data, &len);
  if (!st.ok()) return st;
  view->tree_ = impl_;
  view->pinned_ = pinned;
  view->data_ = data;
  view->size_ = len;
  return st;
}

Status Tree::read(std::string_view key, const std::function<void(std::string_view)>& fn) const {
  if (!fn) return Status::InvalidArgument("read: the function is empty");
  ValueView view;
  Status st = getView(key, &view);
  if (st.ok()) fn(view.view());
  return st;
}

Status Tree::readOptimistic(std::string_view key, ReadFn fn, void* ctx) const {
  return impl_->db->readOptimistic(impl_, key, fn, ctx);
}

Status Tree::getRange(std::string_view key, size_t offset, std::span<std::byte> buf, size_t* copied,
                      size_t* vlen) const {
  if (copied == nullptr || vlen == nullptr) return Status::InvalidArgument("getRange: copied or vlen is null");
  if (buf.data() == nullptr && !buf.empty()) return Status::InvalidArgument("getRange: buf is null");
  ValueView view;
  Status st = getView(key, &view);
  if (!st.ok()) return st;
  *vlen = view.size();
  *copied = offset >= view.size() ? 0 : std::min(buf.size(), view.size() - offset);
  if (*copied > 0) std::memcpy(buf.data(), view.data() + offset, *copied);
  return st;
}

ValueView& ValueView::operator=(ValueView&& o) noexcept {
  if (this != &o) {
    release();
    tree_ = o.tree_;
    pinned_ = o.pinned_;
    data_ = o.data_;
    size_ = o.size_;
    o.tree_ = nullptr;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void ValueView::release() {
  if (tree_ == nullptr) return;
  tree_->db->releaseView(tree_, pinned_);
  tree_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

Status Tree::del(std::string_view key) { return impl_->db->del(impl_, key); }
Status Tree::update(std::string_view key, UpdateFn fn, void* ctx) { return impl_->db->update(impl_, key, fn, ctx); }
Status Tree::scan(std::string_view start, ScanFn fn, void* ctx) const { return impl_->db->scan(impl_, start, fn, ctx); }
Status Tree::shape(TreeShape* out) const { return impl_->db->shape(impl_, out); }
const std::string& Tree::name() const { return impl_->name; }

}  // namespace vmstore
