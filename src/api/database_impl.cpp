#include "api/database_impl.hpp"

#include <filesystem>
#include <new>
#include <system_error>

#include "vmstore/limits.hpp"

namespace vmstore::internal {

namespace {

namespace fs = std::filesystem;

constexpr const char* kDataFileName = "data.vms";

// Catalog keys: "T" + tree name, so that the default tree "" has a non-empty key.
std::string catalogKey(std::string_view name) {
  std::string k = "T";
  k.append(name);
  return k;
}

Status validateKey(std::string_view key) {
  if (key.empty()) return Status::InvalidArgument("the empty key is not allowed");
  if (key.size() > kMaxKeySize) {
    return Status::TooBig("key of " + std::to_string(key.size()) + " bytes exceeds the maximum of " +
                          std::to_string(kMaxKeySize));
  }
  return Status::OK();
}

// Runs fn, turning the engine's exceptions into a Status.
template <class Fn>
Status guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const StorageError& e) {
    return e.status();
  } catch (const std::bad_alloc&) {
    return Status::NoMemory("out of memory");
  } catch (const std::system_error& e) {
    return Status::IOError(e.what());
  }
}

}  // namespace

TreeImpl::TreeImpl(DatabaseImpl* db, std::string name, uint64_t root)
    : db(db), name(std::move(name)), btree(db->bufferManager(), root), handle(this) {}

Status DatabaseImpl::open(const std::string& dir, const Options& options, std::unique_ptr<DatabaseImpl>* out) {
  if (dir.empty()) return Status::InvalidArgument("database directory name is empty");
  uint64_t poolPages = options.pool_size / kPageSize;
  uint64_t maxPages = options.max_size / kPageSize;
  if (poolPages < BufferManager::kMinPoolPages) return Status::InvalidArgument("pool_size must be at least 1M");
  if (maxPages < 256) return Status::InvalidArgument("max_size must be at least 1M");

  std::error_code ec;
  fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) {
    if (!options.create) {
      return Status::InvalidArgument("database " + dir + " does not exist (and create=false)");
    }
    fs::create_directories(dir, ec);
    if (ec) return Status::IOError("cannot create directory " + dir + ": " + ec.message());
  } else if (!fs::is_directory(st)) {
    return Status::InvalidArgument(dir + " exists and is not a directory");
  }
  std::string path = dir + "/" + kDataFileName;
  bool fileExists = fs::exists(path, ec);
  if (!fileExists && !options.create) {
    return Status::InvalidArgument("no vmstore database in " + dir + " (and create=false)");
  }

  std::unique_ptr<DatabaseImpl> db(new DatabaseImpl());
  db->dir_ = dir;
  db->options_ = options;
  Status s = db->lock_.acquire(dir);
  if (!s.ok()) return s;
  s = db->file_.open(path, options.create);
  if (!s.ok()) return s;
  bool fresh = db->file_.sizeBytes() == 0;
  if (fresh && fileExists) {
    // Never silently turn a data file into a new database: an empty one was truncated
    // (or its creation was cut short before anything was stored in it).
    return Status::Corruption(path + " is empty; if this database never held data, delete the file to start anew");
  }

  Superblock sb;
  if (!fresh) {
    s = readSuperblock(db->file_, &sb);
    if (!s.ok()) return s;
    if (!sb.clean) {
      return Status::Corruption("database " + dir +
                                " was not closed cleanly and was changed after its last sync; "
                                "without a write-ahead log it cannot be recovered");
    }
    if (sb.pageCount > maxPages) {
      return Status::InvalidArgument("max_size is smaller than the data file of " + dir);
    }
  } else {
    sb.pageCount = 1;  // the superblock
  }
  return guarded([&] {
    db->bm_ = std::make_unique<BufferManager>(&db->file_, poolPages, maxPages, sb.pageCount);
    if (fresh) {
      sb.catalogRoot = BTree::create(*db->bm_);
    } else {
      std::vector<uint64_t> free;
      Status fs = readFreeList(db->file_, sb.freeListHead, sb.freeCount, sb.pageCount, &free);
      if (!fs.ok()) return fs;
      db->bm_->freeSpace().assign(std::move(free));
    }
    db->catalog_ = std::make_unique<BTree>(*db->bm_, sb.catalogRoot);
    db->sb_ = sb;
    DatabaseImpl* raw = db.get();
    db->bm_->setWriteHook([raw] { return raw->markInUse(); });
    db->bm_->checkpointDone();  // the file on storage is a checkpoint (or empty)
    if (fresh) {
      std::unique_lock gate(db->writeGate_);
      Status cs = db->checkpointLocked();
      if (!cs.ok()) return cs;
    }
    db->opened_ = true;
    *out = std::move(db);
    return Status::OK();
  });
}

DatabaseImpl::~DatabaseImpl() {
  // A database whose open failed half-way is never written to.
  if (opened_ && !closed_) close();
}

