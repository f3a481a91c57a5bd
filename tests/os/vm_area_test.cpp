// Unit tests of os/vm_area.hpp: one anonymous area, zero pages before use, release() of
// single pages, scattered batches and adjacent runs, the number of system calls it takes,
// and that released memory really leaves the page table (mincore); populateHuge of a
// large run.
#include "os/vm_area.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "os/memory.hpp"
#include "unit_util.hpp"

namespace {

using vmstore::internal::VmArea;
constexpr size_t kPage = VmArea::kPageSize;

bool pageIsZero(const VmArea& a, uint64_t pid) {
  const char* p = a.pageAddress(pid);
  for (size_t i = 0; i < kPage; i++) {
    if (p[i] != 0) return false;
  }
  return true;
}

void stamp(VmArea& a, uint64_t pid) {
  char* p = a.pageAddress(pid);
  for (size_t i = 0; i < kPage; i += 8) {
    uint64_t v = pid * 1000003 + i;
    std::memcpy(p + i, &v, 8);
  }
}

bool hasStamp(const VmArea& a, uint64_t pid) {
  const char* p = a.pageAddress(pid);
  for (size_t i = 0; i < kPage; i += 8) {
    uint64_t v;
    std::memcpy(&v, p + i, 8);
    if (v != pid * 1000003 + i) return false;
  }
  return true;
}

// Whether the page is in the page table (resident), from mincore().
bool resident(const VmArea& a, uint64_t pid) {
  unsigned char vec = 0;
  int r = mincore(a.pageAddress(pid), kPage, &vec);
  EXPECT_EQ(r, 0) << "mincore: " << std::strerror(errno);
  return (vec & 1) != 0;
}

// How many of pids are resident.
size_t residentCount(const VmArea& a, const std::vector<uint64_t>& pids) {
  size_t n = 0;
  for (uint64_t pid : pids) n += resident(a, pid) ? 1 : 0;
  return n;
}

// Distinct contiguous runs in a set of page ids.
size_t runsOf(std::vector<uint64_t> pids) {
  std::sort(pids.begin(), pids.end());
  size_t runs = 0;
  for (size_t i = 0; i < pids.size(); i++) {
    if (i == 0 || pids[i] != pids[i - 1] + 1) runs++;
  }
  return runs;
}

// Writes all pids, releases `released`, checks counts, zeros and the untouched rest.
void releaseAndCheck(VmArea& a, const std::vector<uint64_t>& all, const std::vector<uint64_t>& released) {
  for (uint64_t pid : all) stamp(a, pid);
  EXPECT_EQ(residentCount(a, all), all.size()) << "written pages are resident";
  size_t calls = a.release(released);
  size_t runs = runsOf(released);
  if (a.batchedRelease()) {
    EXPECT_EQ(calls, (runs + 1023) / 1024) << "one process_madvise per 1024 ranges";
  } else {
    EXPECT_EQ(calls, runs) << "one madvise per contiguous run";
  }
  std::set<uint64_t> gone(released.begin(), released.end());
  for (uint64_t pid : released) {
    EXPECT_FALSE(resident(a, pid)) << "page " << pid << " still resident after release";
  }
  for (uint64_t pid : all) {
    if (gone.count(pid)) {
      EXPECT_TRUE(pageIsZero(a, pid)) << "released page " << pid << " does not read as zeros";
    } else {
      EXPECT_TRUE(hasStamp(a, pid)) << "page " << pid << " lost its content (not released)";
      EXPECT_TRUE(resident(a, pid)) << "page " << pid << " was not released but is gone";
    }
  }
}

TEST(VmArea, LogsBatchedRelease) {
  VmArea a(16, 0);
  struct utsname u {};
  uname(&u);
  std::printf("[ VmArea   ] kernel %s: batchedRelease() = %s (%s)\n", u.release,
              a.batchedRelease() ? "true" : "false",
              a.batchedRelease() ? "process_madvise(MADV_DONTNEED) with a self pidfd"
                                 : "fallback: one madvise per run");
  ::testing::Test::RecordProperty("batched_release", a.batchedRelease() ? "true" : "false");
  ::testing::Test::RecordProperty("kernel", u.release);
  // The probe page used to decide must be usable afterwards.
  EXPECT_TRUE(pageIsZero(a, 0));
  stamp(a, 0);
  EXPECT_TRUE(hasStamp(a, 0));
}

TEST(VmArea, Geometry) {
  VmArea a(100, 3 * kPage);
  EXPECT_EQ(a.pages(), 100u);
  ASSERT_NE(a.base(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.base()) % kPage, 0u);
  for (uint64_t pid : {0ull, 1ull, 57ull, 99ull}) {
    EXPECT_EQ(a.pageAddress(pid), a.base() + pid * kPage);
  }
  // The guard area after the last page reads as zeros.
  const char* guard = a.pageAddress(100);
  for (size_t i = 0; i < 3 * kPage; i++) ASSERT_EQ(guard[i], 0) << "guard byte " << i;
}

TEST(VmArea, ZeroBeforeUseAndDataPersists) {
  const uint64_t pages = 512;
  VmArea a(pages, kPage);
  std::vector<uint64_t> all(pages);
  std::iota(all.begin(), all.end(), 0);
  for (uint64_t pid : all) ASSERT_TRUE(pageIsZero(a, pid)) << "page " << pid;
  for (uint64_t pid : all) stamp(a, pid);
  for (uint64_t pid : all) ASSERT_TRUE(hasStamp(a, pid)) << "page " << pid;
  EXPECT_EQ(a.release(std::span<const uint64_t>{}), 0u) << "an empty release makes no system call";
  for (uint64_t pid : all) ASSERT_TRUE(hasStamp(a, pid)) << "page " << pid;
}

TEST(VmArea, ReleaseSinglePage) {
  VmArea a(64, 0);
  std::vector<uint64_t> all(64);
  std::iota(all.begin(), all.end(), 0);
  releaseAndCheck(a, all, {17});
  releaseAndCheck(a, all, {0});
  releaseAndCheck(a, all, {63});
  // A released page can be written again and released again.
  stamp(a, 17);
  EXPECT_TRUE(hasStamp(a, 17));
  EXPECT_EQ(a.release(std::vector<uint64_t>{17}), 1u);
  EXPECT_TRUE(pageIsZero(a, 17));
}

TEST(VmArea, ReleaseScatteredBatch) {
  const uint64_t pages = 4096;
  VmArea a(pages, 0);
  std::vector<uint64_t> all(pages);
  std::iota(all.begin(), all.end(), 0);
  std::mt19937_64 rng(7);
  std::set<uint64_t> pick;
  while (pick.size() < 200) {
    uint64_t pid = rng() % pages;
    if (pick.count(pid) || pick.count(pid + 1) || (pid > 0 && pick.count(pid - 1))) continue;
    pick.insert(pid);  // no two adjacent: 200 ranges
  }
  std::vector<uint64_t> released(pick.begin(), pick.end());
  std::shuffle(released.begin(), released.end(), rng);  // release() accepts any order
  ASSERT_EQ(runsOf(released), 200u);
  releaseAndCheck(a, all, released);
  if (a.batchedRelease()) {
    EXPECT_EQ(a.release(released), 1u) << "a batch of 200 ranges is one system call";
  }
}

TEST(VmArea, ReleaseAdjacentRuns) {
  const uint64_t pages = 256;
  VmArea a(pages, 0);
  std::vector<uint64_t> all(pages);
  std::iota(all.begin(), all.end(), 0);
  // Runs of 3, 2, 1 and 40 pages, handed over unsorted.
  std::vector<uint64_t> released = {12, 10, 11, 20, 21, 30};
  for (uint64_t p = 100; p < 140; p++) released.push_back(p);
  std::reverse(released.begin(), released.end());
  ASSERT_EQ(runsOf(released), 4u);
  releaseAndCheck(a, all, released);
  // The whole area as one run.
  releaseAndCheck(a, all, all);
}

TEST(VmArea, BatchOfMoreThanIovMaxRanges) {
  const uint64_t pages = 2 * 1500 + 8;
  VmArea a(pages, 0);
  std::vector<uint64_t> all(pages);
  std::iota(all.begin(), all.end(), 0);
  std::vector<uint64_t> released;
  for (uint64_t p = 1; p < 2 * 1500; p += 2) released.push_back(p);  // 1500 separate ranges
  ASSERT_EQ(runsOf(released), 1500u);
  releaseAndCheck(a, all, released);  // batched: 2 calls; fallback: 1500
}

TEST(VmArea, ResidentMemoryDropsAfterRelease) {
  const uint64_t pages = vmsunit::scaled<uint64_t>(8192, 2048);  // 32 MiB / 8 MiB
  VmArea a(pages, 0);
  std::vector<uint64_t> all(pages);
  std::iota(all.begin(), all.end(), 0);
  std::vector<unsigned char> vec(pages);
  auto residentTotal = [&] {
    EXPECT_EQ(mincore(a.base(), pages * kPage, vec.data()), 0);
    size_t n = 0;
    for (unsigned char c : vec) n += c & 1;
    return n;
  };
  // Nothing is committed before use, except that deciding batchedRelease() may have
  // touched page 0 (its zero page can stay mapped).
  EXPECT_LE(residentTotal(), 1u) << "nothing is committed before use";
  for (uint64_t pid : all) a.pageAddress(pid)[123] = 1;
  EXPECT_EQ(residentTotal(), pages);
  // Release every other page in one batch, then the rest.
  std::vector<uint64_t> even, odd;
  for (uint64_t pid : all) (pid % 2 ? odd : even).push_back(pid);
  a.release(even);
  EXPECT_EQ(residentTotal(), pages / 2);
  a.release(odd);
  EXPECT_EQ(residentTotal(), 0u);
  for (uint64_t pid = 0; pid < pages; pid += 97) EXPECT_TRUE(pageIsZero(a, pid));
}

}  // namespace

