// The `wiredtiger` bench engine: WiredTiger 3.2.1 (Debian libwiredtiger-dev, the version
// the vmcache paper measured) behind the Engine/Session interface of bench/engine.hpp.
// Configuration and why it is fair: docs/ENGINES.md.
//
// - One connection in config.dir, one table per table (key_format=u,value_format=u: raw
//   byte strings, compared with memcmp, i.e. unsigned byte order). Page sizes are the
//   defaults: 32 KiB leaf pages and 4 KiB internal pages on storage, as in the paper.
// - cache_size = config.poolBytes (at least 1 MiB, WiredTiger's minimum).
// - direct_io=[checkpoint,data]: table files bypass the OS page cache, so the WiredTiger
//   cache is the only cache. If the file system refuses O_DIRECT (EINVAL, e.g. an old
//   tmpfs), the database is re-created without it and a note goes to stderr.
// - Durability (config.durability), in the wiredtiger_open configuration; no
//   checkpoints until close in every mode:
//     none   log=(enabled=false), checkpoint_sync=false: as the paper ran it
//     async  log=(enabled=true), transaction_sync=(enabled=true,method=none): each commit
//            writes its log record to the log file (the OS page cache) before it returns,
//            without a sync: it survives a crash of the process. (transaction_sync=
//            (enabled=false) would not: its records "may be buffered in memory" until a
//            checkpoint, a log file switch or a synced commit; WiredTiger's
//            tune_durability page.) No periodic sync is added.
//     sync   log=(enabled=true), transaction_sync=(enabled=true,method=fsync): each commit
//            is logged and fsynced before it returns; WiredTiger groups the flushes of
//            concurrent commits (its group commit)
//   An auto-committed operation (outside begin()/commit()) takes the same commit path, so
//   in sync mode each is synced. stats(): logBytes = "log: log bytes written", logSyncs =
//   "log: log sync operations".
// - statistics=(fast): the connection counters stats() reads.
// - Each Session is one WT_SESSION (isolation=read-uncommitted, the lowest level, as the
//   paper ran it) with one cursor per table for reads/puts/scans and one overwrite=false
//   cursor per table for del() (it reports WT_NOTFOUND for an absent key), opened on
//   first use. Cursors are reset after each read so they do not pin pages.
// - begin()/commit()/abort(): begin_transaction / commit_transaction /
//   rollback_transaction. Read-uncommitted transactions see every write, committed or
//   not, and WiredTiger does no write-conflict detection below snapshot isolation, so
//   there are no WT_ROLLBACK conflicts; abort() undoes the transaction's writes.
//   Operations outside begin()/commit() are auto-committed one by one.
// - Large values (config.maxValueBytes > 0, the values benchmark), as WiredTiger's
//   page-size tuning guide advises ("avoid creating large numbers of overflow items that
//   are repeatedly referenced"): values up to the largest stay on their leaf page
//   (leaf_value_max = that size, once it is over the default of about 14 KiB; an
//   overflow item is read from the file on every get, with direct I/O from storage) and
//   a page may grow to 4 such values in memory before it is forced out (memory_page_max,
//   default 5 MB).
// - Everything else is WiredTiger's default (eviction threads and dirty targets
//   included). VMSTORE_WT_CONFIG, when set, is appended to the wiredtiger_open
//   configuration for tuning experiments (not used by the benchmarks).
// - checkpoint(): WT_SESSION::checkpoint (blocks that only older checkpoints use become
//   free for reuse); compact(): WT_SESSION::compact of every table (gives the file's
//   free space at its end back to the file system).
// - Session objects must be destroyed before Engine::close().
#include <wiredtiger.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../engine.hpp"
#include "../workload.hpp"

namespace vmstore::bench {
namespace {

constexpr uint64_t kMinCache = uint64_t{1} << 20;        // WiredTiger's minimum
constexpr uint64_t kDefaultCache = uint64_t{64} << 20;   // when config.poolBytes == 0
// Large values: WiredTiger stores a value over leaf_value_max (by default half a split
// 32 KiB leaf, about 14 KiB) as an overflow item, which every read fetches from the file.
constexpr uint64_t kOnPageFromBytes = uint64_t{14} << 10;
constexpr uint64_t kDefaultMemoryPageMax = uint64_t{5} << 20;

[[noreturn]] void fail(const std::string& op, int ret) {
  throw std::runtime_error("wiredtiger: " + op + ": " + wiredtiger_strerror(ret));
}

inline void check(const char* op, int ret) {
  if (ret != 0) fail(op, ret);
}

inline WT_ITEM item(std::string_view s) {
  WT_ITEM it{};
  it.data = s.data();
  it.size = s.size();
  return it;
}

inline std::string_view view(const WT_ITEM& it) {
  return {static_cast<const char*>(it.data), it.size};
}

class WtSession final : public Session {
 public:
  WtSession(WT_CONNECTION* conn, const std::vector<std::string>* uris) : uris_(uris) {
    check("open_session", conn->open_session(conn, nullptr, "isolation=read-uncommitted",
                                             &session_));
    cursors_.assign(uris->size(), nullptr);
    removers_.assign(uris->size(), nullptr);
  }

