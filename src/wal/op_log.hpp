// OpLog: the write-ahead log of operations, appended in commit order and replayed on
// open after the last checkpoint has been restored (wal/page_journal.hpp).
//
// Contract
// - A logical redo log: each record holds the operations of one acknowledged write
//   (wal/log_record.hpp). Records of checkpoint interval (epoch) e are appended from the
//   start of the log file of e's parity, DIR/log-0.vms or DIR/log-1.vms. cut(e + 1), at
//   a checkpoint's cut, switches to the other file from offset 0; covered(lsn), once
//   checkpoint e has committed, marks everything before the cut durable (the checkpoint
//   holds it) and cuts the file before the cut back to a quarter of the budget (what
//   log_size leaves beside the ring), which stays allocated for its next interval.
// - The files and the ring stay under log_size together: the two files share the budget
//   unevenly, as the current file may grow to the budget less what the other file holds
//   on the device. Appends stop (Busy) there. While a checkpoint writes, the other file
//   holds the interval it covers; once covered it is cut back, and the current file may
//   use three quarters of the budget. cutDue() says when a checkpoint's cut should
//   switch files: at five eighths of the budget, which leaves the checkpoint after the
//   cut about a third of the budget of appends to commit in. (Two halves, cut at three eighths, made a
//   checkpoint of nearly the whole data file every three eighths of log_size: YCSB-A
//   dirties every leaf within seconds.) A file grows by doubling, by at most a
//   sixteenth of the budget at a time, so it holds little more than its records when
//   its interval is cut.
// - Appends go through the ring (DIR/log-ring.vms, a small file mapped shared, at most
//   4 MiB): a record is copied into it at its file offset modulo the ring's size, so it
//   is in the operating system's page cache when append() returns and survives a crash
//   of the process without a system call per write, and the ring's lines stay in the
//   CPU's caches (a log mapped whole is stored into at fresh, cold lines and faults in a
//   new page every 4 KiB). The write-out copies what the ring holds into the interval's
//   file with pwrite, in order: at each flush, at a cut, and (async) on a writer
//   thread of its own once the ring is half full (so it drains while the flusher waits
//   in its periodic fdatasync). A record that does not fit the ring now (larger
//   than a quarter of it, or the ring full of records not yet written out) is written
//   to its place in the file directly, under the append lock. With direct_io (on a
//   file system that allows O_DIRECT; async or sync) the write-out bypasses the page
//   cache, so the log's files do not fill it and a flush copies nothing: whole 4 KiB
//   blocks of the ring go out with O_DIRECT, from the block that holds the first byte
//   not yet written out (its bytes before that are written again as they were, so a torn
//   write cannot lose them; the ring keeps them until then, and keeps whole a record the
//   file holds only part of). A flush or cut writes the last block whole too, with what
//   the ring holds past the records (later records, maybe half copied, or an earlier
//   lap's bytes: replay refuses both, by offset and sums, and the next write-out writes
//   the block again); a record written directly that would start in that block waits
//   until that write is done. The background write-out of a half-full ring writes whole
//   blocks only. Blocks that hold a record written directly go through the page cache.
//   The ring itself is never synced: the files are. Replay reads each record from its file, and from the ring
//   where the file does not hold it whole; the ring's size is its file's, so a log left
//   by a session with another log_size is still read right. The ring is created by the
//   first reservation of a session (one that only reads writes nothing).
//   waitDurable(lsn) returns once everything up to lsn is on stable storage; concurrent
//   waiters share one flush (group commit: whoever finds no flush running writes out
//   and syncs everything appended so far, the file before the last cut first if needed;
//   the others wait for it). Waiters inside tasks (task mode) ask a committer thread to
//   flush instead; it first waits up to commit_delay_us for more commits to share the
//   flush, while their threads have other tasks to run, and flushes at once when a
//   waiter's thread has nothing else to run (Scheduler::othersRunnable). With async
//   durability a background thread flushes every sync_interval_ms. With sync
//   durability and log_zero_fill, a background thread (the preparer) keeps the current
//   file zero-filled and synced a few MiB ahead of the appends: a flush then writes
//   into initialized blocks, and its fdatasync does not also convert freshly allocated
//   (unwritten) extents, a metadata write of its own.
//   The zeros go only past the last appended record, placed under the append lock and
//   written outside it, a chunk at a time (with O_DIRECT write-outs: whole blocks with
//   O_DIRECT, from the block after the records'); a write to the file that would reach
//   a chunk in flight waits for it. A failed
//   zero write only stops the zero-filling, a failed sync of it fails the log, and a
//   flush whose own syncs succeeded while it ran reports that failure too (the error is
//   reported once, and the zero-fill's sync may have taken it from the flush's pages).
// - LSNs count bytes appended since open, across files and intervals.
// - reserve() makes room for a record before the write it logs is applied, so a full
//   device fails that write (NoSpace) before it changes anything; Busy means the file
//   is full and a checkpoint's cut must switch files first.
// - A failed fdatasync or write-out is never retried: failure() reports it from then
//   on, every waitDurable fails with it, and onSyncFailure (if set) is told once,
//   before any waitDurable or failure() returns it (it must not call into the log). A
//   record whose direct write failed is not in the log: append() still returns its
//   LSN, and failure() says so (the caller checks it after appending). Once the log
//   has failed, append() stores nothing (it still returns an LSN; failure() says so):
//   after a cut whose write-out failed, the interval before it is in the ring only, and
//   the next interval's records would be copied over it.
// - replay(e) reads the records of epoch e from the start of its file, in order, up to
//   the first record that is short, torn or not of this epoch and session (salt), and
//   hands each record's operations to fn. It reads what it replays and little more: the
//   file in chunks growing from 64 KiB, and the ring only once a record must come from
//   it (a log that ends in its file, as after a clean close, reads one ring header).
// - setDatabaseId(id), before replay and startWriting, binds the log to its database:
//   every session's salt carries the id's low 32 bits, and replay refuses (Corruption)
//   a file whose records are whole and of the right epoch but carry another database's
//   id (a log copied or left in from elsewhere), instead of replaying it or reusing the
//   file. Id 0 (a database created before format version 4): salts are random, nothing
//   is checked. refuseForeign() does the same for a file whose first record is of
//   another interval, which replay would not read and the next cut would overwrite.
// - Thread-safe: append, reserve, cut, covered and waitDurable from any thread (cut
//   while no reservation is open); open, replay, discard, startWriting and close from one
//   thread with no appender running.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "sync/spin_mutex.hpp"
#include "vmstore/options.hpp"
#include "vmstore/status.hpp"
#include "wal/log_record.hpp"

