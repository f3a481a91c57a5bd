// Unit tests of os/data_file.hpp: whole-page reads and writes, reads past the end and of
// a truncated file, allocating ahead (concurrent writers, its limit, a full device), and
// the directory lock (same process, after release, other process).
#include "os/data_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "os/fault_io.hpp"
#include "os/io.hpp"
#include "unit_util.hpp"

namespace {

using vmstore::Status;
using vmstore::internal::DataFile;
using vmstore::internal::DirectoryLock;
using Code = vmstore::Status::Code;
constexpr size_t kPage = DataFile::kPageSize;

void fillPattern(uint8_t* p, uint64_t seed) {
  for (size_t i = 0; i < kPage; i++) p[i] = static_cast<uint8_t>((seed * 131 + i * 7 + (i >> 8)) & 0xff);
}

bool hasPattern(const uint8_t* p, uint64_t seed, size_t from = 0, size_t to = kPage) {
  for (size_t i = from; i < to; i++) {
    if (p[i] != static_cast<uint8_t>((seed * 131 + i * 7 + (i >> 8)) & 0xff)) return false;
  }
  return true;
}

bool isZero(const uint8_t* p, size_t from = 0, size_t to = kPage) {
  for (size_t i = from; i < to; i++) {
    if (p[i] != 0) return false;
  }
  return true;
}

TEST(DataFile, WriteReadRoundTrip) {
  vmsunit::ScratchDir dir;
  DataFile f;
  UNIT_ASSERT_OK(f.open(dir.file("data"), true));
  std::printf("[ DataFile ] O_DIRECT: %s\n", f.directIo() ? "yes" : "no (page cache)");
  EXPECT_EQ(f.path(), dir.file("data"));
  EXPECT_EQ(f.sizeBytes(), 0u);
  vmsunit::AlignedPages buf(1);
  const uint64_t pids[] = {0, 1, 2, 7, 3, 100};
  for (uint64_t pid : pids) {
    fillPattern(buf.data(), pid);
    UNIT_ASSERT_OK(f.writePage(pid, buf.data()));
  }
  EXPECT_EQ(f.sizeBytes(), 101 * kPage);
  UNIT_ASSERT_OK(f.sync());
  for (uint64_t pid : pids) {
    std::memset(buf.data(), 0xAB, kPage);
    UNIT_ASSERT_OK(f.readPage(pid, buf.data()));
    EXPECT_TRUE(hasPattern(buf.data(), pid)) << "page " << pid;
  }
  // Holes between written pages read as zeros.
  for (uint64_t pid : {4ull, 50ull, 99ull}) {
    std::memset(buf.data(), 0xAB, kPage);
    UNIT_ASSERT_OK(f.readPage(pid, buf.data()));
    EXPECT_TRUE(isZero(buf.data())) << "hole page " << pid;
  }
  // Overwrite in place.
  fillPattern(buf.data(), 999);
  UNIT_ASSERT_OK(f.writePage(2, buf.data()));
  std::memset(buf.data(), 0, kPage);
  UNIT_ASSERT_OK(f.readPage(2, buf.data()));
  EXPECT_TRUE(hasPattern(buf.data(), 999));
  f.close();

  // Reopen without create: the content is there.
  DataFile g;
  UNIT_ASSERT_OK(g.open(dir.file("data"), false));
  UNIT_ASSERT_OK(g.readPage(7, buf.data()));
  EXPECT_TRUE(hasPattern(buf.data(), 7));
}

TEST(DataFile, WriteBatchRoundTrip) {
  vmsunit::ScratchDir dir;
  DataFile f;
  UNIT_ASSERT_OK(f.open(dir.file("data"), true));
  std::printf("[ DataFile ] batched writes (io_uring): %s\n", f.batchedWrites() ? "yes" : "no");
  const size_t n = 300;
  vmsunit::AlignedPages bufs(n);
  std::vector<vmstore::internal::PageWrite> writes;
  for (size_t i = 0; i < n; i++) {
    uint64_t pid = (i * 37) % 1000 + 1;  // scattered, unsorted, distinct
    fillPattern(bufs.page(i), pid);
    writes.push_back({pid, bufs.page(i)});
  }
  UNIT_ASSERT_OK(f.writeBatch(writes));
  UNIT_ASSERT_OK(f.writeBatch({}));
  vmsunit::AlignedPages buf(1);
  for (auto& w : writes) {
    std::memset(buf.data(), 0xAB, kPage);
    UNIT_ASSERT_OK(f.readPage(w.pid, buf.data()));
    EXPECT_TRUE(hasPattern(buf.data(), w.pid)) << "page " << w.pid;
  }
  // Batches from several threads at once.
  std::vector<std::thread> threads;
  std::vector<Status> results(4);
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      std::vector<vmstore::internal::PageWrite> mine;
      for (size_t i = t; i < n; i += 4) mine.push_back(writes[i]);
      results[t] = f.writeBatch(mine);
    });
  }
  for (auto& th : threads) th.join();
  for (auto& r : results) EXPECT_TRUE(r.ok()) << r.toString();
  for (auto& w : writes) {
    UNIT_ASSERT_OK(f.readPage(w.pid, buf.data()));
    EXPECT_TRUE(hasPattern(buf.data(), w.pid)) << "page " << w.pid;
  }
}

