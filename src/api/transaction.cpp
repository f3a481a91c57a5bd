// Transaction (vmstore/transaction.hpp) and TxnImpl, what stands behind it.
//
// An open transaction holds the database's call gate from its first call (close waits
// for it), the writer gate shared from then on too (no checkpoint's cut falls inside
// it) with log room reserved ahead for its record, and the locks of the keys it reached
// (a list; a busy lock is looked up in it, so a key's lock is taken once). The writer
// gate comes before the first key lock: a transaction waiting for the gate (a cut is
// waiting for the open ones) then holds no key that an open transaction could be
// waiting for. Each write is applied at once, as DatabaseImpl::writeUnder and update
// apply a write, and leaves in one byte buffer its
// key, its log operation's value (a put's value, or a same-size put's patch) and its undo
// image (the value before, or its absence). commit() appends one record holding every
// operation (replay applies a record whole or not at all), lets go of the writer gate,
// the key locks and the unused reservation, then waits as durability says (afterWrite).
// abort() writes the undo images back, newest first; one that cannot be written makes
// the database read-only (half a transaction must never reach a checkpoint).
#include "vmstore/transaction.hpp"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "api/database_impl.hpp"
#include "api/decided_change.hpp"
#include "api/guarded.hpp"
#include "api/leaf_hints.hpp"
#include "api/open_here.hpp"
#include "api/validate.hpp"
#include "sync/spin_mutex.hpp"
#include "task/cooperative.hpp"
#include "wal/log_record.hpp"
#include "wal/value_patch.hpp"

namespace vmstore::internal {

namespace {

// A transaction that holds a key lock waits 2 to 6 ms for another before Busy, varied so
// that two transactions waiting for each other seldom both give up. Short: a cycle (keys
// of two transactions that share locks, in opposite orders) stalls both until then,
// while a transaction in memory holds its locks for tens of microseconds.
constexpr auto kLockWaitMin = std::chrono::milliseconds(2);
// It spins that long before it lets its thread's other tasks run (task/cooperative.hpp).
constexpr auto kSpinFor = std::chrono::microseconds(50);
constexpr unsigned kLockWaitSpreadUs = 4000;
std::chrono::microseconds lockWait() {
  thread_local uint64_t x = reinterpret_cast<uintptr_t>(&x) | 1;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return kLockWaitMin + std::chrono::microseconds(x % kLockWaitSpreadUs);
}
// Log room reserved at a time: one reservation covers a TPC-C transaction's record.
constexpr size_t kReserveAhead = 16 << 10;
constexpr size_t kRecordOverhead = sizeof(LogRecordHeader) + 7;  // header and padding

Status busyLog() {
  return Status::Busy(
      "the log file filled while this transaction holds the writer gate: abort the transaction and retry (the "
      "retry lets a checkpoint make room)");
}

}  // namespace

class TxnImpl {
 public:
  explicit TxnImpl(DatabaseImpl* db) : db_(db) {}
  ~TxnImpl() { (void)abort(); }

  Status put(TreeImpl* t, std::string_view key, std::string_view value);
  Status del(TreeImpl* t, std::string_view key);
  Status get(TreeImpl* t, std::string_view key, std::string* value);
  Status get(TreeImpl* t, std::string_view key, std::span<std::byte> buf, size_t* vlen);
  Status update(TreeImpl* t, std::string_view key, Tree::UpdateFn fn, void* ctx);
  Status commit(uint64_t* commit);  // null: wait for durability here
  Status abort();
  size_t count() const { return ops_.size(); }

 private:
  // One write: offsets into bytes_.
  struct Op {
    TreeImpl* tree;
    LogOpKind kind;  // put, delete or patch, as logged
    bool had;        // the key was present before: old is its value
    size_t keyAt, keyLen, valueAt, valueLen, oldAt, oldLen;
  };

