#include "buffer/buffer_manager.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <system_error>
#include <thread>

#include "os/thread_name.hpp"
#include "task/cooperative.hpp"

namespace vmstore::internal {

namespace {

// A racy optimistic read may run up to a maximum-size key past a page's end.
constexpr size_t kGuardBytes = 1 << 20;
constexpr uint64_t kStateChunk = 1 << 16;  // states are initialized this many at a time

uint64_t stateAreaPages(uint64_t maxPages) {
  return (maxPages * sizeof(PageState) + kPageSize - 1) / kPageSize;
}
uint64_t tailAreaPages(uint64_t maxPages) { return ((maxPages + 63) / 64 * 8 + kPageSize - 1) / kPageSize; }

}  // namespace

BufferManager::BufferManager(DataFile* file, uint64_t poolPages, uint64_t maxPages, uint64_t pageCount,
                             ResidentSetKind residentKind)
    : file_(file),
      poolPages_(poolPages),
      maxPages_(maxPages),
      pages_(maxPages, kGuardBytes),
      stateArea_(stateAreaPages(maxPages), 0),
      states_(reinterpret_cast<PageState*>(stateArea_.base())),
      tailArea_(tailAreaPages(maxPages), 0),
      tails_(reinterpret_cast<std::atomic<uint64_t>*>(tailArea_.base())),
      pageCount_(pageCount),
      resident_(residentKind, poolPages, maxPages),
      fileStore_(file),
      store_(&fileStore_) {
  stateArea_.adviseHugePages();  // every access reads a state: fewer TLB misses on them
  if (pageCount > 0) initStatesUpTo(pageCount - 1);
}

void BufferManager::setPageCount(uint64_t pageCount) {
  pageCount_.store(pageCount, std::memory_order_release);
  if (pageCount > 0) initStatesUpTo(pageCount - 1);
}

BufferManager::~BufferManager() { stopProvider(); }

void BufferManager::startProvider() {
  if (provider_.joinable()) return;
  providerStop_ = false;
  providerGoal_.store(providerTarget(), std::memory_order_relaxed);
  provider_ = std::thread([this] { providerLoop(); });
  nameThread(provider_, "vms-provider");
  providerOn_.store(true, std::memory_order_release);
}

void BufferManager::stopProvider() {
  if (!provider_.joinable()) return;
  providerOn_.store(false, std::memory_order_release);
  {
    std::lock_guard g(providerMutex_);
    providerStop_ = true;
  }
  providerWake_.notify_all();
  provider_.join();
}

void BufferManager::providerLoop() {
  auto needed = [&] { return physUsed_.load(std::memory_order_seq_cst) + providerGoal() >= poolPages_; };
  bool stalled = false;  // the last round freed nothing
  for (;;) {
    {
      std::unique_lock g(providerMutex_);
      providerSleeping_.store(true, std::memory_order_seq_cst);
      if (stalled) {
        // Nothing was evictable (every page in use, or write-back failing): wait for a
        // miss to wake it, or a while, rather than hold the eviction mutex in a loop
        // that keeps the misses from evicting (or failing) inline.
        providerKicked_ = false;
        providerWake_.wait_for(g, std::chrono::milliseconds(10), [&] { return providerStop_ || providerKicked_; });
      }
      providerWake_.wait(g, [&] { return providerStop_ || needed(); });
      providerSleeping_.store(false, std::memory_order_relaxed);
      if (providerStop_) return;
    }
    // Evict until the target is free again. A batch that frees nothing ends the round:
    // the misses then evict (or fail) inline.
    stalled = false;
    while (needed()) {
      uint64_t freed = 0;
      try {
        std::lock_guard g(evictMutex_);
        freed = evictBatch(true);
      } catch (const StorageError&) {
      }
      if (freed == 0) {
        stalled = true;
        break;
      }
      // Frames come back in the size of the victims: start the next batch while as many
      // as this one freed are still free (misses read the goal too). What the batch
      // freed, not how far physUsed_ fell: frames taken meanwhile by other threads would
      // make a batch of large victims look small.
      // providerTarget() is at most a 16th of the pool, so the bounds are in order.
      providerGoal_.store(std::clamp<uint64_t>(freed, providerTarget(), poolPages_ / 16), std::memory_order_relaxed);
      std::lock_guard g(providerMutex_);
      if (providerStop_) return;
    }
  }
}

void BufferManager::wakeProvider() {
  if (!providerSleeping_.load(std::memory_order_seq_cst)) return;
  std::lock_guard g(providerMutex_);
  providerKicked_ = true;
  providerWake_.notify_one();
}

void BufferManager::throwNoSuchPage(uint64_t pid) const {
  throw StorageError(Status::Corruption("reference to page " + std::to_string(pid) +
                                        ", which does not exist (file has " +
                                        std::to_string(pageCount()) + " pages)"));
}

void BufferManager::initStatesUpTo(uint64_t pid) {
  if (pid < statesReady_.load(std::memory_order_acquire)) return;
  std::lock_guard g(growMutex_);
  uint64_t ready = statesReady_.load(std::memory_order_relaxed);
  uint64_t target = std::min(maxPages_, (pid / kStateChunk + 1) * kStateChunk);
  for (uint64_t p = ready; p < target; p++) states_[p].initEvicted();
  statesReady_.store(std::max(ready, target), std::memory_order_release);
}

Page* BufferManager::fixX(uint64_t pid) {
  checkExists(pid);
  PageState& ps = state(pid);
  for (;;) {
    uint64_t w = ps.load();
    switch (PageState::stateOf(w)) {
      case PageState::kEvicted:
        if (ps.tryLockX(w)) {
          readInLocked(pid);
          return pageAt(pid);
        }
        break;
      case PageState::kUnlocked:
      case PageState::kMarked:
        if (ps.tryLockX(w)) {
          counters_.add(Counter::kHits);
          if (hitHook_) noteHit(pid);
          return pageAt(pid);
        }
        break;
      default:
        ps.waitChange(w);
    }
  }
}

Page* BufferManager::fixS(uint64_t pid, uint64_t pages, const SpanArrival* arrival) {
  checkExists(pid);
  PageState& ps = state(pid);
  bool missed = false;
  for (;;) {
    uint64_t w = ps.load();
    uint64_t s = PageState::stateOf(w);
    if (s == PageState::kEvicted) {
      if (ps.tryLockX(w)) {
        readInLocked(pid, pages, arrival);
        missed = true;
        ps.unlockX();
      }
    } else if (s == PageState::kLocked || s == PageState::kMaxShared) {
      ps.waitChange(w);
    } else if (ps.tryLockS(w)) {
      if (!missed) {
        counters_.add(Counter::kHits);
        if (hitHook_) noteHit(pid);
      }
      return pageAt(pid);
    }
  }
}

uint64_t BufferManager::optimisticBeginSlow(uint64_t pid) {
  PageState& ps = state(pid);
  bool missed = false;
  for (;;) {
    uint64_t w = ps.load();
    uint64_t s = PageState::stateOf(w);
    if (s <= PageState::kMaxShared) {
      if (!missed) {
        counters_.add(Counter::kHits);
        if (hitHook_) noteHit(pid);
      }
      return w;
    }
    if (s == PageState::kMarked) {
      ps.tryUnmark(w);
    } else if (s == PageState::kEvicted) {
      if (ps.tryLockX(w)) {
        readInLocked(pid);
        missed = true;
        ps.unlockX();
      }
    } else {
      ps.waitChange(w);
    }
  }
}

void BufferManager::readInLocked(uint64_t pid, uint64_t pages, const SpanArrival* arrival) {
  if (pages == 1 && isTail(pid)) {
    // A stale reference: its frame belongs to a live variable-size page. Touch nothing.
    state(pid).unlockXEvicted();
    throw StorageError(Status::Corruption("page " + std::to_string(pid) + " is part of a variable-size page"));
  }
  try {
    if (pages > 1) checkSpan(pages);
    reserveFrames(pages, true);
  } catch (...) {
    state(pid).unlockXEvicted();
    throw;
  }
  Page* p = pageAt(pid);
  if (pages > 1) backLarge(pid, pages);
  Status st;
  bool intact;
  if (pages == 1) {
    st = store_->readPage(pid, p);
    intact = st.ok() && pageIsIntact(p, pid);
  } else {
    // Summed as it arrives (while later pieces are still being read), and handed on.
    // What arrival throws waits until the read is over (reads may be in flight into
    // the page) and then fails the fix like a failed read.
    struct Progress {
      const Page* page;
      const SpanArrival* arrival;
      uint32_t sum = 0;
      size_t summed = kChecksumOffset;
      std::exception_ptr thrown;
      void to(size_t upTo) {
        if (upTo <= summed) return;
        sum = pageChecksumPart(sum, page, summed, upTo);
        summed = upTo;
        if (arrival == nullptr) return;
        try {
          arrival->fn(arrival->ctx, page, upTo);
        } catch (...) {
          thrown = std::current_exception();
          arrival = nullptr;
        }
      }
    } progress{p, arrival, 0, kChecksumOffset, nullptr};
    const ChunkedReadTarget target{[](void* c, size_t upTo) { static_cast<Progress*>(c)->to(upTo); }, &progress};
    st = store_->readPage(pid, p, pages, &target);
    if (st.ok()) progress.to(pages * kPageSize);  // what the store did not report
    intact = st.ok() && pageIsIntactSummed(p, pid, pages, progress.sum);
    if (progress.thrown) {
      releaseFrame(pid, pages);
      if (tiers_) tiers_->release(0, pages);
      state(pid).unlockXEvicted();
      std::rethrow_exception(progress.thrown);
    }
  }
  if (st.ok() && !intact) {
    st = Status::Corruption("page " + std::to_string(pid) + (pages > 1 ? " (" + std::to_string(pages) + " pages)" : "") +
                            " of " + file_->path() + " is damaged (checksum, page id or size mismatch)");
  }
  if (!st.ok()) {
    releaseFrame(pid, pages);
    if (tiers_) tiers_->release(0, pages);
    state(pid).unlockXEvicted();
    throw StorageError(st);
  }
  if (pages > 1) markTails(pid, pages, true);  // already set if it was allocated since open
  residentAdd(pid);
  counters_.add(Counter::kMisses);
}

uint64_t BufferManager::readAhead(std::span<const uint64_t> pids) {
  std::vector<uint64_t> locked;
  locked.reserve(pids.size());
  const uint64_t count = pageCount();
  for (uint64_t pid : pids) {
    if (pid == 0 || pid >= count) continue;
    PageState& ps = state(pid);
    uint64_t w = ps.load();
    if (PageState::stateOf(w) == PageState::kEvicted && ps.tryLockX(w)) locked.push_back(pid);
  }
  if (locked.empty()) return 0;
  uint64_t read = 0;
  task::runEach(locked.size(), locked.size(), [&](size_t i) {
    try {
      readInLocked(locked[i]);  // on failure: unlocked, still evicted
      state(locked[i]).unlockX();
      read++;
    } catch (const std::exception&) {
      // Only a hint: the access that needs the page reads it again and sees the error.
    }
  });
  counters_.add(Counter::kReadAheadPages, read);
  return read;
}

void BufferManager::releaseFrame(uint64_t pid, uint64_t pages) {
  try {
    PageRun run{pid, pages};
    pages_.release(std::span<const PageRun>(&run, 1));
  } catch (const std::system_error&) {
    // The frame stays committed; memory accounting below still frees the budget slot
    // because the page is no longer resident from the pool's point of view.
  }
  physUsed_.fetch_sub(pages, std::memory_order_relaxed);
}

void BufferManager::reserveFrames(uint64_t n, bool forRead) {
  if (n == 1) return reserveFrame(forRead);
  uint64_t done = 0;
  try {
    for (; done < n; done++) reserveFrame(forRead);
  } catch (...) {
    physUsed_.fetch_sub(done, std::memory_order_relaxed);
    if (tiers_) tiers_->release(0, done);
    throw;
  }
}

void BufferManager::checkSpan(uint64_t pages) const {
  if (pages <= maxSpanPages()) return;
  const uint64_t needMiB = (2 * pages * kPageSize + (1u << 20) - 1) >> 20;
  throw StorageError(Status::NoMemory("a page of " + std::to_string(pages) + " x 4 KiB does not fit: one object may take at most half of the buffer pool (" +
                                      std::to_string(maxSpanPages()) + " pages); open with a pool_size of at least " +
                                      std::to_string(needMiB) + "M"));
}

void BufferManager::markTails(uint64_t pid, uint64_t pages, bool on) {
  for (uint64_t t = pid + 1; t < pid + pages; t++) {
    uint64_t bit = 1ull << (t % 64);
    if (on) {
      tails_[t / 64].fetch_or(bit, std::memory_order_acq_rel);
    } else {
      tails_[t / 64].fetch_and(~bit, std::memory_order_acq_rel);
    }
  }
}

void BufferManager::reserveFrame(bool forRead) {
  reservePoolFrame(forRead);
  if (!tiers_) return;
  try {
    reserveTopFrames(1);
  } catch (...) {
    physUsed_.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
}

void BufferManager::reservePoolFrame(bool forRead) {
  const bool provider = providerOn_.load(std::memory_order_relaxed);
  uint64_t headroom = provider ? providerGoal() : std::min<uint64_t>(kEvictBatch, poolPages_ / 8);
  for (uint64_t attempt = 0;; attempt++) {
    uint64_t used = physUsed_.load(std::memory_order_relaxed);
    if (provider) {
      if (used + headroom >= poolPages_) wakeProvider();  // it evicts ahead; take a free frame
    } else if (used + headroom >= poolPages_) {
      // Nearly full: evict ahead of need, unless another thread already is. Only an
      // attempt: if it fails, the need below decides.
      std::unique_lock g(evictMutex_, std::try_to_lock);
      if (g.owns_lock()) {
        try {
          evictBatch();
        } catch (const StorageError&) {
        }
      }
      used = physUsed_.load(std::memory_order_relaxed);
    }
    if (used < poolPages_) {
      if (physUsed_.compare_exchange_weak(used, used + 1, std::memory_order_relaxed)) return;
      continue;
    }
    try {
      auto g = task::lock(evictMutex_);  // inside a task, the thread's other tasks run while another evicts
      if (physUsed_.load(std::memory_order_relaxed) >= poolPages_) evictBatch();
    } catch (const StorageError&) {
      // Nothing could be evicted: the dirty pages cannot be written (full device, I/O
      // error). A read may use the small reserve beyond the budget rather than fail.
      if (!forRead) throw;
      for (;;) {
        used = physUsed_.load(std::memory_order_relaxed);
        if (used >= poolPages_ + readReserve()) throw;
        if (physUsed_.compare_exchange_weak(used, used + 1, std::memory_order_relaxed)) return;
      }
    }
    if (attempt > 100000) {
      throw StorageError(Status::NoMemory(
          "buffer pool of " + std::to_string(poolPages_) +
          " pages is full and no page can be evicted (all are in use)"));
    }
    if (attempt > 16) std::this_thread::yield();
  }
}

void BufferManager::setPolicy(std::unique_ptr<Policy> policy) {
  policy_ = std::move(policy);
  hitHook_ = (policy_ && policy_->tracksHits()) || listener_ != nullptr;
}

void BufferManager::setAccessListener(AccessListener* listener) {
  listener_ = listener;
  hitHook_ = (policy_ && policy_->tracksHits()) || listener_ != nullptr;
}

void BufferManager::residentAdd(uint64_t pid) {
  if (tiers_) tiers_->setTier(pid, 0);  // its frames were reserved in tier 0
  resident_.insert(pid);
  if (policy_) policy_->admit(pid);
  if (listener_) listener_->onAccess(pid, true);
}

void BufferManager::residentDrop(uint64_t pid, uint64_t frames) {
  if (tiers_) tiers_->release(tiers_->tierOf(pid), frames);
  resident_.remove(pid);
  if (policy_) policy_->removed(pid);
}

void BufferManager::clockCandidates(std::vector<uint64_t>& clean, std::vector<uint64_t>& dirty, int tier,
                                    uint64_t batch, uint64_t frameCap) {
  // Mark unlocked pages, collect marked ones; shared-lock the dirty ones. With tiers,
  // only pages of `tier`; an unmarked one there (used since the hand last passed) is
  // noted as hot, to move up a tier (promote).
  uint64_t scanned = 0;
  const uint64_t step = 256;
  uint64_t frames = 0;
  while (clean.size() + dirty.size() < batch && frames < frameCap && scanned < resident_.capacity()) {
    resident_.advanceClock(step, [&](uint64_t pid) {
      if (clean.size() + dirty.size() >= batch || frames >= frameCap) return;
      if (tier >= 0 && tiers_->tierOf(pid) != static_cast<unsigned>(tier)) return;
      PageState& ps = state(pid);
      uint64_t w = ps.load();
      uint64_t s = PageState::stateOf(w);
      if (s == PageState::kMarked) {
        if (!isDirty(pageAt(pid))) {
          clean.push_back(pid);
        } else if (ps.tryLockS(w)) {
          dirty.push_back(pid);
        } else {
          return;  // in use now: not a candidate
        }
        frames += spanOf(pageAt(pid)->header);
      } else if (s == PageState::kUnlocked) {
        if (tier > 0) noteHot(static_cast<unsigned>(tier), pid);
        ps.tryMark(w);
      }
    });
    scanned += step;
  }
}

void BufferManager::policyCandidates(std::vector<uint64_t>& clean, std::vector<uint64_t>& dirty,
                                     std::vector<uint64_t>& unoffered, uint64_t batch, uint64_t frameCap) {
  // The policy's choice, at most one batch. A page locked or in use now is kept (to the
  // policy, a reference). Nobody marks pages under a policy: an unlocked page is
  // evictable. While write-back fails, the policy is asked once more if it offered no
  // clean candidate (as the clock sweeps on), so that reads go on; one dirty one
  // found on the way is still tried, so a device that has room again is noticed. If the
  // policy offers no clean page at all, clean pages are taken in resident-set order
  // (unoffered: they leave the policy as removed, not evicted).
  const bool failing = writeBackFailing();
  const uint64_t maxRounds = failing ? 2 : 1;
  // While write-back fails, one dirty candidate per batch (to notice a device with room
  // again); the rest of the batch is for clean pages, which reads need.
  const uint64_t maxDirty = failing ? 1 : batch;
  uint64_t offered[kProviderBatch];
  uint64_t kept = 0;
  uint64_t frames = 0;
  const bool capped = frameCap != ~uint64_t{0};
  auto framesEach = [&](uint64_t victims) { return std::max<uint64_t>(1, frames / victims); };
  for (uint64_t round = 0; round < maxRounds; round++) {
    if (clean.size() + dirty.size() >= batch || frames >= frameCap || (round > 0 && !clean.empty())) break;
    // Under a frame limit (the provider's batches) the policy is asked a piece at a
    // time, each no larger than the frames left allow at the victims' size so far (or
    // the last batch's): a victim offered and not taken counts to the policy as a use,
    // so offering 256 spans to take 40 would reorder it. Otherwise one ask.
    for (;;) {
      const uint64_t had = clean.size() + dirty.size();
      uint64_t want = batch - had;
      if (capped) {
        const uint64_t per = had > 0 ? framesEach(had) : framesPerVictim_;
        want = std::min<uint64_t>(want, std::max<uint64_t>(1, (frameCap - frames + per - 1) / per));
      }
      size_t n = policy_->victims(want, offered);
      if (n == 0) break;
      for (size_t i = 0; i < n; i++) {
        uint64_t pid = offered[i];
        PageState& ps = state(pid);
        uint64_t w = ps.load();
        uint64_t s = PageState::stateOf(w);
        bool room = clean.size() + dirty.size() < batch && frames < frameCap;
        bool taken = false;
        if (room && (s == PageState::kUnlocked || s == PageState::kMarked)) {
          if (!isDirty(pageAt(pid))) {
            clean.push_back(pid);
            taken = true;
          } else if (dirty.size() < maxDirty && ps.tryLockS(w)) {
            dirty.push_back(pid);
            taken = true;
          }
          if (taken) frames += spanOf(pageAt(pid)->header);
        }
        if (!taken) {
          policy_->kept(pid);
          kept++;
        }
      }
      const uint64_t now = clean.size() + dirty.size();
      if (!capped || n < want || now == had || now >= batch || frames >= frameCap) break;
    }
  }
  if (capped && clean.size() + dirty.size() > 0) framesPerVictim_ = framesEach(clean.size() + dirty.size());
  if (kept) counters_.add(Counter::kVictimsKept, kept);
  if (failing && clean.empty()) {
    // The policy's order offered only dirty pages (2Q, say, offers all of Am before the
    // new pages of A1in): take clean pages by a clock of the buffer manager's own over
    // the page-state marks (an access clears a mark under any policy), so that reads go
    // on without evicting the pages they just used (the path to a leaf: taking those
    // made reads restart forever). A few at a time; at most two passes. They leave the
    // policy as removed (it never offered them).
    constexpr size_t kFallback = 8;
    uint64_t scanned = 0;
    while (clean.size() < kFallback && scanned < 2 * resident_.capacity()) {
      resident_.advanceClock(256, [&](uint64_t pid) {
        if (clean.size() >= kFallback || std::find(dirty.begin(), dirty.end(), pid) != dirty.end()) return;
        PageState& ps = state(pid);
        uint64_t w = ps.load();
        uint64_t s = PageState::stateOf(w);
        if (isDirty(pageAt(pid))) return;
        if (s == PageState::kMarked) {
          clean.push_back(pid);
          unoffered.push_back(pid);
        } else if (s == PageState::kUnlocked) {
          ps.tryMark(w);
        }
      });
      scanned += 256;
    }
  }
}

uint64_t BufferManager::evictBatch(bool byProvider, int tier) {
  // With tiers, pages leave memory from the slowest tier (unless told another).
  if (tiers_ && tier < 0) tier = static_cast<int>(tiers_->last());
  if (!evicted_.load(std::memory_order_relaxed)) evicted_.store(true, std::memory_order_relaxed);
  std::vector<uint64_t> clean;
  std::vector<uint64_t> dirty;
  std::vector<uint64_t> unoffered;  // clean candidates the policy did not offer
  // A miss that evicts inline needs a frame now: one batch of kEvictBatch victims. The
  // provider works ahead: its batches take up to kProviderBatch victims and
  // providerBatchFrames() frames, fewer system calls per page than a miss's.
  const uint64_t batch = byProvider ? kProviderBatch : kEvictBatch;
  const uint64_t frameCap = byProvider ? providerBatchFrames() : ~uint64_t{0};
  // (1) choose candidates: the clock, or the policy.
  auto chooseStart = std::chrono::steady_clock::now();
  if (policy_) {
    policyCandidates(clean, dirty, unoffered, batch, frameCap);
  } else {
    clockCandidates(clean, dirty, tier, batch, frameCap);
  }
  counters_.add(Counter::kVictimNanos,
                static_cast<uint64_t>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - chooseStart).count()));
  // (2) write the dirty ones, as one batch. If that fails (full disk, I/O error), evict
  // only the clean ones: reads must go on; the error surfaces only if nothing was evicted.
  Status st = writePages(dirty);
  if (!st.ok()) {
    for (uint64_t pid : dirty) {
      state(pid).unlockS();
      if (policy_) policy_->kept(pid);
    }
    dirty.clear();
    writeBackFailing_.store(true, std::memory_order_relaxed);
  }
  // (3) lock all exclusively; skip any page somebody touched meanwhile.
  std::vector<uint64_t> locked;
  locked.reserve(clean.size() + dirty.size());
  // Under the clock, "touched" is a cleared mark; under a policy, any lock.
  for (uint64_t pid : clean) {
    PageState& ps = state(pid);
    uint64_t w = ps.load();
    uint64_t s = PageState::stateOf(w);
    bool ok = (s == PageState::kMarked || (policy_ && s == PageState::kUnlocked)) && ps.tryLockX(w);
    if (ok && isDirty(pageAt(pid))) {
      ps.unlockX();
      ok = false;
    }
    const bool offered = std::find(unoffered.begin(), unoffered.end(), pid) == unoffered.end();
    if (ok) {
      locked.push_back(pid);
    } else if (policy_ && offered) {
      policy_->kept(pid);
    }
  }
  for (uint64_t pid : dirty) {
    if (state(pid).tryUpgradeSToX()) {
      locked.push_back(pid);
    } else {
      state(pid).unlockS();
      if (policy_) policy_->kept(pid);
    }
  }
  if (locked.empty()) {
    if (!st.ok()) throw StorageError(st);
    return 0;
  }
  // (4) one batched page-table change for all of them (a variable-size page: all its
  // frames). If the kernel fails part-way, some frames are already zero: every page of
  // the batch is on storage, so all of them become evicted (a frame that was not
  // released stays committed, unaccounted).
  std::vector<PageRun> runs;
  runs.reserve(locked.size());
  uint64_t frames = 0;
  for (uint64_t pid : locked) {
    runs.push_back({pid, spanOf(pageAt(pid)->header)});
    frames += runs.back().pages;
    if (tiers_) tiers_->release(tiers_->tierOf(pid), runs.back().pages);
  }
  size_t calls = 0;
  try {
    calls = pages_.release(runs);
  } catch (const std::system_error&) {
  }
  // (5) forget them and unlock them as evicted (new version: optimistic readers restart).
  for (uint64_t pid : locked) {
    resident_.remove(pid);
    if (policy_) {
      if (std::find(unoffered.begin(), unoffered.end(), pid) == unoffered.end()) {
        policy_->evicted(pid);
      } else {
        policy_->removed(pid);
      }
    }
    state(pid).unlockXEvicted();
  }
  physUsed_.fetch_sub(frames, std::memory_order_relaxed);
  counters_.add(Counter::kEvictions, locked.size());
  if (byProvider && !locked.empty()) {
    counters_.add(Counter::kProviderEvictions, locked.size());
    counters_.add(Counter::kProviderBatches);
  }
  counters_.add(Counter::kReleaseCalls, calls);
  return frames;
}

