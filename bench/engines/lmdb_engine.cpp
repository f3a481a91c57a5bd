// The `lmdb` bench engine: LMDB 0.9.x (Debian liblmdb-dev) behind the Engine/Session
// interface of bench/engine.hpp. Configuration and why it is fair: docs/ENGINES.md.
//
// - One environment in config.dir, one named database (mdb_dbi_open) per table, opened
//   once at open() in a write transaction; the DBI handles are then valid everywhere.
// - Flags: MDB_WRITEMAP (commits write into the shared mapping instead of pwrite()ing
//   every dirty page: measured 6x more single-put transactions per second here, and
//   LMDB's recommended setting for write throughput), MDB_NOTLS (a read transaction
//   belongs to a Session, not to a thread, and a session may live on any worker
//   thread), MDB_NORDAHEAD (random access: no kernel readahead; LMDB recommends it when
//   the data exceeds RAM) unless the workload writes values of kReadaheadFromBytes or
//   more (config.maxValueBytes): such a value is one run of contiguous overflow pages,
//   read front to back, and without readahead every 4 KiB of it would be a page fault
//   with a read of its own.
// - Durability (config.durability; LMDB has no log, a commit writes the copy-on-write
//   pages and the meta page into the map):
//     none   MDB_NOSYNC | MDB_NOMETASYNC ("no log, no sync", as the paper ran it):
//            commits neither msync nor fsync, the kernel writes dirty pages back
//     async  MDB_NOSYNC: a commit's pages are in the shared mapping (the OS page cache)
//            when it returns, not synced: it survives a crash of the process; close()
//            syncs
//     sync   LMDB's default flags: every commit syncs the map (msync, MDB_WRITEMAP) and
//            its meta page before it returns. LMDB admits one writer at a time, so there
//            is no group commit: concurrent writers queue for the write lock
//   A put or del outside begin()/commit() is its own write transaction, committed (and
//   in sync mode synced) before it returns.
// - Map size: 64 GiB (VMSTORE_LMDB_MAP_GIB overrides it), at least 4 x the largest value
//   (config.maxValueBytes). With MDB_WRITEMAP LMDB sizes
//   the data file to the map size at open, as a sparse file: only written pages take
//   disk space.
// - Cache: LMDB has none of its own; it reads through mmap, so the kernel page cache is
//   its cache and config.poolBytes cannot be enforced here (docs/ENGINES.md says how to
//   bound it with a cgroup).
// - Reads outside begin()/commit() use the session's read-only transaction, reset after
//   each operation (mdb_txn_reset) and renewed (mdb_txn_renew) before the next, so a
//   reader never pins an old snapshot between operations.
// - Writes: LMDB admits one writer at a time. begin()/commit() bracket one write
//   transaction (all operations in between, reads included, go through it and see its
//   writes); a put/del outside begin()/commit() runs in its own short write transaction.
// - stats(): LMDB counts nothing itself; its I/O is the kernel's paging of the map, so
//   pageMisses is the process's major page faults (getrusage) and bytesRead/bytesWritten
//   the process's storage reads and page-cache dirtying (/proc/self/io read_bytes,
//   write_bytes), all since open(). Process-wide: exact while the engine is the only
//   thing in the process doing I/O, as in `vmstore bench`. evictions stays 0 (the
//   kernel's page reclaim is not visible per process).
// - checkpoint(): mdb_env_sync(force). LMDB reuses the pages a commit frees once no
//   reader needs them; it has no compaction in place (mdb_env_copy2 with MDB_CP_COMPACT
//   writes a compacted copy elsewhere), so compact() does nothing.
// - Session objects must be destroyed before Engine::close().
#include <lmdb.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../engine.hpp"
#include "../workload.hpp"