  Status check(TreeImpl* t, std::string_view key);  // the call's arguments, the call gate
  // The writer gate (holdGate), then the key's lock.
  Status lockKey(TreeImpl* t, std::string_view key);
  // The writer gate held, log room reserved.
  Status holdGate();
  // Before a write: OK, or why the database takes none.
  Status writable() {
    return db_->writesClear() ? Status::OK() : db_->writable();
  }
  // Log room for one more operation of these bytes (name, key, value or patch).
  Status reserveFor(size_t opBytes);
  size_t opBound(TreeImpl* t, std::string_view key, size_t valueBytes) const {
    return db_->logging() ? kLogOpHeader + t->name.size() + key.size() + valueBytes : 0;
  }
  size_t append(std::string_view s) {
    size_t at = bytes_.size();
    bytes_.append(s);
    return at;
  }
  std::string_view at(size_t pos, size_t len) const { return std::string_view(bytes_).substr(pos, len); }
  // The logged form of a put over old (had): its patch when the sizes match and the
  // patch is smaller, else the value itself. Views patch_ or value.
  std::string_view logged(bool had, std::string_view old, std::string_view value, LogOpKind* kind);
  // Before a write is applied, everything about it that allocates: its undo image
  // (current, null when absent), key and log operation into bytes_, and room for it in
  // ops_. op->kind is kPut or kDelete; a put may become a patch. Once the write is
  // applied, only ops_.push_back(*op) is left, which cannot fail: no write is applied
  // that the transaction could not undo or log.
  void prepare(Op* op, const std::optional<std::string_view>& current, std::string_view key, std::string_view value);
  // ops_ can take one more without allocating (grown by doubling).
  void roomForOneOp() {
    if (ops_.size() == ops_.capacity()) ops_.reserve(std::max<size_t>(16, 2 * ops_.capacity()));
  }
  void end();  // lets go of everything and forgets the writes

