// DatabaseImpl and TreeImpl: what stands behind the public Database and Tree.
//
// Contract
// - One DatabaseImpl per open directory; it owns the directory lock, the data file, the
//   page journal, the buffer manager, the catalog tree (name -> root page id) and every
//   Tree handle ever opened (handles of dropped trees stay, answering NotFound, until
//   close).
// - The data file is always the last committed checkpoint (wal/page_journal.hpp): a
//   crash, a failed write or a failed sync at any moment reopens at the last checkpoint
//   that committed. Creation is atomic (a temporary file, synced, renamed, directory
//   synced): a failed or killed creation leaves no data file behind (the directory and
//   its LOCK file may stay; the next open creates the database in it).
// - Writes since that checkpoint are in the operation log (wal/op_log.hpp), unless
//   durability is none: open() restores the checkpoint, replays the log's records of the
//   next interval through the same put/delete/tree calls (without logging them again),
//   then commits a checkpoint of the result, so a crash during recovery recovers again
//   from the same start. Each write reserves its log space first (a full device fails it
//   before it changes anything), applies the change, and appends its record while
//   holding its key's lock (its tree's KeyLocks), so records of one key are in the order applied.
//   With durability sync it then waits, outside every lock, for the log flush that
//   covers its record (group commit).
// - Every put, delete and update holds its key's lock (its tree's KeyLocks) across its
//   change (and log append), in every durability mode, and a batch the locks of all its
//   keys (taken in ascending order); an update holds it across its read, the caller's
//   function and its write, so no write of the key falls in between (a batch's cannot
//   either). Key locks are taken before the writer gate, and a write too large for the
//   log keeps them until the checkpoint that makes it durable has committed, so no
//   later write of its keys is logged against a value the log lacks. An update reserves
//   its log space once its function has decided, for exactly the record it logs (the
//   resulting put or delete).
// - Writers (put, delete, update, batch, tree create) hold writeGate_ (a WriterGate:
//   shared costs no shared cache line) shared; tree drops, check() and a checkpoint's
//   cut hold it exclusive, so the cut falls between whole writes, and no record of a
//   tree's keys can land after the record of its drop. Readers never touch it.
// - Checkpoints (sync, close, the background checkpointer, a writer that finds the log
//   full) never stop writers beyond the cut: the cut (under writeGate_, exclusive)
//   takes the free list, moves the buffer manager, the journal and the log to the next
//   interval, and leaves a pending snapshot; writing it (the dirty pages of
//   the snapshot's interval, with writers' copy-on-write images, buffer_manager.hpp), its
//   commit and its backfill run while writers go on. One checkpoint at a time
//   (checkpointMutex_, taken before writeGate_). A checkpoint with nothing changed
//   writes nothing. The background checkpointer runs one when the log passes three
//   eighths of log_size or the journal 1 GiB.
// - After a failed fdatasync (or a failed checkpoint past its commit point) the database
//   is read-only: every write and sync returns that error until it is reopened, since
//   what reached storage is unknown (fsyncgate). Reads go on.
// - Every call passes gate_: close() waits for the calls in flight and later calls get
//   InvalidArgument("database is closed").
// - Every engine exception is turned into a Status here; nothing throws past this layer
//   but what an update's function throws, which update() rethrows once it has let go of
//   everything, with nothing changed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/superblock.hpp"
#include "api/write_scratch.hpp"
#include "btree/btree.hpp"
#include "buffer/buffer_manager.hpp"
#include "os/data_file.hpp"
#include "os/memory.hpp"
#include "sync/call_gate.hpp"
#include "sync/key_locks.hpp"
#include "sync/writer_gate.hpp"
#include "trace/trace_recorder.hpp"
#include "vmstore/database.hpp"
#include "wal/op_log.hpp"
#include "wal/page_journal.hpp"

namespace vmstore::internal {

class DatabaseImpl;
class TxnImpl;

class TreeImpl {
 public:
  TreeImpl(DatabaseImpl* db, std::string name, uint64_t root);
  static TreeImpl* of(Tree* tree) { return tree->impl_; }
  DatabaseImpl* db;
  std::string name;
  const uint64_t serial;  // this handle's number in the process, never reused (LeafHints)
  BTree btree;
  Tree handle;
  KeyLocks keyLocks;  // its keys' locks (sync/key_locks.hpp)
};

class DatabaseImpl {
 public:
  static Status open(const std::string& dir, const Options& options, std::unique_ptr<DatabaseImpl>* out);
  ~DatabaseImpl();

