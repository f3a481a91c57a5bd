#include "os/data_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>
#include <thread>
#include <vector>

#include "os/io.hpp"
#include "task/scheduler.hpp"

#ifdef VMSTORE_HAVE_LIBURING
#include <liburing.h>
#endif

namespace vmstore::internal {

namespace {

// Allocating ahead allocates in multiples of this many bytes (at least one).
constexpr uint64_t kAheadStep = 1 << 20;
// The most pages one vectored write of writeBatch carries (IOV_MAX is 1024).
constexpr size_t kMaxRunIovecs = 256;

// Directories locked by this process, by the identity of their LOCK file. POSIX record
// locks do not conflict within one process, so this set refuses the second open here.
std::mutex lockedMutex;
std::set<std::pair<dev_t, ino_t>> lockedFiles;

}  // namespace

DirectoryLock::~DirectoryLock() { release(); }

void DirectoryLock::release() {
  if (fd_ < 0) return;
  std::lock_guard g(lockedMutex);
  lockedFiles.erase({dev_, ino_});
  ::close(fd_);  // closing the descriptor releases the record lock
  fd_ = -1;
}

Status DirectoryLock::acquire(const std::string& dir) {
  std::string path = dir + "/LOCK";
  std::lock_guard g(lockedMutex);
  // Check this process first: opening and closing a second descriptor of a LOCK file
  // that this process holds would drop its record lock.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && lockedFiles.count({st.st_dev, st.st_ino}) != 0) {
    return Status::Busy("database " + dir + " is already open in this process");
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ioStatus("cannot open " + path, errno);
  // A process-associated record lock (not flock): a child forked without exec does not
  // inherit it, so the database is free again as soon as its opener closes it or dies.
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (fcntl(fd, F_SETLK, &fl) != 0 || fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EAGAIN || err == EACCES) {
      return Status::Busy("database " + dir + " is open in another process");
    }
    return ioStatus("cannot lock " + path, err);
  }
  fd_ = fd;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  lockedFiles.insert({dev_, ino_});
  return Status::OK();
}

#ifdef VMSTORE_HAVE_LIBURING
struct DataFile::Ring {
  static constexpr unsigned kDepth = 256;  // requests in flight at once (each up to kMaxRunIovecs pages)
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
  if (fd_ >= 0) io().close(fd_);
  fd_ = -1;
}

Status DataFile::open(const std::string& path, bool create, bool direct) {
  path_ = path;
  int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
  fd_ = -1;
  if (direct) fd_ = io().open(path, flags | O_DIRECT, 0644);
  direct_ = fd_ >= 0;
  if (fd_ < 0 && (!direct || errno == EINVAL)) fd_ = io().open(path, flags, 0644);  // no O_DIRECT here
  if (fd_ < 0) return ioStatus("cannot open " + path, errno);
#ifdef VMSTORE_HAVE_LIBURING
  if (io().usesKernelOnly()) {
    auto ring = std::make_unique<Ring>();
    if (io_uring_queue_init(Ring::kDepth, &ring->ring, 0) == 0) ring_ = std::move(ring);
  }
#endif
  return Status::OK();
}

Status DataFile::pageRead(uint64_t pid, void* buf, ssize_t r) const {
  if (r < 0) return ioStatus("read of page " + std::to_string(pid), static_cast<int>(-r));
  size_t done = static_cast<size_t>(r);
  if (done < kPageSize) {
    // A regular file reads short only at its end: the rest of the page was never
    // written (or the file was truncated). Zeros make the checksum check fail.
    std::memset(static_cast<char*>(buf) + done, 0, kPageSize - done);
  }
  return Status::OK();
}

Status DataFile::readPage(uint64_t pid, void* buf) const {
  ssize_t r;
  do {
    // Always the whole page from its start: O_DIRECT needs aligned offsets.
    r = io().pread(fd_, path_, buf, kPageSize, pid * kPageSize);
    if (r < 0) r = -errno;
  } while (r == -EINTR);
  return pageRead(pid, buf, r);
}

Status DataFile::fetchPage(uint64_t pid, void* buf) const {
  task::Scheduler* s = taskReads_ ? task::Scheduler::current() : nullptr;
  if (s == nullptr || !s->hasRing() || !io().usesKernelOnly()) return readPage(pid, buf);
  // Fault the frame in first: io_uring then issues the read at once, where a frame not
  // yet mapped makes it hand the read to a kernel worker thread (io-wq).
  *static_cast<volatile char*>(buf) = 0;
  ssize_t r;
  do {
    r = s->pread(fd_, buf, kPageSize, pid * kPageSize);
  } while (r == -EINTR || r == -EAGAIN);
  return pageRead(pid, buf, r);
}

