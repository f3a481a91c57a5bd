// Unit tests of buffer/buffer_manager.hpp: allocation and free space, the hard memory
// budget (also under concurrency), eviction and read-in, checksums on read, counters,
// batched release, the write hook, flushAll and the file size limit.
#include "buffer/buffer_manager.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "os/memory.hpp"
#include "unit_util.hpp"

namespace {

using vmstore::Stats;
using vmstore::Status;
using vmstore::internal::BufferManager;
using vmstore::internal::Counter;
using vmstore::internal::Page;
using vmstore::internal::PageKind;
using vmstore::internal::pageIsIntact;
using vmstore::internal::PageState;
using vmstore::internal::StorageError;
using Code = vmstore::Status::Code;
using vmsunit::BufferEnv;
using vmsunit::evictAll;
constexpr size_t kPage = vmstore::internal::kPageSize;
constexpr size_t kWords = vmstore::internal::kPagePayload / 8;

// Payload layout used here: word 0 = magic(pid), word 1 = a counter, the rest a pattern.
uint64_t magic(uint64_t pid) { return pid * 0x9E3779B97F4A7C15ull + 1; }
uint64_t* words(Page* p) { return reinterpret_cast<uint64_t*>(p->payload); }

void stamp(Page* p, uint64_t pid) {
  uint64_t* w = words(p);
  w[0] = magic(pid);
  w[1] = 0;
  for (size_t i = 2; i < kWords; i++) w[i] = magic(pid) ^ i;
}

// Empty string if p carries pid's stamp, else what is wrong.
std::string checkStamp(Page* p, uint64_t pid) {
  uint64_t* w = words(p);
  if (p->header.pid != pid) return "header pid " + std::to_string(p->header.pid);
  if (w[0] != magic(pid)) return "magic word " + std::to_string(w[0]);
  for (size_t i = 2; i < kWords; i++) {
    if (w[i] != (magic(pid) ^ i)) return "pattern word " + std::to_string(i);
  }
  return {};
}

uint64_t counter(BufferManager& bm, Counter c) { return bm.counters().sum(c); }

// Allocates n stamped pages and unlocks them; returns their ids.
std::vector<uint64_t> allocStamped(BufferManager& bm, size_t n) {
  std::vector<uint64_t> pids;
  for (size_t i = 0; i < n; i++) {
    Page* p = bm.allocPage(PageKind::kValue);
    uint64_t pid = p->header.pid;
    stamp(p, pid);
    bm.unfixX(pid);
    pids.push_back(pid);
  }
  return pids;
}

using vmsunit::codeOf;
bool isEvicted(BufferManager& bm, uint64_t pid) {
  return PageState::stateOf(bm.state(pid).load()) == PageState::kEvicted;
}

TEST(BufferManager, AllocReturnsZeroedLockedDirtyPages) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  EXPECT_EQ(bm.pageCount(), 1u) << "page 0 is the superblock";
  EXPECT_EQ(bm.poolPages(), 256u);
  EXPECT_EQ(bm.residentPages(), 0u);
  uint64_t last = 0;
  for (int i = 0; i < 40; i++) {
    Page* p = bm.allocPage(i % 2 ? PageKind::kBTreeLeaf : PageKind::kValue);
    uint64_t pid = p->header.pid;
    EXPECT_GT(pid, last) << "ids increase";
    EXPECT_EQ(pid, static_cast<uint64_t>(i) + 1);
    last = pid;
    EXPECT_EQ(p, bm.pageAt(pid));
    EXPECT_EQ(bm.pageCount(), pid + 1);
    EXPECT_EQ(PageState::stateOf(bm.state(pid).load()), PageState::kLocked) << "returned X-locked";
    EXPECT_TRUE(BufferManager::isDirty(p));
    EXPECT_EQ(p->header.kind, i % 2 ? PageKind::kBTreeLeaf : PageKind::kValue);
    bool zero = true;
    for (size_t b = 0; b < sizeof(p->payload); b++) zero = zero && p->payload[b] == 0;
    EXPECT_TRUE(zero) << "payload of new page " << pid << " is zeroed";
    EXPECT_EQ(p->header.lsn, 0u);
    stamp(p, pid);
    bm.unfixX(pid);
    EXPECT_EQ(PageState::stateOf(bm.state(pid).load()), PageState::kUnlocked);
  }
  EXPECT_EQ(bm.residentPages(), 40u);
  uint64_t n = 0;
  bm.forEachResident([&](uint64_t) { n++; });
  EXPECT_EQ(n, 40u);
}

TEST(BufferManager, FreedPagesAreReused) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = allocStamped(bm, 20);
  const uint64_t count = bm.pageCount();
  std::set<uint64_t> freed;
  for (uint64_t pid : {pids[3], pids[7], pids[15]}) {
    bm.fixX(pid);
    bm.freePage(pid);
    freed.insert(pid);
    EXPECT_EQ(PageState::stateOf(bm.state(pid).load()), PageState::kUnlocked) << "freePage unlocks";
    EXPECT_EQ(bm.pageAt(pid)->header.kind, PageKind::kFree);
  }
  EXPECT_EQ(bm.freeSpace().size(), 3u);
  std::set<uint64_t> reused;
  for (int i = 0; i < 3; i++) {
    Page* p = bm.allocPage(PageKind::kBTreeInner);
    uint64_t pid = p->header.pid;
    reused.insert(pid);
    EXPECT_EQ(words(p)[0], 0u) << "a reused page is zeroed, not the old content";
    EXPECT_TRUE(BufferManager::isDirty(p));
    EXPECT_EQ(p->header.kind, PageKind::kBTreeInner);
    bm.unfixX(pid);
  }
  EXPECT_EQ(reused, freed);
  EXPECT_EQ(bm.freeSpace().size(), 0u);
  EXPECT_EQ(bm.pageCount(), count) << "reuse does not grow the file";
  Page* p = bm.allocPage(PageKind::kValue);
  EXPECT_EQ(p->header.pid, count) << "with no free page the file grows";
  bm.unfixX(p->header.pid);
}