namespace vmstore::internal {

struct ReplayInfo {
  uint64_t records = 0;
  uint64_t operations = 0;
  uint64_t bytes = 0;      // of the records replayed
  uint64_t readBytes = 0;  // read from the log's files to find them
};

class OpLog {
 public:
  // The log file of epochs of this parity.
  static std::string fileName(uint32_t epoch) { return epoch % 2 == 0 ? "log-0.vms" : "log-1.vms"; }
  static std::string ringFileName() { return "log-ring.vms"; }

  OpLog() = default;
  ~OpLog();
  OpLog(const OpLog&) = delete;
  OpLog& operator=(const OpLog&) = delete;

  // Opens the log files that exist (a missing one is empty: the first append creates
  // it, so a session that only reads writes nothing).
  Status open(const std::string& dir, const Options& options);
  void setDatabaseId(uint64_t id) { databaseTag_ = static_cast<uint32_t>(id); }
  Status replay(uint32_t epoch, const std::function<Status(std::span<const LogOp>)>& fn, ReplayInfo* info);
  // Refuses (Corruption, as replay) a log file whose first record is whole and carries
  // another database's id, whatever its interval, before recovery and the next cut would
  // overwrite it. Nothing is checked for id 0.
  Status refuseForeign() const;
  // After a checkpoint holding everything replayed: empties both files and the ring
  // (synced), so no record is replayed twice.
  Status discard();
  // Logging from now on (not with durability none): appends carry epoch, from offset 0.
  Status startWriting(uint32_t epoch);
  bool writing() const { return writing_; }
  // A checkpoint's cut: later appends carry epoch, in its file from offset 0. Returns
  // the LSN of the cut (every record before it belongs to the checkpoint).
  uint64_t cut(uint32_t epoch);
  // Everything before lsn is in a committed checkpoint: durable.
  // Cuts the file before the cut back (see above); a failure to do so only leaves the
  // current file less room (cuts come earlier).
  void covered(uint64_t lsn);
  // The current interval holds enough of the log for a checkpoint's cut (inline: every
  // write asks, DatabaseImpl::checkpointDue).
  bool cutDue() const { return bytes_.load(std::memory_order_relaxed) > cutAt_; }