// Writes that continue each other in the file go as vectored writes of up to 256 pages:
// a run longer than that, a variable-size page inside a run, runs broken by a gap and
// by a step back, all land where they belong.
TEST(DataFile, WriteBatchOfContiguousRunsRoundTrip) {
  vmsunit::ScratchDir dir;
  DataFile f;
  UNIT_ASSERT_OK(f.open(dir.file("data"), true));
  std::vector<uint64_t> pids;
  for (uint64_t p = 10; p < 610; p++) pids.push_back(p);     // 600 in a row
  for (uint64_t p : {700ull, 702ull, 703ull}) pids.push_back(p);  // a gap
  for (uint64_t p : {5ull, 6ull}) pids.push_back(p);          // back before the first
  vmsunit::AlignedPages bufs(pids.size());
  std::vector<vmstore::internal::PageWrite> writes;
  size_t slot = 0;
  for (uint64_t pid : pids) {
    fillPattern(bufs.page(slot), pid);
    writes.push_back({pid, bufs.page(slot), 1});
    slot++;
  }
  // A three-page write that continues the 703 run: 704..706.
  vmsunit::AlignedPages span(3);
  for (int k = 0; k < 3; k++) fillPattern(span.page(k), 704 + k);
  writes.insert(writes.begin() + 603, {704, span.page(0), 3});
  UNIT_ASSERT_OK(f.writeBatch(writes));
  vmsunit::AlignedPages buf(1);
  for (uint64_t pid : pids) {
    std::memset(buf.data(), 0xAB, kPage);
    UNIT_ASSERT_OK(f.readPage(pid, buf.data()));
    EXPECT_TRUE(hasPattern(buf.data(), pid)) << "page " << pid;
  }
  for (uint64_t pid = 704; pid < 707; pid++) {
    UNIT_ASSERT_OK(f.readPage(pid, buf.data()));
    EXPECT_TRUE(hasPattern(buf.data(), pid)) << "page " << pid << " of the three-page write";
  }
  for (uint64_t pid : {610ull, 701ull, 7ull}) {
    UNIT_ASSERT_OK(f.readPage(pid, buf.data()));
    EXPECT_TRUE(isZero(buf.data())) << "page " << pid << " was never written";
  }
}

TEST(DataFile, OpenMissingWithoutCreateFails) {
  vmsunit::ScratchDir dir;
  DataFile f;
  Status st = f.open(dir.file("absent"), false);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kIOError) << st.toString();
  EXPECT_FALSE(std::filesystem::exists(dir.file("absent")));
}

