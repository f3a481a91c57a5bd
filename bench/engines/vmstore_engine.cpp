// The `vmstore` engine of the benchmarks: the public C++ API (vmstore/vmstore.hpp), one
// Tree per table.
//
// Configuration: pool_size = the cache budget (at least 1 MiB, vmstore's minimum); the
// data file uses O_DIRECT where the filesystem allows it (vmstore always does).
// Durability: config.durability is Options::durability as it is (none: no log, as the
// vmcache paper measured; async: each write's log record is in the OS page cache when
// the call returns, the log synced every sync_interval, 100 ms; sync: each write returns
// once its log record is fdatasync'ed, concurrent writers sharing one flush).
// Transactions: with durability sync and async (or with --transactions=on, whatever the
// durability; --transactions=off: never), the writes between begin() and commit()
// go through a vmstore::Transaction (vmstore/transaction.hpp): each is applied in place
// at once (reads and scans, plain Tree calls, see it) and holds its key's lock; commit()
// writes one log record for all of them, so a transaction costs one record and (sync)
// one group-committed flush, as the other engines sync once per commit; abort() puts
// the values back. A transaction's first write, if a put, waits in the session until
// its next call (which then writes it through the transaction first): a transaction of
// that one put (YCSB's updates and inserts) is written at commit as a plain Tree::put,
// without a transaction's locks, undo image and buffers. A write the transaction gives up (Busy: a wait for a key's lock that
// could be a cycle) aborts it and throws TransactionConflict. commitNoWait() is
// Transaction::commitNoWait and waitDurable() waits for its log flush (early lock
// release: the workload lets go of its locks in between). Without transactions (none, by
// default), begin()/commit() are no-ops and every put and del is a write of its own, as
// the vmcache paper measured.
// A load's groups (beginLoad) are batches under sync: the writes are kept in the session
// (PendingWrites: its reads, scans included, see them) and written at commit() as one
// atomic batch (Database::write); a group of one write is written as that one put or
// del. Under async and none a load's writes are writes of their own.
// scan() is Tree::scan (in place, nothing copied; reverse scans and scans of a table the
// open transaction wrote to use an Iterator).
// update() is Tree::update (one atomic read-modify-write, in place when the size does not
// change), or Transaction::update inside a transaction.
// Large values (config.maxValueBytes): nothing to configure; a value over one page is
// one variable-size page, and one value may take at most half of pool_size, which the
// benchmark that writes it checks. checkpoint(): Database::sync(); no compaction.
// Statistics: Database::stats() (page misses and pages written, 4096 bytes each; the
// log's bytes and its flushes since open).
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine.hpp"
#include "vmstore/transaction.hpp"
#include "vmstore/vmstore.hpp"
#include "workload.hpp"

namespace vmstore::bench {

namespace {

constexpr uint64_t kPageBytes = 4096;

[[noreturn]] void fail(const char* op, const Status& s) {
  throw std::runtime_error(std::string("vmstore: ") + op + ": " + s.toString());
}

class VmstoreEngine;

// The writes of one table in an open transaction: key -> new value (absent: deleted),
// walked in key order. Entries stay where they were added (an index keeps the order), and
// those past size() keep their strings' memory, so that a transaction allocates nothing
// once the session has seen one as large.
class TableWrites {
 public:
  struct Entry {
    std::string key;
    std::string value;
    bool present = false;  // false: deleted
  };
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The entry at position i of the key order (i < size()).
  const Entry& at(size_t i) const { return entries_[order_[i]]; }
  // The position of the first entry with a key not less (upper: greater) than key.
  size_t lowerBound(std::string_view key) const {
    return static_cast<size_t>(std::lower_bound(order_.begin(), order_.end(), key,
                                                [&](uint32_t e, std::string_view k) { return entries_[e].key < k; }) -
                               order_.begin());
  }
  size_t upperBound(std::string_view key) const {
    return static_cast<size_t>(std::upper_bound(order_.begin(), order_.end(), key,
                                                [&](std::string_view k, uint32_t e) { return k < entries_[e].key; }) -
                               order_.begin());
  }
  const Entry* find(std::string_view key) const {
    size_t i = lowerBound(key);
    return i < size_ && at(i).key == key ? &at(i) : nullptr;
  }
  // Sets key's entry (value null: deleted); true if the key was not written before.
  bool set(std::string_view key, const std::string_view* value) {
    size_t i = lowerBound(key);
    bool added = i == size_ || at(i).key != key;
    if (added) {
      if (size_ == entries_.size()) entries_.emplace_back();
      entries_[size_].key.assign(key);
      order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(i), static_cast<uint32_t>(size_));
      size_++;
    }
    Entry& e = entries_[order_[i]];
    e.present = value != nullptr;
    if (value != nullptr) e.value.assign(*value);
    return added;
  }
  void clear() {
    size_ = 0;
    order_.clear();
  }

