// OpLog: the write-ahead log of operations (DIR/log.vms), appended in commit order and
// replayed on open after the last checkpoint has been restored (wal/page_journal.hpp).
//
// Contract
// - A logical redo log: each record holds the operations of one acknowledged write
//   (wal/log_record.hpp). Records of one checkpoint interval (epoch) are appended from
//   the start of the file; after a checkpoint commits, begin(epoch + 1) recycles the log
//   from offset 0 (every record before is covered by the checkpoint). The file keeps its
//   high-water size, which a writer bounds by running a checkpoint once bytes() passes
//   log_size.
// - Appends are stores into a shared mapping of the file: a record is in the operating
//   system's page cache when append() returns, so it survives a crash of the process.
//   waitDurable(lsn) returns once everything up to lsn is on stable storage; concurrent
//   waiters share one fdatasync (group commit: whoever finds no flush running flushes
//   everything appended so far, the others wait for it). With async durability a
//   background thread flushes every sync_interval_ms.
// - LSNs count bytes appended since open, across intervals; begin() marks everything
//   before it durable (the checkpoint holds it).
// - reserve() makes room for a record before the write it logs is applied, so a full
//   device fails that write (NoSpace) before it changes anything; Busy means the log
//   is at its address-space limit and a checkpoint must recycle it first.
// - A failed fdatasync is never retried: failure() reports it from then on, every
//   waitDurable fails with it, and onSyncFailure (if set) is told once.
// - replay() reads the records of one epoch from the start, in order, up to the first
//   record that is short, torn or not of this epoch and session (salt), and hands each
//   record's operations to fn.
// - Thread-safe: append, reserve and waitDurable from any thread; open, replay,
//   startWriting, begin and close from one thread with no appender running.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "vmstore/options.hpp"
#include "vmstore/status.hpp"
#include "wal/log_record.hpp"

namespace vmstore::internal {

struct ReplayInfo {
  uint64_t records = 0;
  uint64_t operations = 0;
  uint64_t bytes = 0;
};

class OpLog {
 public:
  static constexpr const char* kFileName = "log.vms";

  OpLog() = default;
  ~OpLog();
  OpLog(const OpLog&) = delete;
  OpLog& operator=(const OpLog&) = delete;

  // Opens DIR/log.vms if it exists (a missing log is an empty one: the first append
  // creates it, so a session that only reads writes nothing).
  Status open(const std::string& dir, const Options& options);
  Status replay(uint32_t epoch, const std::function<Status(std::span<const LogOp>)>& fn, ReplayInfo* info);
  // Logging from now on (not with durability none): appends carry epoch, from offset 0.
  Status startWriting(uint32_t epoch);
  bool writing() const { return base_ != nullptr; }
  // A checkpoint of the previous epoch committed: recycle the log.
  void begin(uint32_t epoch);

  Status reserve(size_t bytes);
  void unreserve(size_t bytes);
  // Appends the record of ops; size is recordSize(ops), reserved before. Returns its end.
  uint64_t append(std::span<const LogOp> ops, size_t size);
  Status waitDurable(uint64_t lsn);
  Status flush() { return waitDurable(endLsn_.load(std::memory_order_acquire)); }
  Status failure();
  std::function<void(const Status&)> onSyncFailure;

  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }  // this interval
  uint64_t fileBytes() const;
  uint64_t flushes() const { return flushes_.load(std::memory_order_relaxed); }
  const std::string& path() const { return path_; }
  // Stops the flusher, flushes what is not durable yet (unless durability none), closes.
  Status close();

 private:
  Status create();
  Status grow(uint64_t need);  // appendMutex_ held
  void advanceDurable(uint64_t lsn);  // durable_ at least lsn; wakes the waiters
  void flusherLoop();

  Options options_;
  std::string dir_;
  std::string path_;
  int fd_ = -1;
  uint64_t salt_ = 0;
  uint32_t epoch_ = 0;
  uint8_t* base_ = nullptr;  // reservation of limit_ bytes; [0, capacity_) mapped
  uint64_t limit_ = 0;
  uint64_t step_ = 0;  // growth unit
  uint64_t capacity_ = 0;

  std::mutex appendMutex_;
  uint64_t end_ = 0;       // appended in this interval
  uint64_t reserved_ = 0;  // reserved, not yet appended
  uint64_t lsnBase_ = 0;   // LSN of offset 0 of this interval
  std::atomic<uint64_t> endLsn_{0};
  std::atomic<uint64_t> bytes_{0};

  std::atomic<uint64_t> durable_{0};      // LSN up to which the log is on stable storage
  std::atomic<bool> flushing_{false};     // a thread is in fdatasync for everyone
  std::atomic<uint32_t> flushEvents_{0};  // counts flush ends: what waiters sleep on
  std::atomic<bool> failed_{false};
  std::mutex syncMutex_;                  // failure_, stop_
  Status failure_;
  std::atomic<uint64_t> flushes_{0};

  std::thread flusher_;
  bool stop_ = false;  // under syncMutex_
  std::condition_variable wake_;
};

}  // namespace vmstore::internal
