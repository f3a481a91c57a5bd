// Unit tests of variable-size pages (buffer/buffer_manager.hpp, paper 000 §3.5): a page
// of n ids is allocated resident and contiguous, evicted whole and read back with one
// read, its tails refuse to be read on their own, freeing it returns its memory and its
// run of ids (reused best fit), freed pages still in memory join a span without new
// frames, the budget holds under a churn of spans and pages, a span larger than half the
// pool is refused, and a span of a checkpoint snapshot is written before it is freed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "buffer/buffer_manager.hpp"
#include "policy/registry.hpp"
#include "unit_util.hpp"

namespace {

using vmstore::Status;
using vmstore::internal::BufferManager;
using vmstore::internal::Page;
using vmstore::internal::PageKind;
using vmstore::internal::PageState;
using vmstore::internal::PageWrite;
using vmstore::internal::spanOf;
using vmstore::internal::StorageError;
using Code = vmstore::Status::Code;
using vmsunit::BufferEnv;
using vmsunit::evictAll;
constexpr size_t kPage = vmstore::internal::kPageSize;
constexpr size_t kHeader = sizeof(vmstore::internal::PageHeader);

// A page store over the data file that counts reads and remembers the writes.
struct CountingStore : vmstore::internal::PageStore {
  explicit CountingStore(vmstore::internal::DataFile* f) : file(f) {}
  Status readPage(uint64_t pid, Page* buf, uint64_t pages,
                  const vmstore::internal::ChunkedReadTarget* progress) override {
    reads++;
    pagesRead += pages;
    return file->readPages(pid, pages, buf, progress);
  }
  Status writePages(std::span<const PageWrite> w) override {
    if (failWrites) return Status::IOError("write error (test)");
    std::lock_guard g(mutex);
    for (const PageWrite& x : w) written.push_back({x.pid, x.pages, static_cast<const Page*>(x.buf)->header.epoch});
    return file->writeBatch(w);
  }
  struct Write {
    uint64_t pid, pages;
    uint32_t epoch;
  };
  vmstore::internal::DataFile* file;
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> pagesRead{0};
  std::atomic<bool> failWrites{false};
  std::mutex mutex;
  std::vector<Write> written;
};

// Fills the bytes after the header of the span at p with a pattern of (pid, seed).
void fill(Page* p, uint64_t pages, uint64_t seed) {
  auto* b = reinterpret_cast<unsigned char*>(p);
  for (size_t i = kHeader; i < pages * kPage; i++) b[i] = static_cast<unsigned char>((i * 131 + seed) >> 3);
}
bool hasFill(const Page* p, uint64_t pages, uint64_t seed) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  for (size_t i = kHeader; i < pages * kPage; i++) {
    if (b[i] != static_cast<unsigned char>((i * 131 + seed) >> 3)) return false;
  }
  return true;
}

bool isZero(const Page* p, uint64_t pages) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  for (size_t i = kHeader; i < pages * kPage; i++) {
    if (b[i] != 0) return false;
  }
  return true;
}