 private:
  std::vector<Entry> entries_;  // [0, size_) written, in the order added
  std::vector<uint32_t> order_;  // the written entries in key order
  size_t size_ = 0;
};

// The writes of an open transaction, per table.
struct PendingWrites {
  using Table = TableWrites;
  std::vector<Table> tables;
  bool open = false;
  size_t count = 0;
  Table* of(int table) {
    if (!open) return nullptr;
    if (tables.size() <= static_cast<size_t>(table)) tables.resize(static_cast<size_t>(table) + 1);
    return &tables[static_cast<size_t>(table)];
  }
  void clear() {
    for (Table& t : tables) t.clear();
    open = false;
    count = 0;
  }
};

class VmstoreSession : public Session {
 public:
  explicit VmstoreSession(VmstoreEngine* engine) : engine_(engine) {}
  void begin() override;
  void beginLoad() override;
  void commit() override;
  void commitNoWait() override;
  void waitDurable() override;
  bool sharesDurableWait() const override { return true; }  // the log is written in order
  void abort() override;
  void put(int table, std::string_view key, std::string_view value) override;
  bool get(int table, std::string_view key, std::string* value) override;
  void getMany(int table, const std::vector<std::string_view>& keys, std::vector<std::string>* values,
               std::vector<bool>* found) override;
  bool del(int table, std::string_view key) override;
  bool update(int table, std::string_view key, const UpdateFn& fn) override;
  // Tree::update or Transaction::update: atomic either way.
  bool atomicUpdate() const override { return true; }
  void scan(int table, std::string_view start, const ScanFn& fn) override;
  void scanReverse(int table, std::string_view start, const ScanFn& fn) override;

 private:
  // The tree's entries from start on (reverse: at or below it), merged with the
  // transaction's writes to that table.
  void mergedScan(int table, const PendingWrites::Table& writes, std::string_view start, bool reverse,
                  const ScanFn& fn);

  // A write of the open transaction failed: Busy aborts it and throws
  // TransactionConflict; any other error fails the run.
  [[noreturn]] void txnFailed(const char* op, const Status& s);

  // The iterator of scans of a table, kept from one scan to the next (its entry buffers
  // are reused, so a scan allocates nothing once they are large enough).
  Iterator& iteratorOf(int table);

  VmstoreEngine* engine_;
  std::vector<std::optional<Iterator>> iterators_;  // by table
  std::vector<Status> statuses_;  // getMany's, reused
  std::vector<std::span<std::byte>> bufs_;
  std::vector<size_t> vlens_;
  PendingWrites pending_;
  std::optional<Transaction> txn_;  // made by the first begin() of a transactional engine
  bool inTxn_ = false;              // between begin() and its commit or abort
  // The transaction's first put, not yet written (see above); deferred_ says whether
  // it holds one, txnUsed_ whether anything went through txn_ since begin().
  bool deferred_ = false;
  bool txnUsed_ = false;
  int deferredTable_ = 0;
  std::string deferredKey_, deferredValue_;
  // Before any other call of an open transaction: writes the deferred put through it.
  void useTxn();
  // Ends the open transaction's session state (not txn_ itself).
  void endTxn() {
    inTxn_ = false;
    deferred_ = false;
    txnUsed_ = false;
  }
  WriteBatch batch_;          // commitNoWait's, reused
  uint64_t commitPoint_ = 0;  // of the last commitNoWait, until waitDurable
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
    durability_ = options.durability;
    transactional_ = config.transactions.value_or(durability_ != Durability::kNone);
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
    out.pageHits = s.hits;
    out.pageMisses = s.misses;
    out.victimNanos = s.victim_ns;
    out.dataBytes = s.page_count * kPageBytes;
    out.policyBytes = s.policy_bytes;
    out.residentSetBytes = s.resident_set_bytes;
    out.migrateNanos = s.migrate_ns;
    out.migratedPages = s.demoted_pages + s.promoted_pages;
    out.evictions = s.evictions;
    out.bytesRead = s.misses * kPageBytes;
    out.bytesWritten = s.pages_written * kPageBytes;
    out.logBytes = s.log_appended_bytes;
    out.logSyncs = s.log_flushes;
    out.checkpoints = s.checkpoints;
    out.logFullWaits = s.log_full_waits;
    return out;
  }

