// The ordered key-value adapter every benchmarked engine implements (vmstore, hashbm,
// lmdb, wiredtiger, rocksdb), so that every workload runs unchanged on all of them.
//
// Contract
// - Engine::open creates a fresh database in config.dir with the given tables (each an
//   ordered map of byte strings, unsigned-byte order), honouring config.poolBytes as the
//   engine's cache budget and configured as fairly as the engine allows (documented in
//   each adapter: direct I/O where it has it; logging and syncing as config.durability
//   says, mapped onto the engine's own settings in each adapter's header comment).
// - config.durability (vmstore's own enum, so there is one way to say it):
//     kNone   no log, no sync (as the vmcache paper ran every engine; the default here)
//     kAsync  every committed write is logged or written to the OS when the call returns
//             (it survives a crash of the process, not necessarily a power cut)
//     kSync   every committed write is on stable storage when the call returns
//   A put or del outside begin()/commit() is a committed write of its own (in kSync:
//   synced before it returns), so "synchronous puts" mean the same on every engine.
//   Engines without a log (hashbm) support only kNone: supports() says so, and the
//   runner refuses the others with std::invalid_argument.
// - Engine::session() is called once per worker thread; a Session is used by one thread.
// - begin()/commit() bracket a transaction (TPC-C); engines without transactions treat
//   them as no-ops, engines with a single writer (LMDB) serialize write transactions.
//   Reads outside begin()/commit() are allowed.
// - update() is a read-modify-write of one key (TPC-C's row updates): by default get()
//   then put(); an engine with an atomic one (vmstore: Tree::update) overrides it.
// - Failures throw std::runtime_error naming the engine and the operation.
// - stats() is cumulative since open; counters an engine does not have stay 0.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "vmstore/options.hpp"

namespace vmstore::bench {

using Durability = vmstore::Durability;

// "sync", "async", "none".
const char* durabilityName(Durability d);
// Parses "sync", "async" or "none" (exactly); false for anything else.
bool parseDurability(std::string_view text, Durability* out);

struct EngineConfig {
  std::string dir;          // an empty or non-existent directory, owned by the engine
  uint64_t poolBytes = 0;   // cache budget
  unsigned threads = 1;     // worker threads that will hold sessions
  Durability durability = Durability::kNone;  // see the contract above
  bool syncIo = false;  // vmstore: config io=sync (misses in tasks block the thread)
  std::string vmstoreConfig;  // vmstore: more config keys ("page_provider=false,..."), applied last
  // vmstore: whether a workload's transactions (Session::begin .. commit) run as
  // vmstore::Transaction; unset: unless durability is none (--transactions).
  std::optional<bool> transactions;
  // The largest value the workload writes, in bytes; 0: small values (the record and
  // TPC-C workloads). Adapters size what depends on it (docs/ENGINES.md, "Large values").
  uint64_t maxValueBytes = 0;
};

struct EngineStats {
  uint64_t pageHits = 0;      // page accesses that found the page cached (0: not reported)
  uint64_t pageMisses = 0;    // pages read from storage
  uint64_t victimNanos = 0;   // time spent choosing pages to evict (0: not reported)
  uint64_t dataBytes = 0;     // size of the data on storage now (0: not reported)
  uint64_t policyBytes = 0;   // memory of the replacement policy's structures now (vmstore)
  uint64_t residentSetBytes = 0;  // memory of the resident set now (vmstore)
  uint64_t migrateNanos = 0;      // time spent moving pages between memory tiers (vmstore tiers)
  uint64_t migratedPages = 0;     // pages moved between memory tiers, down and up
  uint64_t evictions = 0;     // pages evicted from the cache
  uint64_t bytesRead = 0;     // from storage
  uint64_t bytesWritten = 0;  // to storage
  uint64_t logBytes = 0;      // written to the engine's log (0 without one)
  uint64_t logSyncs = 0;      // flushes of the log to stable storage (fsync, fdatasync)
  uint64_t checkpoints = 0;   // checkpoints committed (vmstore; 0 where not counted)
  uint64_t logFullWaits = 0;  // writes that waited for a checkpoint to make log room (vmstore)
};

// Called with each entry in order; return false to stop.
using ScanFn = std::function<bool(std::string_view key, std::string_view value)>;

// The function of Session::update, by reference (no copy, no allocation): it gets the
// key's value in *value, may change it (to any size), and returns true to store it or
// false to leave the key as it was. It may be called more than once (vmstore calls it
// again if its log file was full); each call gets the value afresh.
class UpdateFn {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, UpdateFn>)
  UpdateFn(F&& f)  // NOLINT: implicit, from a lambda at the call
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, std::string& v) { return (*static_cast<std::remove_reference_t<F>*>(o))(v); }) {}
  bool operator()(std::string& value) const { return call_(obj_, value); }

 private:
  void* obj_;
  bool (*call_)(void*, std::string&);
};