using vmsunit::codeOf;
TEST(VariableSizePages, AllocatedWholeEvictedWholeAndReadBackWithOneRead) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  CountingStore store(&env.file);
  bm.setStore(&store);
  const uint64_t used = bm.residentPages();
  Page* p = bm.allocSpan(PageKind::kValue, 20);
  const uint64_t pid = p->header.pid;
  EXPECT_EQ(spanOf(p->header), 20u);
  EXPECT_EQ(bm.residentPages(), used + 20) << "a span takes one frame per id";
  fill(p, 20, 7);
  bm.unfixX(pid);
  EXPECT_FALSE(bm.isTail(pid));
  for (uint64_t t = pid + 1; t < pid + 20; t++) EXPECT_TRUE(bm.isTail(t)) << t;
  EXPECT_GE(bm.pageCount(), pid + 20);

  ASSERT_TRUE(evictAll(bm, {pid}));
  bool written = false;
  for (const auto& w : store.written) written |= w.pid == pid && w.pages == 20;
  EXPECT_TRUE(written) << "the span is written as one transfer of 20 pages";

  const uint64_t reads = store.reads;
  Page* q = bm.fixS(pid, 20);
  EXPECT_EQ(store.reads, reads + 1) << "one read for the whole span";
  EXPECT_TRUE(hasFill(q, 20, 7));
  bm.unfixS(pid);

  // A tail on its own (a stale reference) is refused before anything is read into it.
  ASSERT_TRUE(evictAll(bm, {pid}));
  EXPECT_EQ(codeOf([&] { bm.fixS(pid + 3); }), Code::kCorruption);
  EXPECT_EQ(PageState::stateOf(bm.state(pid + 3).load()), PageState::kEvicted);
  // The wrong size is damage too.
  EXPECT_EQ(codeOf([&] { bm.fixS(pid, 19); }), Code::kCorruption);
  EXPECT_EQ(codeOf([&] { bm.fixS(pid); }), Code::kCorruption);
  q = bm.fixS(pid, 20);
  EXPECT_TRUE(hasFill(q, 20, 7)) << "failed reads of the wrong size left it intact";
  bm.unfixS(pid);
}

// The page provider works in batches of its own: up to kProviderBatch victims and
// providerBatchFrames() frames (a miss that evicts inline takes kEvictBatch victims). Its
// goal of free frames grows past providerTarget() to what its last batch freed (at most a
// 16th of the pool), so that the next batch starts while the last one's frames are still
// free. Spans of 64 frames, then single pages: the goal grows, no batch exceeds its
// frames, batches of single pages take more than kEvictBatch victims, every page reads
// back intact, and the budget holds throughout.
// Under the built-in clock and under S3-FIFO (a policy that is offered victims).
void providerKeepsRoomInTheSizeOfItsVictims(const std::string& policy) {
  SCOPED_TRACE(policy.empty() ? "the built-in clock" : policy);
  const uint64_t pool = 4096;
  const uint64_t span = 64;  // 256 KiB values
  BufferEnv env(pool);
  BufferManager& bm = *env.bm;
  if (!policy.empty()) bm.setPolicy(vmstore::internal::makePolicy(policy, pool, 1 << 20));
  bm.startProvider();
  const uint64_t target = bm.providerTarget();
  ASSERT_LT(target, bm.providerBatchFrames()) << "the test needs room between the target and a batch";
  EXPECT_EQ(bm.providerGoal(), target);
  std::vector<uint64_t> spans;
  uint64_t highest = 0;
  bool overBudget = false;
  const uint64_t keptBefore = bm.counters().sum(vmstore::internal::Counter::kVictimsKept);
  for (uint64_t i = 0; i < 4 * pool / span; i++) {
    Page* p = bm.allocSpan(PageKind::kValue, span);
    const uint64_t pid = p->header.pid;
    fill(p, span, pid);
    bm.unfixX(pid);
    spans.push_back(pid);
    highest = std::max(highest, bm.providerGoal());
    overBudget |= bm.residentPages() > bm.poolPages();
  }
  EXPECT_GT(highest, target) << "the goal never grew while spans of " << span << " frames were evicted";
  // A policy is asked for about as many spans as the batch's frames allow (a victim
  // offered and not taken counts to it as a use): only the first batch, before the
  // victims' size is known, may be offered more than it takes.
  EXPECT_LE(bm.counters().sum(vmstore::internal::Counter::kVictimsKept) - keptBefore,
            BufferManager::kProviderBatch + 4 * pool / span)
      << "spans offered to the provider's batches and not taken";
  EXPECT_LE(highest, std::min(pool / 16, bm.providerBatchFrames()));
  for (uint64_t pid : spans) {
    Page* p = bm.fixS(pid, span);
    EXPECT_TRUE(hasFill(p, span, pid)) << pid;
    bm.unfixS(pid);
    overBudget |= bm.residentPages() > bm.poolPages();
  }
  // Single pages: the provider's batches take more victims than an inline one.
  const uint64_t evictedBefore = bm.counters().sum(vmstore::internal::Counter::kProviderEvictions);
  const uint64_t batchesBefore = bm.counters().sum(vmstore::internal::Counter::kProviderBatches);
  std::vector<uint64_t> pages;
  for (uint64_t i = 0; i < 4 * pool; i++) {
    Page* p = bm.allocPage(PageKind::kValue);
    const uint64_t pid = p->header.pid;
    fill(p, 1, pid);
    bm.unfixX(pid);
    pages.push_back(pid);
    overBudget |= bm.residentPages() > bm.poolPages();
  }
  const uint64_t evicted = bm.counters().sum(vmstore::internal::Counter::kProviderEvictions) - evictedBefore;
  const uint64_t batches = bm.counters().sum(vmstore::internal::Counter::kProviderBatches) - batchesBefore;
  ASSERT_GT(batches, 0u) << "the provider never evicted";
  EXPECT_GT(evicted / batches, BufferManager::kEvictBatch) << evicted << " pages in " << batches << " batches";
  EXPECT_LE(bm.providerGoal(), bm.providerBatchFrames());
  for (uint64_t pid : pages) {
    Page* p = bm.fixS(pid);
    EXPECT_TRUE(hasFill(p, 1, pid)) << pid;
    bm.unfixS(pid);
  }
  EXPECT_FALSE(overBudget);
  bm.stopProvider();
}