TEST(DataFile, ReadPastEndGivesZeros) {
  vmsunit::ScratchDir dir;
  DataFile f;
  UNIT_ASSERT_OK(f.open(dir.file("data"), true));
  vmsunit::AlignedPages buf(1);
  // Empty file.
  std::memset(buf.data(), 0xAB, kPage);
  UNIT_ASSERT_OK(f.readPage(0, buf.data()));
  EXPECT_TRUE(isZero(buf.data()));
  fillPattern(buf.data(), 1);
  UNIT_ASSERT_OK(f.writePage(0, buf.data()));
  for (uint64_t pid : {1ull, 2ull, 1000ull, 1ull << 30}) {
    std::memset(buf.data(), 0xAB, kPage);
    UNIT_ASSERT_OK(f.readPage(pid, buf.data()));
    EXPECT_TRUE(isZero(buf.data())) << "page " << pid;
  }
  EXPECT_EQ(f.sizeBytes(), kPage) << "reading never grows the file";
}

// readPages with progress: a range of several pieces (os/chunked_read.hpp) reads like
// one call, pages past the end as zeros, and the reports ascend to the whole range; with
// a fault-injecting backend (no io_uring) the same, reported once at the end.
void checkReadPagesWithProgress(DataFile& f, uint64_t written, uint64_t n, bool onePiece) {
  vmsunit::AlignedPages buf(n);
  std::memset(buf.data(), 0xAB, n * kPage);
  std::vector<size_t> upTo;
  const vmstore::internal::ChunkedReadTarget progress{
      [](void* c, size_t to) { static_cast<std::vector<size_t>*>(c)->push_back(to); }, &upTo};
  UNIT_ASSERT_OK(f.readPages(0, n, buf.data(), &progress));
  ASSERT_FALSE(upTo.empty());
  EXPECT_EQ(upTo.back(), n * kPage);
  for (size_t i = 1; i < upTo.size(); i++) EXPECT_LT(upTo[i - 1], upTo[i]);
  if (onePiece) {
    EXPECT_EQ(upTo.size(), 1u);
  }
  for (uint64_t pid = 0; pid < n; pid++) {
    const uint8_t* page = buf.data() + pid * kPage;
    if (pid < written) {
      ASSERT_TRUE(hasPattern(page, pid)) << "page " << pid;
    } else {
      ASSERT_TRUE(isZero(page)) << "page " << pid << " is past the end";
    }
  }
}

TEST(DataFile, ReadPagesWithProgressReadsInPiecesAndZerosPastTheEnd) {
  vmsunit::ScratchDir dir;
  DataFile f;
  UNIT_ASSERT_OK(f.open(dir.file("data"), true));
  const uint64_t written = 3 * vmstore::internal::kChunkBytes / kPage + 5;
  vmsunit::AlignedPages page(1);
  for (uint64_t pid = 0; pid < written; pid++) {
    fillPattern(page.data(), pid);
    UNIT_ASSERT_OK(f.writePage(pid, page.data()));
  }
  checkReadPagesWithProgress(f, written, written + 600, false);
  {
    vmstore::internal::FaultIo faults;
    vmstore::internal::Io* prev = vmstore::internal::setIo(&faults);
    checkReadPagesWithProgress(f, written, written + 600, true);
    vmstore::internal::setIo(prev);
  }
}