Status DatabaseImpl::markInUse() {
  std::lock_guard g(sbMutex_);
  Superblock s = sb_;
  s.clean = false;
  Status st = writeSuperblock(file_, s);
  if (st.ok()) st = file_.sync();
  if (st.ok()) sb_.clean = false;
  return st;
}

Status DatabaseImpl::checkpointLocked() {
  return guarded([&] {
    Status st = bm_->flushAll();
    if (!st.ok()) return st;
    st = bm_->runWriteHook();  // the free list is written behind the pool's back
    if (!st.ok()) return st;
    // Roots of dropped trees stay allocated while their handles live; on storage they
    // are free, since a reopened database has no handles.
    std::vector<uint64_t> extra;
    for (auto& t : droppedTrees_) extra.push_back(t->btree.rootPid());
    std::vector<uint64_t> free = bm_->freeSpace().snapshot();
    constexpr size_t kPerPage = (kPageSize - sizeof(PageHeader) - 16) / 8;
    while ((free.size() + extra.size() + kPerPage - 1) / kPerPage > free.size()) {
      Page* p = bm_->allocPage(PageKind::kFree);  // room to hold the list itself
      bm_->freePage(p->header.pid);
      free = bm_->freeSpace().snapshot();
    }
    uint64_t head = 0;
    st = writeFreeList(file_, free, extra, &head);
    if (st.ok()) st = file_.sync();
    if (!st.ok()) return st;
    std::lock_guard g(sbMutex_);
    Superblock s = sb_;
    s.pageCount = bm_->pageCount();
    s.freeListHead = head;
    s.freeCount = free.size() + extra.size();
    s.checkpoints++;
    s.clean = true;
    st = writeSuperblock(file_, s);
    if (st.ok()) st = file_.sync();
    if (!st.ok()) return st;
    sb_ = s;
    bm_->checkpointDone();
    return Status::OK();
  });
}

Status DatabaseImpl::sync() {
  std::unique_lock gate(writeGate_);
  return checkpointLocked();
}

Status DatabaseImpl::close() {
  if (closed_) return Status::OK();
  std::unique_lock gate(writeGate_);
  Status st = guarded([&] {
    // Nobody holds a handle after close, so the roots of dropped trees become free.
    for (auto& t : droppedTrees_) {
      GuardX<Page> root(*bm_, t->btree.rootPid());
      root.freePage();
    }
    droppedTrees_.clear();
    return Status::OK();
  });
  Status cp = checkpointLocked();
  if (st.ok()) st = cp;
  closed_ = true;
  trees_.clear();
  droppedTrees_.clear();
  catalog_.reset();
  bm_.reset();
  file_.close();
  lock_.release();  // another open may begin now
  return st;
}

Status DatabaseImpl::catalogLookup(std::string_view name, uint64_t* root) {
  std::string value;
  if (!catalog_->getString(asBytes(catalogKey(name)), &value)) return Status::NotFound("no tree named '" + std::string(name) + "'");
  if (value.size() != sizeof(uint64_t)) return Status::Corruption("catalog entry of tree '" + std::string(name) + "' is damaged");
  std::memcpy(root, value.data(), sizeof(uint64_t));
  return Status::OK();
}

std::vector<std::pair<std::string, uint64_t>> DatabaseImpl::catalogEntries() {
  std::vector<std::pair<std::string, uint64_t>> out;
  catalog_->scan({}, true, [&](std::string_view key, std::string_view value) {
    uint64_t root = 0;
    if (value.size() == sizeof(root)) std::memcpy(&root, value.data(), sizeof(root));
    out.emplace_back(std::string(key.substr(1)), root);
    return true;
  });
  return out;
}

Status DatabaseImpl::openTree(std::string_view name, bool create, Tree** tree) {
  if (name.size() > kMaxTreeNameSize) {
    return Status::InvalidArgument("tree name of " + std::to_string(name.size()) + " bytes exceeds the maximum of " +
                                   std::to_string(kMaxTreeNameSize));
  }
  std::lock_guard g(treesMutex_);
  auto it = trees_.find(name);
  if (it != trees_.end()) {
    *tree = &it->second->handle;
    return Status::OK();
  }
  return guarded([&] {
    uint64_t root;
    Status st = catalogLookup(name, &root);
    if (st.isNotFound()) {
      if (!create) return st;
      std::shared_lock gate(writeGate_);
      root = BTree::create(*bm_);
      try {
        catalog_->put(asBytes(catalogKey(name)), Bytes(reinterpret_cast<const uint8_t*>(&root), sizeof(root)));
      } catch (...) {
        GuardX<Page> page(*bm_, root);
        page.freePage();
        throw;
      }
    } else if (!st.ok()) {
      return st;
    }
    auto impl = std::make_unique<TreeImpl>(this, std::string(name), root);
    *tree = &impl->handle;
    trees_.emplace(std::string(name), std::move(impl));
    return Status::OK();
  });
}

