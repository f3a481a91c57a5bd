#include "os/fault_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <unordered_map>

#include "os/mix64.hpp"

namespace vmstore::internal {

namespace {

constexpr uint64_t kSector = 512;

uint64_t mix(uint64_t x) { return mix64(x + 0x9e3779b97f4a7c15ull); }  // a splitmix64 step

uint64_t hashName(const std::string& s) {  // FNV-1a: the same in every run and build
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// The tearing coin: true when the write reached the sector.
bool reached(uint64_t seed, uint64_t name, uint64_t what, uint64_t sector) {
  return (mix(seed ^ mix(name ^ mix(what ^ mix(sector)))) & 1) != 0;
}

constexpr uint64_t kMappedStore = ~uint64_t{0};  // `what` of a mapped store's coin

uint64_t sizeOf(int fd) {
  struct stat st;
  return ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

FaultIo::~FaultIo() {
  std::lock_guard g(mutex_);
  forgetAllLocked();
}

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

void FaultIo::hold(Op op, const std::string& pathPart) {
  std::lock_guard g(mutex_);
  held_ = true;
  heldOp_ = op;
  heldPath_ = pathPart;
}

void FaultIo::unhold() {
  std::lock_guard g(mutex_);
  held_ = false;
  unheld_.notify_all();
}

uint64_t FaultIo::holding() const {
  std::lock_guard g(mutex_);
  return waiting_;
}

void FaultIo::waitWhileHeld(std::unique_lock<std::mutex>& lk, Op op, const std::string& path) {
  while (held_ && heldOp_ == op && path.find(heldPath_) != std::string::npos) {
    waiting_++;
    unheld_.wait(lk);
    waiting_--;
  }
}

bool FaultIo::refusedLocked(Op op, const std::string& path) {
  counts_[static_cast<int>(op)]++;
  if (gone_) {
    errno = EIO;
    return true;
  }
  return shouldFailLocked(op, path);
}

bool FaultIo::shouldFailLocked(Op op, const std::string& path) {
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

bool FaultIo::wouldExceedSpaceLocked(int fd, uint64_t end) {
  if (!limited_) return false;
  struct stat st;
  if (::fstat(fd, &st) != 0) return false;
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (end <= size) return false;
  if (end - size > spaceLeft_) {
    errno = ENOSPC;
    return true;
  }
  spaceLeft_ -= end - size;
  return false;
}

// ---- tracking helpers (mutex_ held) ----

FaultIo::File* FaultIo::fileOfLocked(int fd, const std::string& path, FileKey* key) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return nullptr;
  *key = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  auto it = files_.find(*key);
  if (it != files_.end()) return it->second.get();
  // An own descriptor on the same inode (even if renamed or unlinked meanwhile), without
  // O_DIRECT, so before-images need no alignment.
  std::string self = "/proc/self/fd/" + std::to_string(fd);
  int own = ::open(self.c_str(), O_RDWR | O_CLOEXEC);
  if (own < 0) own = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (own < 0) return nullptr;
  auto f = std::make_unique<File>();
  f->name = path;
  f->fd = own;
  File* raw = f.get();
  files_.emplace(*key, std::move(f));
  return raw;
}

bool FaultIo::readFileLocked(const File& f, uint8_t* out, size_t n, uint64_t off) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = Io::pread(f.fd, f.name, out + done, n - done, off + done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (r == 0) break;  // end of file: the rest reads as zeros
    done += static_cast<size_t>(r);
  }
  std::memset(out + done, 0, n - done);
  return true;
}

namespace {

// How much of [off, off + len) lies inside a file of `size` bytes.
size_t extentIn(uint64_t size, uint64_t off, size_t len) {
  return size > off ? static_cast<size_t>(std::min<uint64_t>(len, size - off)) : 0;
}

}  // namespace

void FaultIo::clipLocked(const FileKey& key, uint64_t size) {
  auto it = files_.find(key);
  if (it != files_.end()) {
    std::vector<Undo>& undo = it->second->undo;
    undo.erase(std::remove_if(undo.begin(), undo.end(), [&](const Undo& u) { return u.off >= size; }),
               undo.end());
    for (Undo& u : undo) {
      if (u.off + u.before.size() > size) u.before.resize(size - u.off);
    }
  }
  for (Mapping& m : mappings_) {
    if (m.key == key) resizeShadowLocked(m, size);
  }
}

void FaultIo::resizeShadowLocked(Mapping& m, uint64_t size) {
  size_t want = extentIn(size, m.off, m.len);
  size_t have = m.shadow.size();
  if (want < have) {
    // The file was cut: that part of a real mapping is gone, and reads as zeros if the
    // file grows again.
    std::memset(m.addr + want, 0, have - want);
    m.shadow.resize(want);
  } else if (want > have) {
    // The file grew into the mapping: its new bytes (zeros, or what a pwrite put there).
    m.shadow.resize(want);
    auto it = files_.find(m.key);
    if (it == files_.end() || !readFileLocked(*it->second, m.shadow.data() + have, want - have, m.off + have)) {
      std::memset(m.shadow.data() + have, 0, want - have);
    }
    std::memcpy(m.addr + have, m.shadow.data() + have, want - have);
  }
}

void FaultIo::spillLocked(Mapping& m, size_t from, size_t to) {
  auto it = files_.find(m.key);
  if (it == files_.end()) return;
  File& f = *it->second;
  resizeShadowLocked(m, sizeOf(f.fd));
  size_t extent = std::min(m.shadow.size(), to);
  std::vector<uint8_t> now;
  std::vector<uint8_t> before;
  size_t s = from / kSector * kSector;
  while (s < extent) {
    // The next run of sectors whose stores differ from what the file holds.
    size_t l = std::min<size_t>(kSector, extent - s);
    if (std::memcmp(m.addr + s, m.shadow.data() + s, l) == 0) {
      s += l;
      continue;
    }
    size_t end = s + l;
    while (end < extent) {
      size_t l2 = std::min<size_t>(kSector, extent - end);
      if (std::memcmp(m.addr + end, m.shadow.data() + end, l2) == 0) break;
      end += l2;
    }
    size_t n = end - s;
    now.assign(m.addr + s, m.addr + end);  // one snapshot: what is written is what is recorded
    before.resize(n);
    if (readFileLocked(f, before.data(), n, m.off + s) &&
        Io::pwrite(f.fd, m.path, now.data(), n, m.off + s) == static_cast<ssize_t>(n)) {
      f.undo.push_back({m.off + s, before});
      std::memcpy(m.shadow.data() + s, now.data(), n);
    }
    s = end;
  }
}

void FaultIo::forgetAllLocked() {
  for (auto& [key, f] : files_) {
    if (f->fd >= 0) ::close(f->fd);
  }
  files_.clear();
  mappings_.clear();
}

void FaultIo::dropIfGoneLocked(const FileKey& key) {
  auto it = files_.find(key);
  if (it == files_.end()) return;
  for (const Mapping& m : mappings_) {
    if (m.key == key) return;
  }
  struct stat st;
  if (::fstat(it->second->fd, &st) == 0 && st.st_nlink == 0) {
    ::close(it->second->fd);
    files_.erase(it);
  }
}

// ---- power loss ----

void FaultIo::trackUnsynced() {
  std::lock_guard g(mutex_);
  tracking_ = true;
}

void FaultIo::powerCut(uint64_t seed, bool tear) {
  std::lock_guard g(mutex_);
  if (gone_) return;
  gone_ = true;
  for (auto& [key, fp] : files_) {
    File& f = *fp;
    uint64_t size = sizeOf(f.fd);
    uint64_t name = hashName(f.name);
    // cut[s]: the first unsynced write (oldest first) that did not reach sector s; the
    // sector keeps what it held before that write. No entry: every write reached it.
    std::unordered_map<uint64_t, size_t> cut;
    auto sectorsOf = [](const Undo& u, auto&& fn) {
      if (u.before.empty()) return;
      for (uint64_t s = u.off / kSector; s <= (u.off + u.before.size() - 1) / kSector; s++) fn(s);
    };
    for (size_t i = 0; i < f.undo.size(); i++) {
      sectorsOf(f.undo[i], [&](uint64_t s) {
        if (cut.count(s) != 0) return;
        if (!tear || !reached(seed, name, i, s)) cut[s] = i;
      });
    }
    for (size_t i = f.undo.size(); i-- > 0;) {
      const Undo& u = f.undo[i];
      sectorsOf(u, [&](uint64_t s) {
        auto c = cut.find(s);
        if (c == cut.end() || i < c->second) return;  // this write reached the sector
        uint64_t from = std::max(u.off, s * kSector);
        uint64_t to = std::min({u.off + u.before.size(), (s + 1) * kSector, size});
        if (from >= to) return;
        (void)Io::pwrite(f.fd, f.name, u.before.data() + (from - u.off), to - from, from);
      });
    }
    if (!tear) continue;
    for (Mapping& m : mappings_) {
      if (m.key != key) continue;
      resizeShadowLocked(m, size);
      uint8_t sector[kSector];
      for (size_t s = 0; s < m.shadow.size(); s += kSector) {
        size_t l = std::min<size_t>(kSector, m.shadow.size() - s);
        std::memcpy(sector, m.addr + s, l);
        if (std::memcmp(sector, m.shadow.data() + s, l) == 0) continue;
        if (!reached(seed, name, kMappedStore, (m.off + s) / kSector)) continue;
        (void)Io::pwrite(f.fd, m.path, sector, l, m.off + s);
      }
    }
  }
  forgetAllLocked();
}

void FaultIo::revive() {
  std::lock_guard g(mutex_);
  if (!gone_) {
    // No power loss: the stores in live mappings are in the page cache and stay.
    for (Mapping& m : mappings_) spillLocked(m);
  }
  gone_ = false;
  forgetAllLocked();
}

// ---- the calls ----

int FaultIo::open(const std::string& path, int flags, mode_t mode) {
  std::unique_lock lk(mutex_);
  if (refusedLocked(Op::kOpen, path)) return -1;
  if (!tracking_) {
    lk.unlock();
    return Io::open(path, flags, mode);
  }
  int fd = Io::open(path, flags, mode);
  if (fd < 0 || (flags & O_ACCMODE) == O_RDONLY) return fd;
  FileKey key;
  if (fileOfLocked(fd, path, &key) == nullptr) {
    int err = errno;
    Io::close(fd);
    errno = err;
    return -1;
  }
  if ((flags & O_TRUNC) != 0) clipLocked(key, 0);
  return fd;
}

int FaultIo::close(int fd) {
  std::lock_guard g(mutex_);
  if (!mappings_.empty()) {
    struct stat st;
    if (::fstat(fd, &st) == 0) {
      FileKey key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
      for (auto it = mappings_.begin(); it != mappings_.end();) {
        if (it->fd == fd && it->key == key) {
          spillLocked(*it);  // unsynced: in the file now, gone again after a power cut
          it = mappings_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  return Io::close(fd);
}

ssize_t FaultIo::pread(int fd, const std::string& path, void* buf, size_t n, uint64_t off) {
  std::unique_lock lk(mutex_);
  if (refusedLocked(Op::kRead, path)) return -1;
  if (!tracking_) {
    lk.unlock();
    return Io::pread(fd, path, buf, n, off);
  }
  ssize_t r = Io::pread(fd, path, buf, n, off);
  if (r <= 0 || mappings_.empty()) return r;
  struct stat st;
  if (::fstat(fd, &st) != 0) return r;
  FileKey key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  uint64_t end = off + static_cast<uint64_t>(r);
  for (const Mapping& m : mappings_) {
    // What a shared mapping's stores put in the page cache, a read sees.
    if (m.key != key) continue;
    uint64_t from = std::max(off, m.off);
    uint64_t to = std::min<uint64_t>(end, m.off + m.shadow.size());
    if (from < to) std::memcpy(static_cast<uint8_t*>(buf) + (from - off), m.addr + (from - m.off), to - from);
  }
  return r;
}

ssize_t FaultIo::pwrite(int fd, const std::string& path, const void* buf, size_t n, uint64_t off) {
  std::unique_lock lk(mutex_);
  waitWhileHeld(lk, Op::kWrite, path);
  if (refusedLocked(Op::kWrite, path)) return -1;
  if (wouldExceedSpaceLocked(fd, off + n)) return -1;
  if (!tracking_) {
    lk.unlock();
    return Io::pwrite(fd, path, buf, n, off);
  }
  FileKey key;
  File* f = fileOfLocked(fd, path, &key);
  if (f == nullptr) return -1;
  std::vector<uint8_t> before(n);
  if (!readFileLocked(*f, before.data(), n, off)) return -1;
  ssize_t r = Io::pwrite(fd, path, buf, n, off);
  if (r <= 0) return r;
  before.resize(static_cast<size_t>(r));
  f->undo.push_back({off, std::move(before)});
  uint64_t size = sizeOf(f->fd);
  uint64_t end = off + static_cast<uint64_t>(r);
  for (Mapping& m : mappings_) {
    // A write shows in a shared mapping of its range at once.
    if (m.key != key) continue;
    resizeShadowLocked(m, size);
    uint64_t from = std::max(off, m.off);
    uint64_t to = std::min<uint64_t>(end, m.off + m.shadow.size());
    if (from >= to) continue;
    const uint8_t* src = static_cast<const uint8_t*>(buf) + (from - off);
    std::memcpy(m.addr + (from - m.off), src, to - from);
    std::memcpy(m.shadow.data() + (from - m.off), src, to - from);
  }
  return r;
}

int FaultIo::fdatasync(int fd, const std::string& path) {
  std::unique_lock lk(mutex_);
  waitWhileHeld(lk, Op::kSync, path);
  if (refusedLocked(Op::kSync, path)) return -1;
  if (!tracking_) {
    lk.unlock();
    return Io::fdatasync(fd, path);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) return Io::fdatasync(fd, path);
  FileKey key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  for (Mapping& m : mappings_) {
    if (m.key == key) spillLocked(m);  // the stores go to the file, then down with it
  }
  int r = Io::fdatasync(fd, path);
  if (r == 0) {
    auto it = files_.find(key);
    if (it != files_.end()) it->second->undo.clear();  // durable now
  }
  return r;
}

int FaultIo::ftruncate(int fd, const std::string& path, uint64_t size) {
  std::unique_lock lk(mutex_);
  if (refusedLocked(Op::kTruncate, path)) return -1;
  struct stat st;
  if (limited_ && ::fstat(fd, &st) == 0 && size < static_cast<uint64_t>(st.st_size)) {
    spaceLeft_ += static_cast<uint64_t>(st.st_size) - size;  // space comes back
  }
  if (!tracking_) {
    lk.unlock();
    return Io::ftruncate(fd, path, size);
  }
  int r = Io::ftruncate(fd, path, size);
  if (r == 0 && ::fstat(fd, &st) == 0) {
    clipLocked({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)}, size);
  }
  return r;
}

int FaultIo::fallocate(int fd, const std::string& path, uint64_t offset, uint64_t len) {
  std::unique_lock lk(mutex_);
  if (refusedLocked(Op::kWrite, path)) return -1;
  if (wouldExceedSpaceLocked(fd, offset + len)) return -1;
  if (!tracking_) {
    lk.unlock();
    return Io::fallocate(fd, path, offset, len);
  }
  int r = Io::fallocate(fd, path, offset, len);
  struct stat st;
  if (r == 0 && ::fstat(fd, &st) == 0) {
    FileKey key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
    for (Mapping& m : mappings_) {
      if (m.key == key) resizeShadowLocked(m, static_cast<uint64_t>(st.st_size));
    }
  }
  return r;
}

int FaultIo::rename(const std::string& from, const std::string& to) {
  std::unique_lock lk(mutex_);
  if (refusedLocked(Op::kRename, to)) return -1;
  if (!tracking_) {
    lk.unlock();
    return Io::rename(from, to);
  }
  struct stat st;
  bool replaces = ::stat(to.c_str(), &st) == 0;
  int r = Io::rename(from, to);
  int err = errno;
  if (r == 0 && replaces) dropIfGoneLocked({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
  errno = err;
  return r;
}

int FaultIo::unlink(const std::string& path) {
  std::unique_lock lk(mutex_);
  if (gone_) {
    errno = EIO;
    return -1;
  }
  if (!tracking_) {
    lk.unlock();
    return Io::unlink(path);
  }
  struct stat st;
  bool known = ::stat(path.c_str(), &st) == 0;
  int r = Io::unlink(path);
  int err = errno;
  if (r == 0 && known) dropIfGoneLocked({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
  errno = err;
  return r;
}

int FaultIo::mapShared(int fd, const std::string& path, void* addr, size_t len, uint64_t off) {
  std::unique_lock lk(mutex_);
  if (refusedLocked(Op::kMap, path)) return -1;
  if (!tracking_) {
    lk.unlock();
    return Io::mapShared(fd, path, addr, len, off);
  }
  // Refuse what mmap would refuse for a shared writable mapping of this descriptor.
  long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0) page = 4096;
  if (len == 0 || off % static_cast<uint64_t>(page) != 0 ||
      reinterpret_cast<uintptr_t>(addr) % static_cast<uintptr_t>(page) != 0) {
    errno = EINVAL;
    return -1;
  }
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0) return -1;
  if ((fl & O_ACCMODE) != O_RDWR) {
    errno = EACCES;
    return -1;
  }
  FileKey key;
  File* f = fileOfLocked(fd, path, &key);
  if (f == nullptr) return -1;
  uint8_t* a = static_cast<uint8_t*>(addr);
  uint8_t* e = a + len;
  // Mappings this one replaces (in part): their stores stay in the file, unsynced.
  for (Mapping& m : mappings_) {
    if (m.addr < e && a < m.addr + m.len) spillLocked(m);
  }
  std::vector<uint8_t> content(extentIn(sizeOf(f->fd), off, len));
  if (!readFileLocked(*f, content.data(), content.size(), off)) return -1;
  void* p = ::mmap(addr, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return -1;
  std::memcpy(a, content.data(), content.size());
  std::vector<Mapping> kept;
  for (Mapping& m : mappings_) {
    if (!(m.addr < e && a < m.addr + m.len)) {
      kept.push_back(std::move(m));
      continue;
    }
    if (m.addr < a) {  // the part before the new mapping
      Mapping left = m;
      left.len = static_cast<size_t>(a - m.addr);
      if (left.shadow.size() > left.len) left.shadow.resize(left.len);
      kept.push_back(std::move(left));
    }
    if (m.addr + m.len > e) {  // the part after it
      size_t cut = static_cast<size_t>(e - m.addr);
      Mapping right = m;
      right.addr = e;
      right.len = m.len - cut;
      right.off = m.off + cut;
      right.shadow.assign(m.shadow.begin() + static_cast<std::ptrdiff_t>(std::min(cut, m.shadow.size())),
                          m.shadow.end());
      kept.push_back(std::move(right));
    }
  }
  kept.push_back({key, path, fd, a, len, off, std::move(content)});
  mappings_ = std::move(kept);
  return 0;
}

int FaultIo::syncDir(const std::string& dir) {
  std::unique_lock lk(mutex_);
  if (refusedLocked(Op::kSyncDir, dir)) return -1;
  if (!tracking_) lk.unlock();
  return Io::syncDir(dir);
}

}  // namespace vmstore::internal
