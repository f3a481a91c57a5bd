// DataFile: the database's data file, read and written in whole 4 KiB pages, and the
// exclusive lock on the database directory.
//
// Contract
// - The file is opened with O_DIRECT when the filesystem allows it (directBytes() tells),
//   else with the page cache. Buffers passed to readPage/writePage must be 4 KiB aligned.
// - readPage past the end of the file fills the missing part with zeros (a page that was
//   allocated but never written); the caller's checksum check then rejects it.
// - A PageWrite may span several pages (a variable-size page), written as one transfer.
// - writeBatch writes many pages with one io_uring submission (all in flight at once)
//   when liburing is available and the kernel allows it, else one pwrite each; it is
//   safe from several threads (batches are serialized). On the ring, writes that
//   continue each other in the file (in the order given) go as one vectored write of
//   up to 256 pages; a short one is written again page by page.
// - Allocate ahead (setAllocateAhead, off by default): before a write reaches past what
//   the file has allocated, the range from there is allocated (fallocate) and the size
//   extended beyond it: a 32nd of its size more, at least 1 MiB, at most 64 MiB, never
//   past the given limit; one thread at a time. Only that range: ext4 walks every extent
//   of the range it is given, which from the file's start took milliseconds a call at a
//   GiB (docs/BENCHMARKS.md, stop 59). Page writes past the old end then land in
//   allocated space inside the file: with O_DIRECT, a write into a hole or past the end
//   allocates blocks and changes the size under the inode's exclusive lock (on
//   io_uring, in kernel worker threads that contend for it); into allocated space it
//   takes the shared lock. An allocation that fails (a full device) is given back
//   (truncated), allocating ahead turns off, and the write goes on as before.
//   sizeBytes() counts the allocated space too.
// - Every system call goes through io() (os/io.hpp), so tests can inject faults; with a
//   fault-injecting backend installed, batches use pwrite, never io_uring.
// - fetchPage is readPage for the buffer manager's misses: inside a task
//   (task/scheduler.hpp) of a file with taskReads enabled, and with the POSIX backend,
//   it queues the read on the task's io_uring ring and suspends the task until it is
//   done; anywhere else it is readPage. Every other read blocks.
// - Errors are returned as Status (IOError, NoSpace), never thrown; nothing here retries
//   beyond completing short transfers.
// - DirectoryLock holds a POSIX record lock (fcntl F_SETLK) on DIR/LOCK for its lifetime,
//   plus an entry in a per-process set: a second holder, in this process or another, is
//   refused with Busy. A child forked without exec does not hold the lock (record locks
//   are not inherited), so the parent's close frees the database for others at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <sys/types.h>

#include "os/chunked_read.hpp"
#include "vmstore/status.hpp"

namespace vmstore::internal {

class DirectoryLock {
 public:
  DirectoryLock() = default;
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  Status acquire(const std::string& dir);
  void release();

 private:
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

struct PageWrite {
  uint64_t pid;
  const void* buf;      // 4 KiB aligned
  uint64_t pages = 1;   // pages [pid, pid + pages) from buf: a variable-size page
};

class DataFile {
 public:
  static constexpr size_t kPageSize = 4096;
  DataFile();
  ~DataFile();
  DataFile(const DataFile&) = delete;
  DataFile& operator=(const DataFile&) = delete;

  // Opens (create: creates if missing) the file; direct: try O_DIRECT.
  Status open(const std::string& path, bool create, bool direct = true);
  Status readPage(uint64_t pid, void* buf) const;
  Status fetchPage(uint64_t pid, void* buf) const;
  void setTaskReads(bool on) { taskReads_ = on; }
  // Reads pages [first, first + n) into buf (n * 4 KiB, aligned); pages past the end of
  // the file read as zeros. Without progress, with one call. With progress, on success
  // progress->arrived(upTo) has been called with ascending upTo, the last time with
  // n * 4 KiB, each time bytes [0, upTo) of buf were in place: a range of more than
  // kChunkBytes is read in pieces with several in flight (os/chunked_read.hpp), when
  // the thread has a ring and io() is the kernel's; else with one call, then one report.
  Status readPages(uint64_t first, size_t n, void* buf, const ChunkedReadTarget* progress = nullptr) const;
  // Writes pages [pid, pid + pages) from buf.
  Status writePage(uint64_t pid, const void* buf, uint64_t pages = 1) const;
  Status writeBatch(std::span<const PageWrite> writes) const;
  bool batchedWrites() const { return ring_ != nullptr; }
  // Allocate ahead (see the contract), up to at most limitBytes; 0 turns it off. Only a
  // file opened with O_DIRECT allocates ahead (through the page cache it gains nothing).
  // The file counts as allocated up to the smaller of usedBytes and its size: the first
  // write past that allocates (fallocate never changes what a file holds, so what lies
  // past usedBytes, pages never written or left over, is only allocated where it has
  // holes). Call with no write running.
  void setAllocateAhead(uint64_t limitBytes, uint64_t usedBytes = UINT64_MAX);
  Status sync() const;  // fdatasync
  Status truncate(uint64_t pages) const;
  // Allocates pages [from, to) on the device (the file grows to at least `to` pages).
  // Pages below `from` are left as they are.
  Status allocate(uint64_t from, uint64_t to) const;
  void close();
  uint64_t sizeBytes() const;
  bool directIo() const { return direct_; }
  const std::string& path() const { return path_; }

 private:
  struct Ring;
  // The outcome of reading page pid into buf (r: bytes read, or -errno): a short read
  // leaves zeros in the rest of the page.
  Status pageRead(uint64_t pid, void* buf, ssize_t r) const;
  // readPages' one-call read (no progress).
  Status readPagesAt(uint64_t first, size_t n, char* out) const;
  // Allocates ahead (see the contract) so that the file has space up to at least end;
  // does nothing when allocating ahead is off or has failed.
  void allocateTo(uint64_t end) const;
  int fd_ = -1;
  bool direct_ = false;
  uint64_t aheadLimit_ = 0;                     // 0: no allocating ahead
  mutable std::atomic<uint64_t> allocated_{0};  // bytes [0, allocated_) are allocated
  mutable std::atomic<bool> aheadFailed_{false};
  mutable std::mutex aheadMutex_;
  bool taskReads_ = false;
  std::unique_ptr<Ring> ring_;
  std::string path_;
};

}  // namespace vmstore::internal
