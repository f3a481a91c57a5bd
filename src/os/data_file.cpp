#include "os/data_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#ifdef VMSTORE_HAVE_LIBURING
#include <liburing.h>
#endif

namespace vmstore::internal {

namespace {

std::string errnoText(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

Status ioStatus(const std::string& what, int err) {
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) return Status::NoSpace(errnoText(what, err));
  return Status::IOError(errnoText(what, err));
}

}  // namespace

DirectoryLock::~DirectoryLock() { release(); }

void DirectoryLock::release() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
  fd_ = -1;
}

Status DirectoryLock::acquire(const std::string& dir) {
  std::string path = dir + "/LOCK";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ioStatus("cannot open " + path, errno);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Status::Busy("database " + dir + " is open elsewhere (this or another process)");
    }
    return ioStatus("cannot lock " + path, err);
  }
  fd_ = fd;
  return Status::OK();
}

#ifdef VMSTORE_HAVE_LIBURING
struct DataFile::Ring {
  static constexpr unsigned kDepth = 256;
  io_uring ring;
  std::mutex mutex;
  bool broken = false;
  ~Ring() { io_uring_queue_exit(&ring); }
};
#else
struct DataFile::Ring {
  static constexpr unsigned kDepth = 0;
};
#endif

DataFile::DataFile() = default;
DataFile::~DataFile() { close(); }

void DataFile::close() {
  ring_.reset();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status DataFile::open(const std::string& path, bool create) {
  path_ = path;
  int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
  fd_ = ::open(path.c_str(), flags | O_DIRECT, 0644);
  direct_ = fd_ >= 0;
  if (fd_ < 0 && errno == EINVAL) fd_ = ::open(path.c_str(), flags, 0644);  // no O_DIRECT here
  if (fd_ < 0) return ioStatus("cannot open " + path, errno);
#ifdef VMSTORE_HAVE_LIBURING
  auto ring = std::make_unique<Ring>();
  if (io_uring_queue_init(Ring::kDepth, &ring->ring, 0) == 0) ring_ = std::move(ring);
#endif
  return Status::OK();
}

Status DataFile::readPage(uint64_t pid, void* buf) const {
  char* out = static_cast<char*>(buf);
  size_t done = 0;
  while (done < kPageSize) {
    ssize_t r = pread(fd_, out + done, kPageSize - done, pid * kPageSize + done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ioStatus("read of page " + std::to_string(pid), errno);
    }
    done += static_cast<size_t>(r);
    if (done < kPageSize) {
      // A regular file reads short only at its end: the rest of the page was never
      // written (or the file was truncated). Zeros make the checksum check fail.
      std::memset(out + done, 0, kPageSize - done);
      break;
    }
  }
  return Status::OK();
}

Status DataFile::writePage(uint64_t pid, const void* buf) const {
  const char* in = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < kPageSize) {
    ssize_t r = pwrite(fd_, in + done, kPageSize - done, pid * kPageSize + done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ioStatus("write of page " + std::to_string(pid), errno);
    }
    done += static_cast<size_t>(r);
  }
  return Status::OK();
}

Status DataFile::writeBatch(std::span<const PageWrite> writes) const {
  size_t next = 0;  // writes[0, next) are done (or handed to the retry list)
  std::vector<size_t> retry;  // short or interrupted transfers, finished with pwrite
#ifdef VMSTORE_HAVE_LIBURING
  if (ring_ && !ring_->broken) {
    std::lock_guard g(ring_->mutex);
    io_uring* ring = &ring_->ring;
    while (next < writes.size() && !ring_->broken) {
      size_t n = std::min<size_t>(Ring::kDepth, writes.size() - next);
      for (size_t i = 0; i < n; i++) {
        io_uring_sqe* sqe = io_uring_get_sqe(ring);
        const PageWrite& w = writes[next + i];
        io_uring_prep_write(sqe, fd_, w.buf, kPageSize, w.pid * kPageSize);
        io_uring_sqe_set_data64(sqe, next + i);
      }
      size_t submitted = 0;
      while (submitted < n) {
        int r = io_uring_submit(ring);
        if (r == -EINTR || r == -EAGAIN || r == 0) continue;
        if (r < 0) {
          ring_->broken = true;  // entries may stay queued: never use this ring again
          break;
        }
        submitted += static_cast<size_t>(r);
      }
      Status failed;
      for (size_t done = 0; done < submitted; done++) {
        io_uring_cqe* cqe;
        int r;
        do {
          r = io_uring_wait_cqe(ring, &cqe);
        } while (r == -EINTR);
        if (r < 0) {
          ring_->broken = true;
          return ioStatus("io_uring wait", -r);
        }
        size_t idx = io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(ring, cqe);
        if (res == static_cast<int>(kPageSize)) continue;
        if (res >= 0 || res == -EINTR || res == -EAGAIN) {
          retry.push_back(idx);
        } else if (failed.ok()) {
          failed = ioStatus("write of page " + std::to_string(writes[idx].pid), -res);
        }
      }
      if (!failed.ok()) return failed;
      next += submitted;  // unsubmitted ones of a broken ring are written below
    }
  }
#endif
  for (size_t idx : retry) {
    Status st = writePage(writes[idx].pid, writes[idx].buf);
    if (!st.ok()) return st;
  }
  for (; next < writes.size(); next++) {
    Status st = writePage(writes[next].pid, writes[next].buf);
    if (!st.ok()) return st;
  }
  return Status::OK();
}

Status DataFile::sync() const {
  if (fdatasync(fd_) != 0) return ioStatus("fdatasync of " + path_, errno);
  return Status::OK();
}

uint64_t DataFile::sizeBytes() const {
  struct stat st;
  if (fstat(fd_, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace vmstore::internal