  Status reserve(size_t bytes);
  bool fits(size_t bytes) const { return bytes <= budget_ - keep_; }  // in an empty file beside a covered one
  bool room(size_t bytes) const;  // reserve(bytes) would not be Busy now
  void unreserve(size_t bytes);
  // Appends the record of ops; size is recordSize(ops), reserved before. Returns its end.
  uint64_t append(std::span<const LogOp> ops, size_t size);
  Status waitDurable(uint64_t lsn);
  uint64_t endLsn() const { return endLsn_.load(std::memory_order_acquire); }  // appended so far
  Status flush() { return waitDurable(endLsn()); }
  Status failure();
  bool failed() const { return failed_.load(std::memory_order_acquire); }  // failure() is not OK
  std::function<void(const Status&)> onSyncFailure;

  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }  // this interval
  uint64_t fileBytes() const;  // both files and the ring
  uint64_t flushes() const { return flushes_.load(std::memory_order_relaxed); }
  std::string path() const;  // the file of the current interval
  // Stops the flusher, flushes what is not durable yet (unless durability none), closes.
  Status close();

 private:
  struct Segment {  // one log file
    std::string path;
    int fd = -1;
    uint64_t capacity = 0;    // allocated in the file (fallocate): records may go up to here
    uint64_t written = 0;     // [0, written) of this interval is in the file (writeMutex_)
    // Where the first record not yet wholly in the file starts (writeMutex_): written,
    // unless a whole-block write-out ended inside a record.
    uint64_t whole = 0;
    uint64_t zeroed = 0;      // sync: [0, zeroed) zero-filled by the preparer this session (appendMutex_)
    int directFd = -1;        // the same file opened O_DIRECT for whole-block write-outs; -1: none
  };
  struct Ring {  // the mapped ring every small record is copied into first
    std::string path;
    int fd = -1;
    uint8_t* base = nullptr;  // bytes, mapped shared; nullptr until the first reservation
    uint64_t bytes = 0;
  };
  // A record written to the file directly, not through the ring: the write-out skips it.
  struct Direct {
    uint64_t offset;
    uint64_t size;
  };
  Status create(const std::string& path, int* fd);  // a log file, O_CREAT, directory synced
  // With direct_io: opens seg's file O_DIRECT as well, if the file system allows it.
  void openDirect(Segment& seg);
  Status grow(Segment& seg, uint64_t need);  // appendMutex_ held
  // appendMutex_ held: the current file's limit, the budget less what the other file
  // holds (its capacity); 0 when it holds the whole budget.
  void setLimit();
  // The other file cut back to keep_ (its records are covered, or stale at the start of
  // a session): otherToShrink() (appendMutex_ held) is its descriptor if it holds more,
  // else -1; shrunk() (appendMutex_ held) records the ftruncate's success.
  int otherToShrink() const;
  void shrunk();
  Status mapRing();                          // appendMutex_ held
  static uint64_t sizeOf(int fd);
  // writeMutex_ held: pwrites [seg.written, upTo) of the interval from the ring, except
  // the direct records (sorted; directEnd: where the interval's last one ends). With
  // wholeBlocks, only up to the last whole 4 KiB block (O_DIRECT only). A failure is the
  // log's (failed_).
  Status writeOut(Segment& seg, uint64_t upTo, const std::vector<Direct>& direct, uint64_t directEnd,
                  bool wholeBlocks = false);
  // Writes out everything appended up to lsn (takes writeMutex_); wholeBlocks as above.
  Status writeOutTo(uint64_t lsn, bool wholeBlocks = false);
  // The ring's bytes before this file offset may be overwritten: the written-out
  // position, or with O_DIRECT write-outs the start of its block (rewritten next time),
  // and never a byte of a record the file does not hold whole (replay takes a record
  // whole from the file or from the ring, never a part from each).
  uint64_t ringFreeBefore(const Segment& seg) const;
  // writeMutex_ held: where the first record that ends past `to` starts, walking the
  // records' headers in the ring from `from` (a record start at or before `to`; direct
  // records, not in the ring, are stepped over by their sizes).
  uint64_t recordStartBefore(uint64_t from, uint64_t to, const std::vector<Direct>& direct) const;
  // The record at file offset off of epoch's interval, as the ring holds it (ring: the
  // ring file's bytes), copied whole into out.
  RecordCheck ringRecord(const std::vector<uint8_t>& ring, uint64_t off, uint32_t epoch, uint64_t* salt,
                         std::vector<uint8_t>* out, size_t* size, std::vector<LogOp>* ops) const;
  static Status foreign(const std::string& path);  // the file holds another database's log
  void fail(const Status& st);  // records the failure once, wakes waiters, tells onSyncFailure
  void advanceDurable(uint64_t lsn);  // durable_ at least lsn; wakes the waiters
  // Raises the flag and wakes the thread that waits for it on cv.
  void ask(std::atomic<bool>& wanted, std::condition_variable& cv);
  void flusherLoop();   // async: the sync every sync_interval_ms
  void writerLoop();    // async: the write-out of a half-full ring
  void preparerLoop();  // sync
  void committerLoop();  // sync: flushes for waiters inside tasks
  // The committer's wait before a flush, for more commits to share it: up to
  // commit_delay_us, ended early by a waiter whose thread has nothing else to run.
  void gatherCommits();
  void prepareAhead();  // sync: zero-fills the current file ahead of the appends, syncs it
  // Returns once no chunk of zeros that starts below this file offset is being written.
  void waitForZeros(uint64_t below);
  // After a flush's own syncs succeeded: waits until no sync of the preparer is running,
  // then returns the log's failure (OK if none).
  Status preparerSyncOutcome();

