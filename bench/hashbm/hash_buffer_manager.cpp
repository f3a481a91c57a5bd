#include "hashbm/hash_buffer_manager.hpp"

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
  uint64_t cap = std::bit_ceil(poolPages * 2);
  mask_ = cap - 1;
  slotPid_ = std::make_unique<std::atomic<uint64_t>[]>(cap);
  slotFrame_ = std::make_unique<std::atomic<uint64_t>[]>(cap);
  for (uint64_t i = 0; i < cap; i++) slotPid_[i].store(kEmpty, std::memory_order_relaxed);
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
  for (uint64_t i = slotOf(pid), n = 0; n <= mask_; i = (i + 1) & mask_, n++) {
    uint64_t k = slotPid_[i].load(std::memory_order_acquire);
    if (k == pid) return static_cast<int64_t>(slotFrame_[i].load(std::memory_order_acquire));
    if (k == kEmpty) return -1;
  }
  return -1;
}

void HashBufferManager::insertLocked(uint64_t pid, uint64_t frame) {
  for (uint64_t i = slotOf(pid);; i = (i + 1) & mask_) {
    uint64_t k = slotPid_[i].load(std::memory_order_relaxed);
    if (k == kEmpty || k == kTombstone) {
      slotFrame_[i].store(frame, std::memory_order_release);
      slotPid_[i].store(pid, std::memory_order_release);
      return;
    }
  }
}

void HashBufferManager::removeLocked(uint64_t pid) {
  for (uint64_t i = slotOf(pid), n = 0; n <= mask_; i = (i + 1) & mask_, n++) {
    uint64_t k = slotPid_[i].load(std::memory_order_relaxed);
    if (k == pid) {
      slotPid_[i].store(kTombstone, std::memory_order_release);
      return;
    }
    if (k == kEmpty) return;
  }
}

uint64_t HashBufferManager::takeFrameLocked() {
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
      Page* p = frameAt(f);
      uint64_t victim = framePid_[f].load(std::memory_order_relaxed);
      if (BufferManager::isDirty(p)) {
        sealPage(p, victim);
        Status st = file_->writePage(victim, p);
        if (!st.ok()) {
          BufferManager::setDirty(p);
          ps.unlockX();
          throw StorageError(st);
        }
        counters_.add(Counter::kPagesWritten);
      }
      removeLocked(victim);
      framePid_[f].store(kEmpty, std::memory_order_release);
      counters_.add(Counter::kEvictions);
      resident_.fetch_sub(1, std::memory_order_relaxed);
      return f;
    }
  }
  throw StorageError(Status::NoMemory("hash buffer pool is full and no frame can be evicted"));
}

uint64_t HashBufferManager::load(uint64_t pid, bool read) {
  uint64_t f;
  {
    std::lock_guard g(tableMutex_);
    if (lookup(pid) >= 0) return ~0ull;  // somebody else loaded it meanwhile
    f = takeFrameLocked();
    framePid_[f].store(pid, std::memory_order_release);
    insertLocked(pid, f);
    resident_.fetch_add(1, std::memory_order_relaxed);
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
    removeLocked(pid);
    framePid_[f].store(kEmpty, std::memory_order_release);
    freeFrames_.push_back(f);
    resident_.fetch_sub(1, std::memory_order_relaxed);
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
    if (loaded != ~0ull) frameState_[loaded].unlockX();
  }
}

uint64_t HashBufferManager::optimisticBegin(uint64_t pid, Page** page) {
  for (;;) {
    int64_t f = residentFrame(pid);
    PageState& ps = frameState_[f];
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
    if (s == PageState::kEvicted || framePid_[f].load(std::memory_order_acquire) != pid) continue;
    *page = frameAt(f);
    counters_.add(Counter::kHits);
    return w;
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
      if (loaded != ~0ull) return frameAt(loaded);
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
      if (f != ~0ull) p = frameAt(f);
    }
  }
  std::memset(p, 0, kPageSize);
  p->header.kind = kind;
  p->header.pid = pid;
  BufferManager::setDirty(p);
  return p;
}

void HashBufferManager::freePage(uint64_t pid) {
  int64_t f = lookup(pid);
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

}  // namespace vmstore::internal
