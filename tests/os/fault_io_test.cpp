// Unit tests of os/fault_io.hpp: the power-loss simulation (unsynced pwrites and mapped
// stores undone by powerCut, torn at 512-byte sectors, the device gone afterwards,
// revive) and the rules and space limit it must leave working.
//
// The FaultIo is called directly (not installed with setIo), and every check of what
// reached the file is a plain POSIX read, past FaultIo.
#include "os/fault_io.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "unit_util.hpp"

namespace vmstore::internal {
namespace {

namespace fs = std::filesystem;
using Op = FaultIo::Op;
constexpr size_t kSector = 512;
constexpr size_t kPage = 4096;

using Scratch = vmsunit::ScratchDir;

// An address range reserved PROT_NONE, as the engine reserves it, unmapped at the end.
class Reservation {
 public:
  explicit Reservation(size_t bytes) : bytes_(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  }
  ~Reservation() {
    if (base_ != nullptr) ::munmap(base_, bytes_);
  }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  uint8_t* base() const { return base_; }

 private:
  size_t bytes_;
  uint8_t* base_;
};

// The whole file, read with plain POSIX calls.
std::vector<uint8_t> contentOf(const std::string& path) {
  std::vector<uint8_t> out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st;
  if (::fstat(fd, &st) == 0) {
    out.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < out.size()) {
      ssize_t r = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
      if (r <= 0) break;
      done += static_cast<size_t>(r);
    }
    out.resize(done);
  }
  ::close(fd);
  return out;
}

// Writes a whole file with plain POSIX calls and syncs it (the durable starting state).
void putFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  ASSERT_EQ(::fsync(fd), 0);
  ::close(fd);
}

std::vector<uint8_t> filled(size_t n, uint8_t byte) { return std::vector<uint8_t>(n, byte); }

// True when every byte of [from, to) of v is `byte`.
bool all(const std::vector<uint8_t>& v, size_t from, size_t to, uint8_t byte) {
  if (to > v.size()) return false;
  for (size_t i = from; i < to; i++) {
    if (v[i] != byte) return false;
  }
  return true;
}

int openRw(FaultIo& io, const std::string& path) { return io.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644); }

ssize_t put(FaultIo& io, int fd, const std::string& path, size_t n, uint8_t byte, uint64_t off) {
  std::vector<uint8_t> b(n, byte);
  return io.pwrite(fd, path, b.data(), n, off);
}

// ---- pwrite ----