  void checkpoint() override {
    Status s = db_->sync();
    if (!s.ok()) fail("sync", s);
  }

  void close() override {
    if (!db_) return;
    trees_.clear();
    Status s = db_->close();
    db_.reset();
    if (!s.ok()) fail("close", s);
  }

  Tree* tree(int table) const { return trees_[static_cast<size_t>(table)]; }
  Database* db() const { return db_.get(); }
  // A load's groups (beginLoad) are batches.
  bool buffersTransactions() const { return durability_ == Durability::kSync; }
  // begin() opens a Transaction (EngineConfig::transactions).
  bool transactional() const { return transactional_; }

 private:
  std::unique_ptr<Database> db_;
  std::vector<Tree*> trees_;
  Durability durability_ = Durability::kSync;
  bool transactional_ = true;
};

void VmstoreSession::begin() {
  if (!engine_->transactional()) return;
  if (!txn_) txn_.emplace(engine_->db());
  endTxn();
  inTxn_ = true;
}

void VmstoreSession::useTxn() {
  txnUsed_ = true;
  if (!deferred_) return;
  deferred_ = false;
  Status s = txn_->put(engine_->tree(deferredTable_), deferredKey_, deferredValue_);
  if (!s.ok()) txnFailed("put", s);
}

void VmstoreSession::beginLoad() {
  pending_.clear();
  pending_.open = engine_->buffersTransactions();
}

void VmstoreSession::txnFailed(const char* op, const Status& s) {
  if (s.code() == Status::Code::kBusy) {
    endTxn();
    Status undone = txn_->abort();
    if (!undone.ok()) fail("abort", undone);
    throw TransactionConflict(std::string("vmstore: ") + op + ": " + s.toString());
  }
  fail(op, s);
}

void VmstoreSession::abort() {
  pending_.clear();
  if (!inTxn_) return;
  endTxn();
  Status s = txn_->abort();
  if (!s.ok()) fail("abort", s);
}

void VmstoreSession::commit() {
  if (inTxn_ && deferred_ && !txnUsed_) {  // one put: that call alone
    endTxn();
    Status s = engine_->tree(deferredTable_)->put(deferredKey_, deferredValue_);
    if (!s.ok()) fail("commit", s);
    return;
  }
  if (inTxn_) {
    useTxn();
    endTxn();
    Status s = txn_->commit();
    if (!s.ok()) fail("commit", s);
    return;
  }
  if (!pending_.open) return;
  Status s;
  if (pending_.count == 1) {  // one write: that call alone is atomic
    for (size_t t = 0; t < pending_.tables.size(); t++) {
      const TableWrites& writes = pending_.tables[t];
      for (size_t i = 0; i < writes.size(); i++) {
        const TableWrites::Entry& w = writes.at(i);
        Tree* tree = engine_->tree(static_cast<int>(t));
        s = w.present ? tree->put(w.key, w.value) : tree->del(w.key);
        if (s.isNotFound()) s = Status::OK();
      }
    }
    pending_.clear();
    if (!s.ok()) fail("commit", s);
    return;
  }
  commitNoWait();
  waitDurable();
}

