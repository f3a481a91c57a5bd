#include "os/io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "task/scheduler.hpp"

namespace vmstore::internal {

int Io::open(const std::string& path, int flags, mode_t mode) { return ::open(path.c_str(), flags, mode); }
int Io::close(int fd) { return ::close(fd); }
ssize_t Io::pread(int fd, const std::string&, void* buf, size_t n, uint64_t off) {
  return ::pread(fd, buf, n, static_cast<off_t>(off));
}
ssize_t Io::pwrite(int fd, const std::string&, const void* buf, size_t n, uint64_t off) {
  return ::pwrite(fd, buf, n, static_cast<off_t>(off));
}
// Interrupted by a signal (tmpfs allocating a large range can be): tried again.
int Io::fdatasync(int fd, const std::string&) {
  int r;
  while ((r = ::fdatasync(fd)) != 0 && errno == EINTR) {
  }
  return r;
}
int Io::ftruncate(int fd, const std::string&, uint64_t size) {
  int r;
  while ((r = ::ftruncate(fd, static_cast<off_t>(size))) != 0 && errno == EINTR) {
  }
  return r;
}
int Io::fallocate(int fd, const std::string&, uint64_t offset, uint64_t len) {
  int r;
  while ((r = ::fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(len))) != 0 && errno == EINTR) {
  }
  return r;
}
int Io::mapShared(int fd, const std::string&, void* addr, size_t len, uint64_t off) {
  void* p = ::mmap(addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, static_cast<off_t>(off));
  return p == MAP_FAILED ? -1 : 0;
}
int Io::rename(const std::string& from, const std::string& to) { return ::rename(from.c_str(), to.c_str()); }
int Io::unlink(const std::string& path) { return ::unlink(path.c_str()); }
int Io::syncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  int r = ::fsync(fd);
  int err = errno;
  ::close(fd);
  errno = err;
  return r;
}

Status ioStatus(const std::string& what, int err) {
  std::string m = what + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) return Status::NoSpace(std::move(m));
  return Status::IOError(std::move(m));
}

namespace {
Io posixIo;
std::atomic<Io*> current{&posixIo};
}  // namespace

Io& io() { return *current.load(std::memory_order_acquire); }

Io* setIo(Io* backend) { return current.exchange(backend ? backend : &posixIo, std::memory_order_acq_rel); }

int syncDataInTask(int fd, const std::string& path) {
  task::Scheduler* s = task::Scheduler::current();
  if (s != nullptr && s->hasRing() && io().usesKernelOnly()) {
    int r;
    do {
      r = s->fdatasync(fd);
    } while (r == -EINTR);
    return r < 0 ? -r : 0;
  }
  return io().fdatasync(fd, path) == 0 ? 0 : errno;
}

int pwriteAll(int fd, const std::string& path, const void* buf, size_t n, uint64_t off) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = io().pwrite(fd, path, p, n, off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return ENOSPC;
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return 0;
}

int preadUpTo(int fd, const std::string& path, void* buf, size_t n, uint64_t off, size_t* got) {
  char* p = static_cast<char*>(buf);
  *got = 0;
  while (*got < n) {
    ssize_t r = io().pread(fd, path, p + *got, n - *got, off + *got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) break;
    *got += static_cast<size_t>(r);
  }
  return 0;
}

}  // namespace vmstore::internal