TEST(DataFile, TruncatedFileReadsDataThenZeros) {
  vmsunit::ScratchDir dir;
  DataFile f;
  UNIT_ASSERT_OK(f.open(dir.file("data"), true));
  vmsunit::AlignedPages buf(1);
  for (uint64_t pid = 0; pid < 3; pid++) {
    fillPattern(buf.data(), pid + 10);
    UNIT_ASSERT_OK(f.writePage(pid, buf.data()));
  }
  UNIT_ASSERT_OK(f.sync());
  // Cut the file in the middle of page 1 (behind the DataFile's back).
  const size_t cut = kPage + 1000;
  ASSERT_EQ(::truncate(dir.file("data").c_str(), static_cast<off_t>(cut)), 0) << std::strerror(errno);
  EXPECT_EQ(f.sizeBytes(), cut);

  std::memset(buf.data(), 0xAB, kPage);
  UNIT_ASSERT_OK(f.readPage(0, buf.data()));
  EXPECT_TRUE(hasPattern(buf.data(), 10)) << "page 0 is whole";

  std::memset(buf.data(), 0xAB, kPage);
  Status st = f.readPage(1, buf.data());
  ASSERT_TRUE(st.ok()) << "a short read is not an error: " << st.toString();
  EXPECT_TRUE(hasPattern(buf.data(), 11, 0, 1000)) << "the part before the cut is data";
  EXPECT_TRUE(isZero(buf.data(), 1000, kPage)) << "the part after the cut is zeros";

  std::memset(buf.data(), 0xAB, kPage);
  UNIT_ASSERT_OK(f.readPage(2, buf.data()));
  EXPECT_TRUE(isZero(buf.data())) << "page 2 is entirely past the end";

  // Odd cuts that are not multiples of 512 either (O_DIRECT alignment).
  for (size_t c : {size_t{1}, size_t{511}, size_t{513}, kPage - 1}) {
    fillPattern(buf.data(), 10);
    UNIT_ASSERT_OK(f.writePage(0, buf.data()));  // whole again, then cut
    UNIT_ASSERT_OK(f.sync());
    ASSERT_EQ(::truncate(dir.file("data").c_str(), static_cast<off_t>(c)), 0);
    std::memset(buf.data(), 0xAB, kPage);
    st = f.readPage(0, buf.data());
    ASSERT_TRUE(st.ok()) << "cut at " << c << ": " << st.toString();
    EXPECT_TRUE(hasPattern(buf.data(), 10, 0, c)) << "cut at " << c;
    EXPECT_TRUE(isZero(buf.data(), c, kPage)) << "cut at " << c;
  }
}

// True when the file's blocks cover its whole size (no hole).
bool fullyAllocated(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return static_cast<uint64_t>(st.st_blocks) * 512 >= static_cast<uint64_t>(st.st_size);
}

TEST(DataFile, AllocateAheadKeepsEveryWrittenPageAndLeavesNoHoles) {
  vmsunit::ScratchDir dir;
  DataFile f;
  UNIT_ASSERT_OK(f.open(dir.file("data"), true));
  if (!f.directIo()) GTEST_SKIP() << "no O_DIRECT here: allocating ahead stays off";
  f.setAllocateAhead(uint64_t{1} << 30);
  // Four threads write pages in an order of their own (single pages and batches, each
  // often past the end), so allocations and writes of other threads interleave.
  constexpr uint64_t kPages = 1200;
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<Status> failures(kThreads);
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      vmsunit::AlignedPages bufs(8);
      vmsunit::AlignedPages single(1);
      std::vector<vmstore::internal::PageWrite> batch;
      for (uint64_t i = 0; i < kPages / kThreads; i++) {
        uint64_t pid = (i * kThreads + t) * 7919 % kPages;  // a permutation of [0, kPages)
        if (i % 3 == 0) {
          fillPattern(single.data(), pid);
          Status st = f.writePage(pid, single.data());
          if (!st.ok()) failures[t] = st;
          continue;
        }
        fillPattern(bufs.data() + batch.size() * kPage, pid);
        batch.push_back({pid, bufs.data() + batch.size() * kPage});
        if (batch.size() == 8) {
          Status st = f.writeBatch(batch);
          if (!st.ok()) failures[t] = st;
          batch.clear();
        }
      }
      if (!batch.empty()) {
        Status st = f.writeBatch(batch);
        if (!st.ok()) failures[t] = st;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& st : failures) UNIT_ASSERT_OK(st);
  const uint64_t written = kPages / kThreads * kThreads;
  vmsunit::AlignedPages buf(1);
  for (uint64_t i = 0; i < written; i++) {
    uint64_t pid = i * 7919 % kPages;
    std::memset(buf.data(), 0xAB, kPage);
    UNIT_ASSERT_OK(f.readPage(pid, buf.data()));
    EXPECT_TRUE(hasPattern(buf.data(), pid)) << "page " << pid;
  }
  // Allocated ahead in whole MiB beyond the last page, with no hole below the end.
  EXPECT_GE(f.sizeBytes(), kPages * kPage);
  EXPECT_EQ(f.sizeBytes() % (1u << 20), 0u);
  EXPECT_TRUE(fullyAllocated(dir.file("data")));
  // A page past every write reads as zeros.
  std::memset(buf.data(), 0xAB, kPage);
  UNIT_ASSERT_OK(f.readPage(kPages + 3, buf.data()));
  EXPECT_TRUE(isZero(buf.data()));
}