  Options options_;
  std::string dir_;
  Segment segs_[2];
  int cur_ = 0;  // segment of the current interval
  uint64_t salt_ = 0;
  uint32_t databaseTag_ = 0;  // low 32 bits of the database id in every salt (0: none)
  uint32_t epoch_ = 0;
  uint64_t budget_ = 0;    // what log_size leaves beside the ring, for the two files
  uint64_t keep_ = 0;      // what a covered file keeps allocated: a quarter of the budget
  uint64_t step_ = 0;      // a file grows by at most this at a time
  uint64_t cutAt_ = ~0ull;  // cutDue() past this many bytes in the interval
  // The current file's limit (setLimit, under appendMutex_; room() reads it without):
  // it changes at a cut and when the other file is cut back.
  std::atomic<uint64_t> limit_{0};
  Ring ring_;
  uint64_t ringRecord_ = 0;  // records up to this size go through the ring
  bool writing_ = false;
  bool zeroFill_ = false;  // sync and log_zero_fill: the preparer runs

  // Cache lines by who writes them: what every append writes under the mutex (one line
  // moves between the appending cores, not three), what every reservation adds to, the
  // write-out's, the group commit's. The fields above change only at a cut or open.
  alignas(64) SpinMutex appendMutex_;  // short sections: seal and copy one record
  uint64_t end_ = 0;  // appended in this interval
  std::vector<Direct> direct_;  // this interval's records not in the ring, not yet written out
  uint64_t directEnd_ = 0;      // where this interval's last such record ends
  uint64_t lsnBase_ = 0;   // LSN of offset 0 of this interval (the last cut)
  std::atomic<uint64_t> endLsn_{0};
  std::atomic<uint64_t> bytes_{0};
  // Appended plus reserved in this interval, and the current file's allocated size: a
  // reservation that fits is one atomic add, without the mutex.
  alignas(64) std::atomic<uint64_t> claimed_{0};
  std::atomic<uint64_t> allocated_{0};
  // Write-out (pwrite of appended records) in order: held across the pwrite, taken before
  // appendMutex_ (cut writes the old interval out under it before switching files).
  alignas(64) std::mutex writeMutex_;
  std::atomic<uint64_t> writtenLsn_{0};  // everything before it is in the file
  std::atomic<uint64_t> writtenOff_{0};  // ringFreeBefore(the current file), for appends
  // A write-out's last block (a flush writes it whole with O_DIRECT): where it ends
  // (set under appendMutex_ when the write-out takes its snapshot), and 1 while the
  // write-out runs (2: with a waiter; a futex word). A record written to the file
  // directly that starts before tailBlockEnd_ waits for 0.
  uint64_t tailBlockEnd_ = 0;
  std::atomic<uint32_t> tailBusy_{0};
  std::atomic<bool> writeOutWanted_{false};  // async: the writer is asked to write out
  std::atomic<bool> prepareWanted_{false};   // sync: the preparer is asked to zero-fill ahead
  // The preparer's chunk of zeros in flight (written outside appendMutex_): where it
  // starts, and 1 while it is written (2: with a waiter; a futex word; set under
  // appendMutex_).
  std::atomic<uint64_t> zeroFrom_{0};
  std::atomic<uint32_t> zeroBusy_{0};