TEST(BufferManager, FreedAndEvictedPageIsReusedZeroed) {
  const uint64_t pool = 256;
  BufferEnv env(pool);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = allocStamped(bm, 3 * pool);
  UNIT_ASSERT_OK(bm.flushAll());  // the target's stamp is on storage
  const uint64_t target = pids[1];
  bm.fixX(target);
  bm.freePage(target);
  // Evict it by reading other pages (no allocation, which would take it back).
  for (size_t i = 0; i < 50 * pool && !isEvicted(bm, target); i++) {
    uint64_t pid = pids[pool + i % (2 * pool)];
    bm.fixS(pid);
    bm.unfixS(pid);
  }
  ASSERT_TRUE(isEvicted(bm, target));
  ASSERT_EQ(bm.freeSpace().size(), 1u);
  // The evicted free page comes back from the free space without a read (zeroed).
  uint64_t misses = counter(bm, Counter::kMisses);
  Page* p = bm.allocPage(PageKind::kValue);
  EXPECT_EQ(p->header.pid, target);
  EXPECT_EQ(words(p)[0], 0u);
  EXPECT_TRUE(BufferManager::isDirty(p));
  EXPECT_EQ(counter(bm, Counter::kMisses), misses) << "allocation reads nothing";
  bm.unfixX(p->header.pid);
}

TEST(BufferManager, HardBudgetWhileAllocating) {
  const uint64_t pool = 256;
  const size_t n = vmsunit::scaled<size_t>(5000, 1000);
  BufferEnv env(pool);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids;
  for (size_t i = 0; i < n; i++) {
    Page* p = bm.allocPage(PageKind::kValue);
    ASSERT_LE(bm.residentPages(), bm.poolPages()) << "after allocation " << i;
    uint64_t pid = p->header.pid;
    stamp(p, pid);
    bm.unfixX(pid);
    pids.push_back(pid);
    ASSERT_LE(bm.residentPages(), bm.poolPages()) << "after allocation " << i;
    if (i % 256 == 0) {
      uint64_t listed = 0;
      bm.forEachResident([&](uint64_t) { listed++; });
      ASSERT_LE(listed, pool) << "resident set larger than the pool";
    }
  }
  EXPECT_GT(counter(bm, Counter::kEvictions), n - pool - 1);
  // Everything reads back intact, still within the budget.
  for (uint64_t pid : pids) {
    Page* p = bm.fixS(pid);
    ASSERT_EQ(checkStamp(p, pid), "") << "page " << pid;
    bm.unfixS(pid);
    ASSERT_LE(bm.residentPages(), bm.poolPages());
  }
  EXPECT_GT(counter(bm, Counter::kMisses), 0u);
  // The resident set and the count agree.
  uint64_t listed = 0;
  bm.forEachResident([&](uint64_t pid) {
    listed++;
    EXPECT_FALSE(isEvicted(bm, pid)) << "resident set lists evicted page " << pid;
  });
  EXPECT_EQ(listed, bm.residentPages());
}

// The page provider evicts ahead of need: dirty pages are written back and the budget
// holds while two threads allocate and read back far more pages than the pool holds.
TEST(BufferManager, PageProviderEvictsAheadAndKeepsTheBudget) {
  const uint64_t pool = 1024;
  const size_t n = vmsunit::scaled<size_t>(8000, 3000);
  BufferEnv env(pool);
  BufferManager& bm = *env.bm;
  bm.startProvider();
  std::vector<std::vector<uint64_t>> pids(2);
  std::atomic<uint64_t> overBudget{0};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; t++) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < n / 2; i++) {
        Page* p = bm.allocPage(PageKind::kValue);
        uint64_t pid = p->header.pid;
        stamp(p, pid);
        bm.unfixX(pid);
        pids[t].push_back(pid);
        if (bm.residentPages() > bm.poolPages()) overBudget++;
      }
      for (uint64_t pid : pids[t]) {
        Page* p = bm.fixS(pid);
        if (!checkStamp(p, pid).empty()) bad++;
        bm.unfixS(pid);
        if (bm.residentPages() > bm.poolPages()) overBudget++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(overBudget.load(), 0u);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(counter(bm, Counter::kProviderEvictions), 0u) << "the provider never evicted";
  EXPECT_LE(counter(bm, Counter::kProviderEvictions), counter(bm, Counter::kEvictions));
  EXPECT_GT(counter(bm, Counter::kPagesWritten), 0u);
  bm.stopProvider();
  bm.stopProvider();  // harmless twice
}