  DatabaseImpl* db_;
  bool entered_ = false;  // the call gate
  std::shared_ptr<OpenHere> here_;  // the list of the thread of the last call
  OpenHere::Entry entry_{};         // the last call's caller (db_, its task)
  bool listed_ = false;             // entry_ is in here_ (from the first call to the end)
  bool gateHeld_ = false;
  std::vector<KeySlot> held_;  // in the order taken, each once
  std::vector<Op> ops_;
  std::string bytes_;
  std::string old_;    // a delete's undo image
  std::string patch_;  // encodePatch's working storage
  std::string owned_;  // an update's value that viewed the current one
  size_t reserved_ = 0;  // log bytes reserved (the record takes at most needed_ of them)
  size_t needed_ = 0;    // the record's size at most, for the writes so far
  std::vector<LogOp> logOps_;
};

Status TxnImpl::check(TreeImpl* t, std::string_view key) {
  if (db_ == nullptr) return Status::InvalidArgument("the transaction's database is null");
  if (t == nullptr) return Status::InvalidArgument("tree is null");
  if (t->db != db_) return Status::InvalidArgument("the tree is of another database than the transaction");
  if (Status bad = validateKey(key); !bad.ok()) return bad;
  if (entered_ && here_.get() == detail::tOpenHere && entry_.task == task::Scheduler::runningTask()) [[likely]] {
    return Status::OK();  // open, called again by the same caller
  }
  try {
    const std::shared_ptr<OpenHere>& here = openHere();
    const OpenHere::Entry entry = callerEntry(db_);
    if (!entered_) {
      if (!db_->gate_.enter()) return DatabaseImpl::closedStatus();
      try {
        here->add(entry);
      } catch (...) {
        db_->gate_.leave();
        throw;
      }
      entered_ = true;
      listed_ = true;
      if (here_ != here) here_ = here;
    } else {  // called from another thread or task than the last call: moves here
      here->add(entry);
      here_->remove(entry_);
      here_ = here;
    }
    entry_ = entry;
  } catch (const std::bad_alloc&) {
    return Status::NoMemory("no memory to begin a transaction");
  }
  return Status::OK();
}

Status TxnImpl::lockKey(TreeImpl* t, std::string_view key) {
  if (!gateHeld_) {
    if (Status st = holdGate(); !st.ok()) return st;
  }
  const KeySlot s = t->keyLocks.slot(key);
  ByteSpinMutex& m = t->keyLocks.at(s.slot);
  if (m.try_lock()) [[likely]] {
    held_.push_back(s);
    return Status::OK();
  }
  if (std::find(held_.begin(), held_.end(), s) != held_.end()) return Status::OK();  // held by this one
  // Spinning first: the holder is most likely a transaction running on another core,
  // done within microseconds. A task that let its thread's other tasks run now, while
  // holding locks, would have them open transactions that pile up behind its own.
  if (!m.tryLockSpinning()) {
    if (held_.empty()) {
      // Holding no key lock, this waits in no cycle of key locks.
      std::unique_lock l(m, std::defer_lock);
      task::acquire(l);
      l.release();
    } else {
      const auto start = std::chrono::steady_clock::now();
      const auto wait = lockWait();
      while (!m.tryLockSpinning()) {
        const auto now = std::chrono::steady_clock::now();
        if (now - start > wait) {
          return Status::Busy("a key's lock stayed held by another writer for " + std::to_string(wait.count()) +
                              " us while this transaction held others (two transactions may be waiting for each "
                              "other): abort the transaction and retry");
        }
        // Past kSpinFor the holder may be a suspended task of this thread: let it run.
        if (now - start > kSpinFor) task::pause();
      }
    }
  }
  held_.push_back(s);
  return Status::OK();
}

Status TxnImpl::holdGate() {
  const bool logging = db_->logging();
  for (;;) {
    db_->writeGate_.lock_shared();  // task-aware itself (writer_gate.hpp)
    if (!logging) break;
    Status st = db_->log_.reserve(kReserveAhead);
    if (st.ok()) {
      reserved_ = kReserveAhead;
      break;
    }
    db_->writeGate_.unlock_shared();
    if (st.code() != Status::Code::kBusy) return st;
    // The log file is full: a checkpoint's cut moves appends to the other one. Not while
    // another transaction of this thread holds the gate (the cut would wait for it).
    if (here_->count(db_) > 1) return busyLog();
    st = db_->makeLogRoom(kReserveAhead);
    if (!st.ok()) return st;
  }
  gateHeld_ = true;
  needed_ = logging ? kRecordOverhead : 0;
  return Status::OK();
}

Status TxnImpl::reserveFor(size_t opBytes) {
  if (opBytes == 0) return Status::OK();  // not logging
  const size_t need = needed_ + opBytes;
  if (need > db_->unloggedRecordBytes()) {
    return Status::TooBig("a transaction's log record may take at most " +
                          std::to_string(db_->unloggedRecordBytes()) +
                          " bytes (a sixteenth of log_size); write a value this large with put, outside a transaction");
  }
  if (need > reserved_) {
    const size_t more = std::max(kReserveAhead, need - reserved_);
    Status st = db_->log_.reserve(more);
    if (st.code() == Status::Code::kBusy) return busyLog();
    if (!st.ok()) return st;
    reserved_ += more;
  }
  needed_ = need;
  return Status::OK();
}

std::string_view TxnImpl::logged(bool had, std::string_view old, std::string_view value, LogOpKind* kind) {
  std::string_view patch;
  if (db_->logging() && had && old.size() == value.size() && encodePatch(asBytes(old), asBytes(value), &patch_, &patch)) {
    *kind = LogOpKind::kPatch;  // a row update: the bytes that changed
    return patch;
  }
  *kind = LogOpKind::kPut;
  return value;
}

void TxnImpl::prepare(Op* op, const std::optional<std::string_view>& current, std::string_view key,
                      std::string_view value) {
  op->had = current.has_value();
  if (op->had) {
    op->oldAt = append(*current);
    op->oldLen = current->size();
  }
  op->keyAt = append(key);
  std::string_view v;
  if (op->kind != LogOpKind::kDelete) v = logged(op->had, at(op->oldAt, op->oldLen), value, &op->kind);
  op->valueAt = append(v);
  op->valueLen = v.size();
  roomForOneOp();
}

Status TxnImpl::put(TreeImpl* t, std::string_view key, std::string_view value) {
  if (Status bad = check(t, key); !bad.ok()) return bad;
  if (Status bad = validateValue(value); !bad.ok()) return bad;
  if (Status st = lockKey(t, key); !st.ok()) return st;
  if (Status st = writable(); !st.ok()) return st;
  if (Status st = reserveFor(opBound(t, key, value.size())); !st.ok()) return st;
  db_->markChanged();
  const size_t mark = bytes_.size();
  Status st = guarded([&] {
    Op op{t, LogOpKind::kPut, false, 0, key.size(), 0, 0, 0, 0};
    BTree::LeafHint hint = LeafHints::of(t->serial);
    // One descent for the undo image and, for a value of the old one's size, the write.
    bool inPlace = t->btree.updateInPlace(
        asBytes(key),
        [&](const Bytes* current) {
          std::optional<std::string_view> cur;
          if (current != nullptr) cur.emplace(reinterpret_cast<const char*>(current->data()), current->size());
          prepare(&op, cur, key, value);
          return std::optional<Bytes>(asBytes(value));
        },
        &hint);
    if (!inPlace) t->btree.put(asBytes(key), asBytes(value), &hint);
    LeafHints::remember(t->serial, hint);
    ops_.push_back(op);
    return Status::OK();
  });
  if (!st.ok()) bytes_.resize(mark);
  return st;
}

Status TxnImpl::del(TreeImpl* t, std::string_view key) {
  if (Status bad = check(t, key); !bad.ok()) return bad;
  if (Status st = lockKey(t, key); !st.ok()) return st;
  if (Status st = writable(); !st.ok()) return st;
  if (Status st = reserveFor(opBound(t, key, 0)); !st.ok()) return st;
  const size_t mark = bytes_.size();
  Status st = guarded([&] {
    Op op{t, LogOpKind::kDelete, true, 0, key.size(), 0, 0, 0, 0};
    op.keyAt = append(key);
    op.valueAt = bytes_.size();
    roomForOneOp();
    BTree::LeafHint hint = LeafHints::of(t->serial);
    const bool had = t->btree.remove(asBytes(key), &old_, &hint);
    LeafHints::remember(t->serial, hint);
    if (!had) return Status::NotFound();
    db_->markChanged();
    // The undo image is known only once removed: if keeping it fails, the key goes back.
    try {
      op.oldAt = append(old_);
    } catch (...) {
      t->btree.put(asBytes(key), asBytes(old_));
      throw;
    }
    op.oldLen = old_.size();
    ops_.push_back(op);
    return Status::OK();
  });
  if (!st.ok()) bytes_.resize(mark);
  return st;
}

Status TxnImpl::get(TreeImpl* t, std::string_view key, std::string* value) {
  if (value == nullptr) return Status::InvalidArgument("value output pointer is null");
  if (Status bad = check(t, key); !bad.ok()) return bad;
  if (Status st = lockKey(t, key); !st.ok()) return st;
  return db_->get(t, key, value);
}

Status TxnImpl::get(TreeImpl* t, std::string_view key, std::span<std::byte> buf, size_t* vlen) {
  if (vlen == nullptr) return Status::InvalidArgument("vlen output pointer is null");
  if (Status bad = check(t, key); !bad.ok()) return bad;
  if (Status st = lockKey(t, key); !st.ok()) return st;
  return db_->get(t, key, buf, vlen);
}

Status TxnImpl::update(TreeImpl* t, std::string_view key, Tree::UpdateFn fn, void* ctx) {
  if (fn == nullptr) return Status::InvalidArgument("the update function is null");
  if (Status bad = check(t, key); !bad.ok()) return bad;
  if (Status st = lockKey(t, key); !st.ok()) return st;
  if (Status st = writable(); !st.ok()) return st;
  std::exception_ptr thrown;
  const size_t mark = bytes_.size();
  Op op{t, LogOpKind::kPut, false, 0, key.size(), 0, 0, 0, 0};
  bool changes = false;
  Change change = Change::keep();  // fn's decision (a put's value may live in it)
  std::string_view newValue;
  Status st = guarded([&] {
    Status decided;
    BTree::LeafHint hint = LeafHints::of(t->serial);
    bool inPlace = t->btree.updateInPlace(asBytes(key), [&](const Bytes* current) -> std::optional<Bytes> {
      std::optional<std::string_view> cur;
      change = callUpdateFn(fn, ctx, current, &cur, &thrown);
      const Decided what = decideChange(change, cur, &owned_, &newValue, &decided);
      if (what == Decided::kNothing) return std::nullopt;
      if (what == Decided::kDelete) op.kind = LogOpKind::kDelete;
      const size_t valueBytes = what == Decided::kPut ? newValue.size() : 0;  // a patch is never larger
      decided = reserveFor(opBound(t, key, valueBytes));
      if (!decided.ok()) return std::nullopt;
      prepare(&op, cur, key, newValue);
      changes = true;
      db_->markChanged();
      if (op.kind == LogOpKind::kDelete) return std::nullopt;
      return asBytes(newValue);
    }, &hint);
    if (changes && !inPlace) {
      if (op.kind == LogOpKind::kDelete) {
        t->btree.remove(asBytes(key), nullptr, &hint);
      } else {
        t->btree.put(asBytes(key), asBytes(newValue), &hint);
      }
    }
    LeafHints::remember(t->serial, hint);
    return decided;
  });
  if (st.ok() && changes) {
    ops_.push_back(op);
  } else {
    bytes_.resize(mark);
  }
  if (thrown) std::rethrow_exception(thrown);
  return st;
}

Status TxnImpl::commit(uint64_t* commit) {
  if (commit != nullptr) *commit = 0;
  if (!entered_) return Status::OK();  // nothing begun
  if (!ops_.empty() && !db_->writesClear()) {
    // Read-only since a write of this transaction (a failed sync): what it changed in
    // memory is undone, and the commit fails as the database's writes do.
    if (Status refused = db_->writable(); !refused.ok()) {
      (void)abort();
      return refused;
    }
  }
  uint64_t lsn = 0;
  if (gateHeld_ && db_->logging() && !ops_.empty()) {
    logOps_.clear();
    for (const Op& op : ops_) {
      logOps_.push_back({op.kind, op.tree->name, at(op.keyAt, op.keyLen), at(op.valueAt, op.valueLen)});
    }
    const size_t size = recordSize(logOps_);
    assert(size <= reserved_);
    lsn = db_->log_.append(logOps_, size);
    reserved_ -= size;
  }
  DatabaseImpl* db = db_;
  const bool entered = entered_;
  entered_ = false;  // end() keeps the call gate: the wait below is inside it
  end();
  Status st = db->afterWrite(Status::OK(), lsn, commit);
  if (entered) db->gate_.leave();
  return st;
}

Status TxnImpl::abort() {
  if (!entered_) return Status::OK();
  Status st = guarded([&] {
    for (size_t i = ops_.size(); i-- > 0;) {
      const Op& op = ops_[i];
      Bytes key = asBytes(at(op.keyAt, op.keyLen));
      if (op.had) {
        op.tree->btree.put(key, asBytes(at(op.oldAt, op.oldLen)));
      } else {
        op.tree->btree.remove(key);
      }
    }
    return Status::OK();
  });
  if (!st.ok()) db_->poison(st, "a transaction that could not be undone");
  end();
  return st;
}

void TxnImpl::end() {
  if (reserved_ != 0) db_->log_.unreserve(reserved_);
  reserved_ = needed_ = 0;
  if (gateHeld_) {
    db_->writeGate_.unlock_shared();
    gateHeld_ = false;
  }
  for (const KeySlot& s : held_) s.table->at(s.slot).unlock();
  held_.clear();
  ops_.clear();
  bytes_.clear();
  if (listed_) {
    here_->remove(entry_);  // here_ is kept for the next transaction
    listed_ = false;
  }
  if (entered_) {
    db_->gate_.leave();
    entered_ = false;
  }
}

}  // namespace vmstore::internal