Status BufferManager::writePages(std::span<const uint64_t> pids) {
  if (pids.empty()) return Status::OK();
  std::vector<PageWrite> writes;
  writes.reserve(pids.size());
  for (uint64_t pid : pids) {
    Page* p = pageAt(pid);
    sealPage(p, pid, epochOfTag(__atomic_load_n(&p->header.dirty, __ATOMIC_RELAXED)));
    writes.push_back({pid, p, spanOf(p->header)});
  }
  std::sort(writes.begin(), writes.end(), [](const PageWrite& a, const PageWrite& b) { return a.pid < b.pid; });
  Status st = store_->writePages(writes);
  if (!st.ok()) {
    // Some may be on storage; all stay dirty, in the epoch they were sealed with.
    for (const PageWrite& w : writes) {
      Page* p = pageAt(w.pid);
      __atomic_store_n(&p->header.dirty, tagOf(p->header.epoch), __ATOMIC_RELAXED);
    }
    return st;
  }
  counters_.add(Counter::kPagesWritten, pids.size());
  writeBackFailing_.store(false, std::memory_order_relaxed);
  return Status::OK();
}

void BufferManager::setEpoch(uint32_t epoch) {
  epoch_.store(epoch, std::memory_order_release);
  dirtyTag_.store(tagOf(epoch), std::memory_order_release);
}

