// vmstore::Database, Tree and Iterator: the C++ API.
//
// A database is a directory holding one data file. Database::open() takes an exclusive
// lock on the directory: a second open, from this or any other process, gets Busy until
// the first is closed. A database holds named trees (ordered maps from byte-string keys
// to byte-string values); the name "" is the default tree.
//
// Ownership and threads
// - Database is owned by the caller (std::unique_ptr); destroying it closes it.
// - Tree objects are owned by their Database and stay valid until it is closed. All
//   Tree and Database calls are safe from many threads at once.
// - Iterator is a value owned by its user; one iterator belongs to one thread. It reads
//   one leaf at a time: it sees each key as it was when the iterator entered that key's
//   leaf, and never returns a key twice or out of order. It must not outlive its
//   Database.
//
// Errors: see status.hpp. Storage damage is Corruption, never a crash or a wrong answer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "vmstore/limits.hpp"
#include "vmstore/options.hpp"
#include "vmstore/stats.hpp"
#include "vmstore/value_view.hpp"
#include "vmstore/write_batch.hpp"
#include "vmstore/status.hpp"

namespace vmstore {

namespace internal {
class DatabaseImpl;
class TreeImpl;
}  // namespace internal

class Iterator;

// What the function of an update (Tree::update) decides for its key. Move-only; a keep,
// put or del is a few words, moved without touching the heap.
class Change {
 public:
  enum class Kind { kKeep, kPut, kDelete, kAbort };
  // Leave the key as it is (an absent key stays absent): nothing is written or logged.
  static Change keep() { return Change(Kind::kKeep); }
  // Store value (0 .. kMaxValueSize bytes; larger makes update return TooBig with nothing
  // changed). A string_view may view the `current` value the function was given, or a
  // part of it; any other memory it views must stay valid until update returns. A
  // std::string passed as an rvalue is moved into the Change instead.
  static Change put(std::string_view value) {
    Change c(Kind::kPut);
    c.value_ = value;
    return c;
  }
  static Change put(const char* value) { return put(std::string_view(value)); }
  static Change put(std::string&& value) {
    Change c(Kind::kPut);
    c.owned_ = std::make_unique<std::string>(std::move(value));
    c.value_ = *c.owned_;
    return c;
  }
  // Remove the key (absent: nothing to do, nothing logged).
  static Change del() { return Change(Kind::kDelete); }
  // Change nothing: update returns `why` as given (an OK status makes it a keep()).
  static Change abort(Status why) {
    Change c(Kind::kAbort);
    c.status_ = std::make_unique<Status>(std::move(why));
    return c;
  }

  Kind kind() const { return kind_; }
  std::string_view value() const { return value_; }  // kPut
  Status status() const { return status_ ? *status_ : Status(); }  // kAbort