namespace vmstore {

using internal::TreeImpl;
using internal::TxnImpl;

namespace {
TreeImpl* implOf(Tree* tree) { return tree == nullptr ? nullptr : TreeImpl::of(tree); }
}  // namespace

Transaction::Transaction(Database* db)
    : impl_(std::make_unique<TxnImpl>(db == nullptr ? nullptr : db->impl_.get())) {}
Transaction::~Transaction() = default;

Status Transaction::put(Tree* tree, std::string_view key, std::string_view value) {
  return impl_->put(implOf(tree), key, value);
}
Status Transaction::del(Tree* tree, std::string_view key) { return impl_->del(implOf(tree), key); }
Status Transaction::get(Tree* tree, std::string_view key, std::string* value) {
  return impl_->get(implOf(tree), key, value);
}
Status Transaction::get(Tree* tree, std::string_view key, std::span<std::byte> buf, size_t* vlen) {
  return impl_->get(implOf(tree), key, buf, vlen);
}
Status Transaction::update(Tree* tree, std::string_view key, Tree::UpdateFn fn, void* ctx) {
  return impl_->update(implOf(tree), key, fn, ctx);
}
Status Transaction::commit() { return impl_->commit(nullptr); }
Status Transaction::commitNoWait(uint64_t* commit) {
  if (commit == nullptr) return Status::InvalidArgument("commitNoWait: commit output pointer is null");
  return impl_->commit(commit);
}
Status Transaction::abort() { return impl_->abort(); }
size_t Transaction::count() const { return impl_->count(); }

}  // namespace vmstore