namespace vmstore::bench {
namespace {

constexpr size_t kDefaultMapGiB = 64;
constexpr uint64_t kReadaheadFromBytes = 64 << 10;  // values of 16 pages and more

size_t mapSize() {
  size_t gib = kDefaultMapGiB;
  if (const char* env = std::getenv("VMSTORE_LMDB_MAP_GIB")) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) gib = static_cast<size_t>(v);
  }
  return gib << 30;
}

[[noreturn]] void fail(const char* op, int rc) {
  std::string msg = std::string("lmdb: ") + op + ": " + mdb_strerror(rc);
  if (rc == MDB_MAP_FULL) msg += " (the map is full: raise VMSTORE_LMDB_MAP_GIB)";
  throw std::runtime_error(msg);
}

inline void check(const char* op, int rc) {
  if (rc != MDB_SUCCESS) fail(op, rc);
}

inline MDB_val val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

inline std::string_view view(const MDB_val& v) {
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

// The process's I/O counters (see stats() above).
EngineStats processCounters() {
  EngineStats st;
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) == 0) st.pageMisses = static_cast<uint64_t>(ru.ru_majflt);
  std::ifstream io("/proc/self/io");
  std::string name;
  uint64_t value = 0;
  while (io >> name >> value) {
    if (name == "read_bytes:") st.bytesRead = value;
    if (name == "write_bytes:") st.bytesWritten = value;
  }
  return st;
}


class LmdbSession final : public Session {
 public:
  LmdbSession(MDB_env* env, const std::vector<MDB_dbi>* dbis, size_t maxKey)
      : env_(env), dbis_(dbis), maxKey_(maxKey) {}

  ~LmdbSession() override {
    if (wtxn_ != nullptr) mdb_txn_abort(wtxn_);
    if (rtxn_ != nullptr) mdb_txn_abort(rtxn_);
  }

  void begin() override {
    if (wtxn_ != nullptr) throw std::runtime_error("lmdb: begin: transaction already open");
    check("mdb_txn_begin", mdb_txn_begin(env_, nullptr, 0, &wtxn_));
  }

  void commit() override {
    if (wtxn_ == nullptr) return;
    MDB_txn* t = wtxn_;
    wtxn_ = nullptr;
    check("mdb_txn_commit", mdb_txn_commit(t));  // frees t even on failure
  }

  void abort() override {
    if (wtxn_ == nullptr) return;
    mdb_txn_abort(wtxn_);
    wtxn_ = nullptr;
  }

  void put(int table, std::string_view key, std::string_view value) override {
    MDB_val k = val(key), v = val(value);
    if (wtxn_ != nullptr) {
      check("mdb_put", mdb_put(wtxn_, dbi(table), &k, &v, 0));
      return;
    }
    MDB_txn* t = writeTxn();
    int rc = mdb_put(t, dbi(table), &k, &v, 0);
    if (rc != MDB_SUCCESS) {
      mdb_txn_abort(t);
      fail("mdb_put", rc);
    }
    check("mdb_txn_commit", mdb_txn_commit(t));
  }

  bool get(int table, std::string_view key, std::string* value) override {
    MDB_val k = val(key), v;
    MDB_txn* t = wtxn_ != nullptr ? wtxn_ : readTxn();
    int rc = mdb_get(t, dbi(table), &k, &v);
    if (rc == MDB_SUCCESS) value->assign(static_cast<const char*>(v.mv_data), v.mv_size);
    if (t != wtxn_) mdb_txn_reset(t);
    if (rc == MDB_NOTFOUND) return false;
    check("mdb_get", rc);
    return true;
  }

  bool del(int table, std::string_view key) override {
    MDB_val k = val(key);
    if (wtxn_ != nullptr) {
      int rc = mdb_del(wtxn_, dbi(table), &k, nullptr);
      if (rc == MDB_NOTFOUND) return false;
      check("mdb_del", rc);
      return true;
    }
    MDB_txn* t = writeTxn();
    int rc = mdb_del(t, dbi(table), &k, nullptr);
    if (rc != MDB_SUCCESS) {
      mdb_txn_abort(t);
      if (rc == MDB_NOTFOUND) return false;
      fail("mdb_del", rc);
    }
    check("mdb_txn_commit", mdb_txn_commit(t));
    return true;
  }

