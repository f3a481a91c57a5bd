#include "os/data_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

DataFile::~DataFile() { close(); }

void DataFile::close() {
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