  Status close();
  Status sync();
  Status openTree(std::string_view name, bool create, Tree** tree);
  Status dropTree(std::string_view name);
  Status listTrees(std::vector<std::string>* names);
  Stats stats();
  Status check(std::vector<std::string>* problems);

  Status put(TreeImpl* t, std::string_view key, std::string_view value);
  Status get(TreeImpl* t, std::string_view key, std::string* value);
  Status get(TreeImpl* t, std::string_view key, std::span<std::byte> buf, size_t* vlen);
  // Tree::putReserve: a value of len bytes written in place by fill (see database.hpp).
  Status putReserve(TreeImpl* t, std::string_view key, size_t len,
                    const std::function<Status(std::span<std::byte>)>& fill);
  // Zero-copy read (Tree::getView): on OK the value's bytes stay in place, a page held
  // shared and the call gate entered (close waits), until releaseView(t, *pinned).
  Status getView(TreeImpl* t, std::string_view key, uint64_t* pinned, const std::byte** data, size_t* len);
  void releaseView(TreeImpl* t, uint64_t pinned);
  // Tree::readOptimistic: fn's exception (of its last run) is rethrown once nothing is held.
  Status readOptimistic(TreeImpl* t, std::string_view key, Tree::ReadFn fn, void* ctx);
  // Tree::scan: fn on each entry >= start in place (BTree::scanInPlace).
  Status scan(TreeImpl* t, std::string_view start, Tree::ScanFn fn, void* ctx);
  // Tree::getMany and vms_get_many: statuses[i] is key i's outcome. First the keys whose
  // pages are resident, looked up together (BTree::lookupResident): copy(i, value) for
  // each one found, with the value in place. Then the others (pages to read, values on
  // pages of their own, a race, a bad key's error) one by one as tasks of the calling
  // thread, their misses in flight together: getOne(i) looks up key i, as get() does,
  // and returns its status. copy may be called for a key that ends with getOne, with
  // bytes that were never its value (see lookupResident): it must only copy them. If copy
  // throws (no memory for a value), the keys of its group go to getOne; getOne must not
  // throw.
  Status getMany(TreeImpl* t, std::span<const std::string_view> keys, std::span<Status> statuses,
                 const std::function<void(size_t, Bytes)>& copy, const std::function<Status(size_t)>& getOne);
  Status del(TreeImpl* t, std::string_view key);
  // Tree::update: the read, fn and the write of its change under the key's lock.
  Status update(TreeImpl* t, std::string_view key, Tree::UpdateFn fn, void* ctx);
  Status shape(TreeImpl* t, TreeShape* out);
  // The batch's operations, all or nothing; InvalidArgument (nothing written) when one of
  // its trees is of another database.
  // commit: as in writeUnder (Database::write / writeNoWait).
  Status write(const WriteBatch& batch, uint64_t* commit = nullptr);
  // write(): x.leaves[i], the leaf of op i found side by side with the others of its
  // tree (BTree::locateLeaves) when the batch has at least kLocatedWrites puts and
  // deletes of the tree: at once when they are not in ascending key order, else (x's
  // group watched) by landed() once two writes of the tree in a row missed the leaf
  // they were given (inGiven false), for the rest of them. Otherwise empty.
  static constexpr size_t kLocatedWrites = 4;
  void locateLeaves(std::span<const WriteBatch::Op> batchOps, WriteScratch& x);
  void locateGroup(std::span<const WriteBatch::Op> batchOps, WriteScratch& x, const WriteScratch::Group& g,
                   size_t after);
  void landed(std::span<const WriteBatch::Op> batchOps, WriteScratch& x, size_t i, bool inGiven);
  // Database::waitDurable: the write with this commit point is as durable as the
  // durability mode makes a write when its call returns.
  Status waitDurable(uint64_t commit);

  // A transaction (api/transaction.cpp) of this database is open on this thread
  // (api/open_here.hpp, anyHere): sync, close, dropTree and check refuse, as they would
  // wait for it forever.
  static Status openTransactionStatus() {
    return Status::Busy("a transaction of this database is open on this thread: commit or abort it first");
  }
  // ... open in this very thread or task (heldHere): its plain writes refuse.
  static Status plainWriteInTransactionStatus() {
    return Status::Busy(
        "a transaction of this database is open in this thread: write through the transaction, or commit or "
        "abort it first");
  }

  BufferManager& bufferManager() { return *bm_; }
  CallGate& gate() { return gate_; }
  bool closed() const { return gate_.closed(); }
  static Status closedStatus() { return Status::InvalidArgument("database is closed"); }