  alignas(64) std::atomic<uint64_t> durable_{0};      // LSN up to which the log is on stable storage
  std::atomic<bool> flushing_{false};     // a thread is in fdatasync for everyone
  std::atomic<uint32_t> flushEvents_{0};  // counts flush ends: what waiters sleep on
  // Odd while the preparer syncs its zeros: a flush that succeeds meanwhile waits for that
  // sync's outcome (preparerSyncOutcome), which may have taken the file's error.
  std::atomic<uint32_t> preparerSyncs_{0};
  std::atomic<bool> failed_{false};
  std::mutex syncMutex_;                  // failure_, stop_, wake_, writerWake_
  Status failure_;
  std::atomic<uint64_t> flushes_{0};

  // Waiters inside tasks (sync) ask the committer thread to flush, so that the flush's
  // end is seen when the disk is done, not when their thread's task round is.
  alignas(64) std::atomic<uint64_t> requested_{0};  // the highest LSN a task waits for
  std::atomic<uint32_t> requestSeq_{0};             // counts requests: the committer sleeps on it
  std::atomic<bool> committerAsleep_{false};
  // Counts waiters whose thread has nothing else to run: the committer's gathering wait
  // (commit_delay_us) ends at once when it moves.
  std::atomic<uint32_t> hurry_{0};
  uint32_t hurrySeen_ = 0;  // hurry_ as the committer last saw it (its thread only)
  std::atomic<bool> stopCommitter_{false};
  std::thread committer_;

  std::thread flusher_;  // the flusher (async) or the preparer (sync)
  std::thread writer_;   // async: writes out the ring while the flusher syncs
  bool stop_ = false;  // under syncMutex_
  std::condition_variable wake_;       // the flusher and the preparer
  std::condition_variable writerWake_;  // the writer (writeOutWanted_)
};

}  // namespace vmstore::internal