TEST(FaultIo, UnsyncedWriteIsGoneAfterPowerCut) {
  Scratch dir;
  std::string path = dir.file("f");
  FaultIo io;
  io.trackUnsynced();
  int fd = openRw(io, path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(put(io, fd, path, 3 * kPage, 'A', 0), static_cast<ssize_t>(3 * kPage));
  EXPECT_TRUE(all(contentOf(path), 0, 3 * kPage, 'A'));  // in the file before the cut
  io.powerCut(1, false);
  EXPECT_EQ(io.close(fd), 0);
  io.revive();
  std::vector<uint8_t> c = contentOf(path);
  EXPECT_EQ(c.size(), 3 * kPage);  // the size is metadata: durable at once
  EXPECT_TRUE(all(c, 0, c.size(), 0));
}

TEST(FaultIo, SyncedWriteSurvivesPowerCut) {
  Scratch dir;
  std::string path = dir.file("f");
  FaultIo io;
  io.trackUnsynced();
  int fd = openRw(io, path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(put(io, fd, path, 3 * kPage, 'A', 0), static_cast<ssize_t>(3 * kPage));
  ASSERT_EQ(io.fdatasync(fd, path), 0);
  io.powerCut(1, true);
  EXPECT_EQ(io.close(fd), 0);
  io.revive();
  std::vector<uint8_t> c = contentOf(path);
  EXPECT_EQ(c.size(), 3 * kPage);
  EXPECT_TRUE(all(c, 0, c.size(), 'A'));
}

TEST(FaultIo, WritesAfterTheSyncAreUndoneToTheSyncedContent) {
  Scratch dir;
  std::string path = dir.file("f");
  FaultIo io;
  io.trackUnsynced();
  int fd = openRw(io, path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(put(io, fd, path, 2 * kPage, 'A', 0), static_cast<ssize_t>(2 * kPage));
  ASSERT_EQ(io.fdatasync(fd, path), 0);
  // Overlapping unaligned writes, one past the end: undone newest first.
  ASSERT_EQ(put(io, fd, path, 3000, 'B', 1000), 3000);
  ASSERT_EQ(put(io, fd, path, 500, 'C', 2000), 500);
  ASSERT_EQ(put(io, fd, path, 2000, 'D', 2 * kPage - 100), 2000);
  std::vector<uint8_t> before = contentOf(path);
  EXPECT_TRUE(all(before, 2000, 2500, 'C'));
  EXPECT_TRUE(all(before, 1000, 2000, 'B'));
  io.powerCut(7, false);
  EXPECT_EQ(io.close(fd), 0);
  io.revive();
  std::vector<uint8_t> c = contentOf(path);
  ASSERT_EQ(c.size(), 2 * kPage - 100 + 2000);
  EXPECT_TRUE(all(c, 0, 2 * kPage, 'A'));
  EXPECT_TRUE(all(c, 2 * kPage, c.size(), 0));  // past the synced end: zeros
}

TEST(FaultIo, DescriptorsOfOneFileShareItsHistoryAcrossRename) {
  Scratch dir;
  std::string path = dir.file("f");
  std::string moved = dir.file("g");
  putFile(path, filled(kPage, 'O'));
  FaultIo io;
  io.trackUnsynced();
  int a = openRw(io, path);
  int b = openRw(io, path);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ASSERT_EQ(put(io, a, path, 100, 'A', 0), 100);
  ASSERT_EQ(io.fdatasync(b, path), 0);  // syncs what `a` wrote: one file
  ASSERT_EQ(put(io, b, path, 100, 'B', 100), 100);
  ASSERT_EQ(io.rename(path, moved), 0);  // durable at once; the write stays unsynced
  ASSERT_EQ(put(io, a, path, 100, 'C', 200), 100);
  io.powerCut(3, false);
  EXPECT_EQ(io.close(a), 0);
  EXPECT_EQ(io.close(b), 0);
  io.revive();
  EXPECT_FALSE(fs::exists(path));
  std::vector<uint8_t> c = contentOf(moved);
  ASSERT_EQ(c.size(), kPage);
  EXPECT_TRUE(all(c, 0, 100, 'A'));
  EXPECT_TRUE(all(c, 100, kPage, 'O'));
}

TEST(FaultIo, TruncatedBytesStayGoneAfterPowerCut) {
  Scratch dir;
  std::string path = dir.file("f");
  putFile(path, filled(2 * kPage, 'O'));
  FaultIo io;
  io.trackUnsynced();
  int fd = openRw(io, path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(put(io, fd, path, 2 * kPage, 'N', 0), static_cast<ssize_t>(2 * kPage));
  ASSERT_EQ(io.ftruncate(fd, path, kPage), 0);
  ASSERT_EQ(io.ftruncate(fd, path, 2 * kPage), 0);
  io.powerCut(5, false);
  EXPECT_EQ(io.close(fd), 0);
  io.revive();
  std::vector<uint8_t> c = contentOf(path);
  ASSERT_EQ(c.size(), 2 * kPage);
  EXPECT_TRUE(all(c, 0, kPage, 'O'));          // the write is undone
  EXPECT_TRUE(all(c, kPage, 2 * kPage, 0));  // the cut-off part was truncated for good
}

// ---- tearing ----

// Each sector of [from, to) of c is wholly `a` or wholly `b` (within [from, to)); counts both.
void sectorsOf(const std::vector<uint8_t>& c, size_t from, size_t to, uint8_t a, uint8_t b, int* na, int* nb) {
  *na = *nb = 0;
  for (size_t s = from; s < to; s = (s / kSector + 1) * kSector) {
    size_t e = std::min(to, (s / kSector + 1) * kSector);
    if (all(c, s, e, a)) {
      (*na)++;
    } else if (all(c, s, e, b)) {
      (*nb)++;
    } else {
      ADD_FAILURE() << "sector " << s / kSector << " holds a mix";
    }
  }
}

std::vector<uint8_t> tornWrite(const std::string& path, uint64_t seed, size_t from, size_t to) {
  putFile(path, filled(64 * kSector, 'O'));
  FaultIo io;
  io.trackUnsynced();
  int fd = openRw(io, path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(put(io, fd, path, to - from, 'N', from), static_cast<ssize_t>(to - from));
  io.powerCut(seed, true);
  EXPECT_EQ(io.close(fd), 0);
  return contentOf(path);
}

TEST(FaultIo, TornWriteKeepsWholeSectors) {
  Scratch dir;
  std::string path = dir.file("f");
  std::vector<uint8_t> first = tornWrite(path, 42, 0, 64 * kSector);
  ASSERT_EQ(first.size(), 64 * kSector);
  int fresh, old;
  sectorsOf(first, 0, first.size(), 'N', 'O', &fresh, &old);
  EXPECT_GT(fresh, 0);
  EXPECT_GT(old, 0);
  EXPECT_EQ(fresh + old, 64);
  // The same seed and history tear the same way; another seed differently.
  EXPECT_EQ(tornWrite(path, 42, 0, 64 * kSector), first);
  EXPECT_NE(tornWrite(path, 43, 0, 64 * kSector), first);
  // An unaligned write: the part of each sector it covers is wholly new or wholly old.
  std::vector<uint8_t> c = tornWrite(path, 9, 100, 64 * kSector - 100);
  EXPECT_TRUE(all(c, 0, 100, 'O'));
  EXPECT_TRUE(all(c, 64 * kSector - 100, 64 * kSector, 'O'));
  sectorsOf(c, 100, 64 * kSector - 100, 'N', 'O', &fresh, &old);
  EXPECT_GT(fresh, 0);
  EXPECT_GT(old, 0);
}

TEST(FaultIo, TornSectorsHoldOneVersionEach) {
  Scratch dir;
  std::string path = dir.file("f");
  putFile(path, filled(64 * kSector, 'O'));
  FaultIo io;
  io.trackUnsynced();
  int fd = openRw(io, path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(put(io, fd, path, 64 * kSector, '1', 0), static_cast<ssize_t>(64 * kSector));
  ASSERT_EQ(put(io, fd, path, 64 * kSector, '2', 0), static_cast<ssize_t>(64 * kSector));
  io.powerCut(11, true);
  EXPECT_EQ(io.close(fd), 0);
  std::vector<uint8_t> c = contentOf(path);
  ASSERT_EQ(c.size(), 64 * kSector);
  int seen[3] = {};
  for (size_t s = 0; s < 64; s++) {
    size_t from = s * kSector, to = from + kSector;
    if (all(c, from, to, 'O')) {
      seen[0]++;
    } else if (all(c, from, to, '1')) {
      seen[1]++;
    } else if (all(c, from, to, '2')) {
      seen[2]++;
    } else {
      ADD_FAILURE() << "sector " << s << " holds a mix";
    }
  }
  EXPECT_GT(seen[0], 0);
  EXPECT_GT(seen[1], 0);
  EXPECT_GT(seen[2], 0);
}

// ---- mapped stores ----

struct Mapped {
  Scratch dir;
  std::string path = dir.file("m");
  FaultIo io;
  Reservation res{16 * kPage};
  int fd = -1;
  uint8_t* p = nullptr;

  // A synced file of `pages` pages of 'O', mapped whole through a tracking FaultIo.
  explicit Mapped(size_t pages = 4) {
    putFile(path, filled(pages * kPage, 'O'));
    io.trackUnsynced();
    fd = openRw(io, path);
    EXPECT_GE(fd, 0);
    EXPECT_NE(res.base(), nullptr);
    EXPECT_EQ(io.mapShared(fd, path, res.base(), pages * kPage, 0), 0);
    p = res.base();
  }
  ~Mapped() {
    if (fd >= 0) io.close(fd);
  }
  void closeFd() {
    EXPECT_EQ(io.close(fd), 0);
    fd = -1;
  }
};

TEST(FaultIo, MappingShowsTheFileAndReadsSeeItsStores) {
  Mapped m;
  EXPECT_TRUE(std::all_of(m.p, m.p + 4 * kPage, [](uint8_t b) { return b == 'O'; }));
  std::memset(m.p + 100, 'M', 50);
  // The stores are in the "page cache": a read through FaultIo sees them ...
  std::vector<uint8_t> got(300);
  ASSERT_EQ(m.io.pread(m.fd, m.path, got.data(), got.size(), 0), 300);
  EXPECT_TRUE(all(got, 0, 100, 'O'));
  EXPECT_TRUE(all(got, 100, 150, 'M'));
  EXPECT_TRUE(all(got, 150, 300, 'O'));
  // ... and a write through FaultIo shows in the mapping.
  ASSERT_EQ(put(m.io, m.fd, m.path, 10, 'W', kPage + 5), 10);
  EXPECT_EQ(m.p[kPage + 5], 'W');
  EXPECT_EQ(m.p[kPage + 14], 'W');
  EXPECT_EQ(m.p[kPage + 15], 'O');
}

TEST(FaultIo, MappedStoresPersistAtFdatasync) {
  Mapped m;
  std::memset(m.p + 100, 'M', 50);
  std::memset(m.p + 3 * kPage + 7, 'M', 1);
  EXPECT_TRUE(all(contentOf(m.path), 0, 4 * kPage, 'O'));  // not in the file before the sync
  ASSERT_EQ(m.io.fdatasync(m.fd, m.path), 0);
  std::vector<uint8_t> synced = contentOf(m.path);
  EXPECT_TRUE(all(synced, 100, 150, 'M'));
  std::memset(m.p + 2 * kPage, 'X', 10);  // after the sync: not durable
  m.io.powerCut(1, false);
  m.closeFd();
  m.io.revive();
  std::vector<uint8_t> c = contentOf(m.path);
  ASSERT_EQ(c.size(), 4 * kPage);
  EXPECT_TRUE(all(c, 0, 100, 'O'));
  EXPECT_TRUE(all(c, 100, 150, 'M'));
  EXPECT_TRUE(all(c, 150, 3 * kPage + 7, 'O'));
  EXPECT_EQ(c[3 * kPage + 7], 'M');
  EXPECT_TRUE(all(c, 3 * kPage + 8, 4 * kPage, 'O'));
}

TEST(FaultIo, MappedStoresWithoutSyncAreGoneAfterPowerCut) {
  Mapped m;
  std::memset(m.p, 'M', 4 * kPage);
  m.io.powerCut(1, false);
  std::memset(m.p, 'Z', 4 * kPage);  // the memory stays usable after the cut
  m.closeFd();
  m.io.revive();
  EXPECT_TRUE(all(contentOf(m.path), 0, 4 * kPage, 'O'));
}

TEST(FaultIo, MappedStoresThenCloseStayWithoutPowerCut) {
  Mapped m;
  std::memset(m.p + kPage, 'M', kPage);
  m.closeFd();
  EXPECT_EQ(m.p[kPage], 'M');  // the memory stays mapped after close
  m.io.revive();
  std::vector<uint8_t> c = contentOf(m.path);
  ASSERT_EQ(c.size(), 4 * kPage);
  EXPECT_TRUE(all(c, 0, kPage, 'O'));
  EXPECT_TRUE(all(c, kPage, 2 * kPage, 'M'));
  EXPECT_TRUE(all(c, 2 * kPage, 4 * kPage, 'O'));
}

TEST(FaultIo, MappedStoresThenCloseAreGoneAfterPowerCut) {
  Mapped m;
  std::memset(m.p + kPage, 'M', kPage);
  m.closeFd();
  EXPECT_TRUE(all(contentOf(m.path), kPage, 2 * kPage, 'M'));  // written, not synced
  m.io.powerCut(1, false);
  m.io.revive();
  EXPECT_TRUE(all(contentOf(m.path), 0, 4 * kPage, 'O'));
}

TEST(FaultIo, TornMappedStoresReachTheFileSectorBySector) {
  Mapped m(8);
  std::memset(m.p, 'M', 8 * kPage);
  m.io.powerCut(99, true);
  m.closeFd();
  std::vector<uint8_t> c = contentOf(m.path);
  ASSERT_EQ(c.size(), 8 * kPage);
  int fresh, old;
  sectorsOf(c, 0, c.size(), 'M', 'O', &fresh, &old);
  EXPECT_GT(fresh, 0);
  EXPECT_GT(old, 0);
}

TEST(FaultIo, RemappingKeepsTheStoresOfTheMappingItReplaces) {
  Mapped m(2);
  std::memset(m.p + 10, 'M', 10);
  ASSERT_EQ(m.io.ftruncate(m.fd, m.path, 4 * kPage), 0);
  ASSERT_EQ(m.io.mapShared(m.fd, m.path, m.p, 4 * kPage, 0), 0);  // grown over the old one
  EXPECT_EQ(m.p[10], 'M');
  EXPECT_EQ(m.p[2 * kPage], 0);
  std::memset(m.p + 3 * kPage, 'N', 10);
  ASSERT_EQ(m.io.fdatasync(m.fd, m.path), 0);
  m.io.powerCut(1, false);
  m.closeFd();
  std::vector<uint8_t> c = contentOf(m.path);
  ASSERT_EQ(c.size(), 4 * kPage);
  EXPECT_TRUE(all(c, 10, 20, 'M'));
  EXPECT_TRUE(all(c, 3 * kPage, 3 * kPage + 10, 'N'));
}

TEST(FaultIo, PartlyReplacedMappingsKeepTrackingTheirOtherPages) {
  Mapped m(4);
  // Two mappings side by side, then a third over the middle of both.
  ASSERT_EQ(m.io.mapShared(m.fd, m.path, m.p, 2 * kPage, 0), 0);
  ASSERT_EQ(m.io.mapShared(m.fd, m.path, m.p + 2 * kPage, 2 * kPage, 2 * kPage), 0);
  std::memset(m.p + kPage, 'A', 10);
  ASSERT_EQ(m.io.mapShared(m.fd, m.path, m.p + kPage, 2 * kPage, kPage), 0);
  EXPECT_EQ(m.p[kPage], 'A');
  std::memset(m.p, 'L', 10);              // the left rest of the first
  std::memset(m.p + 2 * kPage, 'C', 10);  // the new one
  std::memset(m.p + 3 * kPage, 'R', 10);  // the right rest of the second
  ASSERT_EQ(m.io.fdatasync(m.fd, m.path), 0);
  m.io.powerCut(1, false);
  m.closeFd();
  std::vector<uint8_t> c = contentOf(m.path);
  ASSERT_EQ(c.size(), 4 * kPage);
  EXPECT_TRUE(all(c, 0, 10, 'L'));
  EXPECT_TRUE(all(c, kPage, kPage + 10, 'A'));
  EXPECT_TRUE(all(c, 2 * kPage, 2 * kPage + 10, 'C'));
  EXPECT_TRUE(all(c, 3 * kPage, 3 * kPage + 10, 'R'));
  EXPECT_TRUE(all(c, 3 * kPage + 10, 4 * kPage, 'O'));
}

TEST(FaultIo, ReviveWithoutPowerCutKeepsTheStoresOfLiveMappings) {
  Mapped m;
  std::memset(m.p, 'M', 10);
  m.io.revive();
  m.io.powerCut(1, false);  // nothing tracked any more
  m.io.revive();
  EXPECT_TRUE(all(contentOf(m.path), 0, 10, 'M'));
}

// ---- the device after the cut ----

TEST(FaultIo, AfterPowerCutEveryCallFailsWithEioAndCloseWorks) {
  Scratch dir;
  std::string path = dir.file("f");
  putFile(path, filled(kPage, 'O'));
  FaultIo io;
  io.trackUnsynced();
  int fd = openRw(io, path);
  ASSERT_GE(fd, 0);
  Reservation res(kPage);
  io.powerCut(1, false);

  auto eio = [](long r) { return r == -1 && errno == EIO; };
  errno = 0;
  EXPECT_TRUE(eio(io.open(path, O_RDONLY, 0)));
  EXPECT_TRUE(eio(io.open(dir.file("new"), O_RDWR | O_CREAT, 0644)));
  EXPECT_FALSE(fs::exists(dir.file("new")));
  std::vector<uint8_t> buf(kPage, 'N');
  EXPECT_TRUE(eio(io.pread(fd, path, buf.data(), kPage, 0)));
  EXPECT_TRUE(eio(io.pwrite(fd, path, buf.data(), kPage, 0)));
  EXPECT_TRUE(eio(io.fdatasync(fd, path)));
  EXPECT_TRUE(eio(io.ftruncate(fd, path, 0)));
  EXPECT_TRUE(eio(io.fallocate(fd, path, 0, 4 * kPage)));
  EXPECT_TRUE(eio(io.rename(path, dir.file("g"))));
  EXPECT_TRUE(eio(io.unlink(path)));
  EXPECT_TRUE(eio(io.syncDir(dir.str())));
  EXPECT_TRUE(eio(io.mapShared(fd, path, res.base(), kPage, 0)));
  EXPECT_EQ(io.calls(Op::kWrite), 2u);  // refused calls still count (pwrite, fallocate)
  // Nothing changed.
  std::vector<uint8_t> c = contentOf(path);
  ASSERT_EQ(c.size(), kPage);
  EXPECT_TRUE(all(c, 0, kPage, 'O'));
  EXPECT_FALSE(fs::exists(dir.file("g")));
  // close still closes.
  EXPECT_EQ(io.close(fd), 0);
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
  EXPECT_EQ(errno, EBADF);
}

TEST(FaultIo, PowerCutWithoutTrackingOnlyTakesTheDeviceAway) {
  Scratch dir;
  std::string path = dir.file("f");
  FaultIo io;
  int fd = openRw(io, path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(put(io, fd, path, kPage, 'A', 0), static_cast<ssize_t>(kPage));
  io.powerCut(1, true);
  EXPECT_EQ(put(io, fd, path, kPage, 'B', 0), -1);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(io.close(fd), 0);
  EXPECT_TRUE(all(contentOf(path), 0, kPage, 'A'));
}

TEST(FaultIo, ReviveRestoresNormalOperationAndKeepsTracking) {
  Scratch dir;
  std::string path = dir.file("f");
  FaultIo io;
  io.trackUnsynced();
  int fd = openRw(io, path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(put(io, fd, path, kPage, 'A', 0), static_cast<ssize_t>(kPage));
  io.powerCut(1, false);
  EXPECT_EQ(io.close(fd), 0);
  io.revive();

  fd = openRw(io, path);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> got(kPage, 'x');
  ASSERT_EQ(io.pread(fd, path, got.data(), kPage, 0), static_cast<ssize_t>(kPage));
  EXPECT_TRUE(all(got, 0, kPage, 0));
  ASSERT_EQ(put(io, fd, path, kPage, 'B', 0), static_cast<ssize_t>(kPage));
  ASSERT_EQ(io.fdatasync(fd, path), 0);
  ASSERT_EQ(io.pread(fd, path, got.data(), kPage, 0), static_cast<ssize_t>(kPage));
  EXPECT_TRUE(all(got, 0, kPage, 'B'));
  ASSERT_EQ(io.rename(path, dir.file("g")), 0);
  ASSERT_EQ(io.syncDir(dir.str()), 0);
  // Still tracking: a second cut undoes what came after the sync.
  ASSERT_EQ(put(io, fd, path, kPage, 'C', 0), static_cast<ssize_t>(kPage));
  io.powerCut(2, false);
  EXPECT_EQ(io.close(fd), 0);
  io.revive();
  EXPECT_TRUE(all(contentOf(dir.file("g")), 0, kPage, 'B'));
  // Revive without a cut keeps everything written.
  fd = openRw(io, dir.file("g"));
  ASSERT_GE(fd, 0);
  ASSERT_EQ(put(io, fd, dir.file("g"), kPage, 'D', 0), static_cast<ssize_t>(kPage));
  io.revive();
  io.powerCut(3, false);  // nothing tracked any more
  EXPECT_EQ(io.close(fd), 0);
  io.revive();
  EXPECT_TRUE(all(contentOf(dir.file("g")), 0, kPage, 'D'));
}

// ---- what existed before ----

void checkRulesAndSpace(bool tracking) {
  Scratch dir;
  std::string path = dir.file("f");
  FaultIo io;
  if (tracking) io.trackUnsynced();
  io.fail({Op::kOpen, "nope", 0, 1, EACCES});
  EXPECT_EQ(io.open(dir.file("nope"), O_RDWR | O_CREAT, 0644), -1);
  EXPECT_EQ(errno, EACCES);
  EXPECT_FALSE(fs::exists(dir.file("nope")));
  int fd = openRw(io, path);
  ASSERT_GE(fd, 0);

  io.fail({Op::kWrite, "/f", 1, 1, EDQUOT});  // the second write fails, once
  EXPECT_EQ(put(io, fd, path, kPage, 'A', 0), static_cast<ssize_t>(kPage));
  EXPECT_EQ(put(io, fd, path, kPage, 'B', 0), -1);
  EXPECT_EQ(errno, EDQUOT);
  EXPECT_TRUE(all(contentOf(path), 0, kPage, 'A'));
  EXPECT_EQ(put(io, fd, path, kPage, 'C', 0), static_cast<ssize_t>(kPage));
  EXPECT_EQ(io.calls(Op::kWrite), 3u);
  io.clearRules();

  io.fail({Op::kSync, "", 0, -1, EIO});
  EXPECT_EQ(io.fdatasync(fd, path), -1);
  EXPECT_EQ(io.fdatasync(fd, path), -1);
  io.clearRules();
  EXPECT_EQ(io.fdatasync(fd, path), 0);

  io.fail({Op::kRead, "", 0, 1, EIO});
  std::vector<uint8_t> got(kPage);
  EXPECT_EQ(io.pread(fd, path, got.data(), kPage, 0), -1);
  EXPECT_EQ(io.pread(fd, path, got.data(), kPage, 0), static_cast<ssize_t>(kPage));
  EXPECT_TRUE(all(got, 0, kPage, 'C'));

  io.fail({Op::kTruncate, "", 0, 1, EPERM});
  EXPECT_EQ(io.ftruncate(fd, path, 0), -1);
  EXPECT_EQ(errno, EPERM);
  io.fail({Op::kRename, "/g", 0, 1, EXDEV});
  EXPECT_EQ(io.rename(path, dir.file("g")), -1);
  EXPECT_EQ(errno, EXDEV);
  io.fail({Op::kSyncDir, "", 0, 1, EIO});
  EXPECT_EQ(io.syncDir(dir.str()), -1);
  EXPECT_EQ(io.syncDir(dir.str()), 0);
  Reservation res(kPage);
  io.fail({Op::kMap, "", 0, 1, ENOMEM});
  EXPECT_EQ(io.mapShared(fd, path, res.base(), kPage, 0), -1);
  EXPECT_EQ(errno, ENOMEM);

  // Space: 2 pages more than now, given back by a truncation.
  io.spaceLimit(2 * kPage);
  EXPECT_EQ(put(io, fd, path, 2 * kPage, 'S', kPage), static_cast<ssize_t>(2 * kPage));
  EXPECT_EQ(put(io, fd, path, 1, 'S', 3 * kPage), -1);
  EXPECT_EQ(errno, ENOSPC);
  EXPECT_EQ(io.fallocate(fd, path, 0, 3 * kPage + 1), -1);
  EXPECT_EQ(errno, ENOSPC);
  EXPECT_EQ(io.fallocate(fd, path, 3 * kPage, 1), -1);  // its end counts, not its length
  EXPECT_EQ(errno, ENOSPC);
  EXPECT_EQ(contentOf(path).size(), 3 * kPage);
  EXPECT_EQ(io.ftruncate(fd, path, 2 * kPage), 0);
  EXPECT_EQ(io.fallocate(fd, path, 0, 3 * kPage), 0);
  EXPECT_EQ(put(io, fd, path, 1, 'S', 3 * kPage), -1);
  io.clearSpaceLimit();
  EXPECT_EQ(put(io, fd, path, 1, 'S', 3 * kPage), 1);
  EXPECT_EQ(io.close(fd), 0);
  EXPECT_EQ(io.unlink(path), 0);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(io.usesKernelOnly());
}

TEST(FaultIo, RulesAndSpaceLimitWorkAsBefore) { checkRulesAndSpace(false); }

TEST(FaultIo, RulesAndSpaceLimitWorkWhileTracking) { checkRulesAndSpace(true); }

TEST(FaultIo, FailedSyncLeavesWritesUnsynced) {
  Scratch dir;
  std::string path = dir.file("f");
  FaultIo io;
  io.trackUnsynced();
  Mapped m;
  int fd = openRw(io, path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(put(io, fd, path, kPage, 'A', 0), static_cast<ssize_t>(kPage));
  io.fail({Op::kSync, "", 0, 1, EIO});
  EXPECT_EQ(io.fdatasync(fd, path), -1);
  std::memset(m.p, 'M', 10);
  m.io.fail({Op::kSync, "", 0, 1, EIO});
  EXPECT_EQ(m.io.fdatasync(m.fd, m.path), -1);
  EXPECT_TRUE(all(contentOf(m.path), 0, 10, 'O'));  // a failed sync writes nothing
  io.powerCut(1, false);
  m.io.powerCut(1, false);
  EXPECT_EQ(io.close(fd), 0);
  EXPECT_TRUE(all(contentOf(path), 0, kPage, 0));
  EXPECT_TRUE(all(contentOf(m.path), 0, 10, 'O'));
}

TEST(FaultIo, ConcurrentWritersThenPowerCutKeepTheSyncedVersion) {
  Scratch dir;
  std::string path = dir.file("f");
  FaultIo io;
  io.trackUnsynced();
  int fd = openRw(io, path);
  ASSERT_GE(fd, 0);
  constexpr int kThreads = 4;
  constexpr int kWrites = 50;
  auto writeAll = [&](uint8_t version, bool syncing) {
    std::vector<std::thread> threads;
    std::atomic<int> bad{0};
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kWrites; i++) {
          uint8_t b = static_cast<uint8_t>(version + (i == kWrites - 1 ? 0 : 1));
          if (put(io, fd, path, kPage, b, (static_cast<uint64_t>(t) * kWrites + i % 8) * kPage) !=
              static_cast<ssize_t>(kPage)) {
            bad++;
          }
          if (syncing && i % 8 == 0 && io.fdatasync(fd, path) != 0) bad++;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(bad.load(), 0);
  };
  writeAll('a', true);
  ASSERT_EQ(io.fdatasync(fd, path), 0);
  std::vector<uint8_t> synced = contentOf(path);
  writeAll('x', false);
  EXPECT_NE(contentOf(path), synced);
  io.powerCut(1, false);
  EXPECT_EQ(io.close(fd), 0);
  EXPECT_EQ(contentOf(path), synced);
}

}  // namespace
}  // namespace vmstore::internal