TEST(VariableSizePages, ProviderKeepsRoomInTheSizeOfItsVictims) {
  providerKeepsRoomInTheSizeOfItsVictims("");
  providerKeepsRoomInTheSizeOfItsVictims("s3fifo");
}

// A span read in from storage in pieces (more than os/chunked_read.hpp's kChunkBytes)
// with an arrival: its bytes are handed on in order as they come, the last report is the
// whole span, and the fix returns it checked. A fix of a resident span hands on nothing.
struct Arrivals {
  explicit Arrivals(uint64_t seed) : seed(seed) {}
  uint64_t seed;
  std::vector<size_t> upTo;
  bool bytesRight = true;
  bool throwFirst = false;
  vmstore::internal::SpanArrival arrival() {
    return {[](void* c, const Page* p, size_t to) {
              auto* a = static_cast<Arrivals*>(c);
              if (a->throwFirst) throw std::runtime_error("arrival failed (test)");
              const auto* b = reinterpret_cast<const unsigned char*>(p);
              size_t from = std::max(a->upTo.empty() ? size_t{0} : a->upTo.back(), kHeader);
              for (size_t i = from; i < to; i++) a->bytesRight &= b[i] == static_cast<unsigned char>((i * 131 + a->seed) >> 3);
              a->upTo.push_back(to);
            },
            this};
  }
};

constexpr uint64_t kLargeSpan = 3 * vmstore::internal::kChunkBytes / kPage + 7;  // 4 pieces

// A large span filled with seed's pattern, written and evicted: its id.
uint64_t evictedLargeSpan(BufferManager& bm, uint64_t seed) {
  Page* p = bm.allocSpan(PageKind::kValue, kLargeSpan);
  const uint64_t pid = p->header.pid;
  fill(p, kLargeSpan, seed);
  bm.unfixX(pid);
  EXPECT_TRUE(evictAll(bm, {pid}));
  return pid;
}