void BufferManager::keepSnapshotImage(uint64_t pid, Page* p, uint8_t tag) {
  uint32_t epoch = epochOfTag(tag);
  const uint64_t pages = spanOf(p->header);
  if (pages == 1 && copies_.size() < copyCap()) {
    std::unique_ptr<Page> image(new (std::nothrow) Page);
    if (image) {
      std::memcpy(image.get(), p, kPageSize);
      copies_.push({pid, epoch, std::move(image)});
      return;
    }
  }
  // Past the cap (or out of memory), or a variable-size page: write the page as it is
  // before it changes.
  std::lock_guard g(evictMutex_);
  sealPage(p, pid, epoch);
  PageWrite w{pid, p, pages};
  Status st = store_->writePages({&w, 1});
  if (!st.ok()) {
    __atomic_store_n(&p->header.dirty, tag, __ATOMIC_RELAXED);
    throw StorageError(st);
  }
  counters_.add(Counter::kPagesWritten);
}

Status BufferManager::flushEpoch(uint32_t epoch) {
  Status st = flushDirty(tagOf(epoch));
  if (st.ok()) st = writeCopies(epoch, false);
  if (st.ok()) freeDeferred(epoch, false);
  return st;
}

Status BufferManager::flushAll() {
  Status st = flushDirty(0);
  if (st.ok()) st = writeCopies(0, true);
  if (st.ok()) freeDeferred(0, true);
  return st;
}

