// The C API (include/vmstore.h): a thin layer over the C++ API. Every entry point checks
// its pointers first and never lets an exception cross into C.
#include "vmstore.h"

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "api/database_impl.hpp"
#include "vmstore/vmstore.hpp"

using vmstore::Database;
using vmstore::Status;
using vmstore::Tree;

struct vms_db {
  std::unique_ptr<Database> db;
  std::atomic<bool> closed{false};  // vms_close ran: a second one is refused, not retired again
};

struct vms_view {
  vmstore::ValueView view;
};

struct vms_batch {
  vmstore::WriteBatch batch;
};

struct vms_txn {
  vmstore::Transaction txn;
};

struct vms_iter {
  vmstore::Iterator it;
  Tree* tree = nullptr;  // whose database's close makes every later next() VMS_EINVAL
  bool started = false;
};

namespace {

thread_local std::string lastError;

int report(const Status& s) {
  if (!s.ok() && !s.isNotFound()) lastError = s.toString();
  return s.rawCode();
}

int invalid(const char* what) { return report(Status::InvalidArgument(what)); }

Tree* asTree(vms_tree* t) { return reinterpret_cast<Tree*>(t); }

std::string_view bytes(const void* p, size_t n) { return {static_cast<const char*>(p), n}; }

template <class Fn>
int noThrow(Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return report(Status::NoMemory("out of memory"));
  } catch (const std::exception& e) {
    return report(Status::IOError(e.what()));
  }
}

// Closed databases are kept (holding only their handle objects: the pool, files and
// lock are released by close) so that a call racing with vms_close on another thread
// gets VMS_EINVAL instead of touching freed memory. The oldest are freed beyond a bound.
constexpr size_t kRetiredKept = 1024;
std::mutex retiredMutex;
std::deque<std::unique_ptr<vms_db>> retired;

void retire(vms_db* db) {
  std::unique_ptr<vms_db> old;
  std::lock_guard g(retiredMutex);
  retired.emplace_back(db);
  if (retired.size() > kRetiredKept) {
    old = std::move(retired.front());
    retired.pop_front();
  }
}

// What a vms_update_fn decides, as the Change of an update (vms_update, vms_txn_update;
// `who` names the call in messages).
vmstore::Change changeOf(vms_update_fn fn, void* ctx, std::optional<std::string_view> current, const char* who) {
  const void* next = nullptr;
  size_t nextLen = 0;
  int rc = fn(ctx, current ? current->data() : nullptr, current ? current->size() : 0, &next, &nextLen);
  switch (rc) {
    case VMS_UPDATE_KEEP:
      return vmstore::Change::keep();
    case VMS_UPDATE_DELETE:
      return vmstore::Change::del();
    case VMS_UPDATE_PUT:
      if (next == nullptr && nextLen > 0) {
        return vmstore::Change::abort(Status::InvalidArgument(
            std::string(who) + ": fn returned VMS_UPDATE_PUT with *newval NULL and *newlen > 0"));
      }
      return vmstore::Change::put(next != nullptr ? bytes(next, nextLen) : std::string_view());
    default:
      if (rc < 0) {
        return vmstore::Change::abort(
            Status(static_cast<Status::Code>(rc), std::string(who) + ": fn aborted with " + std::to_string(rc)));
      }
      return vmstore::Change::abort(Status::InvalidArgument(
          std::string(who) + ": fn returned " + std::to_string(rc) +
          ", not VMS_UPDATE_KEEP, VMS_UPDATE_PUT, VMS_UPDATE_DELETE or a negative code"));
  }
}

}  // namespace

