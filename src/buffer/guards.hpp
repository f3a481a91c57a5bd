// Guards: RAII page access that makes optimistic lock coupling read like ordinary code
// (the vmcache paper's GuardO / GuardS / GuardX).
//
// - GuardO<T>: optimistic. Reads may see a page mid-change or zeroed by eviction; they
//   must only be trusted after validate() (or after the next child guard was built,
//   which validates its parent). A failed validation throws Restart.
//   Constructing a child guard checks the child id before touching it: an id that does
//   not exist means either a stale read (Restart) or a damaged parent (Corruption).
// - GuardX<T>: exclusive, from a pid (waits) or by upgrading a GuardO (never waits:
//   Restart if the page changed). Releases on destruction. markDirty() is implied.
// - GuardS<T>: shared, from a pid (waits).
// T is a struct laid over the whole page (its first member is the PageHeader).
#pragma once

#include <cstdint>
#include <utility>

#include "buffer/buffer_manager.hpp"

namespace vmstore::internal {

inline constexpr uint64_t kNoPage = ~0ull;

template <class T>
class GuardO {
 public:
  GuardO() = default;
  // A root: nothing to validate above it.
  GuardO(BufferManager& bm, uint64_t pid) : bm_(&bm), pid_(pid) {
    bm.checkExists(pid);
    ptr_ = reinterpret_cast<T*>(bm.pageAt(pid));
    version_ = bm.optimisticBegin(pid);
  }
  template <class P>
  GuardO(BufferManager& bm, uint64_t pid, GuardO<P>& parent) : bm_(&bm), pid_(pid) {
    if (pid == 0 || pid >= bm.pageCount()) {
      parent.validate();  // a stale read restarts; a valid parent is damaged
      bm.checkExists(pid);
    }
    ptr_ = reinterpret_cast<T*>(bm.pageAt(pid));
    PageState& ps = bm.state(pid);
    uint64_t w = ps.load();
    if (PageState::stateOf(w) == PageState::kEvicted) {
      parent.validate();  // read from storage only what a valid parent points to
      try {
        version_ = bm.optimisticBegin(pid);
      } catch (const StorageError&) {
        parent.validate();
        throw;
      }
    } else {
      version_ = bm.optimisticBegin(pid);
    }
    parent.validate();
  }
  GuardO(GuardO&& o) noexcept { *this = std::move(o); }
  GuardO& operator=(GuardO&& o) noexcept {
    bm_ = o.bm_;
    pid_ = o.pid_;
    ptr_ = o.ptr_;
    version_ = o.version_;
    o.pid_ = kNoPage;
    return *this;
  }

  // Throws Restart unless every read since construction saw a consistent page.
  void validate() const {
    if (pid_ == kNoPage) return;
    uint64_t now = bm_->state(pid_).load();
    if (!PageState::stillValid(version_, now)) {
      bm_->countRestart();
      throw Restart{};
    }
  }
  void release() {
    validate();
    pid_ = kNoPage;
  }

  T* operator->() const { return ptr_; }
  T* get() const { return ptr_; }
  uint64_t pid() const { return pid_; }
  uint64_t version() const { return version_; }
  bool held() const { return pid_ != kNoPage; }
  BufferManager* bm() const { return bm_; }

 private:
  BufferManager* bm_ = nullptr;
  uint64_t pid_ = kNoPage;
  T* ptr_ = nullptr;
  uint64_t version_ = 0;
};

template <class T>
class GuardX {
 public:
  GuardX() = default;
  GuardX(BufferManager& bm, uint64_t pid) : bm_(&bm), pid_(pid) {
    ptr_ = reinterpret_cast<T*>(bm.fixX(pid));
    BufferManager::markDirty(reinterpret_cast<Page*>(ptr_));
  }
  // Adopts a page that is already exclusively locked (e.g. from allocPage).
  GuardX(BufferManager& bm, Page* page) : bm_(&bm), pid_(page->header.pid), ptr_(reinterpret_cast<T*>(page)) {}
  // Upgrade: Restart if the page changed since the optimistic read began.
  explicit GuardX(GuardO<T>&& o) : bm_(o.bm()), pid_(o.pid()), ptr_(o.get()) {
    PageState& ps = bm_->state(pid_);
    uint64_t v = o.version();
    uint64_t s = PageState::stateOf(v);
    // Only an unlocked (or marked) page at the same version can be taken.
    bool ok = (s == PageState::kUnlocked || s == PageState::kMarked) && ps.tryLockX(v);
    if (!ok) {
      uint64_t now = ps.load();
      // The mark may have been set since: same version, still fine to take.
      ok = PageState::stateOf(now) == PageState::kMarked &&
           PageState::versionOf(now) == PageState::versionOf(v) && ps.tryLockX(now);
    }
    o = GuardO<T>();
    if (!ok) {
      pid_ = kNoPage;
      bm_->countRestart();
      throw Restart{};
    }
    BufferManager::markDirty(reinterpret_cast<Page*>(ptr_));
  }
  GuardX(GuardX&& o) noexcept { *this = std::move(o); }
  GuardX& operator=(GuardX&& o) noexcept {
    release();
    bm_ = o.bm_;
    pid_ = o.pid_;
    ptr_ = o.ptr_;
    o.pid_ = kNoPage;
    return *this;
  }
  ~GuardX() { release(); }

  void release() {
    if (pid_ != kNoPage) {
      bm_->unfixX(pid_);
      pid_ = kNoPage;
    }
  }
  // Frees the page (it must be unreferenced now) and gives up the guard.
  void freePage() {
    bm_->freePage(pid_);
    pid_ = kNoPage;
  }

  T* operator->() const { return ptr_; }
  T* get() const { return ptr_; }
  uint64_t pid() const { return pid_; }
  bool held() const { return pid_ != kNoPage; }

 private:
  BufferManager* bm_ = nullptr;
  uint64_t pid_ = kNoPage;
  T* ptr_ = nullptr;
};

template <class T>
class GuardS {
 public:
  GuardS(BufferManager& bm, uint64_t pid) : bm_(&bm), pid_(pid) {
    ptr_ = reinterpret_cast<T*>(bm.fixS(pid));
  }
  GuardS(const GuardS&) = delete;
  GuardS& operator=(const GuardS&) = delete;
  ~GuardS() { bm_->unfixS(pid_); }
  T* operator->() const { return ptr_; }
  T* get() const { return ptr_; }

 private:
  BufferManager* bm_;
  uint64_t pid_;
  T* ptr_;
};

}  // namespace vmstore::internal