TEST(DataFile, AllocateAheadStopsAtItsLimitAndIsOffByDefault) {
  vmsunit::ScratchDir dir;
  DataFile f;
  UNIT_ASSERT_OK(f.open(dir.file("data"), true));
  if (!f.directIo()) GTEST_SKIP() << "no O_DIRECT here: allocating ahead stays off";
  vmsunit::AlignedPages buf(1);
  for (uint64_t pid : {1, 0}) {
    fillPattern(buf.data(), pid);
    UNIT_ASSERT_OK(f.writePage(pid, buf.data()));
  }
  EXPECT_EQ(f.sizeBytes(), 2 * kPage) << "off by default";
  f.setAllocateAhead(40 * kPage);
  UNIT_ASSERT_OK(f.writePage(5, buf.data()));
  EXPECT_EQ(f.sizeBytes(), 40 * kPage) << "allocated up to the limit, not a whole MiB";
  // Past the limit a write allocates only up to itself.
  fillPattern(buf.data(), 45);
  UNIT_ASSERT_OK(f.writePage(45, buf.data()));
  EXPECT_EQ(f.sizeBytes(), 46 * kPage);
  EXPECT_TRUE(fullyAllocated(dir.file("data")));
  UNIT_ASSERT_OK(f.readPage(45, buf.data()));
  EXPECT_TRUE(hasPattern(buf.data(), 45));
  UNIT_ASSERT_OK(f.readPage(1, buf.data()));
  EXPECT_TRUE(hasPattern(buf.data(), 1));
}

TEST(DataFile, AllocateAheadAllocatesOnlyPastWhatCountsAsAllocated) {
  // Each allocation takes only the range past the allocated end: one from the file's
  // start made ext4 walk every extent below it (milliseconds at a GiB, 35% of the CPU
  // while a TPC-C checkpoint grew the file).
  vmsunit::ScratchDir dir;
  DataFile f;
  UNIT_ASSERT_OK(f.open(dir.file("data"), true));
  if (!f.directIo()) GTEST_SKIP() << "no O_DIRECT here: allocating ahead stays off";
  vmsunit::AlignedPages buf(1);
  for (uint64_t pid : {0, 100}) {  // pages 1-99 a hole
    fillPattern(buf.data(), pid);
    UNIT_ASSERT_OK(f.writePage(pid, buf.data()));
  }
  f.setAllocateAhead(uint64_t{1} << 30, 80 * kPage);  // [0, 80 pages) counts as allocated
  fillPattern(buf.data(), 120);
  UNIT_ASSERT_OK(f.writePage(120, buf.data()));
  ASSERT_EQ(f.sizeBytes(), 1u << 20);
  struct stat st {};
  ASSERT_EQ(::stat(dir.file("data").c_str(), &st), 0);
  const uint64_t blocks = static_cast<uint64_t>(st.st_blocks) * 512;
  // 79 pages stay a hole (st_blocks also counts a few blocks of the extent tree).
  EXPECT_LE(blocks, st.st_size - 70 * kPage) << "pages 1-79 were allocated too";
  EXPECT_GE(blocks, st.st_size - 79 * kPage) << "not all of [80 pages, 1 MiB) was allocated";
  // The hole is still a page like any other.
  fillPattern(buf.data(), 1);
  UNIT_ASSERT_OK(f.writePage(1, buf.data()));
  for (uint64_t pid : {0, 1, 100, 120}) {
    std::memset(buf.data(), 0xAB, kPage);
    UNIT_ASSERT_OK(f.readPage(pid, buf.data()));
    EXPECT_TRUE(hasPattern(buf.data(), pid)) << "page " << pid;
  }
}

