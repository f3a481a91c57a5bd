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
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace vmstore::internal {

class Io {
 public:
  virtual ~Io() = default;
  virtual int open(const std::string& path, int flags, mode_t mode);
  virtual int close(int fd);
  virtual ssize_t pread(int fd, const std::string& path, void* buf, size_t n, uint64_t off);
  virtual ssize_t pwrite(int fd, const std::string& path, const void* buf, size_t n, uint64_t off);
  virtual int fdatasync(int fd, const std::string& path);
  virtual int ftruncate(int fd, const std::string& path, uint64_t size);
  // Allocates [0, size) on the device, growing the file's size to at least size.
  virtual int fallocate(int fd, const std::string& path, uint64_t size);
  virtual int rename(const std::string& from, const std::string& to);
  virtual int unlink(const std::string& path);
  // fsync of a directory (after creating, renaming or removing a file in it).
  virtual int syncDir(const std::string& dir);
  virtual bool usesKernelOnly() const { return true; }
};

Io& io();
// Installs `backend` (nullptr: back to POSIX). Returns the previous one.
Io* setIo(Io* backend);

}  // namespace vmstore::internal