  void scan(int table, std::string_view start, const ScanFn& fn) override {
    withCursor(table, [&](MDB_cursor* c) {
      MDB_val k, v;
      int rc = seekGE(c, start, &k, &v);
      while (rc == MDB_SUCCESS) {
        if (!fn(view(k), view(v))) return;
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
      }
      if (rc != MDB_NOTFOUND) fail("scan: mdb_cursor_get", rc);
    });
  }

  void scanReverse(int table, std::string_view start, const ScanFn& fn) override {
    withCursor(table, [&](MDB_cursor* c) {
      MDB_val k, v;
      int rc = seekGE(c, start, &k, &v);
      if (rc == MDB_NOTFOUND) {
        rc = mdb_cursor_get(c, &k, &v, MDB_LAST);  // every key is < start
      } else if (rc == MDB_SUCCESS && view(k) != start) {
        rc = mdb_cursor_get(c, &k, &v, MDB_PREV);  // first key > start: step back
      }
      while (rc == MDB_SUCCESS) {
        if (!fn(view(k), view(v))) return;
        rc = mdb_cursor_get(c, &k, &v, MDB_PREV);
      }
      if (rc != MDB_NOTFOUND) fail("scanReverse: mdb_cursor_get", rc);
    });
  }

 private:
  MDB_dbi dbi(int table) const { return (*dbis_).at(static_cast<size_t>(table)); }

  MDB_txn* readTxn() {
    if (rtxn_ == nullptr) {
      check("mdb_txn_begin(read-only)", mdb_txn_begin(env_, nullptr, MDB_RDONLY, &rtxn_));
    } else {
      check("mdb_txn_renew", mdb_txn_renew(rtxn_));
    }
    return rtxn_;
  }

  MDB_txn* writeTxn() {
    MDB_txn* t = nullptr;
    check("mdb_txn_begin", mdb_txn_begin(env_, nullptr, 0, &t));
    return t;
  }

  // Positions c at the first key >= start. LMDB rejects empty keys and keys longer than
  // mdb_env_get_maxkeysize() in MDB_SET_RANGE, so those are handled here.
  int seekGE(MDB_cursor* c, std::string_view start, MDB_val* k, MDB_val* v) const {
    if (start.empty()) return mdb_cursor_get(c, k, v, MDB_FIRST);
    if (start.size() <= maxKey_) {
      *k = val(start);
      return mdb_cursor_get(c, k, v, MDB_SET_RANGE);
    }
    *k = val(start.substr(0, maxKey_));
    int rc = mdb_cursor_get(c, k, v, MDB_SET_RANGE);
    while (rc == MDB_SUCCESS && view(*k) < start) rc = mdb_cursor_get(c, k, v, MDB_NEXT);
    return rc;
  }

  template <class F>
  void withCursor(int table, F&& body) {
    MDB_txn* t = wtxn_ != nullptr ? wtxn_ : readTxn();
    MDB_cursor* c = nullptr;
    int rc = mdb_cursor_open(t, dbi(table), &c);
    if (rc != MDB_SUCCESS) {
      if (t != wtxn_) mdb_txn_reset(t);
      fail("mdb_cursor_open", rc);
    }
    struct Done {
      MDB_cursor* c;
      MDB_txn* t;
      bool reset;
      ~Done() {
        mdb_cursor_close(c);
        if (reset) mdb_txn_reset(t);
      }
    } done{c, t, t != wtxn_};
    body(c);
  }

  MDB_env* env_;
  const std::vector<MDB_dbi>* dbis_;
  size_t maxKey_;
  MDB_txn* rtxn_ = nullptr;  // read-only, reset between operations
  MDB_txn* wtxn_ = nullptr;  // the write transaction between begin() and commit()
};

