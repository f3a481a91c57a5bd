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
#include <span>
#include <string>
#include <string_view>
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
  // Copies the bytes [offset, offset + buf.size()) of the value (fewer at its end) into
  // buf: *copied says how many, *vlen the value's whole length. An offset at or past the
  // end copies nothing. Only that range is copied, whatever the value's size.
  Status getRange(std::string_view key, size_t offset, std::span<std::byte> buf, size_t* copied,
                  size_t* vlen) const;
  // Looks up every key with their page misses in flight together: the lookups run as
  // tasks of the calling thread (up to kGetManyInFlight at once), and a task that misses
  // suspends while the others go on, so one thread keeps many reads in flight (with
  // io=uring, the default; io=sync reads one page at a time). Inside a task of a
  // TaskPool the lookups run one after another in that task (its misses suspend it).
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
  explicit Database(std::unique_ptr<internal::DatabaseImpl> impl);
  std::unique_ptr<internal::DatabaseImpl> impl_;
};

}  // namespace vmstore