  ~WtSession() override {
    if (session_ != nullptr) session_->close(session_, nullptr);  // closes its cursors
  }

  void begin() override {
    if (inTxn_) throw std::runtime_error("wiredtiger: begin: transaction already open");
    check("begin_transaction", session_->begin_transaction(session_, nullptr));
    inTxn_ = true;
  }

  void commit() override {
    if (!inTxn_) return;
    inTxn_ = false;
    check("commit_transaction", session_->commit_transaction(session_, nullptr));
  }

  void abort() override {
    if (!inTxn_) return;
    inTxn_ = false;
    check("rollback_transaction", session_->rollback_transaction(session_, nullptr));
  }

  void put(int table, std::string_view key, std::string_view value) override {
    WT_CURSOR* c = cursor(table);
    WT_ITEM k = item(key), v = item(value);
    c->set_key(c, &k);
    c->set_value(c, &v);
    check("put: insert", c->insert(c));
  }

  bool get(int table, std::string_view key, std::string* value) override {
    WT_CURSOR* c = cursor(table);
    WT_ITEM k = item(key);
    c->set_key(c, &k);
    int ret = c->search(c);
    if (ret == 0) {
      WT_ITEM v{};
      ret = c->get_value(c, &v);
      if (ret == 0) value->assign(static_cast<const char*>(v.data), v.size);
    }
    c->reset(c);
    if (ret == WT_NOTFOUND) return false;
    check("get: search", ret);
    return true;
  }

  bool del(int table, std::string_view key) override {
    WT_CURSOR* c = remover(table);
    WT_ITEM k = item(key);
    c->set_key(c, &k);
    int ret = c->remove(c);
    c->reset(c);
    if (ret == WT_NOTFOUND) return false;
    check("del: remove", ret);
    return true;
  }

  void scan(int table, std::string_view start, const ScanFn& fn) override {
    WT_CURSOR* c = cursor(table);
    Reset r{c};
    int ret;
    if (start.empty()) {
      ret = c->next(c);  // an unpositioned cursor moves to the first record
    } else {
      WT_ITEM k = item(start);
      c->set_key(c, &k);
      int exact = 0;
      ret = c->search_near(c, &exact);
      if (ret == 0 && exact < 0) ret = c->next(c);
    }
    while (ret == 0) {
      WT_ITEM k{}, v{};
      check("scan: get_key", c->get_key(c, &k));
      check("scan: get_value", c->get_value(c, &v));
      if (!fn(view(k), view(v))) return;
      ret = c->next(c);
    }
    if (ret != WT_NOTFOUND) fail("scan", ret);
  }

  void scanReverse(int table, std::string_view start, const ScanFn& fn) override {
    if (start.empty()) return;  // nothing sorts before the empty key
    WT_CURSOR* c = cursor(table);
    Reset r{c};
    WT_ITEM k = item(start);
    c->set_key(c, &k);
    int exact = 0;
    int ret = c->search_near(c, &exact);
    if (ret == 0 && exact > 0) ret = c->prev(c);
    while (ret == 0) {
      WT_ITEM key{}, v{};
      check("scanReverse: get_key", c->get_key(c, &key));
      check("scanReverse: get_value", c->get_value(c, &v));
      if (!fn(view(key), view(v))) return;
      ret = c->prev(c);
    }
    if (ret != WT_NOTFOUND) fail("scanReverse", ret);
  }

 private:
  struct Reset {
    WT_CURSOR* c;
    ~Reset() { c->reset(c); }
  };

  WT_CURSOR* open(int table, const char* config) {
    const std::string& uri = uris_->at(static_cast<size_t>(table));
    WT_CURSOR* c = nullptr;
    int ret = session_->open_cursor(session_, uri.c_str(), nullptr, config, &c);
    if (ret != 0) fail("open_cursor(" + uri + ")", ret);
    return c;
  }