TEST(VariableSizePages, ALargeSpanReadInIsHandedOnInOrderAsItArrives) {
  BufferEnv env(2 * kLargeSpan + 64);
  BufferManager& bm = *env.bm;
  CountingStore store(&env.file);
  bm.setStore(&store);
  const uint64_t pid = evictedLargeSpan(bm, 3);

  Arrivals a{3};
  const auto arrival = a.arrival();
  Page* q = bm.fixS(pid, kLargeSpan, &arrival);
  ASSERT_FALSE(a.upTo.empty());
  EXPECT_EQ(a.upTo.back(), kLargeSpan * kPage);
  for (size_t i = 1; i < a.upTo.size(); i++) EXPECT_LT(a.upTo[i - 1], a.upTo[i]);
  EXPECT_TRUE(a.bytesRight) << "each report's bytes were in place when reported";
  EXPECT_TRUE(hasFill(q, kLargeSpan, 3));
  bm.unfixS(pid);

  Arrivals resident{3};
  const auto again = resident.arrival();
  q = bm.fixS(pid, kLargeSpan, &again);
  EXPECT_TRUE(resident.upTo.empty()) << "a resident span is not read, so nothing arrives";
  bm.unfixS(pid);
}

TEST(VariableSizePages, ALargeSpanDamagedOnDiskFailsAfterItsBytesWereHandedOn) {
  BufferEnv env(2 * kLargeSpan + 64);
  BufferManager& bm = *env.bm;
  const uint64_t pid = evictedLargeSpan(bm, 5);
  // One byte in its last piece changed on disk.
  const uint64_t at = (pid + kLargeSpan - 2) * kPage + 100;
  {
    int fd = ::open(env.dataPath().c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    unsigned char byte = 0;
    ASSERT_EQ(::pread(fd, &byte, 1, static_cast<off_t>(at)), 1);
    byte ^= 0x40;
    ASSERT_EQ(::pwrite(fd, &byte, 1, static_cast<off_t>(at)), 1);
    ::close(fd);
  }
  Arrivals a{5};
  const auto arrival = a.arrival();
  EXPECT_EQ(codeOf([&] { bm.fixS(pid, kLargeSpan, &arrival); }), Code::kCorruption);
  EXPECT_FALSE(a.upTo.empty()) << "bytes were handed on before the checksum failed";
  EXPECT_EQ(PageState::stateOf(bm.state(pid).load()), PageState::kEvicted);
}

TEST(VariableSizePages, AnArrivalThatThrowsFailsTheFixAndLeavesTheSpanEvicted) {
  BufferEnv env(2 * kLargeSpan + 64);
  BufferManager& bm = *env.bm;
  const uint64_t pid = evictedLargeSpan(bm, 9);
  const uint64_t resident = bm.residentPages();
  Arrivals a{9};
  a.throwFirst = true;
  const auto arrival = a.arrival();
  EXPECT_THROW(bm.fixS(pid, kLargeSpan, &arrival), std::runtime_error);
  EXPECT_EQ(PageState::stateOf(bm.state(pid).load()), PageState::kEvicted);
  EXPECT_LE(bm.residentPages(), resident) << "its frames were given back";
  Page* q = bm.fixS(pid, kLargeSpan);
  EXPECT_TRUE(hasFill(q, kLargeSpan, 9));
  bm.unfixS(pid);
}

TEST(VariableSizePages, FreeingKeepsTheFramesAsFreedPagesAndTheRunForReuse) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  Page* p = bm.allocSpan(PageKind::kValue, 30);
  const uint64_t pid = p->header.pid;
  std::memset(p->payload, 0xCD, 30 * vmstore::internal::kPageSize - sizeof(p->header));
  bm.unfixX(pid);
  const uint64_t used = bm.residentPages();
  const uint64_t count = bm.pageCount();
  bm.freeSpan(pid, 30);
  // Its 30 frames stay, as 30 freed pages of their own (no fault to take them again).
  EXPECT_EQ(bm.residentPages(), used);
  EXPECT_EQ(bm.freeSpace().longestRun(), 30u);
  for (uint64_t t = pid; t < pid + 30; t++) {
    EXPECT_FALSE(bm.isTail(t)) << t;
    EXPECT_EQ(PageState::stateOf(bm.state(t).load()), PageState::kUnlocked) << t;
    EXPECT_EQ(bm.pageAt(t)->header.kind, PageKind::kFree) << t;
    EXPECT_EQ(spanOf(bm.pageAt(t)->header), 1u) << t;
  }
  // Best fit from the freed run; the rest stays free; the file does not grow, and no
  // frame is added: the spans take the freed ones, zeroed.
  Page* a = bm.allocSpan(PageKind::kValue, 10);
  EXPECT_EQ(a->header.pid, pid);
  EXPECT_TRUE(isZero(a, 10)) << "a reused frame kept old bytes";
  std::memset(reinterpret_cast<uint8_t*>(a) + kHeader, 0xEE, 10 * kPage - kHeader);
  bm.unfixX(pid);
  Page* b = bm.allocSpan(PageKind::kValue, 20);
  EXPECT_EQ(b->header.pid, pid + 10);
  EXPECT_TRUE(isZero(b, 20)) << "a reused frame kept old bytes";
  bm.unfixX(pid + 10);
  EXPECT_EQ(bm.pageCount(), count);
  EXPECT_EQ(bm.residentPages(), used);
  // What the caller says it writes at once keeps the frame's old bytes (not zeroed
  // for nothing); the rest is zeroed.
  bm.freeSpan(pid, 10);
  Page* c = bm.allocSpan(PageKind::kValue, 10, 100, 5000);
  ASSERT_EQ(c->header.pid, pid);
  const auto* cb = reinterpret_cast<const uint8_t*>(c);
  for (size_t i = kHeader; i < 10 * kPage; i++) {
    if (i < 100 || i >= 5000) {
      ASSERT_EQ(cb[i], 0) << "byte " << i;
    }
  }
  EXPECT_EQ(cb[200], 0xEE) << "zeroed although the caller writes it";
  bm.unfixX(pid);
  // Freed pages are evicted like clean pages when the pool needs them.
  bm.freeSpan(pid, 10);
  std::vector<uint64_t> freed;
  for (uint64_t t = pid; t < pid + 10; t++) freed.push_back(t);
  ASSERT_TRUE(evictAll(bm, freed));
  // A span freed while evicted is never read from storage, and stays evicted.
  ASSERT_TRUE(evictAll(bm, {pid + 10}));
  bm.freeSpan(pid + 10, 20);
  EXPECT_GE(bm.freeSpace().longestRun(), 20u);
  EXPECT_EQ(PageState::stateOf(bm.state(pid + 10).load()), PageState::kEvicted);
}