TEST(DataFile, AllocateAheadThatFindsTheDeviceFullGivesItsSpaceBack) {
  vmsunit::ScratchDir dir;
  vmstore::internal::FaultIo faults;
  struct Installed {  // faults is io() until the test ends, however it ends
    vmstore::internal::Io* prev;
    ~Installed() { vmstore::internal::setIo(prev); }
  } installed{vmstore::internal::setIo(&faults)};
  {
    DataFile f;
    UNIT_ASSERT_OK(f.open(dir.file("data"), true));
    if (!f.directIo()) GTEST_SKIP() << "no O_DIRECT here: allocating ahead stays off";
    f.setAllocateAhead(uint64_t{1} << 30);
    vmsunit::AlignedPages buf(1);
    fillPattern(buf.data(), 0);
    UNIT_ASSERT_OK(f.writePage(0, buf.data()));
    ASSERT_EQ(f.sizeBytes(), 1u << 20);
    // 512 KiB left: the next allocation (to 2 MiB) does not fit, the page itself does.
    faults.spaceLimit((1u << 19));
    fillPattern(buf.data(), 256);
    UNIT_ASSERT_OK(f.writePage(256, buf.data()));
    EXPECT_EQ(f.sizeBytes(), (1u << 20) + kPage) << "no space kept past the page";
    // Allocating ahead is off from now on; writes go on as plain writes while space lasts.
    fillPattern(buf.data(), 300);
    UNIT_ASSERT_OK(f.writePage(300, buf.data()));
    EXPECT_EQ(f.sizeBytes(), 301 * kPage);
    fillPattern(buf.data(), 600);
    Status st = f.writePage(600, buf.data());
    EXPECT_EQ(st.code(), Code::kNoSpace) << st.toString();
    faults.clearSpaceLimit();
    for (uint64_t pid : {0, 256, 300}) {
      std::memset(buf.data(), 0xAB, kPage);
      UNIT_ASSERT_OK(f.readPage(pid, buf.data()));
      EXPECT_TRUE(hasPattern(buf.data(), pid)) << "page " << pid;
    }
  }
}

TEST(DataFile, DirectoryLockSameProcess) {
  vmsunit::ScratchDir dir;
  DirectoryLock a;
  UNIT_ASSERT_OK(a.acquire(dir.str()));
  EXPECT_TRUE(std::filesystem::exists(dir.file("LOCK")));
  {
    DirectoryLock b;
    Status st = b.acquire(dir.str());
    EXPECT_EQ(st.code(), Code::kBusy) << st.toString();
  }
  a.release();
  {
    DirectoryLock b;
    UNIT_ASSERT_OK(b.acquire(dir.str()));
    DirectoryLock c;
    EXPECT_EQ(c.acquire(dir.str()).code(), Code::kBusy);
  }  // b's destructor releases
  DirectoryLock d;
  UNIT_ASSERT_OK(d.acquire(dir.str()));
  d.release();
  d.release();  // twice is harmless
  UNIT_ASSERT_OK(a.acquire(dir.str()));
}

TEST(DataFile, DirectoryLockMissingDirectory) {
  vmsunit::ScratchDir dir;
  DirectoryLock a;
  Status st = a.acquire(dir.file("no/such/dir"));
  EXPECT_EQ(st.code(), Code::kIOError) << st.toString();
}

// Runs lock.acquire(dir) in a forked child; returns the child's Status code.
int childAcquireCode(const std::string& dir) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    DirectoryLock lock;
    Status st = lock.acquire(dir);
    _exit(st.code() == Code::kBusy ? 10 : st.ok() ? 11 : 12);
  }
  EXPECT_GT(pid, 0) << "fork: " << std::strerror(errno);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

TEST(DataFile, DirectoryLockOtherProcess) {
  vmsunit::ScratchDir dir;
  DirectoryLock a;
  UNIT_ASSERT_OK(a.acquire(dir.str()));
  EXPECT_EQ(childAcquireCode(dir.str()), 10) << "another process must get Busy";
  a.release();
  EXPECT_EQ(childAcquireCode(dir.str()), 11) << "after release another process gets the lock";
  // The child's lock died with it.
  UNIT_ASSERT_OK(a.acquire(dir.str()));
}

}  // namespace
