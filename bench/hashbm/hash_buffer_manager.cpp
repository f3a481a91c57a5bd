#include "hashbm/hash_buffer_manager.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <thread>

namespace vmstore::internal {

HashBufferManager::HashBufferManager(DataFile* file, uint64_t poolPages, uint64_t maxPages,
                                     uint64_t pageCount)
    : file_(file),
      poolPages_(poolPages),
      maxPages_(maxPages),
      frames_(poolPages, 0),
      frameState_(std::make_unique<PageState[]>(poolPages)),
      framePid_(std::make_unique<std::atomic<uint64_t>[]>(poolPages)),
      pageCount_(pageCount) {
  uint64_t cap = std::bit_ceil(poolPages * 2);  // at most half full
  mask_ = cap - 1;
  slots_ = std::make_unique<Slot[]>(cap);
  for (uint64_t i = 0; i < cap; i++) {
    slots_[i].pid.store(kEmpty, std::memory_order_relaxed);
    slots_[i].frame.store(0, std::memory_order_relaxed);
  }
  freeFrames_.reserve(poolPages);
  for (uint64_t f = poolPages; f-- > 0;) {
    frameState_[f].initEvicted();
    framePid_[f].store(kEmpty, std::memory_order_relaxed);
    freeFrames_.push_back(f);
  }
}

void HashBufferManager::throwNoSuchPage(uint64_t pid) const {
  throw StorageError(Status::Corruption("reference to page " + std::to_string(pid) + ", which does not exist"));
}

uint64_t HashBufferManager::slotOf(uint64_t pid) const {
  uint64_t k = pid * 0x9E3779B97F4A7C15ull;
  return (k ^ (k >> 29)) & mask_;
}

int64_t HashBufferManager::lookup(uint64_t pid) const {
  // Bounded by the table size: a lookup that races with shifts may not see an empty slot.
  for (uint64_t i = slotOf(pid), n = 0; n <= mask_; i = (i + 1) & mask_, n++) {
    uint64_t k = slots_[i].pid.load(std::memory_order_acquire);
    if (k == pid) return static_cast<int64_t>(slots_[i].frame.load(std::memory_order_acquire));
    if (k == kEmpty) return -1;
  }
  return -1;
}

int64_t HashBufferManager::lookupLocked(uint64_t pid) {
  std::lock_guard g(tableMutex_);
  return lookup(pid);
}

void HashBufferManager::insertLocked(uint64_t pid, uint64_t frame) {
  for (uint64_t i = slotOf(pid);; i = (i + 1) & mask_) {
    if (slots_[i].pid.load(std::memory_order_relaxed) == kEmpty) {
      slots_[i].frame.store(frame, std::memory_order_release);
      slots_[i].pid.store(pid, std::memory_order_release);
      return;
    }
  }
}

void HashBufferManager::removeLocked(uint64_t pid) {
  uint64_t hole = slotOf(pid);
  for (;; hole = (hole + 1) & mask_) {
    uint64_t k = slots_[hole].pid.load(std::memory_order_relaxed);
    if (k == pid) break;
    if (k == kEmpty) return;
  }
  // Backward shift: move each later entry of the cluster whose home is not in
  // (hole, j] into the hole, until an empty slot ends the cluster.
  for (uint64_t j = (hole + 1) & mask_;; j = (j + 1) & mask_) {
    uint64_t k = slots_[j].pid.load(std::memory_order_relaxed);
    if (k == kEmpty) break;
    uint64_t home = slotOf(k);
    bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    slots_[hole].frame.store(slots_[j].frame.load(std::memory_order_relaxed), std::memory_order_release);
    slots_[hole].pid.store(k, std::memory_order_release);
    hole = j;
  }
  slots_[hole].pid.store(kEmpty, std::memory_order_release);
}

void HashBufferManager::mapLocked(uint64_t pid, uint64_t f) {
  framePid_[f].store(pid, std::memory_order_release);
  insertLocked(pid, f);
  resident_.fetch_add(1, std::memory_order_relaxed);
}

void HashBufferManager::unmapLocked(uint64_t f) {
  removeLocked(framePid_[f].load(std::memory_order_relaxed));
  framePid_[f].store(kEmpty, std::memory_order_release);
  resident_.fetch_sub(1, std::memory_order_relaxed);
}

uint64_t HashBufferManager::takeFrameLocked(uint64_t* dirtyVictim) {
  *dirtyVictim = kEmpty;
  if (!freeFrames_.empty()) {
    uint64_t f = freeFrames_.back();
    freeFrames_.pop_back();
    uint64_t w = frameState_[f].load();
    if (frameState_[f].tryLockX(w)) return f;
    freeFrames_.push_back(f);  // cannot happen: free frames are unreferenced
  }
  // Clock over the frames: mark unlocked ones, take a marked one nobody touched since.
  for (uint64_t n = 0; n < poolPages_ * 4; n++) {
    uint64_t f = hand_;
    hand_ = (hand_ + 1) % poolPages_;
    PageState& ps = frameState_[f];
    uint64_t w = ps.load();
    uint64_t s = PageState::stateOf(w);
    if (s == PageState::kUnlocked) {
      ps.tryMark(w);
    } else if (s == PageState::kMarked && ps.tryLockX(w)) {
      if (BufferManager::isDirty(frameAt(f))) {
        *dirtyVictim = framePid_[f].load(std::memory_order_relaxed);
        return f;
      }
      unmapLocked(f);
      counters_.add(Counter::kEvictions);
      return f;
    }
  }
  throw StorageError(Status::NoMemory("hash buffer pool is full and no frame can be evicted"));
}

void HashBufferManager::writeBack(uint64_t f, uint64_t pid) {
  Page* p = frameAt(f);
  sealPage(p, pid);
  Status st = file_->writePage(pid, p);
  if (!st.ok()) {
    BufferManager::setDirty(p);
    frameState_[f].unlockX();
    throw StorageError(st);
  }
  counters_.add(Counter::kPagesWritten);
}

uint64_t HashBufferManager::load(uint64_t pid, bool read) {
  uint64_t f;
  for (;;) {
    uint64_t victim;
    {
      std::lock_guard g(tableMutex_);
      if (lookup(pid) >= 0) return kNoFrame;  // somebody else loaded it meanwhile
      f = takeFrameLocked(&victim);
      if (victim == kEmpty) {
        mapLocked(pid, f);
        break;
      }
    }
    // The dirty victim stays mapped and locked while it is written, without the latch.
    writeBack(f, victim);
    std::lock_guard g(tableMutex_);
    unmapLocked(f);
    counters_.add(Counter::kEvictions);
    if (lookup(pid) >= 0) {  // loaded by another thread during the write
      freeFrames_.push_back(f);
      frameState_[f].unlockXEvicted();
      return kNoFrame;
    }
    mapLocked(pid, f);
    break;
  }
  Page* p = frameAt(f);
  Status st;
  if (read) {
    st = file_->readPage(pid, p);
    if (st.ok() && !pageIsIntact(p, pid)) {
      st = Status::Corruption("page " + std::to_string(pid) + " of " + file_->path() + " is damaged");
    }
    counters_.add(Counter::kMisses);
  }
  if (!st.ok()) {
    std::lock_guard g(tableMutex_);
    unmapLocked(f);
    freeFrames_.push_back(f);
    frameState_[f].unlockXEvicted();
    throw StorageError(st);
  }
  return f;
}

int64_t HashBufferManager::residentFrame(uint64_t pid) {
  for (;;) {
    int64_t f = lookup(pid);
    if (f >= 0) return f;
    uint64_t loaded = load(pid, true);
    if (loaded != kNoFrame) frameState_[loaded].unlockX();
  }
}

uint64_t HashBufferManager::optimisticBegin(uint64_t pid, Page** page) {
  for (;;) {
    int64_t f = residentFrame(pid);  // the one table lookup of a hit
    PageState& ps = frameState_[f];
    for (;;) {  // on this frame until it turns out to hold another page
      uint64_t w = ps.load();
      uint64_t s = PageState::stateOf(w);
      if (s == PageState::kMarked) {
        ps.tryUnmark(w);
        continue;
      }
      if (s == PageState::kLocked) {
        ps.waitChange(w);
        continue;
      }
      if (s == PageState::kEvicted || framePid_[f].load(std::memory_order_acquire) != pid) break;
      *page = frameAt(f);
      counters_.add(Counter::kHits);
      return w;
    }
  }
}

bool HashBufferManager::tryUpgradeX(uint64_t, Page* page, uint64_t begin) {
  PageState& ps = frameState_[frameOf(page)];
  uint64_t s = PageState::stateOf(begin);
  if ((s == PageState::kUnlocked || s == PageState::kMarked) && ps.tryLockX(begin)) return true;
  uint64_t now = ps.load();
  return PageState::stateOf(now) == PageState::kMarked &&
         PageState::versionOf(now) == PageState::versionOf(begin) && ps.tryLockX(now);
}

Page* HashBufferManager::fixX(uint64_t pid) {
  checkExists(pid);
  for (;;) {
    int64_t f = lookup(pid);
    if (f < 0) {
      uint64_t loaded = load(pid, true);
      if (loaded != kNoFrame) return frameAt(loaded);
      continue;
    }
    PageState& ps = frameState_[f];
    uint64_t w = ps.load();
    uint64_t s = PageState::stateOf(w);
    if (s == PageState::kUnlocked || s == PageState::kMarked) {
      if (!ps.tryLockX(w)) continue;
      if (framePid_[f].load(std::memory_order_acquire) != pid) {
        ps.unlockX();
        continue;
      }
      counters_.add(Counter::kHits);
      return frameAt(f);
    }
    if (s != PageState::kEvicted) ps.waitChange(w);
  }
}

Page* HashBufferManager::fixS(uint64_t pid) {
  checkExists(pid);
  for (;;) {
    int64_t f = residentFrame(pid);
    PageState& ps = frameState_[f];
    uint64_t w = ps.load();
    uint64_t s = PageState::stateOf(w);
    if (s == PageState::kEvicted) continue;
    if (s == PageState::kLocked || s == PageState::kMaxShared) {
      ps.waitChange(w);
      continue;
    }
    if (!ps.tryLockS(w)) continue;
    if (framePid_[f].load(std::memory_order_acquire) != pid) {
      ps.unlockS();
      continue;
    }
    counters_.add(Counter::kHits);
    return frameAt(f);
  }
}

Page* HashBufferManager::allocPage(PageKind kind) {
  uint64_t pid;
  if (!freeSpace_.pop(&pid)) {
    pid = pageCount_.fetch_add(1, std::memory_order_acq_rel);
    if (pid >= maxPages_) {
      pageCount_.fetch_sub(1, std::memory_order_acq_rel);
      throw StorageError(Status::NoSpace("data file reached its maximum size"));
    }
  }
  Page* p = nullptr;
  while (p == nullptr) {
    if (lookup(pid) >= 0) {
      p = fixX(pid);  // a freed page still in a frame: reuse it
    } else {
      uint64_t f = load(pid, false);
      if (f != kNoFrame) p = frameAt(f);
    }
  }
  std::memset(p, 0, kPageSize);
  p->header.kind = kind;
  p->header.pid = pid;
  BufferManager::setDirty(p);
  return p;
}

void HashBufferManager::freePage(uint64_t pid) {
  int64_t f = lookupLocked(pid);  // held exclusively, so mapped: the exact lookup finds it
  Page* p = frameAt(static_cast<uint64_t>(f));
  p->header.kind = PageKind::kFree;
  __atomic_store_n(&p->header.dirty, 0, __ATOMIC_RELAXED);
  frameState_[f].unlockX();
  freeSpace_.push(pid);
}

void HashBufferManager::fillStats(Stats* s) const {
  s->hits = counters_.sum(Counter::kHits);
  s->misses = counters_.sum(Counter::kMisses);
  s->evictions = counters_.sum(Counter::kEvictions);
  s->pages_written = counters_.sum(Counter::kPagesWritten);
  s->restarts = counters_.sum(Counter::kRestarts);
  s->pool_pages = poolPages_;
  s->resident_pages = resident_.load(std::memory_order_relaxed);
  s->page_count = pageCount();
  s->free_pages = freeSpace_.size();
  s->file_bytes = file_->sizeBytes();
}

HashBufferManager::TableReport HashBufferManager::checkTable() const {
  TableReport r;
  r.slots = mask_ + 1;
  std::vector<uint64_t> entriesOfFrame(poolPages_, 0);
  auto problem = [&r](std::string text) {
    if (r.problems.size() < 20) r.problems.push_back(std::move(text));
  };
  for (uint64_t i = 0; i <= mask_; i++) {
    uint64_t pid = slots_[i].pid.load(std::memory_order_relaxed);
    if (pid == kEmpty) continue;
    r.entries++;
    uint64_t f = slots_[i].frame.load(std::memory_order_relaxed);
    if (f >= poolPages_) {
      problem("slot " + std::to_string(i) + ": frame " + std::to_string(f) + " out of range");
      continue;
    }
    entriesOfFrame[f]++;
    if (framePid_[f].load(std::memory_order_relaxed) != pid) {
      problem("slot " + std::to_string(i) + " maps page " + std::to_string(pid) + " to frame " +
              std::to_string(f) + ", which holds another page");
    }
    for (uint64_t j = slotOf(pid); j != i; j = (j + 1) & mask_) {
      if (slots_[j].pid.load(std::memory_order_relaxed) == kEmpty) {
        problem("page " + std::to_string(pid) + " at slot " + std::to_string(i) +
                " is cut off from its home slot by the empty slot " + std::to_string(j));
        break;
      }
    }
  }
  for (uint64_t f = 0; f < poolPages_; f++) {
    bool mapped = framePid_[f].load(std::memory_order_relaxed) != kEmpty;
    if (entriesOfFrame[f] != (mapped ? 1u : 0u)) {
      problem("frame " + std::to_string(f) + (mapped ? " (holding a page)" : " (unused)") +
              " has " + std::to_string(entriesOfFrame[f]) + " table entries");
    }
  }
  if (r.entries != resident_.load(std::memory_order_relaxed)) {
    problem(std::to_string(r.entries) + " table entries but " +
            std::to_string(resident_.load(std::memory_order_relaxed)) + " resident pages");
  }
  // The longest run of occupied slots, the table taken as a ring.
  uint64_t firstEmpty = 0;
  while (firstEmpty <= mask_ && slots_[firstEmpty].pid.load(std::memory_order_relaxed) != kEmpty) {
    firstEmpty++;
  }
  if (firstEmpty > mask_) {
    r.longestCluster = r.slots;
    return r;
  }
  uint64_t run = 0;
  for (uint64_t n = 1; n <= r.slots; n++) {
    uint64_t i = (firstEmpty + n) & mask_;
    run = slots_[i].pid.load(std::memory_order_relaxed) == kEmpty ? 0 : run + 1;
    r.longestCluster = std::max(r.longestCluster, run);
  }
  return r;
}

}  // namespace vmstore::internal