TEST(BufferManager, HardBudgetUnderConcurrentAccess) {
  const uint64_t pool = 256;
  const size_t n = vmsunit::scaled<size_t>(1000, 500);
  const int threads = 4;
  const int opsPerThread = vmsunit::scaled(8000, 2000);
  BufferEnv env(pool);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = allocStamped(bm, n);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> violations{0}, maxSeen{0}, checks{0};
  std::thread checker([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      uint64_t r = bm.residentPages();
      if (r > bm.poolPages()) violations++;
      if (r > maxSeen.load()) maxSeen.store(r);
      checks++;
      if (checks % 64 == 0) std::this_thread::yield();  // few cores: let the workers run
    }
  });
  std::atomic<int> badReads{0};
  std::atomic<int> errors{0};
  std::vector<std::map<uint64_t, uint64_t>> increments(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      try {
        for (int i = 0; i < opsPerThread; i++) {
          uint64_t pid = pids[rng() % pids.size()];
          switch (rng() % 3) {
            case 0: {
              Page* p = bm.fixX(pid);
              if (!checkStamp(p, pid).empty()) badReads++;
              words(p)[1]++;
              bm.markDirty(pid, p);
              increments[t][pid]++;
              bm.unfixX(pid);
              break;
            }
            case 1: {
              Page* p = bm.fixS(pid);
              if (!checkStamp(p, pid).empty()) badReads++;
              bm.unfixS(pid);
              break;
            }
            default: {
              uint64_t w = bm.optimisticBegin(pid);
              uint64_t m = __atomic_load_n(&words(bm.pageAt(pid))[0], __ATOMIC_RELAXED);
              uint64_t last = __atomic_load_n(&words(bm.pageAt(pid))[kWords - 1], __ATOMIC_RELAXED);
              std::atomic_thread_fence(std::memory_order_acquire);
              if (PageState::stillValid(w, bm.state(pid).load())) {
                if (m != magic(pid) || last != (magic(pid) ^ (kWords - 1))) badReads++;
              }
            }
          }
        }
      } catch (const StorageError& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.status().toString();
        errors++;
      }
    });
  }
  for (auto& w : workers) w.join();
  stop = true;
  checker.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(badReads.load(), 0) << "a locked or validated read saw wrong content";
  EXPECT_EQ(violations.load(), 0u) << "resident pages exceeded the pool; max seen " << maxSeen.load();
  EXPECT_LE(maxSeen.load(), pool);
  EXPECT_GT(checks.load(), 0u);
  EXPECT_GT(counter(bm, Counter::kEvictions), 0u) << "the workload did not evict";
  // No update was lost across eviction and read-in.
  std::map<uint64_t, uint64_t> expected;
  for (auto& m : increments) {
    for (auto [pid, k] : m) expected[pid] += k;
  }
  for (uint64_t pid : pids) {
    Page* p = bm.fixS(pid);
    EXPECT_EQ(checkStamp(p, pid), "") << "page " << pid;
    EXPECT_EQ(words(p)[1], expected[pid]) << "page " << pid << " lost updates";
    bm.unfixS(pid);
  }
}

TEST(BufferManager, EvictedPagesComeBackIntact) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = allocStamped(bm, 100);
  // Half clean on storage, half only dirty in memory when evicted.
  UNIT_ASSERT_OK(bm.flushAll());
  for (size_t i = 0; i < pids.size(); i += 2) {
    Page* p = bm.fixX(pids[i]);
    words(p)[1] = 77;
    bm.markDirty(pids[i], p);
    bm.unfixX(pids[i]);
  }
  ASSERT_TRUE(vmsunit::evictAll(bm, pids));
  for (uint64_t pid : pids) EXPECT_TRUE(isEvicted(bm, pid));
  for (size_t i = 0; i < pids.size(); i++) {
    uint64_t pid = pids[i];
    Page* p = nullptr;
    switch (i % 3) {
      case 0:
        p = bm.fixS(pid);
        break;
      case 1:
        p = bm.fixX(pid);
        break;
      default:
        bm.optimisticBegin(pid);  // reads it in too
        p = bm.fixS(pid);
    }
    EXPECT_EQ(checkStamp(p, pid), "") << "page " << pid;
    EXPECT_EQ(words(p)[1], i % 2 == 0 ? 77u : 0u) << "page " << pid;
    EXPECT_FALSE(BufferManager::isDirty(p)) << "a page just read in is clean";
    if (i % 3 == 1) {
      bm.unfixX(pid);
    } else {
      bm.unfixS(pid);
    }
  }
}

TEST(BufferManager, DamagedPageOnStorageIsCorruption) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = allocStamped(bm, 10);
  UNIT_ASSERT_OK(bm.flushAll());
  const uint64_t bad = pids[4];
  const uint64_t misplaced = pids[6];
  // Damage the file behind the engine's back: flip a bit of `bad`, and put a copy of
  // another page where `misplaced` belongs (intact checksum, wrong id).
  int fd = ::open(env.dataPath().c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  std::vector<char> original(kPage), buf(kPage);
  ASSERT_EQ(pread(fd, original.data(), kPage, static_cast<off_t>(bad * kPage)), static_cast<ssize_t>(kPage));
  buf = original;
  buf[1000] ^= 0x04;
  ASSERT_EQ(pwrite(fd, buf.data(), kPage, static_cast<off_t>(bad * kPage)), static_cast<ssize_t>(kPage));
  ASSERT_EQ(pread(fd, buf.data(), kPage, static_cast<off_t>(pids[5] * kPage)), static_cast<ssize_t>(kPage));
  ASSERT_EQ(pwrite(fd, buf.data(), kPage, static_cast<off_t>(misplaced * kPage)), static_cast<ssize_t>(kPage));
  ASSERT_EQ(fdatasync(fd), 0);

  ASSERT_TRUE(vmsunit::evictAll(bm, {bad, misplaced}));
  const uint64_t resident = bm.residentPages();
  for (uint64_t pid : {bad, misplaced}) {
    for (int round = 0; round < 2; round++) {  // a later fix still throws
      EXPECT_EQ(codeOf([&] { bm.fixX(pid); }), Code::kCorruption) << "fixX " << pid;
      EXPECT_TRUE(isEvicted(bm, pid)) << "page " << pid << " stays evicted";
      EXPECT_EQ(codeOf([&] { bm.fixS(pid); }), Code::kCorruption) << "fixS " << pid;
      EXPECT_TRUE(isEvicted(bm, pid));
      EXPECT_EQ(codeOf([&] { bm.optimisticBegin(pid); }), Code::kCorruption) << "optimisticBegin " << pid;
      EXPECT_TRUE(isEvicted(bm, pid));
    }
    EXPECT_EQ(bm.residentPages(), resident) << "a failed read gives its frame back";
    bool listed = false;
    bm.forEachResident([&](uint64_t r) { listed = listed || r == pid; });
    EXPECT_FALSE(listed) << "a failed read is not in the resident set";
  }
  // The other pages are fine.
  for (uint64_t pid : pids) {
    if (pid == bad || pid == misplaced) continue;
    Page* p = bm.fixS(pid);
    EXPECT_EQ(checkStamp(p, pid), "");
    bm.unfixS(pid);
  }
  // Once storage is repaired the page reads again (nothing is poisoned in memory).
  ASSERT_EQ(pwrite(fd, original.data(), kPage, static_cast<off_t>(bad * kPage)), static_cast<ssize_t>(kPage));
  ASSERT_EQ(fdatasync(fd), 0);
  ::close(fd);
  Page* p = bm.fixX(bad);
  EXPECT_EQ(checkStamp(p, bad), "");
  bm.unfixX(bad);
}