void VmstoreSession::commitNoWait() {
  if (inTxn_) {
    useTxn();
    endTxn();
    Status s = txn_->commitNoWait(&commitPoint_);
    if (!s.ok()) fail("commit", s);
    return;
  }
  if (!pending_.open) return;
  Status s;
  if (pending_.count > 0) {
    batch_.clear();  // keeps its capacity: no regrowth per transaction
    for (size_t t = 0; t < pending_.tables.size() && s.ok(); t++) {
      Tree* tree = engine_->tree(static_cast<int>(t));
      const TableWrites& writes = pending_.tables[t];
      for (size_t i = 0; i < writes.size(); i++) {
        const TableWrites::Entry& w = writes.at(i);
        s = w.present ? batch_.put(tree, w.key, w.value) : batch_.del(tree, w.key);
        if (!s.ok()) break;
      }
    }
    if (s.ok()) s = engine_->db()->writeNoWait(batch_, &commitPoint_);
  }
  pending_.clear();
  if (!s.ok()) fail("commit", s);
}

void VmstoreSession::waitDurable() {
  if (commitPoint_ == 0) return;
  Status s = engine_->db()->waitDurable(commitPoint_);
  commitPoint_ = 0;
  if (!s.ok()) fail("commit (waiting for the log flush)", s);
}

void VmstoreSession::put(int table, std::string_view key, std::string_view value) {
  if (PendingWrites::Table* w = pending_.of(table)) {
    if (w->set(key, &value)) pending_.count++;
    return;
  }
  if (inTxn_ && !txnUsed_ && !deferred_) {
    deferred_ = true;
    deferredTable_ = table;
    deferredKey_.assign(key);
    deferredValue_.assign(value);
    return;
  }
  if (inTxn_) {
    useTxn();
    Status s = txn_->put(engine_->tree(table), key, value);
    if (!s.ok()) txnFailed("put", s);
    return;
  }
  Status s = engine_->tree(table)->put(key, value);
  if (!s.ok()) fail("put", s);
}

bool VmstoreSession::get(int table, std::string_view key, std::string* value) {
  if (inTxn_) useTxn();
  if (PendingWrites::Table* w = pending_.of(table)) {
    if (const TableWrites::Entry* e = w->find(key)) {
      if (!e->present) return false;
      *value = e->value;
      return true;
    }
  }
  Status s = engine_->tree(table)->get(key, value);
  if (s.ok()) return true;
  if (s.isNotFound()) return false;
  fail("get", s);
}

void VmstoreSession::getMany(int table, const std::vector<std::string_view>& keys,
                             std::vector<std::string>* values, std::vector<bool>* found) {
  if (inTxn_) useTxn();
  if (PendingWrites::Table* w = pending_.of(table); w != nullptr && !w->empty()) {
    Session::getMany(table, keys, values, found);  // get() per key sees the transaction's writes
    return;
  }
  // Into the strings' own memory (Tree::getMany's buffer form), so that a string keeps
  // its memory from call to call; a value larger than its string is read again by get().
  const size_t n = keys.size();
  growTo(n, values, found);
  bufs_.resize(n);
  vlens_.resize(n);
  statuses_.resize(n);
  for (size_t i = 0; i < n; i++) {
    std::string& v = (*values)[i];
    v.resize(v.capacity());
    bufs_[i] = std::as_writable_bytes(std::span<char>(v.data(), v.size()));
  }
  Status s = engine_->tree(table)->getMany(keys, bufs_, vlens_, statuses_);
  if (!s.ok()) fail("getMany", s);
  for (size_t i = 0; i < n; i++) {
    if (!statuses_[i].ok() && !statuses_[i].isNotFound()) fail("getMany", statuses_[i]);
    std::string& v = (*values)[i];
    bool present = statuses_[i].ok();
    if (!present) {
      v.clear();
    } else if (vlens_[i] <= v.size()) {
      v.resize(vlens_[i]);
    } else {
      present = get(table, keys[i], &v);
    }
    (*found)[i] = present;
  }
}

