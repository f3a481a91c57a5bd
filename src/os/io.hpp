// Io: the one interface every storage system call of vmstore goes through, so that tests
// can inject faults beneath the engine (the way SQLite's test VFS and LevelDB's Env work).
//
// Contract
// - Each method behaves like the POSIX call it is named after and returns what it
//   returns (-1 with errno set on failure), except that every path-taking call gets the
//   full path and every fd-taking call also gets the path the fd was opened with, so a
//   fault can target one file.
// - io() is the process-wide backend; by default the POSIX one. setIo() replaces it (tests
//   only; not thread-safe against calls in flight: install it before opening databases).
// - usesKernelOnly() is true for the POSIX backend: DataFile may then bypass these calls
//   with io_uring for batches. A fault-injecting backend returns false, and every byte
//   then flows through pwrite here.
// - ioStatus(what, err) is the one translation of a failed call's errno into a Status:
//   a full device or quota (ENOSPC, EDQUOT, EFBIG) is NoSpace, everything else IOError;
//   the message is what + ": " + strerror(err).
// - mapShared() maps part of a file writable and shared (MAP_SHARED | MAP_FIXED) at an
//   address inside a reservation the caller owns: stores into it reach the file's page
//   cache at once (they survive a crash of the process) and stable storage at the next
//   fdatasync of the file. The caller keeps the mapping until it has closed the fd, and
//   removes it with munmap (or by remapping the reservation) itself.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "vmstore/status.hpp"

namespace vmstore::internal {

class Io {
 public:
  virtual ~Io() = default;
  virtual int open(const std::string& path, int flags, mode_t mode);
  virtual int close(int fd);
  virtual ssize_t pread(int fd, const std::string& path, void* buf, size_t n, uint64_t off);
  virtual ssize_t pwrite(int fd, const std::string& path, const void* buf, size_t n, uint64_t off);
  // fdatasync, ftruncate and fallocate try again when a signal interrupts them (EINTR).
  virtual int fdatasync(int fd, const std::string& path);
  virtual int ftruncate(int fd, const std::string& path, uint64_t size);
  // Allocates [offset, offset + len) on the device, growing the file's size to at least
  // offset + len. Only that range: ext4 walks every extent of the range it is given, so
  // a range from 0 costs what the whole file holds (docs/BENCHMARKS.md, stop 59).
  virtual int fallocate(int fd, const std::string& path, uint64_t offset, uint64_t len);
  virtual int rename(const std::string& from, const std::string& to);
  virtual int unlink(const std::string& path);
  // Maps [off, off + len) of the file at addr (page aligned, inside the caller's
  // reservation). 0, or -1 with errno set.
  virtual int mapShared(int fd, const std::string& path, void* addr, size_t len, uint64_t off);
  // fsync of a directory (after creating, renaming or removing a file in it).
  virtual int syncDir(const std::string& dir);
  virtual bool usesKernelOnly() const { return true; }
};

Status ioStatus(const std::string& what, int err);

// fdatasync through io(), except inside a task (task/scheduler.hpp) with the POSIX
// backend: then it goes through the task's io_uring ring and suspends only the task.
// Only for callers that hold no lock another task could need. 0, or the errno.
int syncDataInTask(int fd, const std::string& path);
// Writes all n bytes at off through io(), going on after a short write or EINTR. 0, or
// the errno (ENOSPC when a write makes no progress).
int pwriteAll(int fd, const std::string& path, const void* buf, size_t n, uint64_t off);
// Reads up to n bytes at off through io(), going on after a short read or EINTR and
// stopping at the end of the file: 0 (and *got, the bytes read), or the errno.
int preadUpTo(int fd, const std::string& path, void* buf, size_t n, uint64_t off, size_t* got);

Io& io();
// Installs `backend` (nullptr: back to POSIX). Returns the previous one.
Io* setIo(Io* backend);

}  // namespace vmstore::internal