TEST(BufferManager, NonexistentPageIsCorruption) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = allocStamped(bm, 5);
  const uint64_t count = bm.pageCount();
  ASSERT_EQ(count, 6u);
  for (uint64_t pid : {uint64_t{0}, count, count + 1, uint64_t{1} << 19, ~uint64_t{0} >> 1}) {
    EXPECT_EQ(codeOf([&] { bm.fixX(pid); }), Code::kCorruption) << "fixX " << pid;
    EXPECT_EQ(codeOf([&] { bm.fixS(pid); }), Code::kCorruption) << "fixS " << pid;
    EXPECT_EQ(codeOf([&] { bm.checkExists(pid); }), Code::kCorruption) << "checkExists " << pid;
  }
  for (uint64_t pid : pids) EXPECT_EQ(codeOf([&] { bm.checkExists(pid); }), Code::kOk);
}

TEST(BufferManager, CountersMoveAsExpected) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = allocStamped(bm, 10);
  EXPECT_EQ(counter(bm, Counter::kHits), 0u) << "allocation is not an access";
  EXPECT_EQ(counter(bm, Counter::kMisses), 0u);
  EXPECT_EQ(counter(bm, Counter::kPagesWritten), 0u);
  EXPECT_EQ(counter(bm, Counter::kEvictions), 0u);
  EXPECT_EQ(counter(bm, Counter::kReleaseCalls), 0u);

  bm.fixX(pids[0]);
  bm.unfixX(pids[0]);
  EXPECT_EQ(counter(bm, Counter::kHits), 1u);
  bm.fixS(pids[1]);
  bm.unfixS(pids[1]);
  EXPECT_EQ(counter(bm, Counter::kHits), 2u);
  bm.optimisticBegin(pids[2]);
  EXPECT_EQ(counter(bm, Counter::kHits), 3u);
  EXPECT_EQ(counter(bm, Counter::kMisses), 0u);

  UNIT_ASSERT_OK(bm.flushAll());
  EXPECT_EQ(counter(bm, Counter::kPagesWritten), 10u);
  UNIT_ASSERT_OK(bm.flushAll());
  EXPECT_EQ(counter(bm, Counter::kPagesWritten), 10u) << "clean pages are not written again";

  ASSERT_TRUE(vmsunit::evictAll(bm, pids));
  uint64_t evictions = counter(bm, Counter::kEvictions);
  EXPECT_GE(evictions, 10u);
  EXPECT_GE(counter(bm, Counter::kReleaseCalls), 1u);
  EXPECT_LE(counter(bm, Counter::kReleaseCalls), evictions);
  EXPECT_GT(counter(bm, Counter::kPagesWritten), 10u) << "the dirty fillers were written";

  // A miss is counted once per page read from storage.
  uint64_t misses = counter(bm, Counter::kMisses);
  bm.fixX(pids[0]);
  bm.unfixX(pids[0]);
  EXPECT_EQ(counter(bm, Counter::kMisses), misses + 1);
  bm.fixS(pids[1]);
  bm.unfixS(pids[1]);
  EXPECT_EQ(counter(bm, Counter::kMisses), misses + 2);
  bm.optimisticBegin(pids[2]);
  EXPECT_EQ(counter(bm, Counter::kMisses), misses + 3);

  Stats s;
  bm.fillStats(&s);
  EXPECT_EQ(s.misses, misses + 3);
  EXPECT_EQ(s.evictions, counter(bm, Counter::kEvictions));
  EXPECT_EQ(s.pages_written, counter(bm, Counter::kPagesWritten));
  EXPECT_EQ(s.release_calls, counter(bm, Counter::kReleaseCalls));
  EXPECT_EQ(s.pool_pages, 256u);
  EXPECT_EQ(s.resident_pages, bm.residentPages());
  EXPECT_LE(s.resident_pages, s.pool_pages);
  EXPECT_EQ(s.page_count, bm.pageCount());
  EXPECT_EQ(s.free_pages, bm.freeSpace().size());
  EXPECT_GE(s.file_bytes, 11 * kPage);
}

// Stats says hits are "page accesses that found the page resident" and misses "page
// accesses that read the page from storage": one access that misses is not also a hit.
TEST(BufferManager, MissIsNotAlsoCountedAsHit) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = allocStamped(bm, 3);
  ASSERT_TRUE(vmsunit::evictAll(bm, pids));
  uint64_t hits = counter(bm, Counter::kHits);
  bm.fixX(pids[0]);
  bm.unfixX(pids[0]);
  EXPECT_EQ(counter(bm, Counter::kHits), hits) << "fixX of an evicted page";
  bm.fixS(pids[1]);
  bm.unfixS(pids[1]);
  EXPECT_EQ(counter(bm, Counter::kHits), hits) << "fixS of an evicted page";
  bm.optimisticBegin(pids[2]);
  EXPECT_EQ(counter(bm, Counter::kHits), hits) << "optimisticBegin of an evicted page";
}