bool BufferManager::deferFreeOfSnapshot(uint64_t pid, Page* p, uint64_t pages) {
  uint8_t was = __atomic_load_n(&p->header.dirty, __ATOMIC_RELAXED);
  if (was == 0 || was == dirtyTag_.load(std::memory_order_relaxed)) return false;
  // Dirty in the snapshot's epoch: the checkpoint (or an eviction) writes it as it is.
  {
    std::lock_guard g(deferredMutex_);
    deferred_.push_back({pid, pages, epochOfTag(was)});
  }
  state(pid).unlockX();
  return true;
}

void BufferManager::freeDeferred(uint32_t epoch, bool all) {
  std::vector<DeferredFree> mine;
  {
    std::lock_guard g(deferredMutex_);
    auto due = [&](const DeferredFree& d) { return all || d.epoch <= epoch; };
    for (const DeferredFree& d : deferred_) {
      if (due(d)) mine.push_back(d);
    }
    std::erase_if(deferred_, due);
  }
  // Written now (or evicted after its write): freeing them writes nothing.
  for (const DeferredFree& d : mine) {
    if (d.pages == 1) {
      freePageById(d.pid);
    } else {
      freeSpan(d.pid, d.pages);
    }
  }
}

std::vector<uint64_t> BufferManager::deferredFrees() const {
  std::vector<uint64_t> pids;
  std::lock_guard g(deferredMutex_);
  for (const DeferredFree& d : deferred_) {
    for (uint64_t q = d.pid; q < d.pid + d.pages; q++) pids.push_back(q);
  }
  return pids;
}