  WT_CURSOR* cursor(int table) {
    WT_CURSOR*& c = cursors_.at(static_cast<size_t>(table));
    if (c == nullptr) c = open(table, nullptr);
    return c;
  }

  WT_CURSOR* remover(int table) {
    WT_CURSOR*& c = removers_.at(static_cast<size_t>(table));
    if (c == nullptr) c = open(table, "overwrite=false");
    return c;
  }

  const std::vector<std::string>* uris_;
  WT_SESSION* session_ = nullptr;
  std::vector<WT_CURSOR*> cursors_;
  std::vector<WT_CURSOR*> removers_;
  bool inTxn_ = false;
};

class WtEngine final : public Engine {
 public:
  ~WtEngine() override {
    try {
      close();
    } catch (...) {
    }
  }

  std::string name() const override { return "wiredtiger"; }

  void open(const EngineConfig& config, const std::vector<std::string>& tables) override {
    if (conn_ != nullptr) throw std::runtime_error("wiredtiger: open: already open");
    uris_.clear();
    for (size_t i = 0; i < tables.size(); ++i) {
      bool plain = !tables[i].empty() &&
                   std::all_of(tables[i].begin(), tables[i].end(), [](char ch) {
                     return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                            (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
                   });
      uris_.push_back("table:" + (plain ? tables[i] : "t" + std::to_string(i)));
    }
    std::string op;
    int ret = tryOpen(config, true, &op);
    if (ret == EINVAL) {
      // O_DIRECT refused by this file system: run through the page cache instead.
      std::fprintf(stderr,
                   "wiredtiger: direct I/O not available in %s (%s: %s); running without "
                   "it\n",
                   config.dir.c_str(), op.c_str(), wiredtiger_strerror(ret));
      directIo_ = false;
      ret = tryOpen(config, false, &op);
    }
    if (ret != 0) fail(op, ret);
  }

  std::unique_ptr<Session> session() override {
    if (conn_ == nullptr) throw std::runtime_error("wiredtiger: session: not open");
    return std::make_unique<WtSession>(conn_, &uris_);
  }

  EngineStats stats() override {
    EngineStats st;
    std::lock_guard<std::mutex> lock(statsMutex_);
    if (statsSession_ == nullptr) return st;
    WT_CURSOR* c = nullptr;
    if (statsSession_->open_cursor(statsSession_, "statistics:", nullptr, nullptr, &c) != 0) {
      return st;
    }
    auto read = [&](int key) -> uint64_t {
      c->set_key(c, key);
      if (c->search(c) != 0) return 0;
      const char* desc = nullptr;
      const char* printable = nullptr;
      int64_t value = 0;
      if (c->get_value(c, &desc, &printable, &value) != 0 || value < 0) return 0;
      return static_cast<uint64_t>(value);
    };
    st.pageMisses = read(WT_STAT_CONN_CACHE_READ);  // cache: pages read into cache
    st.evictions = read(WT_STAT_CONN_CACHE_EVICTION_CLEAN) +  // unmodified pages evicted
                   read(WT_STAT_CONN_CACHE_EVICTION_DIRTY);   // modified pages evicted
    st.bytesRead = read(WT_STAT_CONN_BLOCK_BYTE_READ);      // block-manager: bytes read
    st.bytesWritten = read(WT_STAT_CONN_BLOCK_BYTE_WRITE);  // block-manager: bytes written
    st.logBytes = read(WT_STAT_CONN_LOG_BYTES_WRITTEN);     // log: log bytes written
    st.logSyncs = read(WT_STAT_CONN_LOG_SYNC);              // log: log sync operations
    c->close(c);
    return st;
  }

  void checkpoint() override {
    withSession("checkpoint", [](WT_SESSION* s) { return s->checkpoint(s, nullptr); });
  }

  void compact() override {
    for (const std::string& uri : uris_) {
      withSession("compact(" + uri + ")", [&](WT_SESSION* s) { return s->compact(s, uri.c_str(), nullptr); });
    }
  }

  void close() override {
    if (conn_ == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(statsMutex_);
      statsSession_ = nullptr;  // closed with the connection
    }
    WT_CONNECTION* conn = conn_;
    conn_ = nullptr;
    check("close", conn->close(conn, nullptr));
  }

  bool directIo() const { return directIo_; }

 private:
  // Opens the connection and creates the tables; on failure closes what it opened and
  // returns the error (the failing call in *op).
  int tryOpen(const EngineConfig& config, bool directIo, std::string* op) {
    std::error_code ec;
    std::filesystem::create_directories(config.dir, ec);
    if (ec) {
      throw std::runtime_error("wiredtiger: open: create " + config.dir + ": " +
                               ec.message());
    }
    if (!directIo) removeNewEntries(config.dir);  // what the failed attempt left behind
    before_ = entries(config.dir);
    uint64_t cache = config.poolBytes != 0 ? config.poolBytes : kDefaultCache;
    cache = std::max(cache, kMinCache);
    unsigned sessions = std::max(100u, 2 * config.threads + 32);
    std::string cfg = "create,cache_size=" + std::to_string(cache) +
                      ",session_max=" + std::to_string(sessions) + ",statistics=(fast)";
    switch (config.durability) {
      case Durability::kSync:
        cfg += ",log=(enabled=true),transaction_sync=(enabled=true,method=fsync)";
        break;
      case Durability::kAsync:
        cfg += ",log=(enabled=true),transaction_sync=(enabled=true,method=none)";
        break;
      case Durability::kNone:
        cfg += ",log=(enabled=false),checkpoint_sync=false";
        break;
    }
    if (directIo) cfg += ",direct_io=[checkpoint,data]";
    // For experiments only: appended last, so it overrides the settings above.
    if (const char* extra = std::getenv("VMSTORE_WT_CONFIG"); extra != nullptr && *extra) {
      cfg += std::string(",") + extra;
    }

    WT_CONNECTION* conn = nullptr;
    int ret = wiredtiger_open(config.dir.c_str(), nullptr, cfg.c_str(), &conn);
    if (ret != 0) {
      *op = "wiredtiger_open(" + cfg + ")";
      return ret;
    }
    WT_SESSION* s = nullptr;
    ret = conn->open_session(conn, nullptr, nullptr, &s);
    if (ret != 0) *op = "open_session";
    std::string tableCfg = tableConfig(config.maxValueBytes);
    for (size_t i = 0; ret == 0 && i < uris_.size(); ++i) {
      ret = s->create(s, uris_[i].c_str(), tableCfg.c_str());
      if (ret != 0) *op = "create(" + uris_[i] + ")";
    }
    if (ret != 0) {
      conn->close(conn, nullptr);
      return ret;
    }
    conn_ = conn;
    std::lock_guard<std::mutex> lock(statsMutex_);
    statsSession_ = s;  // kept open for stats()
    return 0;
  }

  // Runs op on a session of its own (WiredTiger sessions are single-threaded).
  template <class Op>
  void withSession(const std::string& what, Op&& op) {
    if (conn_ == nullptr) throw std::runtime_error("wiredtiger: " + what + ": not open");
    WT_SESSION* s = nullptr;
    check("open_session", conn_->open_session(conn_, nullptr, nullptr, &s));
    int ret = op(s);
    s->close(s, nullptr);
    if (ret != 0) fail(what, ret);
  }

  // The table configuration: raw byte strings; with large values (maxValueBytes) see
  // the header comment. VMSTORE_WT_TABLE_CONFIG, when set, is appended (experiments).
  static std::string tableConfig(uint64_t maxValueBytes) {
    std::string cfg = "key_format=u,value_format=u";
    if (maxValueBytes >= kOnPageFromBytes) {
      cfg += ",leaf_value_max=" + std::to_string(maxValueBytes) +
             ",memory_page_max=" + std::to_string(std::max<uint64_t>(kDefaultMemoryPageMax, 4 * maxValueBytes));
    }
    if (const char* extra = std::getenv("VMSTORE_WT_TABLE_CONFIG"); extra != nullptr && *extra) {
      cfg += std::string(",") + extra;
    }
    return cfg;
  }

  static std::set<std::string> entries(const std::string& dir) {
    std::set<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      out.insert(e.path().filename().string());
    }
    return out;
  }

  // Removes what appeared in dir since before_ was taken (only our own files).
  void removeNewEntries(const std::string& dir) {
    std::error_code ec;
    for (const auto& name : entries(dir)) {
      if (before_.count(name) == 0) std::filesystem::remove_all(dir + "/" + name, ec);
    }
  }

  WT_CONNECTION* conn_ = nullptr;
  std::set<std::string> before_;
  std::vector<std::string> uris_;
  std::mutex statsMutex_;
  WT_SESSION* statsSession_ = nullptr;
  bool directIo_ = true;
};

Registrar<Engine> reg("wiredtiger", [] { return std::make_unique<WtEngine>(); });

}  // namespace
}  // namespace vmstore::bench