TEST(VariableSizePages, FreedPagesStillInMemoryBecomeASpanWithoutNewFrames) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  std::vector<uint64_t> pids;
  for (int i = 0; i < 8; i++) {
    Page* p = bm.allocPage(PageKind::kValue);
    std::memset(p->payload, 0xAB, sizeof p->payload);
    pids.push_back(p->header.pid);
    bm.unfixX(p->header.pid);
  }
  for (uint64_t pid : pids) {
    bm.fixX(pid);
    bm.freePage(pid);  // stays in memory
  }
  bm.freeSpace().assign(bm.freeSpace().snapshot());  // as after a reopen: adjacent ids form a run
  ASSERT_EQ(bm.freeSpace().longestRun(), 8u);
  const uint64_t used = bm.residentPages();
  Page* s = bm.allocSpan(PageKind::kValue, 8);
  EXPECT_EQ(s->header.pid, pids[0]);
  EXPECT_EQ(bm.residentPages(), used) << "the freed pages' frames became the span's";
  const auto* bytes = reinterpret_cast<const unsigned char*>(s);
  size_t nonzero = 0;
  for (size_t i = kHeader; i < 8 * kPage; i++) nonzero += bytes[i] != 0;
  EXPECT_EQ(nonzero, 0u) << "a new span is zeroed";
  bm.unfixX(pids[0]);
}