TEST(BufferManager, EvictionUsesBatchedRelease) {
  const uint64_t pool = 256;
  BufferEnv env(pool);
  BufferManager& bm = *env.bm;
  allocStamped(bm, vmsunit::scaled<size_t>(4000, 1500));
  uint64_t evictions = counter(bm, Counter::kEvictions);
  uint64_t calls = counter(bm, Counter::kReleaseCalls);
  std::printf("[ BufferMgr] batchedRelease=%d evictions=%llu release_calls=%llu\n",
              bm.batchedRelease() ? 1 : 0, static_cast<unsigned long long>(evictions),
              static_cast<unsigned long long>(calls));
  ASSERT_GT(evictions, 0u);
  ASSERT_GT(calls, 0u);
  if (bm.batchedRelease()) {
    EXPECT_LE(calls * 8, evictions) << "evictions are not batched: one system call per batch";
  } else {
    EXPECT_LE(calls, evictions);
  }
}

// A page store over the data file that can refuse its writes and counts what it sees.
struct FlakyStore : vmstore::internal::PageStore {
  explicit FlakyStore(vmstore::internal::DataFile* f) : file(f) {}
  Status readPage(uint64_t pid, Page* buf, uint64_t pages,
                  const vmstore::internal::ChunkedReadTarget* progress) override {
    reads++;
    if (pid == failReadOf) return Status::IOError("read error (test)");
    return file->readPages(pid, pages, buf, progress);
  }
  Status writePages(std::span<const vmstore::internal::PageWrite> w) override {
    if (failWrites) return Status::NoSpace("device full (test)");
    written += w.size();
    return file->writeBatch(w);
  }
  vmstore::internal::DataFile* file;
  std::atomic<bool> failWrites{false};
  std::atomic<uint64_t> failReadOf{0};  // reads of this page fail with IOError
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> written{0};
};

// A page store that remembers, per page, the epoch and counter word of every write.
struct RecordingStore : vmstore::internal::PageStore {
  explicit RecordingStore(vmstore::internal::DataFile* f) : file(f) {}
  // Reports no progress (a store may not): the buffer manager sums the page at the end.
  Status readPage(uint64_t pid, Page* buf, uint64_t pages, const vmstore::internal::ChunkedReadTarget*) override {
    return file->readPages(pid, pages, buf);
  }
  Status writePages(std::span<const vmstore::internal::PageWrite> w) override {
    std::lock_guard g(mutex);
    for (const auto& x : w) {
      const Page* p = static_cast<const Page*>(x.buf);
      EXPECT_TRUE(pageIsIntact(p, x.pid, x.pages)) << "page " << x.pid << " written unsealed";
      seen[x.pid].push_back({p->header.epoch, reinterpret_cast<const uint64_t*>(p->payload)[1]});
    }
    return file->writeBatch(w);
  }
  // (epoch, counter word) of each write of pid in epoch, oldest first.
  std::vector<uint64_t> words(uint64_t pid, uint32_t epoch) {
    std::lock_guard g(mutex);
    std::vector<uint64_t> out;
    for (auto& [e, w] : seen[pid]) {
      if (e == epoch) out.push_back(w);
    }
    return out;
  }
  vmstore::internal::DataFile* file;
  std::mutex mutex;
  std::map<uint64_t, std::vector<std::pair<uint32_t, uint64_t>>> seen;
};

TEST(BufferManager, CheckpointSnapshotHoldsEveryPageAsItWasAtTheCut) {
  BufferEnv env(256);  // copyCap() is 64 pages
  BufferManager& bm = *env.bm;
  RecordingStore store(&env.file);
  bm.setStore(&store);
  bm.setEpoch(1);
  std::vector<uint64_t> pids = allocStamped(bm, 200);  // dirty in epoch 1, counter 0
  bm.setEpoch(2);  // the cut: these 200 pages are the snapshot of epoch 1
  // Writers change 150 of them, twice. The first change of each keeps the epoch-1 image
  // (64 copied aside, the others written before they change); the second keeps nothing.
  for (uint64_t round = 1; round <= 2; round++) {
    for (size_t i = 0; i < 150; i++) {
      Page* p = bm.fixX(pids[i]);
      bm.markDirty(pids[i], p);
      words(p)[1] = round;
      bm.unfixX(pids[i]);
    }
  }
  EXPECT_EQ(bm.snapshotCopies(), bm.copyCap());
  UNIT_ASSERT_OK(bm.flushEpoch(1));
  EXPECT_EQ(bm.snapshotCopies(), 0u);
  for (uint64_t pid : pids) {
    EXPECT_EQ(store.words(pid, 1), std::vector<uint64_t>{0}) << "page " << pid << " not written as at the cut";
  }
  // The changes belong to epoch 2: still dirty, written by its own flush, newest content.
  UNIT_ASSERT_OK(bm.flushEpoch(1));  // nothing left of epoch 1
  UNIT_ASSERT_OK(bm.flushEpoch(2));
  for (size_t i = 0; i < pids.size(); i++) {
    std::vector<uint64_t> want = i < 150 ? std::vector<uint64_t>{2} : std::vector<uint64_t>{};
    EXPECT_EQ(store.words(pids[i], 2), want) << "page " << pids[i];
    EXPECT_EQ(store.words(pids[i], 1).size(), 1u) << "page " << pids[i];
  }
  // A freed page of a snapshot keeps its image too.
  bm.setEpoch(3);
  Page* p = bm.fixX(pids[0]);
  bm.markDirty(pids[0], p);
  words(p)[1] = 3;
  bm.unfixX(pids[0]);
  bm.setEpoch(4);
  ASSERT_EQ(PageState::stateOf(bm.state(pids[0]).load()), PageState::kUnlocked);
  bm.freePageById(pids[0]);
  UNIT_ASSERT_OK(bm.flushEpoch(3));
  EXPECT_EQ(store.words(pids[0], 3), std::vector<uint64_t>{3});
}

