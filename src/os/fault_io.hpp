// FaultIo: an Io backend for tests that fails chosen calls, the way SQLite's test VFS does.
//
// Contract
// - Every call is forwarded to the POSIX backend unless a rule fires first. A rule names
//   an operation, a substring of the file's path ("" matches every file), how many
//   matching calls to let through first (skip), how many to fail after that (times; -1:
//   every one) and the errno to fail with. A failed call changes nothing on storage.
// - spaceLimit(bytes): a write that would make the files written through this backend
//   grow past `bytes` in total (counting from when the limit is set) fails with ENOSPC,
//   as a full file system does. clearSpaceLimit() lifts it.
// - calls(op) counts the calls of an operation seen so far (also the failed ones).
// - Thread-safe; install with setIo() before opening the database under test.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "os/io.hpp"

namespace vmstore::internal {

class FaultIo : public Io {
 public:
  enum class Op { kOpen, kRead, kWrite, kSync, kTruncate, kRename, kSyncDir, kCount };
  struct Rule {
    Op op;
    std::string pathPart;
    uint64_t skip = 0;
    int64_t times = 1;
    int err = 5;  // EIO
  };

  void fail(const Rule& rule);
  void clearRules();
  void spaceLimit(uint64_t bytes);
  void clearSpaceLimit();
  uint64_t calls(Op op) const;

  int open(const std::string& path, int flags, mode_t mode) override;
  ssize_t pread(int fd, const std::string& path, void* buf, size_t n, uint64_t off) override;
  ssize_t pwrite(int fd, const std::string& path, const void* buf, size_t n, uint64_t off) override;
  int fdatasync(int fd, const std::string& path) override;
  int ftruncate(int fd, const std::string& path, uint64_t size) override;
  int fallocate(int fd, const std::string& path, uint64_t size) override;
  int rename(const std::string& from, const std::string& to) override;
  int syncDir(const std::string& dir) override;
  bool usesKernelOnly() const override { return false; }

 private:
  struct Active {
    Rule rule;
    uint64_t seen = 0;
    int64_t failed = 0;
  };
  // True (errno set) when a rule says this call fails.
  bool shouldFail(Op op, const std::string& path);
  bool wouldExceedSpace(int fd, uint64_t end);

  mutable std::mutex mutex_;
  std::vector<Active> rules_;
  uint64_t counts_[static_cast<int>(Op::kCount)] = {};
  bool limited_ = false;
  uint64_t spaceLeft_ = 0;
};

}  // namespace vmstore::internal