extern "C" {

const char* vms_strerror(int rc) { return Status::codeName(rc); }

const char* vms_last_error(void) { return lastError.c_str(); }

int vms_open(const char* dir, const char* config, vms_db** db) {
  if (db == nullptr) return invalid("vms_open: db is NULL");
  *db = nullptr;
  if (dir == nullptr) return invalid("vms_open: dir is NULL");
  return noThrow([&] {
    std::unique_ptr<Database> d;
    Status st = Database::open(dir, config ? std::string_view(config) : std::string_view(), &d);
    if (!st.ok()) return report(st);
    *db = new vms_db{std::move(d)};
    return static_cast<int>(VMS_OK);
  });
}

int vms_close(vms_db* db) {
  if (db == nullptr) return invalid("vms_close: db is NULL");
  if (db->closed.exchange(true)) return invalid("vms_close: database is closed already");
  int rc = noThrow([&] { return report(db->db->close()); });
  retire(db);
  return rc;
}

int vms_sync(vms_db* db) {
  if (db == nullptr) return invalid("vms_sync: db is NULL");
  return noThrow([&] { return report(db->db->sync()); });
}

int vms_tree_open(vms_db* db, const char* name, int create, vms_tree** tree) {
  if (tree == nullptr) return invalid("vms_tree_open: tree is NULL");
  *tree = nullptr;
  if (db == nullptr || name == nullptr) return invalid("vms_tree_open: db or name is NULL");
  return noThrow([&] {
    Tree* t = nullptr;
    Status st = db->db->openTree(name, create != 0, &t);
    if (st.ok()) *tree = reinterpret_cast<vms_tree*>(t);
    return report(st);
  });
}

int vms_tree_drop(vms_db* db, const char* name) {
  if (db == nullptr || name == nullptr) return invalid("vms_tree_drop: db or name is NULL");
  return noThrow([&] { return report(db->db->dropTree(name)); });
}

int vms_put(vms_tree* t, const void* key, size_t klen, const void* val, size_t vlen) {
  if (t == nullptr || key == nullptr) return invalid("vms_put: tree or key is NULL");
  if (val == nullptr && vlen > 0) return invalid("vms_put: val is NULL");
  return noThrow([&] { return report(asTree(t)->put(bytes(key, klen), val ? bytes(val, vlen) : std::string_view())); });
}

int vms_get(vms_tree* t, const void* key, size_t klen, void* buf, size_t cap, size_t* vlen) {
  if (t == nullptr || key == nullptr || vlen == nullptr) return invalid("vms_get: tree, key or vlen is NULL");
  if (buf == nullptr && cap > 0) return invalid("vms_get: buf is NULL but cap > 0");
  return noThrow([&] {
    std::span<std::byte> out(static_cast<std::byte*>(buf), buf ? cap : 0);
    return report(asTree(t)->get(bytes(key, klen), out, vlen));
  });
}

int vms_get_view(vms_tree* t, const void* key, size_t klen, vms_view** view, const void** value, size_t* vlen) {
  if (view != nullptr) *view = nullptr;
  if (t == nullptr || key == nullptr || view == nullptr || value == nullptr || vlen == nullptr) {
    return invalid("vms_get_view: tree, key, view, value or vlen is NULL");
  }
  return noThrow([&] {
    auto held = std::make_unique<vms_view>();
    Status st = asTree(t)->getView(bytes(key, klen), &held->view);
    if (st.ok()) {
      *value = held->view.data();
      *vlen = held->view.size();
      *view = held.release();
    }
    return report(st);
  });
}

void vms_view_release(vms_view* view) { delete view; }

int vms_put_reserve(vms_tree* t, const void* key, size_t klen, size_t vlen, vms_fill_fn fill, void* ctx) {
  if (t == nullptr || key == nullptr || fill == nullptr) return invalid("vms_put_reserve: tree, key or fill is NULL");
  return noThrow([&] {
    int rc = 0;
    Status st = asTree(t)->putReserve(bytes(key, klen), vlen, [&](std::span<std::byte> space) {
      rc = fill(ctx, space.data(), space.size());
      return rc == 0 ? Status::OK() : Status::InvalidArgument("vms_put_reserve: fill returned " + std::to_string(rc));
    });
    return rc != 0 ? rc : report(st);
  });
}

int vms_read(vms_tree* t, const void* key, size_t klen, vms_read_fn fn, void* ctx) {
  if (t == nullptr || key == nullptr || fn == nullptr) return invalid("vms_read: tree, key or fn is NULL");
  return noThrow([&] {
    vmstore::ValueView held;
    Status st = asTree(t)->getView(bytes(key, klen), &held);
    if (!st.ok()) return report(st);
    return fn(ctx, held.data(), held.size());
  });
}

int vms_read_optimistic(vms_tree* t, const void* key, size_t klen, vms_read_fn fn, void* ctx) {
  if (t == nullptr || key == nullptr || fn == nullptr) return invalid("vms_read_optimistic: tree, key or fn is NULL");
  return noThrow([&] {
    int rc = 0;  // of the last run: the one that saw the current value
    Status st = asTree(t)->readOptimistic(bytes(key, klen),
                                          [&](std::string_view value) { rc = fn(ctx, value.data(), value.size()); });
    if (!st.ok()) return report(st);
    return rc;
  });
}

int vms_get_range(vms_tree* t, const void* key, size_t klen, size_t offset, void* buf, size_t cap, size_t* copied,
                  size_t* vlen) {
  if (t == nullptr || key == nullptr || copied == nullptr || vlen == nullptr) {
    return invalid("vms_get_range: tree, key, copied or vlen is NULL");
  }
  if (buf == nullptr && cap > 0) return invalid("vms_get_range: buf is NULL but cap > 0");
  return noThrow([&] {
    std::span<std::byte> out(static_cast<std::byte*>(buf), buf ? cap : 0);
    return report(asTree(t)->getRange(bytes(key, klen), offset, out, copied, vlen));
  });
}

int vms_scan(vms_tree* t, const void* start, size_t slen, vms_scan_fn fn, void* ctx) {
  if (t == nullptr || fn == nullptr) return invalid("vms_scan: tree or fn is NULL");
  if (start == nullptr && slen > 0) return invalid("vms_scan: start is NULL but slen > 0");
  return noThrow([&] {
    int stopped = VMS_OK;
    Status st = asTree(t)->scan(start ? bytes(start, slen) : std::string_view(),
                                [&](std::string_view key, std::string_view value) {
                                  stopped = fn(ctx, key.data(), key.size(), value.data(), value.size());
                                  return stopped == VMS_OK;
                                });
    if (!st.ok()) return report(st);
    return stopped;
  });
}

int vms_get_many(vms_tree* t, size_t n, const void* const* keys, const size_t* klens, void* const* bufs,
                 const size_t* caps, size_t* vlens, int* rcs) {
  if (t == nullptr) return invalid("vms_get_many: tree is NULL");
  if (n == 0) return VMS_OK;
  if (keys == nullptr || klens == nullptr || vlens == nullptr || rcs == nullptr) {
    return invalid("vms_get_many: keys, klens, vlens or rcs is NULL");
  }
  if ((bufs == nullptr) != (caps == nullptr)) return invalid("vms_get_many: only one of bufs and caps is NULL");
  return noThrow([&] {
    // The keys that pass the checks here go to Tree::getMany, which gives each its rc.
    std::vector<std::string_view> ks;
    std::vector<std::span<std::byte>> outs;
    std::vector<size_t> at;  // ks[j] is keys[at[j]]
    for (size_t i = 0; i < n; i++) {
      vlens[i] = 0;
      size_t cap = caps ? caps[i] : 0;
      void* buf = bufs ? bufs[i] : nullptr;
      if (keys[i] == nullptr) {
        rcs[i] = invalid("vms_get_many: a key is NULL");
      } else if (buf == nullptr && cap > 0) {
        rcs[i] = invalid("vms_get_many: a buffer is NULL but its cap > 0");
      } else {
        ks.push_back(bytes(keys[i], klens[i]));
        outs.emplace_back(static_cast<std::byte*>(buf), buf ? cap : 0);
        at.push_back(i);
      }
    }
    std::vector<size_t> lens(ks.size());
    std::vector<Status> statuses(ks.size());
    Status st = asTree(t)->getMany(ks, outs, lens, statuses);
    if (!st.ok()) return report(st);
    for (size_t j = 0; j < ks.size(); j++) {
      vlens[at[j]] = lens[j];
      rcs[at[j]] = report(statuses[j]);
    }
    return report(Status::OK());
  });
}

int vms_delete(vms_tree* t, const void* key, size_t klen) {
  if (t == nullptr || key == nullptr) return invalid("vms_delete: tree or key is NULL");
  return noThrow([&] { return report(asTree(t)->del(bytes(key, klen))); });
}

int vms_update(vms_tree* t, const void* key, size_t klen, vms_update_fn fn, void* ctx) {
  if (t == nullptr || key == nullptr || fn == nullptr) return invalid("vms_update: tree, key or fn is NULL");
  return noThrow([&] {
    return report(asTree(t)->update(bytes(key, klen), [&](std::optional<std::string_view> current) {
      return changeOf(fn, ctx, current, "vms_update");
    }));
  });
}

int vms_iter_open(vms_tree* t, const void* start, size_t slen, vms_iter** it) {
  if (it == nullptr) return invalid("vms_iter_open: it is NULL");
  *it = nullptr;
  if (t == nullptr) return invalid("vms_iter_open: tree is NULL");
  if (start == nullptr && slen > 0) return invalid("vms_iter_open: start is NULL but slen > 0");
  return noThrow([&] {
    auto* i = new vms_iter{asTree(t)->newIterator(), asTree(t)};
    i->it.seek(start ? bytes(start, slen) : std::string_view());
    Status st = i->it.status();
    if (!st.ok()) {
      delete i;
      return report(st);
    }
    *it = i;
    return static_cast<int>(VMS_OK);
  });
}

int vms_iter_next(vms_iter* it, const void** key, size_t* klen, const void** val, size_t* vlen) {
  if (it == nullptr || key == nullptr || klen == nullptr || val == nullptr || vlen == nullptr) {
    return invalid("vms_iter_next: a NULL argument");
  }
  // The entries already copied out stay readable, but after close nothing is returned.
  if (vmstore::internal::TreeImpl::of(it->tree)->db->closed()) return invalid("database is closed");
  return noThrow([&] {
    if (it->started) {
      it->it.next();
    } else {
      it->started = true;
    }
    if (!it->it.valid()) {
      Status st = it->it.status();
      return st.ok() ? static_cast<int>(VMS_NOTFOUND) : report(st);
    }
    std::string_view k = it->it.key();
    std::string_view v = it->it.value();
    *key = k.data();
    *klen = k.size();
    *val = v.data();
    *vlen = v.size();
    return static_cast<int>(VMS_OK);
  });
}

void vms_iter_close(vms_iter* it) { delete it; }

int vms_batch_new(vms_batch** b) {
  if (b == nullptr) return invalid("vms_batch_new: b is NULL");
  return noThrow([&] {
    *b = new vms_batch();
    return static_cast<int>(VMS_OK);
  });
}

int vms_batch_put(vms_batch* b, vms_tree* t, const void* key, size_t klen, const void* val, size_t vlen) {
  if (b == nullptr || t == nullptr || key == nullptr) return invalid("vms_batch_put: batch, tree or key is NULL");
  if (val == nullptr && vlen > 0) return invalid("vms_batch_put: val is NULL");
  return noThrow([&] { return report(b->batch.put(asTree(t), bytes(key, klen), val ? bytes(val, vlen) : std::string_view())); });
}

int vms_batch_delete(vms_batch* b, vms_tree* t, const void* key, size_t klen) {
  if (b == nullptr || t == nullptr || key == nullptr) return invalid("vms_batch_delete: batch, tree or key is NULL");
  return noThrow([&] { return report(b->batch.del(asTree(t), bytes(key, klen))); });
}

int vms_batch_clear(vms_batch* b) {
  if (b == nullptr) return invalid("vms_batch_clear: batch is NULL");
  b->batch.clear();
  return VMS_OK;
}

int vms_write(vms_db* db, vms_batch* b) {
  if (db == nullptr || b == nullptr) return invalid("vms_write: db or batch is NULL");
  return noThrow([&] { return report(db->db->write(b->batch)); });
}

int vms_write_nowait(vms_db* db, vms_batch* b, uint64_t* commit) {
  if (db == nullptr || b == nullptr || commit == nullptr) {
    return invalid("vms_write_nowait: db, batch or commit is NULL");
  }
  return noThrow([&] { return report(db->db->writeNoWait(b->batch, commit)); });
}

int vms_wait_durable(vms_db* db, uint64_t commit) {
  if (db == nullptr) return invalid("vms_wait_durable: db is NULL");
  return noThrow([&] { return report(db->db->waitDurable(commit)); });
}

void vms_batch_free(vms_batch* b) { delete b; }

int vms_txn_new(vms_db* db, vms_txn** txn) {
  if (txn == nullptr) return invalid("vms_txn_new: txn is NULL");
  *txn = nullptr;
  if (db == nullptr) return invalid("vms_txn_new: db is NULL");
  return noThrow([&] {
    *txn = new vms_txn{vmstore::Transaction(db->db.get())};
    return static_cast<int>(VMS_OK);
  });
}

int vms_txn_put(vms_txn* txn, vms_tree* t, const void* key, size_t klen, const void* val, size_t vlen) {
  if (txn == nullptr || t == nullptr || key == nullptr) return invalid("vms_txn_put: txn, tree or key is NULL");
  if (val == nullptr && vlen > 0) return invalid("vms_txn_put: val is NULL");
  return noThrow([&] { return report(txn->txn.put(asTree(t), bytes(key, klen), val ? bytes(val, vlen) : std::string_view())); });
}

int vms_txn_delete(vms_txn* txn, vms_tree* t, const void* key, size_t klen) {
  if (txn == nullptr || t == nullptr || key == nullptr) return invalid("vms_txn_delete: txn, tree or key is NULL");
  return noThrow([&] { return report(txn->txn.del(asTree(t), bytes(key, klen))); });
}

int vms_txn_get(vms_txn* txn, vms_tree* t, const void* key, size_t klen, void* buf, size_t cap, size_t* vlen) {
  if (txn == nullptr || t == nullptr || key == nullptr || vlen == nullptr) {
    return invalid("vms_txn_get: txn, tree, key or vlen is NULL");
  }
  if (buf == nullptr && cap > 0) return invalid("vms_txn_get: buf is NULL but cap > 0");
  return noThrow([&] {
    std::span<std::byte> out(static_cast<std::byte*>(buf), buf ? cap : 0);
    return report(txn->txn.get(asTree(t), bytes(key, klen), out, vlen));
  });
}

int vms_txn_update(vms_txn* txn, vms_tree* t, const void* key, size_t klen, vms_update_fn fn, void* ctx) {
  if (txn == nullptr || t == nullptr || key == nullptr || fn == nullptr) {
    return invalid("vms_txn_update: txn, tree, key or fn is NULL");
  }
  return noThrow([&] {
    return report(txn->txn.update(asTree(t), bytes(key, klen), [&](std::optional<std::string_view> current) {
      return changeOf(fn, ctx, current, "vms_txn_update");
    }));
  });
}

int vms_txn_commit(vms_txn* txn) {
  if (txn == nullptr) return invalid("vms_txn_commit: txn is NULL");
  return noThrow([&] { return report(txn->txn.commit()); });
}

int vms_txn_commit_nowait(vms_txn* txn, uint64_t* commit) {
  if (txn == nullptr || commit == nullptr) return invalid("vms_txn_commit_nowait: txn or commit is NULL");
  return noThrow([&] { return report(txn->txn.commitNoWait(commit)); });
}

int vms_txn_abort(vms_txn* txn) {
  if (txn == nullptr) return invalid("vms_txn_abort: txn is NULL");
  return noThrow([&] { return report(txn->txn.abort()); });
}

void vms_txn_free(vms_txn* txn) { delete txn; }


struct vms_tasks {
  std::unique_ptr<vmstore::TaskPool> pool;
};

int vms_tasks_new(unsigned threads, unsigned inflight, vms_tasks** pool) {
  if (pool == nullptr) return invalid("vms_tasks_new: pool is NULL");
  *pool = nullptr;
  return noThrow([&] {
    auto p = std::make_unique<vms_tasks>();
    Status st = vmstore::TaskPool::create(threads, inflight, &p->pool);
    if (!st.ok()) return report(st);
    *pool = p.release();
    return static_cast<int>(VMS_OK);
  });
}

int vms_tasks_submit(vms_tasks* pool, void (*fn)(void* arg), void* arg) {
  if (pool == nullptr || fn == nullptr) return invalid("vms_tasks_submit: pool or fn is NULL");
  return noThrow([&] {
    pool->pool->submit([fn, arg] { fn(arg); });
    return static_cast<int>(VMS_OK);
  });
}

int vms_tasks_wait(vms_tasks* pool) {
  if (pool == nullptr) return invalid("vms_tasks_wait: pool is NULL");
  return noThrow([&] { return report(pool->pool->wait()); });
}

void vms_tasks_free(vms_tasks* pool) { delete pool; }

}  // extern "C"