TEST(BufferManager, FlushOfAnEpochWritesOnlyThePagesDirtiedInIt) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  FlakyStore store(&env.file);
  bm.setStore(&store);
  bm.setEpoch(1);
  std::vector<uint64_t> pids = allocStamped(bm, 100);
  bm.setEpoch(2);
  UNIT_ASSERT_OK(bm.flushEpoch(1));
  EXPECT_EQ(store.written.load(), 100u);
  // Epoch 2 changes 7 pages; a page dirtied twice is written once.
  for (int twice = 0; twice < 2; twice++) {
    for (size_t i = 10; i < 17; i++) {
      Page* p = bm.fixX(pids[i]);
      bm.markDirty(pids[i], p);
      words(p)[1]++;
      bm.unfixX(pids[i]);
    }
  }
  bm.setEpoch(3);
  // A flush that fails keeps them all dirty, and the next one writes them.
  store.failWrites = true;
  EXPECT_EQ(bm.flushEpoch(2).code(), Code::kNoSpace);
  store.failWrites = false;
  UNIT_ASSERT_OK(bm.flushEpoch(2));
  EXPECT_EQ(store.written.load(), 107u);
  for (uint64_t pid : pids) EXPECT_FALSE(BufferManager::isDirty(bm.pageAt(pid))) << "page " << pid;
  UNIT_ASSERT_OK(bm.flushEpoch(2));  // nothing left
  UNIT_ASSERT_OK(bm.flushEpoch(3));  // nothing changed in 3
  EXPECT_EQ(store.written.load(), 107u);
}

TEST(BufferManager, PagesGoThroughTheStoreSealedWithTheEpoch) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  FlakyStore store(&env.file);
  bm.setEpoch(7);
  bm.setStore(&store);
  std::vector<uint64_t> pids = allocStamped(bm, 5);
  UNIT_ASSERT_OK(bm.flushAll());
  EXPECT_EQ(store.written.load(), 5u);
  ASSERT_TRUE(evictAll(bm, pids));
  uint64_t before = store.reads.load();
  for (uint64_t pid : pids) {
    Page* p = bm.fixS(pid);
    EXPECT_EQ(checkStamp(p, pid), "");
    EXPECT_EQ(p->header.epoch, 7u);
    bm.unfixS(pid);
  }
  EXPECT_EQ(store.reads.load(), before + pids.size());
}

TEST(BufferManager, FailedWriteBackEvictsCleanPagesSoReadsGoOn) {
  // Item 4 of issue 12: a full disk must not make reads fail while clean pages can go.
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  FlakyStore store(&env.file);
  bm.setStore(&store);
  std::vector<uint64_t> clean = allocStamped(bm, 400);
  UNIT_ASSERT_OK(bm.flushAll());
  ASSERT_TRUE(evictAll(bm, clean));
  std::vector<uint64_t> dirty = allocStamped(bm, 100);  // dirty, never written
  store.failWrites = true;
  for (int round = 0; round < 3; round++) {
    for (uint64_t pid : clean) {
      Page* p = bm.fixS(pid);
      EXPECT_EQ(checkStamp(p, pid), "");
      bm.unfixS(pid);
    }
  }
  EXPECT_LE(bm.residentPages(), bm.poolPages());
  for (uint64_t pid : dirty) {
    ASSERT_NE(PageState::stateOf(bm.state(pid).load()), PageState::kEvicted) << "a dirty page was dropped";
    EXPECT_TRUE(BufferManager::isDirty(bm.pageAt(pid)));
  }
  // Once the device has room again, the dirty pages are written.
  store.failWrites = false;
  UNIT_ASSERT_OK(bm.flushAll());
  ASSERT_TRUE(evictAll(bm, dirty));
  for (uint64_t pid : dirty) {
    Page* p = bm.fixS(pid);
    EXPECT_EQ(checkStamp(p, pid), "");
    bm.unfixS(pid);
  }
}