 private:
  friend class TxnImpl;  // api/transaction.cpp: writes as writeUnder and update do, held open
  DatabaseImpl() = default;
  Status create(const std::string& path);  // a new data file, atomically
  // After a failed open that created the database: removes its files (best effort).
  void removeCreated(const std::string& path);
  Status recoverAndLoad();                 // journal recovery, superblock, free list
  // A whole checkpoint: completes a pending one, then cuts and writes a new one.
  Status checkpoint();
  // checkpointMutex_ held. cutLocked: takes writeGate_ exclusively for the cut and
  // leaves pending_ (nothing if nothing changed). finishLocked: writes, commits and
  // backfills pending_.
  Status cutLocked();
  Status finishLocked();
  // finishLocked() of the pending checkpoint, if any, unless the database is read-only
  // (its error then).
  Status finishPendingLocked();
  // A writer found the log full: completes any pending checkpoint (its commit gives back
  // the room of the log file before its cut), and if that leaves too little, cuts, so
  // that appends move to the other log file; the checkpointer writes the snapshot.
  Status makeLogRoom(size_t recordBytes);
  // A writer that finds the journal larger than this runs a checkpoint, so the journal
  // (and the time to recover it) stays bounded in a long write run.
  static constexpr uint64_t kAutoCheckpointBytes = 1ull << 30;
  // Whether the log or the journal asks for a checkpoint (inline: every write asks): the
  // log's interval past five eighths of its budget (OpLog::cutDue: the file before the
  // cut is cut back once covered, so the current file may grow to three quarters). A
  // checkpoint writes most of the data file again, however little of the log it covers:
  // fewer of them win (a quarter of log_size ran async YCSB-A at 0.92-0.97x and TPC-C
  // at 0.87-0.94x of three eighths, in 20 s and 15 s pairs).
  bool checkpointDue() const { return log_.cutDue() || journal_.bytes() > kAutoCheckpointBytes; }
  void wakeCheckpointer();
  void checkpointerLoop();
  // Corruption if the directory holds a log or journal but no data file (it was lost).
  static Status refuseOrphanedFiles(const std::string& dir);
  Status migrateLegacyFiles();  // journal.vms and log.vms of an older version
  Status writable();                       // OK, or why writes are refused
  Status notPoisoned();                    // OK unless a failed sync made it read-only
  // True when nothing that writable() or notPoisoned() checks is wrong: both would
  // return OK, so a write that finds this need not call them (the usual case, inline).
  bool writesClear() const {
    return !bm_->writeBackFailing() && !pendingFailed_.load(std::memory_order_acquire) &&
           !poisoned_.load(std::memory_order_acquire);
  }
  // A write is about to change something (a load first: no shared line written per put).
  void markChanged() {
    if (!changed_.load(std::memory_order_relaxed)) changed_.store(true, std::memory_order_release);
  }
  // A change (put, delete, batch) under the call gate, the writability check, the writer
  // gate held as Lock (shared, or exclusive for a tree drop), exceptions turned into a
  // Status, and an auto-checkpoint after it.
  //
  // `allowed` says whether the write may go on (writable(), or notPoisoned() for a drop,
  // which only frees pages). With the log on, ops are the change's log record, appended
  // after the change applied, while the locks of keyLock's keys (if any) are held; a change
  // that returns anything but OK is not logged.
  // The key locks a write holds (ascending and distinct): a put's or delete's key,
  // every key of a batch; none: {}.
  struct KeyLock {
    std::span<const KeySlot> slots;
  };
  // lateValueBytes: the change itself sets the value of ops[0] (filled in place), of
  // that many bytes; the record is sized for it.
  // commit: null to wait for durability here (afterWrite); otherwise the write's commit
  // point is stored there and the caller waits with waitDurable (Database::writeNoWait).
  template <class Lock, class Fn>
  Status writeUnder(std::span<const LogOp> ops, KeyLock keyLock, Status (DatabaseImpl::*allowed)(), Fn&& change,
                    size_t lateValueBytes = 0, uint64_t* commit = nullptr);
  bool logging() const { return log_.writing() && !replaying_; }
  // A write whose log record would exceed this (a value of tens of MiB) is not logged:
  // its call returns once a checkpoint that holds it has committed (see DESIGN.md).
  size_t unloggedRecordBytes() const { return options_.log_size / 16; }
  // After such a write: the checkpoint that makes it durable.
  Status durableByCheckpoint();
  // Waits for the log flush covering lsn (durability sync) unless commit is set (then
  // *commit = lsn, for waitDurable), then wakes the checkpointer if the log or journal
  // size asks for a checkpoint.
  [[gnu::always_inline]] Status afterWrite(Status st, uint64_t lsn, uint64_t* commit = nullptr) {
    // Nothing to wait for: nothing logged, or logged under async durability into a log
    // that has not failed (a record that could not be written is not acknowledged: the
    // slow path returns the log's failure).
    if (commit == nullptr && st.ok() &&
        (lsn == 0 || (options_.durability != Durability::kSync && !log_.failed()))) [[likely]] {
      if (!replaying_ && checkpointDue()) wakeCheckpointer();
      return st;
    }
    return afterWriteSlow(std::move(st), lsn, commit);
  }
  Status afterWriteSlow(Status st, uint64_t lsn, uint64_t* commit);  // afterWrite's other cases
  Status replayLog();  // open(): the log's records after the restored checkpoint
  // replayLog: a patch record (a same-size update) applied over the key's value.
  Status replayPatch(TreeImpl* t, std::string_view key, std::string_view patch);
  // replayLog: a put or delete record applied (NotFound: a delete of an absent key);
  // hint: the leaf hint of t's last replayed write.
  Status replayWrite(TreeImpl* t, const LogOp& op, BTree::LeafHint* hint);
  void poison(const Status& why, const char* after = "a failed sync");
  Status catalogLookup(std::string_view name, uint64_t* root);
  // openTree: the tree listed in trees_, else listed from the catalog; NotFound when the
  // catalog has none. Takes treesMutex_.
  Status openExisting(std::string_view name, Tree** tree);
  std::vector<std::pair<std::string, uint64_t>> catalogEntries();

