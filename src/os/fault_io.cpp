#include "os/fault_io.hpp"

#include <sys/stat.h>

#include <cerrno>

namespace vmstore::internal {

void FaultIo::fail(const Rule& rule) {
  std::lock_guard g(mutex_);
  rules_.push_back({rule, 0, 0});
}

void FaultIo::clearRules() {
  std::lock_guard g(mutex_);
  rules_.clear();
}

void FaultIo::spaceLimit(uint64_t bytes) {
  std::lock_guard g(mutex_);
  limited_ = true;
  spaceLeft_ = bytes;
}

void FaultIo::clearSpaceLimit() {
  std::lock_guard g(mutex_);
  limited_ = false;
}

uint64_t FaultIo::calls(Op op) const {
  std::lock_guard g(mutex_);
  return counts_[static_cast<int>(op)];
}

bool FaultIo::shouldFail(Op op, const std::string& path) {
  std::lock_guard g(mutex_);
  counts_[static_cast<int>(op)]++;
  for (Active& a : rules_) {
    if (a.rule.op != op || path.find(a.rule.pathPart) == std::string::npos) continue;
    if (a.seen++ < a.rule.skip) continue;
    if (a.rule.times >= 0 && a.failed >= a.rule.times) continue;
    a.failed++;
    errno = a.rule.err;
    return true;
  }
  return false;
}

bool FaultIo::wouldExceedSpace(int fd, uint64_t end) {
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (end <= size) return false;
  std::lock_guard g(mutex_);
  if (!limited_) return false;
  if (end - size > spaceLeft_) {
    errno = ENOSPC;
    return true;
  }
  spaceLeft_ -= end - size;
  return false;
}

int FaultIo::open(const std::string& path, int flags, mode_t mode) {
  if (shouldFail(Op::kOpen, path)) return -1;
  return Io::open(path, flags, mode);
}

ssize_t FaultIo::pread(int fd, const std::string& path, void* buf, size_t n, uint64_t off) {
  if (shouldFail(Op::kRead, path)) return -1;
  return Io::pread(fd, path, buf, n, off);
}

ssize_t FaultIo::pwrite(int fd, const std::string& path, const void* buf, size_t n, uint64_t off) {
  if (shouldFail(Op::kWrite, path)) return -1;
  if (wouldExceedSpace(fd, off + n)) return -1;
  return Io::pwrite(fd, path, buf, n, off);
}

int FaultIo::fdatasync(int fd, const std::string& path) {
  if (shouldFail(Op::kSync, path)) return -1;
  return Io::fdatasync(fd, path);
}

int FaultIo::ftruncate(int fd, const std::string& path, uint64_t size) {
  if (shouldFail(Op::kTruncate, path)) return -1;
  struct stat st;
  if (fstat(fd, &st) == 0 && size < static_cast<uint64_t>(st.st_size)) {
    std::lock_guard g(mutex_);
    if (limited_) spaceLeft_ += static_cast<uint64_t>(st.st_size) - size;  // space comes back
  }
  return Io::ftruncate(fd, path, size);
}

int FaultIo::fallocate(int fd, const std::string& path, uint64_t size) {
  if (shouldFail(Op::kWrite, path)) return -1;
  if (wouldExceedSpace(fd, size)) return -1;
  return Io::fallocate(fd, path, size);
}

int FaultIo::rename(const std::string& from, const std::string& to) {
  if (shouldFail(Op::kRename, to)) return -1;
  return Io::rename(from, to);
}

int FaultIo::syncDir(const std::string& dir) {
  if (shouldFail(Op::kSyncDir, dir)) return -1;
  return Io::syncDir(dir);
}

}  // namespace vmstore::internal