namespace {

// kB of AnonHugePages in the mappings of this process that hold addr (smaps).
uint64_t anonHugeKbAt(const void* addr) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  uint64_t kb = 0;
  const auto at = reinterpret_cast<uintptr_t>(addr);
  while (std::getline(f, line)) {
    unsigned long lo, hi;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find('-')) {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      kb += std::stoull(line.substr(14));
    }
  }
  return kb;
}

}  // namespace

TEST(VmArea, PopulateHugeBacksTheAlignedInsideOfALargeRun) {
  const uint64_t pages = 4096;  // 16 MiB
  VmArea a(pages, 0);
  constexpr uintptr_t kHuge = 2u << 20;
  const vmstore::internal::PageRun run{3, 1500};  // about 5.9 MiB, unaligned both ends
  const auto from = reinterpret_cast<uintptr_t>(a.pageAddress(run.pid));
  const uintptr_t lo = (from + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t hi = (from + run.pages * kPage) & ~(kHuge - 1);
  ASSERT_GE(hi - lo, kHuge);

  EXPECT_EQ(a.populateHuge({run.pid, 100}), 0u) << "a run under 2 MiB gets nothing";
  size_t got = a.populateHuge(run);
  if (!vmstore::internal::transparentHugePagesOn()) {
    EXPECT_EQ(got, 0u) << "THP is off: nothing populated";
    GTEST_SKIP() << "transparent huge pages are off on this kernel";
  }
  EXPECT_EQ(got, hi - lo);
  const uint64_t firstIn = (lo - reinterpret_cast<uintptr_t>(a.base())) / kPage;
  const uint64_t endIn = (hi - reinterpret_cast<uintptr_t>(a.base())) / kPage;
  // (Page 0 is left out: the area's construction reads it, mapping the zero page.)
  for (uint64_t pid = 1; pid < pages; pid++) {
    const bool inside = pid >= firstIn && pid < endIn;
    ASSERT_EQ(resident(a, pid), inside) << "page " << pid;
    ASSERT_TRUE(pageIsZero(a, pid)) << "page " << pid;
  }
  EXPECT_GE(anonHugeKbAt(a.pageAddress(firstIn)), 2048u) << "no huge page backs the run";
  // Written like any memory, then released whole like a variable-size page.
  for (uint64_t pid = run.pid; pid < run.pid + run.pages; pid++) stamp(a, pid);
  for (uint64_t pid = run.pid; pid < run.pid + run.pages; pid++) ASSERT_TRUE(hasStamp(a, pid)) << pid;
  a.release(std::vector<vmstore::internal::PageRun>{run});
  for (uint64_t pid = run.pid; pid < run.pid + run.pages; pid++) ASSERT_FALSE(resident(a, pid)) << "page " << pid;
  for (uint64_t pid = 1; pid < pages; pid++) {
    ASSERT_TRUE(pageIsZero(a, pid)) << "page " << pid;
  }
  EXPECT_EQ(anonHugeKbAt(a.pageAddress(firstIn)), 0u);
}

TEST(HugeBackoff, SlowPopulatesSkipLongerEachTimeAndAFastOneResets) {
  using vmstore::internal::HugeBackoff;
  HugeBackoff b;
  const uint64_t mib4 = 4u << 20;
  const uint64_t slow = 4 * HugeBackoff::kSlowNsPerMiB + 1;
  const uint64_t fast = 4 * HugeBackoff::kSlowNsPerMiB;
  EXPECT_TRUE(b.tryNow());
  b.report(fast, mib4);
  EXPECT_TRUE(b.tryNow()) << "a fast populate skips nothing";
  // Each slow one in a row skips twice as many calls as the one before.
  uint32_t expected = HugeBackoff::kFirstSkip;
  for (int round = 0; round < 10; round++) {
    b.report(slow, mib4);
    for (uint32_t i = 0; i < expected; i++) ASSERT_FALSE(b.tryNow()) << "round " << round << ", call " << i;
    ASSERT_TRUE(b.tryNow()) << "round " << round;
    expected = std::min(HugeBackoff::kMaxSkip, expected * 2);
  }
  EXPECT_EQ(expected, HugeBackoff::kMaxSkip);
  b.report(fast, mib4);
  b.report(slow, mib4);
  for (uint32_t i = 0; i < HugeBackoff::kFirstSkip; i++) ASSERT_FALSE(b.tryNow());
  EXPECT_TRUE(b.tryNow()) << "a fast populate set the skip back to the first";
}