TEST(VariableSizePages, LargerThanHalfThePoolIsNoMemoryAndChangesNothing) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  const uint64_t count = bm.pageCount();
  EXPECT_EQ(bm.maxSpanPages(), 128u);
  EXPECT_EQ(codeOf([&] { bm.allocSpan(PageKind::kValue, 129); }), Code::kNoMemory);
  EXPECT_EQ(bm.pageCount(), count);
  Page* p = bm.allocSpan(PageKind::kValue, 128);
  bm.unfixX(p->header.pid);
}

TEST(VariableSizePages, BudgetHoldsAndContentSurvivesAChurnOfSpansAndPages) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  std::mt19937_64 rng(42);
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> live;  // pid -> (pages, seed)
  for (int round = 0; round < 400; round++) {
    uint64_t pages = rng() % 4 == 0 ? 1 : 2 + rng() % 60;
    Page* p = bm.allocSpan(PageKind::kValue, pages);
    uint64_t pid = p->header.pid;
    fill(p, pages, round);
    bm.unfixX(pid);
    live[pid] = {pages, static_cast<uint64_t>(round)};
    ASSERT_LE(bm.residentPages(), bm.poolPages()) << "round " << round;
    if (live.size() > 12) {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      bm.freeSpan(it->first, it->second.first);
      live.erase(it);
    }
  }
  for (auto& [pid, ps] : live) {
    Page* p = bm.fixS(pid, ps.first);
    EXPECT_TRUE(hasFill(p, ps.first, ps.second)) << "span at " << pid << " of " << ps.first;
    bm.unfixS(pid);
    ASSERT_LE(bm.residentPages(), bm.poolPages());
  }
  // Reuse bounds the file: at most the live pages plus what one pool's churn strands.
  uint64_t livePages = 0;
  for (auto& [pid, ps] : live) livePages += ps.first;
  EXPECT_LT(bm.pageCount(), 400u * 32 / 4) << "freed runs were reused";
}

TEST(VariableSizePages, ASpanOfACheckpointSnapshotIsFreedOnlyAfterTheSnapshotWroteIt) {
  BufferEnv env(256);
  BufferManager& bm = *env.bm;
  CountingStore store(&env.file);
  bm.setStore(&store);
  Page* p = bm.allocSpan(PageKind::kValue, 12);
  const uint64_t pid = p->header.pid;
  fill(p, 12, 3);
  bm.unfixX(pid);
  bm.setEpoch(1);  // the cut: the span (dirty in epoch 0) belongs to the snapshot
  store.failWrites = true;  // a free must not need a write, so it cannot fail on one
  bm.freeSpan(pid, 12);
  EXPECT_TRUE(store.written.empty()) << "freeing wrote";
  std::vector<uint64_t> waiting = bm.deferredFrees();
  EXPECT_EQ(waiting.size(), 12u);
  EXPECT_EQ(waiting.front(), pid);
  // Not reusable before the snapshot has it: a new span does not take its ids.
  Page* q = bm.allocSpan(PageKind::kValue, 12);
  EXPECT_NE(q->header.pid, pid);
  bm.unfixX(q->header.pid);
  EXPECT_FALSE(bm.flushEpoch(0).ok()) << "writes fail";
  EXPECT_EQ(bm.deferredFrees().size(), 12u) << "a failed flush frees nothing";
  store.failWrites = false;
  ASSERT_TRUE(bm.flushEpoch(0).ok());
  bool kept = false;
  for (const auto& w : store.written) kept |= w.pid == pid && w.pages == 12 && w.epoch == 0;
  EXPECT_TRUE(kept) << "the snapshot's image of the span was written";
  std::unique_ptr<Page[]> back(new Page[12]);
  ASSERT_TRUE(env.file.readPages(pid, 12, back.get()).ok());
  EXPECT_TRUE(hasFill(back.get(), 12, 3));
  EXPECT_TRUE(bm.deferredFrees().empty());
  Page* r = bm.allocSpan(PageKind::kValue, 12);
  EXPECT_EQ(r->header.pid, pid) << "freed after the flush: its run is reused";
  bm.unfixX(r->header.pid);
}

}  // namespace