Status DatabaseImpl::dropTree(std::string_view name) {
  std::lock_guard g(treesMutex_);
  return guarded([&] {
    std::shared_lock gate(writeGate_);
    uint64_t root;
    Status st = catalogLookup(name, &root);
    if (!st.ok()) return st;
    auto it = trees_.find(name);
    std::unique_ptr<TreeImpl> impl;
    if (it != trees_.end()) {
      impl = std::move(it->second);
      trees_.erase(it);
    } else {
      impl = std::make_unique<TreeImpl>(this, std::string(name), root);
    }
    catalog_->remove(asBytes(catalogKey(name)));
    TreeImpl* raw = impl.get();
    droppedTrees_.push_back(std::move(impl));  // its handle stays valid until close
    raw->btree.drop();
    return Status::OK();
  });
}

Status DatabaseImpl::listTrees(std::vector<std::string>* names) {
  return guarded([&] {
    names->clear();
    for (auto& [name, root] : catalogEntries()) names->push_back(name);
    return Status::OK();
  });
}

Stats DatabaseImpl::stats() {
  Stats s;
  bm_->fillStats(&s);
  try {
    s.trees = catalogEntries().size();
  } catch (const StorageError&) {
    s.trees = 0;
  }
  return s;
}

Status DatabaseImpl::check(std::vector<std::string>* problems) {
  std::unique_lock gate(writeGate_);
  return guarded([&] {
    std::vector<uint64_t> used;
    catalog_->verify(problems, &used);
    for (auto& [name, root] : catalogEntries()) {
      BTree tree(*bm_, root);
      size_t before = problems->size();
      tree.verify(problems, &used);
      for (size_t i = before; i < problems->size(); i++) (*problems)[i] = "tree '" + name + "': " + (*problems)[i];
    }
    for (auto& t : droppedTrees_) used.push_back(t->btree.rootPid());
    uint64_t pages = bm_->pageCount();
    std::vector<uint8_t> seen(pages, 0);
    seen[0] = 1;  // superblock
    auto mark = [&](uint64_t pid, const char* what) {
      if (pid == 0 || pid >= pages) {
        problems->push_back(std::string(what) + " page id " + std::to_string(pid) + " is outside the file");
      } else if (seen[pid]) {
        problems->push_back("page " + std::to_string(pid) + " is " + what + " but also used elsewhere");
      } else {
        seen[pid] = 1;
      }
    };
    for (uint64_t pid : used) mark(pid, "in use");
    for (uint64_t pid : bm_->freeSpace().snapshot()) mark(pid, "free");
    uint64_t leaked = 0;
    for (uint64_t pid = 1; pid < pages; pid++) {
      if (!seen[pid] && leaked++ < 20) {
        problems->push_back("page " + std::to_string(pid) + " is neither in use nor free");
      }
    }
    if (leaked > 20) problems->push_back(std::to_string(leaked - 20) + " more pages neither in use nor free");
    if (problems->empty()) return Status::OK();
    return Status::Corruption(std::to_string(problems->size()) + " problems found in " + dir_);
  });
}

Status DatabaseImpl::put(TreeImpl* t, std::string_view key, std::string_view value) {
  Status st = validateKey(key);
  if (!st.ok()) return st;
  if (value.size() > kMaxValueSize) {
    return Status::TooBig("value of " + std::to_string(value.size()) + " bytes exceeds the maximum of " +
                          std::to_string(kMaxValueSize));
  }
  std::shared_lock gate(writeGate_);
  return guarded([&] {
    t->btree.put(asBytes(key), asBytes(value));
    return Status::OK();
  });
}

Status DatabaseImpl::get(TreeImpl* t, std::string_view key, std::string* value) {
  Status st = validateKey(key);
  if (!st.ok()) return st;
  return guarded([&] {
    if (!t->btree.getString(asBytes(key), value)) return Status::NotFound();
    return Status::OK();
  });
}

Status DatabaseImpl::get(TreeImpl* t, std::string_view key, std::span<std::byte> buf, size_t* vlen) {
  Status st = validateKey(key);
  if (!st.ok()) return st;
  return guarded([&] {
    if (!t->btree.get(asBytes(key), reinterpret_cast<uint8_t*>(buf.data()), buf.size(), vlen)) return Status::NotFound();
    return Status::OK();
  });
}

Status DatabaseImpl::del(TreeImpl* t, std::string_view key) {
  Status st = validateKey(key);
  if (!st.ok()) return st;
  std::shared_lock gate(writeGate_);
  return guarded([&] {
    if (!t->btree.remove(asBytes(key))) return Status::NotFound();
    return Status::OK();
  });
}

}  // namespace vmstore::internal