// Thrown by a session's write when the engine gave up the open transaction (it was
// aborted, its locks released) because it may have been waiting for another in a cycle:
// the workload drops the transaction (counted as a conflict) and goes on.
struct TransactionConflict : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Session {
 public:
  virtual ~Session() = default;
  virtual void begin() {}
  // A group of a bulk load's writes, committed together so that transactional engines
  // do not commit row by row; atomicity is not asked. By default begin().
  virtual void beginLoad() { begin(); }
  virtual void commit() {}
  // Early lock release: commitNoWait() commits like commit() except that the commit may
  // not be durable yet; waitDurable() then waits until it is as durable as commit()
  // makes it. A workload holding its own locks releases them in between, so that the
  // next transaction on the same rows joins the same log flush. By default commit()
  // does both (the engine holds its durability wait inside the workload's locks).
  virtual void commitNoWait() { commit(); }
  virtual void waitDurable() {}
  // True when commitNoWait() does not wait and one waitDurable() covers every commit
  // before it (so several transactions can share one wait). False by default.
  virtual bool sharesDurableWait() const { return false; }
  virtual void abort() {}
  virtual void put(int table, std::string_view key, std::string_view value) = 0;
  // False when absent. *value is reused across calls (no allocation once it is large
  // enough).
  virtual bool get(int table, std::string_view key, std::string* value) = 0;
  // Looks up keys.size() keys: found[i] tells whether keys[i] is present, values[i] its
  // value (unspecified when absent). The vectors grow to at least keys.size() entries
  // and never shrink, so the strings past keys.size() keep their memory for a later,
  // larger call (a workload that alternates between small and large calls allocates
  // nothing once warm). By default get() per key; vmstore overrides it with
  // Tree::getMany (the keys descend together, misses in flight together), RocksDB with
  // MultiGet.
  virtual void getMany(int table, const std::vector<std::string_view>& keys, std::vector<std::string>* values,
                       std::vector<bool>* found) {
    growTo(keys.size(), values, found);
    for (size_t i = 0; i < keys.size(); i++) (*found)[i] = get(table, keys[i], &(*values)[i]);
  }
  // getMany's outputs grown to at least n entries, never shrunk.
  static void growTo(size_t n, std::vector<std::string>* values, std::vector<bool>* found) {
    if (values->size() < n) values->resize(n);
    if (found->size() < n) found->resize(n);
  }
  // False when absent.
  virtual bool del(int table, std::string_view key) = 0;
  // Read-modify-write of a present key (TPC-C's row updates): fn gets its value and
  // decides (see UpdateFn). False, with fn not called, when the key is absent. By default
  // get() then put(); vmstore overrides it with Tree::update (atomic, in place when the
  // size does not change). An exception of fn propagates, with nothing written.
  virtual bool update(int table, std::string_view key, const UpdateFn& fn) {
    if (!get(table, key, &updateBuffer_)) return false;
    if (fn(updateBuffer_)) put(table, key, updateBuffer_);
    return true;
  }
  // True when update() is atomic against every other session's update() and put() of the
  // key, so a row written only through update() needs no workload lock (TPC-C's W_YTD and
  // stock rows). Default false: get() then put() can lose a concurrent update.
  virtual bool atomicUpdate() const { return false; }
  // Entries with key >= start, ascending. fn must not call this session or engine (an
  // engine may hold the entry's page while fn runs).
  virtual void scan(int table, std::string_view start, const ScanFn& fn) = 0;
  // Entries with key <= start, descending.
  virtual void scanReverse(int table, std::string_view start, const ScanFn& fn) = 0;

 protected:
  std::string updateBuffer_;  // the value update() hands to its function, reused
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  // tables: the names of the tables; Session calls refer to them by index.
  virtual void open(const EngineConfig& config, const std::vector<std::string>& tables) = 0;
  // Whether open() accepts config.durability == d.
  virtual bool supports(Durability d) const {
    (void)d;
    return true;
  }
  // Whether sessions may run as tasks of a vmstore::TaskPool (RunOptions::inflight).
  virtual bool supportsTasks() const { return false; }
  virtual std::unique_ptr<Session> session() = 0;
  virtual EngineStats stats() { return {}; }
  // What a user runs now and then so that the data files hold every write and the engine
  // may reuse the space of what was overwritten (vmstore Database::sync, LMDB
  // mdb_env_sync, a WiredTiger checkpoint, a RocksDB flush). No session may be inside
  // begin()/commit() meanwhile. Default: nothing.
  virtual void checkpoint() {}
  // The engine's own compaction, where it has one (WiredTiger compact, RocksDB
  // CompactRange with blob garbage collection); default: nothing.
  virtual void compact() {}
  // Flushes what the engine needs to and releases everything.
  virtual void close() = 0;
};

// "vmstore", "hashbm", "lmdb", "wiredtiger", "rocksdb". Throws std::invalid_argument for
// an unknown name or an engine this build does not include (saying which package it
// needs).
std::unique_ptr<Engine> makeEngine(std::string_view name);
// The engines this build includes, in the order they are compared.
std::vector<std::string> engineNames();

}  // namespace vmstore::bench