bool VmstoreSession::del(int table, std::string_view key) {
  if (PendingWrites::Table* w = pending_.of(table)) {
    std::string ignored;
    bool existed = get(table, key, &ignored);
    if (w->set(key, nullptr)) pending_.count++;
    return existed;
  }
  if (inTxn_) {
    useTxn();
    Status s = txn_->del(engine_->tree(table), key);
    if (s.isNotFound()) return false;
    if (!s.ok()) txnFailed("del", s);
    return true;
  }
  Status s = engine_->tree(table)->del(key);
  if (s.ok()) return true;
  if (s.isNotFound()) return false;
  fail("del", s);
}

bool VmstoreSession::update(int table, std::string_view key, const UpdateFn& fn) {
  if (pending_.of(table) != nullptr) return Session::update(table, key, fn);  // reads its writes
  bool found = false;
  auto change = [&](std::optional<std::string_view> current) {
    found = current.has_value();
    if (!found) return Change::keep();
    updateBuffer_.assign(*current);
    return fn(updateBuffer_) ? Change::put(std::string_view(updateBuffer_)) : Change::keep();
  };
  if (inTxn_) useTxn();
  Status s = inTxn_ ? txn_->update(engine_->tree(table), key, change) : engine_->tree(table)->update(key, change);
  if (!s.ok()) inTxn_ ? txnFailed("update", s) : fail("update", s);
  return found;
}

Iterator& VmstoreSession::iteratorOf(int table) {
  auto t = static_cast<size_t>(table);
  if (iterators_.size() <= t) iterators_.resize(t + 1);
  if (!iterators_[t]) iterators_[t].emplace(engine_->tree(table)->newIterator());
  return *iterators_[t];
}

void VmstoreSession::mergedScan(int table, const PendingWrites::Table& writes, std::string_view start, bool reverse,
                                const ScanFn& fn) {
  Iterator& it = iteratorOf(table);
  reverse ? it.seekForPrev(start) : it.seek(start);
  // Forward: the writes from start up; reverse: those at or below start, walked down.
  size_t up = writes.lowerBound(start);    // the next write up
  size_t down = writes.upperBound(start);  // one past the next write down
  for (;;) {
    const bool haveWrite = reverse ? down > 0 : up < writes.size();
    if (!it.valid() && !haveWrite) break;
    const TableWrites::Entry* w = haveWrite ? &writes.at(reverse ? down - 1 : up) : nullptr;
    // < 0: the tree's entry comes first in the scan's direction.
    int order;
    if (w == nullptr) {
      order = -1;
    } else if (!it.valid()) {
      order = 1;
    } else {
      order = it.key().compare(w->key);
      if (reverse) order = -order;
    }
    if (order < 0) {
      if (!fn(it.key(), it.value())) return;
      reverse ? it.prev() : it.next();
      continue;
    }
    if (order == 0) reverse ? it.prev() : it.next();  // the transaction's write replaces it
    if (w->present && !fn(w->key, w->value)) return;
    reverse ? --down : ++up;
  }
  if (!it.status().ok()) fail("scan", it.status());
}

void VmstoreSession::scan(int table, std::string_view start, const ScanFn& fn) {
  if (inTxn_) useTxn();
  if (PendingWrites::Table* w = pending_.of(table); w != nullptr && !w->empty()) {
    return mergedScan(table, *w, start, false, fn);
  }
  // In place (Tree::scan): no entry is copied.
  Status s = engine_->tree(table)->scan(start, [&](std::string_view key, std::string_view value) { return fn(key, value); });
  if (!s.ok()) fail("scan", s);
}

void VmstoreSession::scanReverse(int table, std::string_view start, const ScanFn& fn) {
  if (inTxn_) useTxn();
  if (PendingWrites::Table* w = pending_.of(table); w != nullptr && !w->empty()) {
    return mergedScan(table, *w, start, true, fn);
  }
  Iterator& it = iteratorOf(table);
  for (it.seekForPrev(start); it.valid(); it.prev()) {
    if (!fn(it.key(), it.value())) return;
  }
  if (!it.status().ok()) fail("scan", it.status());
}

const Registrar<Engine> kRegister("vmstore", [] { return std::make_unique<VmstoreEngine>(); });

}  // namespace

}  // namespace vmstore::bench