Status DataFile::readPages(uint64_t first, size_t n, void* buf, const ChunkedReadTarget* progress) const {
  char* out = static_cast<char*>(buf);
  const size_t bytes = n * kPageSize;
  size_t whole = 0;  // pages [0, whole) of buf are in place
  if (progress != nullptr && bytes > kChunkBytes && io().usesKernelOnly()) {
    size_t prefix = 0;
    int err = readChunked(fd_, buf, bytes, first * kPageSize, *progress, &prefix);
    if (err == 0 && prefix == bytes) return Status::OK();
    if (err != 0 && err != ENOSYS) {
      return ioStatus("read of pages " + std::to_string(first) + ".." + std::to_string(first + n - 1), err);
    }
    whole = prefix / kPageSize;  // a piece read short (or no ring): finished below
  }
  Status st = readPagesAt(first + whole, n - whole, out + whole * kPageSize);
  if (st.ok() && progress != nullptr) progress->arrived(progress->ctx, bytes);
  return st;
}

Status DataFile::readPagesAt(uint64_t first, size_t n, char* out) const {
  size_t bytes = n * kPageSize;
  ssize_t r;
  do {
    r = io().pread(fd_, path_, out, bytes, first * kPageSize);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return ioStatus("read of pages " + std::to_string(first) + ".." + std::to_string(first + n - 1), errno);
  size_t done = static_cast<size_t>(r);
  if (done % kPageSize != 0 && done < bytes) {
    // Short in the middle of a page (not at the end of the file): finish page by page.
    size_t whole = done / kPageSize;
    for (size_t i = whole; i < n; i++) {
      Status s = readPage(first + i, out + i * kPageSize);
      if (!s.ok()) return s;
    }
    return Status::OK();
  }
  if (done < bytes) std::memset(out + done, 0, bytes - done);
  return Status::OK();
}

void DataFile::setAllocateAhead(uint64_t limitBytes, uint64_t usedBytes) {
  std::lock_guard g(aheadMutex_);
  aheadLimit_ = direct_ ? limitBytes : 0;
  allocated_.store(std::min(usedBytes, sizeBytes()), std::memory_order_release);
  aheadFailed_.store(false, std::memory_order_relaxed);
}

void DataFile::allocateTo(uint64_t end) const {
  if (aheadLimit_ == 0 || end <= allocated_.load(std::memory_order_acquire)) return;
  if (aheadFailed_.load(std::memory_order_acquire)) return;
  std::lock_guard g(aheadMutex_);
  const uint64_t from = allocated_.load(std::memory_order_relaxed);
  if (end <= from || aheadFailed_.load(std::memory_order_relaxed)) return;
  const uint64_t ahead = std::clamp<uint64_t>(from / 32, kAheadStep, 64 * kAheadStep);
  const uint64_t target = std::max(end, std::min(aheadLimit_, (end + ahead) / kAheadStep * kAheadStep));
  // Writes that reach past `from` wait here, and the others end before it: nothing is
  // written past max(from, the file's size now) while this runs.
  const uint64_t keep = std::max(from, sizeBytes());
  if (io().fallocate(fd_, path_, from, target - from) != 0) {
    // A full device (or a file system without fallocate): what the call took goes back,
    // so that allocating ahead never takes space a page write could have had, and the
    // write that needed it goes on as without. Not tried again in this open: each try
    // would fail the same way, on the write path.
    if (sizeBytes() > keep) (void)io().ftruncate(fd_, path_, keep);
    aheadFailed_.store(true, std::memory_order_release);
    return;
  }
  allocated_.store(target, std::memory_order_release);
}

Status DataFile::writePage(uint64_t pid, const void* buf, uint64_t pages) const {
  allocateTo((pid + pages) * kPageSize);
  const char* in = static_cast<const char*>(buf);
  const size_t bytes = pages * kPageSize;
  size_t done = 0;
  for (int shortWrites = 0; done < bytes;) {
    // Whole pages from a page start: O_DIRECT needs aligned offsets. A short write (only
    // possible when the device fills up) goes on from the last whole page, a few times.
    ssize_t r = io().pwrite(fd_, path_, in + done, bytes - done, pid * kPageSize + done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ioStatus("write of page " + std::to_string(pid + done / kPageSize) + " of " + path_, errno);
    }
    size_t whole = static_cast<size_t>(r) / kPageSize * kPageSize;
    if (whole == bytes - done) return Status::OK();
    if (++shortWrites > 3) {
      return ioStatus("write of page " + std::to_string(pid + done / kPageSize) + " of " + path_, ENOSPC);
    }
    done += whole;
  }
  return Status::OK();
}

Status DataFile::writeBatch(std::span<const PageWrite> writes) const {
  uint64_t end = 0;
  for (const PageWrite& w : writes) end = std::max(end, (w.pid + w.pages) * kPageSize);
  allocateTo(end);
  size_t next = 0;  // writes[0, next) are done (or handed to the retry list)
  std::vector<size_t> retry;  // writes of short or interrupted transfers, finished with pwrite
#ifdef VMSTORE_HAVE_LIBURING
  std::unique_lock<std::mutex> ringLock;
  if (ring_) ringLock = std::unique_lock(ring_->mutex);
  if (ring_ && !ring_->broken) {
    io_uring* ring = &ring_->ring;
    // Writes that continue each other in the file (a journal's frames always do; sorted
    // evictions often) go as one vectored write: the file system handles one request
    // (and, for space allocated ahead, one conversion of unwritten extents, under the
    // inode's lock) instead of one per page.
    std::vector<iovec> iov(writes.size());
    struct Run {
      size_t first;
      size_t count;
      uint64_t bytes;
    };
    std::vector<Run> runs;
    for (size_t i = 0; i < writes.size(); i++) {
      const PageWrite& w = writes[i];
      iov[i] = {const_cast<void*>(w.buf), static_cast<size_t>(w.pages * kPageSize)};
      const PageWrite* prev = i > 0 ? &writes[i - 1] : nullptr;
      if (!runs.empty() && prev->pid + prev->pages == w.pid && runs.back().count < kMaxRunIovecs) {
        runs.back().count++;
        runs.back().bytes += iov[i].iov_len;
      } else {
        runs.push_back({i, 1, iov[i].iov_len});
      }
    }
    size_t nextRun = 0;
    while (nextRun < runs.size() && !ring_->broken) {
      size_t n = std::min<size_t>(Ring::kDepth, runs.size() - nextRun);
      for (size_t i = 0; i < n; i++) {
        io_uring_sqe* sqe = io_uring_get_sqe(ring);
        const Run& r = runs[nextRun + i];
        io_uring_prep_writev(sqe, fd_, &iov[r.first], static_cast<unsigned>(r.count), writes[r.first].pid * kPageSize);
        io_uring_sqe_set_data64(sqe, nextRun + i);
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
      unsigned waitFailures = 0;
      for (size_t done = 0; done < submitted; done++) {
        io_uring_cqe* cqe;
        int r;
        do {
          r = io_uring_wait_cqe(ring, &cqe);
        } while (r == -EINTR);
        if (r < 0) {
          // Writes may still be in flight: never let callers reuse their buffers while
          // the kernel holds them. Keep waiting, then report the failure.
          ring_->broken = true;
          if (failed.ok()) failed = ioStatus("io_uring wait", -r);
          if (++waitFailures > 10000) return failed;  // the ring itself is unusable
          done--;
          std::this_thread::yield();
          continue;
        }
        const Run& run = runs[io_uring_cqe_get_data64(cqe)];
        int res = cqe->res;
        io_uring_cqe_seen(ring, cqe);
        if (res >= 0 && static_cast<uint64_t>(res) == run.bytes) continue;
        if (res >= 0 || res == -EINTR || res == -EAGAIN) {
          for (size_t k = 0; k < run.count; k++) retry.push_back(run.first + k);  // rewritten whole
        } else if (failed.ok()) {
          failed = ioStatus("write of page " + std::to_string(writes[run.first].pid) +
                                (run.count > 1 ? " (and the " + std::to_string(run.count - 1) + " after it)" : "") +
                                " of " + path_,
                            -res);
        }
      }
      if (!failed.ok()) return failed;
      nextRun += submitted;
    }
    // Unsubmitted runs of a broken ring are written below, one pwrite each.
    next = nextRun < runs.size() ? runs[nextRun].first : writes.size();
  }
#endif
  for (size_t idx : retry) {
    Status st = writePage(writes[idx].pid, writes[idx].buf, writes[idx].pages);
    if (!st.ok()) return st;
  }
  for (; next < writes.size(); next++) {
    Status st = writePage(writes[next].pid, writes[next].buf, writes[next].pages);
    if (!st.ok()) return st;
  }
  return Status::OK();
}

Status DataFile::sync() const {
  if (io().fdatasync(fd_, path_) != 0) return ioStatus("fdatasync of " + path_, errno);
  return Status::OK();
}

Status DataFile::truncate(uint64_t pages) const {
  {
    std::lock_guard g(aheadMutex_);
    if (allocated_.load(std::memory_order_relaxed) > pages * kPageSize) allocated_.store(pages * kPageSize);
  }
  if (io().ftruncate(fd_, path_, pages * kPageSize) != 0) return ioStatus("truncate of " + path_, errno);
  return Status::OK();
}

Status DataFile::allocate(uint64_t from, uint64_t to) const {
  if (to <= from) return Status::OK();
  if (io().fallocate(fd_, path_, from * kPageSize, (to - from) * kPageSize) != 0) {
    return ioStatus("allocation in " + path_, errno);
  }
  return Status::OK();
}

uint64_t DataFile::sizeBytes() const {
  struct stat st;
  if (fstat(fd_, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace vmstore::internal