class LmdbEngine final : public Engine {
 public:
  ~LmdbEngine() override { close(); }

  std::string name() const override { return "lmdb"; }

  void open(const EngineConfig& config, const std::vector<std::string>& tables) override {
    if (env_ != nullptr) throw std::runtime_error("lmdb: open: already open");
    std::error_code ec;
    std::filesystem::create_directories(config.dir, ec);
    if (ec) {
      throw std::runtime_error("lmdb: open: create " + config.dir + ": " + ec.message());
    }
    durability_ = config.durability;

    check("mdb_env_create", mdb_env_create(&env_));
    try {
      check("mdb_env_set_maxdbs",
            mdb_env_set_maxdbs(env_, static_cast<MDB_dbi>(tables.size() + 1)));
      check("mdb_env_set_mapsize",
            mdb_env_set_mapsize(env_, std::max<size_t>(mapSize(), 4 * config.maxValueBytes)));
      // One reader slot per session; sessions are per worker thread, plus a few for
      // loaders and checkers.
      unsigned readers = std::max(126u, 2 * config.threads + 16);
      check("mdb_env_set_maxreaders", mdb_env_set_maxreaders(env_, readers));
      unsigned flags = MDB_WRITEMAP | MDB_NOTLS;
      if (config.maxValueBytes < kReadaheadFromBytes) flags |= MDB_NORDAHEAD;
      if (config.durability == Durability::kNone) flags |= MDB_NOSYNC | MDB_NOMETASYNC;
      if (config.durability == Durability::kAsync) flags |= MDB_NOSYNC;
      check("mdb_env_open", mdb_env_open(env_, config.dir.c_str(), flags, 0644));
      maxKey_ = static_cast<size_t>(mdb_env_get_maxkeysize(env_));

      MDB_txn* t = nullptr;
      check("mdb_txn_begin", mdb_txn_begin(env_, nullptr, 0, &t));
      for (const auto& table : tables) {
        MDB_dbi d;
        int rc = mdb_dbi_open(t, table.c_str(), MDB_CREATE, &d);
        if (rc != MDB_SUCCESS) {
          mdb_txn_abort(t);
          fail(("mdb_dbi_open(" + table + ")").c_str(), rc);
        }
        dbis_.push_back(d);
      }
      check("mdb_txn_commit", mdb_txn_commit(t));
      base_ = processCounters();
    } catch (...) {
      mdb_env_close(env_);
      env_ = nullptr;
      dbis_.clear();
      throw;
    }
  }

  std::unique_ptr<Session> session() override {
    if (env_ == nullptr) throw std::runtime_error("lmdb: session: not open");
    return std::make_unique<LmdbSession>(env_, &dbis_, maxKey_);
  }

  EngineStats stats() override {
    EngineStats now = processCounters();
    auto since = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
    EngineStats st;
    st.pageMisses = since(now.pageMisses, base_.pageMisses);
    st.bytesRead = since(now.bytesRead, base_.bytesRead);
    st.bytesWritten = since(now.bytesWritten, base_.bytesWritten);
    return st;
  }

  void checkpoint() override {
    if (env_ != nullptr) check("mdb_env_sync", mdb_env_sync(env_, 1));
  }

  void close() override {
    if (env_ == nullptr) return;
    if (durability_ != Durability::kNone) mdb_env_sync(env_, 1);
    mdb_env_close(env_);
    env_ = nullptr;
    dbis_.clear();
  }

 private:
  MDB_env* env_ = nullptr;
  std::vector<MDB_dbi> dbis_;
  size_t maxKey_ = 511;
  Durability durability_ = Durability::kNone;
  EngineStats base_;  // processCounters() at open
};

Registrar<Engine> reg("lmdb", [] { return std::make_unique<LmdbEngine>(); });

}  // namespace
}  // namespace vmstore::bench