Status BufferManager::writeCopies(uint32_t epoch, bool all) {
  std::vector<SnapshotCopies::Copy> mine;
  std::vector<SnapshotCopies::Copy> keep;
  for (auto& c : copies_.takeAll()) ((all || c.epoch == epoch) ? mine : keep).push_back(std::move(c));
  std::vector<PageWrite> writes;
  for (auto& c : mine) {
    sealPage(c.image.get(), c.pid, c.epoch);
    writes.push_back({c.pid, c.image.get()});
  }
  Status st;
  if (!writes.empty()) {
    std::sort(writes.begin(), writes.end(), [](const PageWrite& a, const PageWrite& b) { return a.pid < b.pid; });
    std::lock_guard g(evictMutex_);
    st = store_->writePages(writes);
  }
  if (st.ok()) {
    counters_.add(Counter::kPagesWritten, writes.size());
  } else {
    copies_.putBack(std::move(mine));  // none may be assumed stored
  }
  copies_.putBack(std::move(keep));
  return st;
}

Status BufferManager::flushDirty(uint8_t tag) {
  // Each page is copied under a brief shared lock and the copies written, so a writer
  // never waits for this I/O. A page stays dirty until its copy is on storage; a writer
  // that changes it meanwhile keeps the same image again (a harmless second frame).
  constexpr size_t kFlushBatch = 256;
  std::unique_ptr<Page[]> bufs(new Page[kFlushBatch]);
  // The pages dirtied since the tag's last flush (both tags for 0), or, if a note of
  // them was lost, every resident page. Given back whole if this flush fails.
  DirtyLists::Taken taken[2];
  for (uint8_t t : {uint8_t{1}, uint8_t{2}}) {
    if (tag == 0 || tag == t) taken[t & 1] = dirtyLists_.take(t);
  }
  auto giveBack = [&](Status st) {
    for (uint8_t t : {uint8_t{1}, uint8_t{2}}) {
      if (tag == 0 || tag == t) dirtyLists_.putBack(t, std::move(taken[t & 1]));
    }
    return st;
  };
  std::vector<uint64_t> todo;
  if (taken[0].complete && taken[1].complete) {
    for (const auto& t : taken) todo.insert(todo.end(), t.pids.begin(), t.pids.end());
    std::sort(todo.begin(), todo.end());
    todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
  } else {
    resident_.forEach([&](uint64_t pid) { todo.push_back(pid); });
  }
  while (!todo.empty()) {
    std::vector<uint64_t> retry;
    for (size_t i = 0; i < todo.size(); i += kFlushBatch) {
      std::vector<PageWrite> writes;
      std::vector<uint8_t> tags;
      std::lock_guard g(evictMutex_);  // one writer of pages at a time (evictions too)
      for (size_t j = i; j < std::min(todo.size(), i + kFlushBatch); j++) {
        uint64_t pid = todo[j];
        PageState& ps = state(pid);
        uint64_t w = ps.load();
        if (PageState::stateOf(w) == PageState::kEvicted) continue;  // evicted meanwhile: written then
        Page* p = pageAt(pid);
        uint8_t d = __atomic_load_n(&p->header.dirty, __ATOMIC_RELAXED);
        if (d == 0 || (tag != 0 && d != tag)) continue;  // clean, or of the other epoch
        if (!ps.tryLockS(w)) {
          retry.push_back(pid);  // never wait for a page lock while holding evictMutex_
          continue;
        }
        d = __atomic_load_n(&p->header.dirty, __ATOMIC_RELAXED);  // stable now
        if (d != 0 && (tag == 0 || d == tag) && spanOf(p->header) > 1) {
          // A variable-size page is written from the pool, under the shared lock (only
          // freeing it waits): not copied.
          Status st = writePages(std::span<const uint64_t>(&pid, 1));
          ps.unlockS();
          if (!st.ok()) return giveBack(st);
          continue;
        }
        if (d != 0 && (tag == 0 || d == tag)) {
          Page* copy = &bufs[writes.size()];
          std::memcpy(copy, p, kPageSize);
          sealPage(copy, pid, epochOfTag(d));
          writes.push_back({pid, copy});
          tags.push_back(d);
        }
        ps.unlockS();
      }
      if (writes.empty()) continue;
      Status st = store_->writePages(writes);
      if (!st.ok()) return giveBack(st);  // the pages are still dirty
      for (size_t k = 0; k < writes.size(); k++) {
        // Clean, unless a writer has changed it since (then it is dirty in the new epoch).
        uint8_t expect = tags[k];
        __atomic_compare_exchange_n(&pageAt(writes[k].pid)->header.dirty, &expect, uint8_t{0}, false,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
      }
      counters_.add(Counter::kPagesWritten, writes.size());
      writeBackFailing_.store(false, std::memory_order_relaxed);
    }
    if (!retry.empty()) std::this_thread::yield();
    todo.swap(retry);
  }
  return Status::OK();
}

Page* BufferManager::allocPage(PageKind kind) {
  uint64_t pid;
  if (!freeSpace_.pop(&pid)) pid = growByOne();
  PageState& ps = state(pid);
  for (;;) {
    uint64_t w = ps.load();
    uint64_t s = PageState::stateOf(w);
    if (s == PageState::kEvicted) {
      if (ps.tryLockX(w)) {
        try {
          reserveFrame(false);
        } catch (...) {
          ps.unlockXEvicted();
          freeSpace_.push(pid);
          throw;
        }
        residentAdd(pid);
        break;
      }
    } else if (s == PageState::kUnlocked || s == PageState::kMarked) {
      if (ps.tryLockX(w)) {  // a freed page still in memory: reuse its frame
        if (hitHook_) noteHit(pid);
        break;
      }
    } else {
      ps.waitChange(w);
    }
  }
  Page* p = pageAt(pid);
  std::memset(p, 0, kPageSize);  // a free page belongs to no snapshot: nothing to keep
  p->header.kind = kind;
  p->header.pid = pid;
  markDirty(pid, p);
  return p;
}

void BufferManager::freePageById(uint64_t pid) {
  checkExists(pid);
  PageState& ps = state(pid);
  for (;;) {
    uint64_t w = ps.load();
    uint64_t s = PageState::stateOf(w);
    if (s == PageState::kEvicted) {
      if (ps.tryLockX(w)) {  // never read in: its content is dead
        ps.unlockXEvicted();
        freeSpace_.push(pid);
        return;
      }
    } else if (s == PageState::kUnlocked || s == PageState::kMarked) {
      if (ps.tryLockX(w)) {
        freePage(pid);
        return;
      }
    } else {
      ps.waitChange(w);
    }
  }
}

uint64_t BufferManager::growBy(uint64_t n) {
  uint64_t count = pageCount_.load(std::memory_order_relaxed);
  do {
    if (count + n > maxPages_) {
      throw StorageError(Status::NoSpace("data file reached max_size (" + std::to_string(maxPages_) + " pages)"));
    }
    initStatesUpTo(count + n - 1);
  } while (!pageCount_.compare_exchange_weak(count, count + n, std::memory_order_acq_rel));
  if (count + n > poolPages_ && hugeEnd_.load(std::memory_order_relaxed) != 0) [[unlikely]] {
    // The data no longer fits: from here on only 4 KiB pages fault in.
    if (uint64_t end = hugeEnd_.exchange(0, std::memory_order_relaxed)) pages_.adviseHugePrefix(end, false);
  }
  return count;
}

void BufferManager::useHugePagesWhileInMemory() {
  const uint64_t end = poolPages_ & ~uint64_t{511};
  if (tiers_ || end == 0 || pageCount() > poolPages_) return;
  if (pages_.adviseHugePrefix(end, true)) hugeEnd_.store(end, std::memory_order_relaxed);
}

bool BufferManager::lockFreePage(uint64_t pid) {
  PageState& ps = state(pid);
  for (;;) {
    uint64_t w = ps.load();
    uint64_t s = PageState::stateOf(w);
    if (s == PageState::kEvicted) {
      if (ps.tryLockX(w)) return false;
    } else if (s == PageState::kUnlocked || s == PageState::kMarked) {
      if (ps.tryLockX(w)) return true;  // a freed page still in memory
    } else {
      ps.waitChange(w);
    }
  }
}

Page* BufferManager::allocSpan(PageKind kind, uint64_t pages, size_t keepFrom, size_t keepTo) {
  if (pages == 1) return allocPage(kind);
  checkSpan(pages);
  uint64_t pid;
  if (!freeSpace_.popRun(pages, &pid)) pid = growBy(pages);
  // Every id of the run locked; frames of freed pages still in memory become the span's.
  std::vector<uint64_t> wasResident;
  for (uint64_t i = 0; i < pages; i++) {
    if (lockFreePage(pid + i)) {
      residentDrop(pid + i, 1);
      wasResident.push_back(pid + i);
    }
  }
  if (tiers_) {
    // Their frames may be on any tier's node: give them back, and reserve the span's
    // frames in the fastest tier like any new page (released frames read as zeros).
    for (uint64_t r : wasResident) releaseFrame(r, 1);
    wasResident.clear();
  }
  try {
    reserveFrames(pages - wasResident.size(), false);
  } catch (...) {
    releaseFrame(pid, pages);  // frees the budget of the formerly resident ones
    physUsed_.fetch_add(pages - wasResident.size(), std::memory_order_relaxed);
    for (uint64_t i = 0; i < pages; i++) state(pid + i).unlockXEvicted();
    freeSpace_.pushRun(pid, pages);
    throw;
  }
  if (wasResident.empty()) backLarge(pid, pages);
  // Released frames read as zeros; a freed page's frame may hold its old content:
  // zeroed, but for what the caller writes at once.
  for (uint64_t r : wasResident) {
    const size_t from = (r - pid) * kPageSize;
    const size_t to = from + kPageSize;
    auto* frame = reinterpret_cast<uint8_t*>(pageAt(r));
    const size_t a = std::clamp(keepFrom, from, to);
    const size_t b = std::clamp(std::max(keepTo, keepFrom), from, to);
    std::memset(frame, 0, a - from);
    std::memset(frame + (b - from), 0, to - b);
  }
  markTails(pid, pages, true);
  for (uint64_t i = 1; i < pages; i++) state(pid + i).unlockXEvicted();  // never fixed alone
  residentAdd(pid);
  Page* p = pageAt(pid);
  std::memset(p, 0, sizeof(PageHeader));
  p->header.kind = kind;
  p->header.pid = pid;
  setSpan(&p->header, pages);
  markDirty(pid, p);
  return p;
}

void BufferManager::backLarge(uint64_t pid, uint64_t pages) {
  // One fault per 2 MiB instead of 512 (a 64 MiB value read from storage spent about
  // a third of its time in the kernel's 4 KiB faults). Not with tiers: their frames are
  // placed page by page on each tier's node. Only once the pool has been full, so that
  // eviction releases memory as spans take it: the kernel then hands out blocks it
  // freed just before, where a pool still growing takes new memory, which in a VM may
  // have no host memory behind it yet and makes huge pages 5x slower than small ones
  // (huge_backoff.hpp; in-memory loads of 64 MiB values ran 4x slower).
  if (tiers_ || !evicted_.load(std::memory_order_relaxed)) return;
  counters_.add(Counter::kHugePageBytes, pages_.populateHuge({pid, pages}));
}

void BufferManager::freeSpan(uint64_t pid, uint64_t pages) {
  if (pages == 1) return freePageById(pid);
  checkExists(pid);
  if (lockFreePage(pid)) {
    Page* p = pageAt(pid);
    if (deferFreeOfSnapshot(pid, p, pages)) return;
    try {
      markDirty(pid, p);  // cannot write: a page of the snapshot was deferred above
    } catch (...) {
      state(pid).unlockX();
      throw;
    }
    __atomic_store_n(&p->header.dirty, 0, __ATOMIC_RELAXED);  // its content is dead
    residentDrop(pid, pages);
    if (!tiers_) {
      // Its frames stay in memory as freed pages, one per id, as freePage leaves a page:
      // the next span allocated over them (a value replaced by one of its size takes
      // this run again, best fit) reuses them instead of faulting fresh zeroed memory
      // in after a release (a TLB shootdown) here. The clock evicts them like any
      // clean page when the pool needs the room.
      keepFreedFrames(pid, pages);
      markTails(pid, pages, false);  // after: a stale read-in of a tail meanwhile still fails
      freeSpace_.pushRun(pid, pages);
      return;
    }
    releaseFrame(pid, pages);
  }
  markTails(pid, pages, false);
  state(pid).unlockXEvicted();
  freeSpace_.pushRun(pid, pages);
}

void BufferManager::keepFreedFrames(uint64_t pid, uint64_t pages) {
  for (uint64_t q = pid; q < pid + pages; q++) {
    Page* p = pageAt(q);
    std::memset(&p->header, 0, sizeof(PageHeader));  // a tail's header was value bytes
    p->header.kind = PageKind::kFree;
    p->header.pid = q;
    PageState& ps = state(q);
    if (q != pid) {
      // A tail's state word says evicted (it was never fixed alone); only a stale
      // read-in locks it, briefly, and leaves it evicted (its tail bit is still set).
      // Take it to become a page of its own.
      for (uint64_t w = ps.load(); !ps.tryLockX(w); w = ps.load()) {
      }
    }
    // In the resident set (and the policy's) as a page of its own; not an access, so
    // no listener hears of it (a freed page is not used).
    resident_.insert(q);
    if (policy_) policy_->admit(q);
    ps.unlockX();
  }
}

void BufferManager::appendFreePages(uint64_t n) {
  // Evicted and never written: nobody reads them before allocPage.
  for (uint64_t i = 0; i < n; i++) freeSpace_.push(growByOne());
}

void BufferManager::freePage(uint64_t pid) {
  Page* p = pageAt(pid);
  if (deferFreeOfSnapshot(pid, p, 1)) return;
  try {
    markDirty(pid, p);  // cannot write: a page of the snapshot was deferred above
  } catch (...) {
    state(pid).unlockX();
    throw;
  }
  p->header.kind = PageKind::kFree;
  __atomic_store_n(&p->header.dirty, 0, __ATOMIC_RELAXED);  // its content is dead
  state(pid).unlockX();
  freeSpace_.push(pid);
}

void BufferManager::fillStats(Stats* s) const {
  s->hits = counters_.sum(Counter::kHits);
  s->misses = counters_.sum(Counter::kMisses);
  s->evictions = counters_.sum(Counter::kEvictions);
  s->pages_written = counters_.sum(Counter::kPagesWritten);
  s->restarts = counters_.sum(Counter::kRestarts);
  s->release_calls = counters_.sum(Counter::kReleaseCalls);
  s->read_ahead_pages = counters_.sum(Counter::kReadAheadPages);
  s->huge_page_bytes = counters_.sum(Counter::kHugePageBytes);
  s->huge_pages_in_memory = hugePagesInMemory() ? 1 : 0;
  s->victim_ns = counters_.sum(Counter::kVictimNanos);
  s->victims_kept = counters_.sum(Counter::kVictimsKept);
  s->policy_bytes = policy_ ? policy_->memoryBytes() : 0;
  s->resident_set_bytes = resident_.memoryBytes();
  s->pool_pages = poolPages_;
  s->resident_pages = residentPages();
  if (tiers_) {
    s->tier_count = tiers_->count();
    for (unsigned t = 0; t < tiers_->count(); t++) {
      s->tier_node[t] = tiers_->node(t);
      s->tier_budget_pages[t] = tiers_->budget(t);
      s->tier_pages[t] = tiers_->used(t);
    }
    s->demoted_pages = demotedPages();
    s->promoted_pages = promotedPages();
    s->migrate_failures = migrator_->runsFailed();
    s->migrate_calls = migrator_->calls();
    s->migrate_ns = migrator_->nanos();
    s->migrate_tlb_shootdowns = migrator_->tlbShootdowns();
  }
  s->page_count = pageCount();
  s->free_pages = freeSpace_.size();
  s->file_bytes = file_->sizeBytes();
}

}  // namespace vmstore::internal
