// The `vmstore` engine of the benchmarks: the public C++ API (vmstore/vmstore.hpp), one
// Tree per table.
//
// Configuration: pool_size = the cache budget (at least 1 MiB, vmstore's minimum); the
// data file uses O_DIRECT where the filesystem allows it (vmstore always does).
// Durability: config.durability is Options::durability as it is (none: no log, as the
// vmcache paper measured; async: each write's log record is in the OS page cache when
// the call returns, the log synced every sync_interval, 100 ms; sync: each write returns
// once its log record is fdatasync'ed, concurrent writers sharing one flush). Every put
// and del is a committed write of its own, logged by the database itself; begin()/
// commit() are no-ops (each call is atomic on its own), so a transaction of several
// writes is several log records here, in sync mode several group-committed flushes,
// where the other engines sync once per commit (YCSB's writes are one put each).
// Statistics: Database::stats() (page misses and pages written, 4096 bytes each; the
// log's bytes since the last checkpoint and its flushes since open).
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine.hpp"
#include "vmstore/vmstore.hpp"
#include "workload.hpp"

namespace vmstore::bench {

namespace {

constexpr uint64_t kPageBytes = 4096;

[[noreturn]] void fail(const char* op, const Status& s) {
  throw std::runtime_error(std::string("vmstore: ") + op + ": " + s.toString());
}

class VmstoreEngine;

class VmstoreSession : public Session {
 public:
  explicit VmstoreSession(VmstoreEngine* engine) : engine_(engine) {}
  void put(int table, std::string_view key, std::string_view value) override;
  bool get(int table, std::string_view key, std::string* value) override;
  void getMany(int table, const std::vector<std::string_view>& keys, std::vector<std::string>* values,
               std::vector<bool>* found) override;
  bool del(int table, std::string_view key) override;
  void scan(int table, std::string_view start, const ScanFn& fn) override;
  void scanReverse(int table, std::string_view start, const ScanFn& fn) override;

 private:
  VmstoreEngine* engine_;
  std::vector<Status> statuses_;  // getMany's, reused
};

class VmstoreEngine : public Engine {
 public:
  std::string name() const override { return "vmstore"; }
  bool supportsTasks() const override { return true; }

  void open(const EngineConfig& config, const std::vector<std::string>& tables) override {
    Options options;
    options.pool_size = std::max<uint64_t>(config.poolBytes, 1ull << 20);
    options.create = true;
    options.durability = config.durability;
    options.io = config.syncIo ? IoMode::kSync : IoMode::kUring;
    Status parsed = Options::parse(config.vmstoreConfig, &options);
    if (!parsed.ok()) throw std::invalid_argument("--vmstore-config: " + parsed.toString());
    Status s = Database::open(config.dir, options, &db_);
    if (!s.ok()) fail("open", s);
    trees_.clear();
    for (const std::string& t : tables) {
      Tree* tree = nullptr;
      s = db_->openTree(t, /*create=*/true, &tree);
      if (!s.ok()) fail("open tree", s);
      trees_.push_back(tree);
    }
  }

  std::unique_ptr<Session> session() override {
    return std::make_unique<VmstoreSession>(this);
  }

  EngineStats stats() override {
    EngineStats out;
    if (!db_) return out;
    const Stats s = db_->stats();
    out.pageMisses = s.misses;
    out.evictions = s.evictions;
    out.bytesRead = s.misses * kPageBytes;
    out.bytesWritten = s.pages_written * kPageBytes;
    out.logBytes = s.log_bytes;
    out.logSyncs = s.log_flushes;
    return out;
  }

  void close() override {
    if (!db_) return;
    trees_.clear();
    Status s = db_->close();
    db_.reset();
    if (!s.ok()) fail("close", s);
  }

  Tree* tree(int table) const { return trees_[static_cast<size_t>(table)]; }

 private:
  std::unique_ptr<Database> db_;
  std::vector<Tree*> trees_;
};

void VmstoreSession::put(int table, std::string_view key, std::string_view value) {
  Status s = engine_->tree(table)->put(key, value);
  if (!s.ok()) fail("put", s);
}

bool VmstoreSession::get(int table, std::string_view key, std::string* value) {
  Status s = engine_->tree(table)->get(key, value);
  if (s.ok()) return true;
  if (s.isNotFound()) return false;
  fail("get", s);
}

void VmstoreSession::getMany(int table, const std::vector<std::string_view>& keys,
                             std::vector<std::string>* values, std::vector<bool>* found) {
  Status s = engine_->tree(table)->getMany(keys, values, &statuses_);
  if (!s.ok()) fail("getMany", s);
  found->resize(keys.size());
  for (size_t i = 0; i < keys.size(); i++) {
    if (!statuses_[i].ok() && !statuses_[i].isNotFound()) fail("getMany", statuses_[i]);
    (*found)[i] = statuses_[i].ok();
  }
}

bool VmstoreSession::del(int table, std::string_view key) {
  Status s = engine_->tree(table)->del(key);
  if (s.ok()) return true;
  if (s.isNotFound()) return false;
  fail("del", s);
}

void VmstoreSession::scan(int table, std::string_view start, const ScanFn& fn) {
  Iterator it = engine_->tree(table)->newIterator();
  for (it.seek(start); it.valid(); it.next()) {
    if (!fn(it.key(), it.value())) return;
  }
  if (!it.status().ok()) fail("scan", it.status());
}

void VmstoreSession::scanReverse(int table, std::string_view start, const ScanFn& fn) {
  Iterator it = engine_->tree(table)->newIterator();
  for (it.seekForPrev(start); it.valid(); it.prev()) {
    if (!fn(it.key(), it.value())) return;
  }
  if (!it.status().ok()) fail("scan", it.status());
}

const Registrar<Engine> kRegister("vmstore", [] { return std::make_unique<VmstoreEngine>(); });

}  // namespace

}  // namespace vmstore::bench