TEST(BufferManager, ReadAheadReadsInTheEvictedUnlockedPagesTogether) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  FlakyStore store(&env.file);
  bm.setStore(&store);
  std::vector<uint64_t> pids = allocStamped(bm, 40);
  UNIT_ASSERT_OK(bm.flushAll());
  ASSERT_TRUE(evictAll(bm, pids));
  Page* held = bm.fixX(pids[1]);  // read in and locked: skipped
  (void)held;
  store.failReadOf = pids[2];     // fails: skipped quietly, stays evicted
  std::vector<uint64_t> ahead(pids.begin(), pids.begin() + 20);
  ahead.push_back(0);                  // the superblock is never a page to read ahead
  ahead.push_back(bm.pageCount() + 5);  // beyond the file: skipped
  const uint64_t readsBefore = store.reads;
  EXPECT_EQ(bm.readAhead(ahead), 18u);  // 20, less the held page and the failing one
  EXPECT_EQ(store.reads - readsBefore, 19u);
  EXPECT_EQ(bm.counters().sum(Counter::kReadAheadPages), 18u);
  EXPECT_EQ(PageState::stateOf(bm.state(pids[1]).load()), PageState::kLocked);
  bm.unfixX(pids[1]);
  EXPECT_TRUE(isEvicted(bm, pids[2]));
  for (size_t i = 0; i < 20; i++) {
    if (i == 2) continue;
    ASSERT_FALSE(isEvicted(bm, pids[i])) << i;
    Page* p = bm.fixS(pids[i]);
    EXPECT_EQ(checkStamp(p, pids[i]), "") << i;
    bm.unfixS(pids[i]);
  }
  for (size_t i = 20; i < pids.size(); i++) EXPECT_TRUE(isEvicted(bm, pids[i])) << i;
  // The access that needs the failing page gets its error; once it reads, it is there.
  EXPECT_EQ(codeOf([&] { bm.fixS(pids[2]); }), Code::kIOError);
  store.failReadOf = 0;
  Page* p = bm.fixS(pids[2]);
  EXPECT_EQ(checkStamp(p, pids[2]), "");
  bm.unfixS(pids[2]);
  // Nothing evicted: nothing to read.
  EXPECT_EQ(bm.readAhead(std::span<const uint64_t>(pids.data(), 20)), 0u);
  EXPECT_LE(bm.residentPages(), bm.poolPages());
}

TEST(BufferManager, FailedWriteBackWithOnlyDirtyPagesReportsTheError) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  FlakyStore store(&env.file);
  bm.setStore(&store);
  store.failWrites = true;
  Code code = Code::kOk;
  for (int i = 0; i < 400 && code == Code::kOk; i++) {
    code = codeOf([&] { allocStamped(bm, 1); });
  }
  EXPECT_EQ(code, Code::kNoSpace);
  EXPECT_LE(bm.residentPages(), bm.poolPages());
}

TEST(BufferManager, FreePageByIdNeverReadsAnEvictedPage) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  FlakyStore store(&env.file);
  bm.setStore(&store);
  std::vector<uint64_t> pids = allocStamped(bm, 10);
  UNIT_ASSERT_OK(bm.flushAll());
  ASSERT_TRUE(evictAll(bm, pids));
  uint64_t reads = store.reads.load();
  size_t freeBefore = bm.freeSpace().size();
  for (uint64_t pid : pids) bm.freePageById(pid);
  EXPECT_EQ(store.reads.load(), reads);
  EXPECT_EQ(bm.freeSpace().size(), freeBefore + pids.size());
  // A resident page is freed too (the allocation reused a freed one).
  std::vector<uint64_t> more = allocStamped(bm, 1);
  EXPECT_EQ(bm.freeSpace().size(), freeBefore + pids.size() - 1);
  bm.freePageById(more[0]);
  EXPECT_EQ(bm.freeSpace().size(), freeBefore + pids.size());
}

TEST(BufferManager, AppendFreePagesGrowsTheFileWithFreePages) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  uint64_t count = bm.pageCount();
  size_t freeBefore = bm.freeSpace().size();
  bm.appendFreePages(3);
  EXPECT_EQ(bm.pageCount(), count + 3);
  EXPECT_EQ(bm.freeSpace().size(), freeBefore + 3);
}

TEST(BufferManager, FlushAllWritesEveryDirtyPage) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = allocStamped(bm, 100);
  UNIT_ASSERT_OK(bm.flushAll());
  EXPECT_EQ(counter(bm, Counter::kPagesWritten), 100u);
  bm.forEachResident([&](uint64_t pid) {
    EXPECT_FALSE(BufferManager::isDirty(bm.pageAt(pid))) << "page " << pid << " still dirty";
  });
  EXPECT_GE(env.file.sizeBytes(), 101 * kPage);
  // On storage: intact, with the content.
  vmsunit::AlignedPages buf(1);
  for (uint64_t pid : pids) {
    UNIT_ASSERT_OK(env.file.readPage(pid, buf.data()));
    Page* p = buf.as<Page>();
    EXPECT_TRUE(pageIsIntact(p, pid)) << "page " << pid;
    EXPECT_EQ(checkStamp(p, pid), "") << "page " << pid;
  }
  // Only what changed is written again.
  for (size_t i = 0; i < 10; i++) {
    Page* p = bm.fixX(pids[i * 7]);
    words(p)[1] = 5;
    bm.markDirty(pids[i * 7], p);
    bm.unfixX(pids[i * 7]);
  }
  UNIT_ASSERT_OK(bm.flushAll());
  EXPECT_EQ(counter(bm, Counter::kPagesWritten), 110u);
  UNIT_ASSERT_OK(env.file.readPage(pids[7], buf.data()));
  EXPECT_EQ(words(buf.as<Page>())[1], 5u);
}