  std::string dir_;
  Options options_;
  DirectoryLock lock_;
  DataFile file_;
  PageJournal journal_;
  OpLog log_;
  bool replaying_ = false;  // open() replays the log: apply, do not log again
  // A checkpoint cut but not yet committed (under checkpointMutex_).
  struct Snapshot {
    uint32_t epoch = 0;          // the interval it holds
    uint64_t pageCount = 0;
    std::vector<uint64_t> free;  // free pages at the cut
    std::vector<uint64_t> extra; // roots of dropped trees: free on storage
    uint64_t cutLsn = 0;
  };
  std::mutex checkpointMutex_;
  std::optional<Snapshot> pending_;
  std::thread checkpointer_;
  std::mutex checkpointerMutex_;
  std::condition_variable checkpointerWake_;
  bool checkpointerStop_ = false;  // under checkpointerMutex_
  std::atomic<bool> checkpointWanted_{false};
  std::atomic<bool> pendingFailed_{false};  // pending_ left by a failed finishLocked
  Stats recovery_;          // the recovered_* and recovery_us fields of stats()
  uint64_t tlbAtOpen_ = tlbShootdowns().value_or(0);  // for stats().tlb_shootdowns
  std::unique_ptr<BufferManager> bm_;
  std::unique_ptr<TraceRecorder> trace_;  // config trace=FILE: the page references recorded
  std::unique_ptr<BTree> catalog_;
  Superblock sb_;  // of the last committed checkpoint (under checkpointMutex_ after open)
  std::atomic<uint64_t> checkpoints_{0};  // sb_.checkpoints, for stats()
  // Cuts since open and their waits for the writer gate (stats()); under checkpointMutex_.
  std::atomic<uint64_t> cuts_{0};
  std::atomic<uint64_t> logFullWaits_{0};  // makeLogRoom calls (stats: log_full_waits)
  std::atomic<uint64_t> cutWaitUs_{0};
  std::atomic<uint64_t> cutWaitMaxUs_{0};
  WriterGate writeGate_;
  // Tree creations and drops, one at a time; held while they wait for the writer gate
  // (a creation for a checkpoint that makes log room, a drop for the open transactions).
  std::mutex treeChangesMutex_;
  // trees_; never held while waiting for the writer gate (lock order: treeChangesMutex_,
  // writeGate_, treesMutex_), so openTree of an existing tree works on a thread that holds
  // a transaction.
  std::mutex treesMutex_;
  std::map<std::string, std::unique_ptr<TreeImpl>, std::less<>> trees_;
  std::vector<std::unique_ptr<TreeImpl>> droppedTrees_;
  std::atomic<bool> changed_{false};  // something changed since the last checkpoint
  std::atomic<bool> poisoned_{false};
  std::mutex poisonMutex_;
  Status poison_;
  CallGate gate_;
  bool opened_ = false;  // open() completed
  bool released_ = false;
  bool droppedRootsFreed_ = false;  // close() freed the roots of dropped trees
};

}  // namespace vmstore::internal