 private:
  explicit Change(Kind kind) : kind_(kind) {}
  Kind kind_;
  std::string_view value_;
  std::unique_ptr<std::string> owned_;  // put(std::string&&): value_ views it
  std::unique_ptr<Status> status_;      // abort
};

class Tree {
 public:
  // Inserts or replaces. TooBig for key > kMaxKeySize or value > kMaxValueSize,
  // InvalidArgument for an empty key; nothing is written then.
  Status put(std::string_view key, std::string_view value);
  // NotFound when absent.
  Status get(std::string_view key, std::string* value) const;
  // Copies min(buf.size(), value length) bytes and sets *vlen to the full length.
  Status get(std::string_view key, std::span<std::byte> buf, size_t* vlen) const;
  // Writes a value of len bytes in place, without a second copy of it (LMDB's
  // MDB_RESERVE): fill gets the value's bytes (zeroed) in its final place and writes
  // them; if it returns OK, the value is stored under key as put() would, else nothing
  // changes and its Status is returned (an exception from fill likewise changes nothing
  // and propagates). fill runs with the key's writer lock held: it must not call this
  // database. A value small enough for a leaf is filled aside and copied once.
  Status putReserve(std::string_view key, size_t len, const std::function<Status(std::span<std::byte>)>& fill);
  // Zero-copy: *view holds the value in place until released (see value_view.hpp for
  // what a holder may do meanwhile). A view *view held before is released first.
  // NotFound (view not held) when absent.
  Status getView(std::string_view key, ValueView* view) const;
  // Calls fn once with the value in place, held shared for the call (the rules of
  // value_view.hpp apply while fn runs); an exception from fn propagates after the value
  // is let go. NotFound (fn not called) when absent.
  Status read(std::string_view key, const std::function<void(std::string_view)>& fn) const;
  // Optimistic zero-copy read: calls fn(ctx, value) with the value in place while holding
  // nothing (no atomic operation on the value's page, so no writer ever waits for it),
  // then checks that nothing changed the value meanwhile; if something did (a write of
  // that key or of its leaf, an eviction), fn runs again. The last run saw the value as
  // it was when that run ended; the others are to be discarded. So:
  // - fn may run more than once, and a run that is repeated may see bytes that were never
  //   the value (torn by a concurrent write, or zeros). Treat them as untrusted: check
  //   every length or offset read from them against value.size(), recompute on each run
  //   all that a run keeps (only the last run's result counts), and keep no pointer
  //   into value.
  // - fn must be short and must not call this database (a run holds nothing, but a value
  //   that is not resident is read in and held shared for one run, as read() holds it).
  // - An exception from the last run propagates (those of repeated runs are dropped).
  // NotFound (fn not run) when absent; InvalidArgument for a null fn.
  using ReadFn = void (*)(void* ctx, std::string_view value);
  Status readOptimistic(std::string_view key, ReadFn fn, void* ctx) const;
  // The same with any callable void(std::string_view), not copied.
  template <class Fn>
  Status readOptimistic(std::string_view key, Fn&& fn) const {
    return readOptimistic(
        key,
        [](void* f, std::string_view value) { (*static_cast<std::remove_reference_t<Fn>*>(f))(value); },
        const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
  }
  // Copies the bytes [offset, offset + buf.size()) of the value (fewer at its end) into
  // buf: *copied says how many, *vlen the value's whole length. An offset at or past the
  // end copies nothing. Only that range is copied, whatever the value's size. It reads
  // through a view held for the copy, so the rules of value_view.hpp apply to a caller
  // that holds a view of the same tree.
  Status getRange(std::string_view key, size_t offset, std::span<std::byte> buf, size_t* copied,
                  size_t* vlen) const;
  // Looks up every key, the lookups overlapping. The keys whose pages are in memory
  // descend the tree side by side, a step of each in turn, each step requesting the
  // memory its next step reads, so that their cache misses overlap. The others (pages to
  // read, values on pages of their own) run as tasks of the calling thread (up to
  // kGetManyInFlight at once), and a task that misses suspends while the others go on,
  // so one thread keeps many reads in flight (with io=uring, the default; io=sync reads
  // one page at a time). Inside a task of a TaskPool those tasks run beside it on its
  // thread, and it waits for them.
  // (*statuses)[i] is the status of keys[i] as get() gives it (NotFound when absent) and
  // (*values)[i] its value (empty unless OK); both are resized to keys.size(). Returns
  // OK when it could run them all; otherwise the error (a null output, a closed
  // database, no memory for the tasks).
  Status getMany(std::span<const std::string_view> keys, std::vector<std::string>* values,
                 std::vector<Status>* statuses) const;
  // The same into the caller's buffers, each as get(keys[i], bufs[i], &vlens[i]) does;
  // bufs, vlens and statuses must have keys.size() entries (else InvalidArgument).
  Status getMany(std::span<const std::string_view> keys, std::span<const std::span<std::byte>> bufs,
                 std::span<size_t> vlens, std::span<Status> statuses) const;
  // NotFound when absent.
  Status del(std::string_view key);

  // Atomic read-modify-write of one key: fn(current) gets the key's value (std::nullopt
  // when absent) and returns a Change (keep, put, del or abort), which is applied before
  // any other write of the key can follow the value fn saw: no update is lost under any
  // concurrency, in every durability mode (puts, dels, batches and other updates of the
  // key wait while it runs; readers do not).
  // - fn runs on the calling thread with no page locked but holding the key's lock
  //   (shared by some other keys) and the database's writer gate shared, so it must be
  //   short and must not call vmstore on this database (that may deadlock), nor block
  //   its thread (inside a task: nor wait for another task). `current` views a copy,
  //   valid until fn returns.
  // - fn is called once when the update passes its checks (none for bad input, a closed
  //   or read-only database). Only if the log file was full when fn's change was to be
  //   logged does the update let a checkpoint switch log files and call fn again, with
  //   the value as it is then; the change of that last call is the one applied.
  // - Returns OK after keep, put and del (del of an absent key too), the status of
  //   abort, TooBig for a put beyond kMaxValueSize (nothing changed), InvalidArgument for
  //   a bad key or a null fn (fn not called), and the errors of put and del. An exception
  //   fn throws propagates out of update, nothing changed.
  // - A put of the same size as the current value is written over it in place in its
  //   leaf (values of up to about 1.5 KiB with their key); other changes go the way of
  //   put and del. Logged (and replayed by recovery) as that put or delete; a keep, an
  //   abort and a del of an absent key log nothing. With durability=sync update returns
  //   once that record is durable, as put does.
  using UpdateFn = Change (*)(void* ctx, std::optional<std::string_view> current);
  Status update(std::string_view key, UpdateFn fn, void* ctx);
  // The same with any callable Change(std::optional<std::string_view>), not copied.
  template <class Fn>
  Status update(std::string_view key, Fn&& fn) {
    return update(
        key,
        [](void* f, std::optional<std::string_view> current) -> Change {
          return (*static_cast<std::remove_reference_t<Fn>*>(f))(current);
        },
        const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
  }
  // Zero-copy scan: calls fn(ctx, key, value) for each entry with key >= start (empty:
  // from the first key), ascending, until fn returns false or the entries end. key and
  // value are valid during that call only; value is the bytes in place in the pool (a
  // value of any size). While fn runs, the leaf of its entry (and a value's own page) is
  // held shared, so the rules of value_view.hpp apply: fn must not write to this tree
  // (that write could wait for the scan forever), nor take a view or a scan of it
  // (those wait for a writer that waits for the scan); reads that copy (get,
  // iterators) and anything on other trees are fine. The
  // entries of one leaf are one consistent state; writes made while the scan moves on
  // from leaf to leaf may or may not be seen (as with an Iterator). An exception from fn
  // propagates with nothing held. Returns OK at the end and when fn stopped the scan;
  // InvalidArgument for a null fn, TooBig for a start over kMaxKeySize.
  using ScanFn = bool (*)(void* ctx, std::string_view key, std::string_view value);
  Status scan(std::string_view start, ScanFn fn, void* ctx) const;
  // The same with any callable bool(std::string_view key, std::string_view value), not
  // copied.
  template <class Fn>
  Status scan(std::string_view start, Fn&& fn) const {
    return scan(
        start,
        [](void* f, std::string_view key, std::string_view value) -> bool {
          return (*static_cast<std::remove_reference_t<Fn>*>(f))(key, value);
        },
        const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
  }
  // Height, page counts and average fill of this tree (reads every page of it).
  Status shape(TreeShape* out) const;
  // An unpositioned iterator over this tree; call seek*() before reading it.
  Iterator newIterator() const;
  const std::string& name() const;

  Tree(const Tree&) = delete;
  Tree& operator=(const Tree&) = delete;

 private:
  friend class internal::TreeImpl;
  friend class Iterator;
  friend class Database;
  explicit Tree(internal::TreeImpl* impl) : impl_(impl) {}
  internal::TreeImpl* impl_;
};

class Iterator {
 public:
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  ~Iterator();

  // key is a bound, not a stored key: any length (Tree::scan's start: at most kMaxKeySize).
  void seek(std::string_view key);         // first key >= key
  void seekForPrev(std::string_view key);  // last key <= key
  void seekToFirst();
  void seekToLast();
  void next();  // requires valid()
  void prev();  // requires valid()

  // True when positioned on an entry. False at either end or after an error; then
  // status() tells which (OK at the end).
  bool valid() const;
  // Valid until the iterator moves.
  std::string_view key() const;
  std::string_view value() const;
  Status status() const;

 private:
  friend class Tree;
  struct State;
  explicit Iterator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class Database {
 public:
  static Status open(const std::string& dir, const Options& options,
                     std::unique_ptr<Database>* db);
  // config: the C API's "key=value,..." string (may be empty).
  static Status open(const std::string& dir, std::string_view config,
                     std::unique_ptr<Database>* db);

  // Closes if not closed yet; errors are lost then, so call close() to see them.
  ~Database();
  // Writes every page, the free-space list and the superblock, syncs, and releases the
  // directory lock. Tree handles become invalid. Calling it twice is harmless.
  Status close();
  // A checkpoint: all writes so far are on stable storage when this returns OK, in the
  // data file (the log is recycled). With durability=sync each write already was.
  Status sync();
  // Applies the batch all or nothing (vmstore/write_batch.hpp states the contract).
  Status write(const WriteBatch& batch);
  // Early lock release. write(batch) is writeNoWait(batch, &c) then waitDurable(c):
  // - writeNoWait applies the batch as write() does and returns once readers see it and
  //   its log record is appended, without waiting for the log flush; *commit (not null)
  //   is its commit point. Until the wait, a crash (with durability sync, of the process
  //   too) may lose it. An application that
  //   holds its own locks around a transaction can release them here, so the next
  //   transaction on the same rows joins the same group commit instead of waiting for
  //   this one's flush, and then call waitDurable before acknowledging the transaction.
  // - waitDurable(commit) returns once that write is as durable as write() would have
  //   made it: durability=sync, on stable storage (concurrent waiters share one flush;
  //   inside a task only the task waits); async and none, at once. The log is one
  //   sequence, so it also covers every write before it. A commit point is an LSN of
  //   this database since it was opened: one larger than any issued is InvalidArgument;
  //   0 (a batch with nothing logged, or durability none) is OK at once. A failed log
  //   flush is returned as write() would have returned it (the database is read-only).
  // - A batch too large for the log is durable when writeNoWait returns (its checkpoint).
  // - Meanwhile readers, and writes that depend on the batch, may see it: a crash before
  //   the flush loses it and, since the log is one sequence, everything logged after it.
  Status writeNoWait(const WriteBatch& batch, uint64_t* commit);
  Status waitDurable(uint64_t commit);

  // With create=false a missing tree is NotFound. The same name gives the same Tree.
  Status openTree(std::string_view name, bool create, Tree** tree);
  // Removes the tree and frees its pages. Its handle then answers NotFound.
  Status dropTree(std::string_view name);
  Status listTrees(std::vector<std::string>* names);

  Stats stats() const;
  // Walks every tree and the free-space list: page checksums, key order, fence keys,
  // each page either used exactly once or free. OK when sound; Corruption with one
  // line per problem in *problems otherwise.
  Status check(std::vector<std::string>* problems);

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

 private:
  friend class Transaction;
  explicit Database(std::unique_ptr<internal::DatabaseImpl> impl);
  std::unique_ptr<internal::DatabaseImpl> impl_;
};

}  // namespace vmstore