TEST(BufferManager, FlushAllWaitsForLockedPages) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = allocStamped(bm, 10);
  Page* p = bm.fixX(pids[0]);  // dirty and locked by someone else
  std::atomic<bool> flushed{false};
  Status st;
  std::thread t([&] {
    st = bm.flushAll();
    flushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  words(p)[1] = 99;
  bm.unfixX(pids[0]);
  t.join();
  ASSERT_TRUE(st.ok()) << st.toString();
  EXPECT_FALSE(BufferManager::isDirty(bm.pageAt(pids[0])));
  vmsunit::AlignedPages buf(1);
  UNIT_ASSERT_OK(env.file.readPage(pids[0], buf.data()));
  EXPECT_TRUE(pageIsIntact(buf.as<Page>(), pids[0]));
}

TEST(BufferManager, NoSpaceAtMaxPages) {
  const uint64_t maxPages = 300;
  BufferEnv env(256, maxPages);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids = allocStamped(bm, maxPages - 1);
  EXPECT_EQ(bm.pageCount(), maxPages);
  EXPECT_EQ(codeOf([&] { bm.allocPage(PageKind::kValue); }), Code::kNoSpace);
  EXPECT_EQ(bm.pageCount(), maxPages) << "a failed allocation does not grow the count";
  bm.fixX(pids[10]);
  bm.freePage(pids[10]);
  Page* p = bm.allocPage(PageKind::kValue);
  EXPECT_EQ(p->header.pid, pids[10]) << "free space is used before the file grows";
  bm.unfixX(pids[10]);
  EXPECT_EQ(codeOf([&] { bm.allocPage(PageKind::kValue); }), Code::kNoSpace);
  // Everything still reads back.
  for (uint64_t pid : pids) {
    if (pid == pids[10]) continue;
    Page* q = bm.fixS(pid);
    ASSERT_EQ(checkStamp(q, pid), "") << "page " << pid;
    bm.unfixS(pid);
  }
}

TEST(BufferManager, NoMemoryWhenEveryPageIsLocked) {
  const uint64_t pool = 256;
  BufferEnv env(pool);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> held;
  Code code = Code::kOk;
  // Allocate while keeping every page locked: nothing can be evicted.
  for (uint64_t i = 0; i < pool + 1 && code == Code::kOk; i++) {
    try {
      Page* p = bm.allocPage(PageKind::kValue);
      held.push_back(p->header.pid);
      ASSERT_LE(bm.residentPages(), pool);
    } catch (const StorageError& e) {
      code = e.status().code();
    }
  }
  EXPECT_EQ(code, Code::kNoMemory);
  EXPECT_EQ(held.size(), pool);
  EXPECT_LE(bm.residentPages(), pool);
  for (uint64_t pid : held) bm.unfixX(pid);
  // With the locks gone allocation works again.
  Page* p = bm.allocPage(PageKind::kValue);
  bm.unfixX(p->header.pid);
}

}  // namespace

namespace {

TEST(Counters, ManyThreadsCountWithoutLosingIncrements) {
  // More threads than the inline slots, all alive at once: none shares a slot, so no
  // increment is lost; counts stay after the threads exit.
  vmstore::internal::Counters counters;
  constexpr int kThreads = 100;
  constexpr uint64_t kEach = 10000;
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&] {
      started++;
      while (started.load() < kThreads) std::this_thread::yield();
      for (uint64_t i = 0; i < kEach; i++) counters.add(Counter::kHits);
      counters.add(Counter::kMisses, 3);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(counters.sum(Counter::kHits), kThreads * kEach);
  EXPECT_EQ(counters.sum(Counter::kMisses), 3u * kThreads);
  EXPECT_EQ(counters.sum(Counter::kEvictions), 0u);
}

}  // namespace

namespace {
// Bytes of transparent huge pages in the mapping of this process that contains addr.
uint64_t anonHugeBytesAround(const void* addr) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return 0;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  char line[512];
  bool inside = false;
  uint64_t kb = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    uintptr_t from = 0, to = 0;
    if (std::sscanf(line, "%lx-%lx ", &from, &to) == 2 && std::strchr(line, '-') < std::strchr(line, ' ')) {
      inside = from <= a && a < to;
    } else if (inside) {
      unsigned long v = 0;
      if (std::sscanf(line, "AnonHugePages: %lu kB", &v) == 1) kb += v;
    }
  }
  std::fclose(f);
  return kb * 1024;
}
}  // namespace

// huge_pages=true: while the file fits in the pool, the pool's pages come in huge pages;
// once it outgrows the pool, the mode ends and the budget holds as always.
TEST(BufferManager, HugePagesWhileTheDataFitsThenSmallPagesAndTheBudget) {
  if (!vmstore::internal::transparentHugePagesOn()) GTEST_SKIP() << "transparent huge pages are off here";
  const uint64_t pool = 2048;  // 8 MiB: four 2 MiB pages
  BufferEnv env(pool);
  BufferManager& bm = *env.bm;
  bm.useHugePagesWhileInMemory();
  ASSERT_TRUE(bm.hugePagesInMemory());
  std::vector<uint64_t> pids;
  auto allocate = [&](size_t n) {
    for (uint64_t pid : allocStamped(bm, n)) pids.push_back(pid);
    ASSERT_LE(bm.residentPages(), bm.poolPages());
  };
  allocate(pool / 2);  // (a pool nearly full evicts ahead, which splits huge pages)
  EXPECT_GE(anonHugeBytesAround(bm.pageAt(1)), 2u << 20) << "the pool's pages came in huge pages";
  allocate(pool - bm.pageCount());  // the file is exactly the pool now
  EXPECT_EQ(bm.pageCount(), pool);
  EXPECT_TRUE(bm.hugePagesInMemory()) << "the data still fits";
  allocate(1);  // one page beyond the pool
  EXPECT_FALSE(bm.hugePagesInMemory()) << "the file outgrew the pool";
  allocate(3 * pool);  // eviction from here on, through the huge pages
  EXPECT_GT(counter(bm, Counter::kEvictions), 0u);
  for (uint64_t pid : pids) {
    Page* p = bm.fixS(pid);
    ASSERT_EQ(checkStamp(p, pid), "") << "page " << pid;
    bm.unfixS(pid);
    ASSERT_LE(bm.residentPages(), bm.poolPages());
  }
}

// A file already larger than the pool never takes huge pages.
TEST(BufferManager, HugePagesAreNotUsedWhenTheDataExceedsThePool) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  for (int i = 0; i < 300; i++) bm.unfixX(bm.allocPage(PageKind::kValue)->header.pid);
  bm.useHugePagesWhileInMemory();
  EXPECT_FALSE(bm.hugePagesInMemory());
}
