// vmstore::Transaction: writes over the trees of one database, each applied in place when
// it is made, committed together: after a crash all of them are present or none.
//
// Contract
// - A transaction is a value owned by its user, used by one thread (or one task) at a
//   time (it may go on from another thread between calls), and must not outlive its
//   Database. It begins with its first call and ends with
//   commit() or abort(); then it may be used again (it keeps its memory). Destroying an
//   open transaction aborts it.
// - put, del and update write at once, in place (one descent each, as Tree::put, del
//   and update do), and keep the key's lock until the transaction ends; get takes the
//   key's lock too and reads the value as it stands (this transaction's writes
//   included). So transactions that reach their keys only through their own calls are
//   serializable (two-phase locking on keys; a scan or iterator takes no locks).
// - Readers outside the transaction (Tree::get, scans, iterators, views) see its writes
//   as they are made, before the commit: they are not isolated from it. An abort, or a
//   commit that fails, puts every value back as it was before the transaction.
// - Crash: commit() writes one log record holding every change, so recovery replays all
//   of them or none; no checkpoint falls inside an open transaction (it holds the
//   database's writer gate shared from its first call to its end). commit() returns as
//   durability makes a write return (sync: once the record is on stable storage, sharing
//   a flush with concurrent committers; async: the process may crash; none: at once,
//   durable at the next sync or close). commitNoWait(&c) is commit() without the wait, as
//   Database::writeNoWait: release your own locks, then Database::waitDurable(c).
// - Locks: keys are locked by hash (different keys may share a lock), in the order the
//   calls come. A lock held elsewhere is waited for (inside a task, the task waits); once
//   this transaction holds a lock, a wait longer than 2 to 6 ms (varied, so that two
//   transactions waiting for each other seldom both give up) returns Busy ("abort the
//   transaction and retry": two transactions waiting for each other, or a long holder).
//   Keep transactions short: a checkpoint's cut waits for every open one.
// - A call that fails (bad input, Busy, NoSpace, a storage error) changes nothing itself;
//   the transaction stays open with its earlier writes: commit or abort it. Busy also
//   comes from a write that finds the log file full while this transaction holds the
//   gate (it cannot let a checkpoint cut): abort, and the retry makes the room.
// - Limits: keys and values as for Tree::put. A write whose log record would pass a
//   sixteenth of log_size is refused (TooBig; write such a value with Tree::put).
// - A transaction is held by the caller of its last call: a thread, or a task
//   (TaskPool) inside one. There, plain writes to its database (Tree::put, del, update,
//   putReserve, Database::write, writeNoWait, openTree creating a tree) return Busy and
//   write nothing: one of the transaction's keys, or a write that needs a checkpoint,
//   would wait for the transaction forever. Write through the transaction, or end it
//   first. Reads are fine; other threads, and other tasks of the same thread, write as
//   usual (waiting, on the transaction's keys, for its end). Database::sync, close,
//   dropTree and check return Busy on a thread where any caller holds an open
//   transaction of that database. openTree of an existing tree works there, even while
//   a dropTree or a tree creation on another thread waits for the transaction. close
//   from another thread waits for open transactions to end.
// - Not with the read-only database of a failed sync (IOError, as every write).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "vmstore/database.hpp"
#include "vmstore/status.hpp"

namespace vmstore {

namespace internal {
class TxnImpl;
}  // namespace internal

class Transaction {
 public:
  explicit Transaction(Database* db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  Status put(Tree* tree, std::string_view key, std::string_view value);
  // NotFound when the key is absent (nothing changes; the key stays locked).
  Status del(Tree* tree, std::string_view key);
  // NotFound when absent. Locks the key until the transaction ends.
  Status get(Tree* tree, std::string_view key, std::string* value);
  // The same into buf, as Tree::get's buffer form (*vlen the value's size; a buf too
  // small gets its first buf.size() bytes).
  Status get(Tree* tree, std::string_view key, std::span<std::byte> buf, size_t* vlen);
  // As Tree::update (fn sees the value as it stands and decides), under the
  // transaction: fn is called once per call (the key is locked, the log room reserved
  // ahead); its exception propagates with nothing changed by this call.
  Status update(Tree* tree, std::string_view key, Tree::UpdateFn fn, void* ctx);
  template <class Fn>
  Status update(Tree* tree, std::string_view key, Fn&& fn) {
    return update(
        tree, key,
        [](void* f, std::optional<std::string_view> current) -> Change {
          return (*static_cast<std::remove_reference_t<Fn>*>(f))(current);
        },
        const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
  }

  Status commit();
  // commit() without waiting for durability: *commit (not null) is the commit point for
  // Database::waitDurable (0 when nothing was logged).
  Status commitNoWait(uint64_t* commit);
  // Puts back every value this transaction changed and ends it. OK on an ended one.
  Status abort();
  // Writes made (puts, deletes and updates that changed something) since it began.
  size_t count() const;

 private:
  std::unique_ptr<internal::TxnImpl> impl_;
};

}  // namespace vmstore
