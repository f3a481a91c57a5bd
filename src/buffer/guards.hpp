// Guards: RAII page access that makes optimistic lock coupling read like ordinary code
// (the vmcache paper's GuardO / GuardS / GuardX).
//
// - GuardO<T>: optimistic. Reads may see a page mid-change or zeroed by eviction; they
//   must only be trusted after validate() (or after the next child guard was built,
//   which validates its parent). A failed validation throws Restart.
//   Constructing a child guard checks the child id before touching it: an id that does
//   not exist means either a stale read (Restart) or a damaged parent (Corruption).
// - GuardX<T>: exclusive, from a pid (waits) or by upgrading a GuardO (never waits:
//   Restart if the page changed). Releases on destruction. markDirty() is implied (which may keep
//   a checkpoint's image of the page first, see buffer_manager.hpp).
// - GuardS<T>: shared, from a pid (waits).
// T is a struct laid over the whole page (its first member is the PageHeader).
// BM is the buffer manager: BufferManager (vmcache: the page address is pid arithmetic)
// or HashBufferManager (bench/hashbm/, the traditional design: a hash table finds the
// frame). Both offer the protocol of buffer_manager.hpp: optimisticBegin(pid, &page),
// optimisticValid, tryUpgradeX, mayNeedRead, fixX/fixS, unfixX/unfixS(pid, page).
#pragma once

#include <cstdint>
#include <utility>

#include "buffer/buffer_manager.hpp"

namespace vmstore::internal {

inline constexpr uint64_t kNoPage = ~0ull;

template <class T, class BM = BufferManager>
class GuardO {
 public:
  GuardO() = default;
  // A root: nothing to validate above it.
  GuardO(BM& bm, uint64_t pid) : bm_(&bm), pid_(pid) {
    bm.checkExists(pid);
    version_ = bm.optimisticBegin(pid, &page_);
  }
  template <class P>
  GuardO(BM& bm, uint64_t pid, GuardO<P, BM>& parent) : bm_(&bm), pid_(pid) {
    if (pid == 0 || pid >= bm.pageCount()) {
      parent.validate();  // a stale read restarts; a valid parent is damaged
      bm.checkExists(pid);
    }
    if (!bm.tryOptimisticBegin(pid, &page_, &version_)) {  // not a plain hit
      parent.validate();  // read from storage only what a valid parent points to
      try {
        version_ = bm.optimisticBegin(pid, &page_);
      } catch (const StorageError&) {
        parent.validate();
        throw;
      }
    }
    parent.validate();
  }
  // pid held optimistically only if it is resident and not locked exclusively now (the
  // hit path alone: nothing is read in or waited for); else nothing is held (held()
  // false). For a page id remembered from before, not reached through a parent.
  static GuardO ifResident(BM& bm, uint64_t pid) {
    GuardO g;
    if (pid == 0 || pid >= bm.pageCount()) return g;
    if (bm.tryOptimisticBegin(pid, &g.page_, &g.version_)) {
      g.bm_ = &bm;
      g.pid_ = pid;
    }
    return g;
  }
  GuardO(GuardO&& o) noexcept { *this = std::move(o); }
  GuardO& operator=(GuardO&& o) noexcept {
    bm_ = o.bm_;
    pid_ = o.pid_;
    page_ = o.page_;
    version_ = o.version_;
    o.pid_ = kNoPage;
    return *this;
  }

  // Throws Restart unless every read since construction saw a consistent page.
  void validate() const {
    if (!valid()) {
      bm_->countRestart();
      throw Restart{};
    }
  }
  // validate() without the Restart: whether every read since construction saw a
  // consistent page (nothing counted).
  bool valid() const { return pid_ == kNoPage || bm_->optimisticValid(pid_, page_, version_); }
  void release() {
    validate();
    pid_ = kNoPage;
  }

  T* operator->() const { return reinterpret_cast<T*>(page_); }
  T* get() const { return reinterpret_cast<T*>(page_); }
  Page* page() const { return page_; }
  uint64_t pid() const { return pid_; }
  uint64_t version() const { return version_; }
  bool held() const { return pid_ != kNoPage; }
  BM* bm() const { return bm_; }

 private:
  BM* bm_ = nullptr;
  uint64_t pid_ = kNoPage;
  Page* page_ = nullptr;
  uint64_t version_ = 0;
};

template <class T, class BM = BufferManager>
class GuardX {
 public:
  GuardX() = default;
  GuardX(BM& bm, uint64_t pid) : bm_(&bm), pid_(pid) {
    page_ = bm.fixX(pid);
    markDirty();
  }
  // Adopts a page that is already exclusively locked (e.g. from allocPage).
  GuardX(BM& bm, Page* page) : bm_(&bm), pid_(page->header.pid), page_(page) {}
  // Upgrade: Restart if the page changed since the optimistic read began.
  explicit GuardX(GuardO<T, BM>&& o) : bm_(o.bm()), pid_(o.pid()), page_(o.page()) {
    const uint64_t version = o.version();
    bool ok = bm_->tryUpgradeX(pid_, page_, version);
    o = GuardO<T, BM>();
    if (!ok) {
      Restart r;
      if constexpr (requires(BM& b) { b.heldShared(uint64_t{}, uint64_t{}); }) {
        if (bm_->heldShared(pid_, version)) r.sharedPid = pid_;
      }
      pid_ = kNoPage;
      bm_->countRestart();
      throw r;
    }
    markDirty();
  }
  GuardX(GuardX&& o) noexcept { *this = std::move(o); }
  GuardX& operator=(GuardX&& o) noexcept {
    release();
    bm_ = o.bm_;
    pid_ = o.pid_;
    page_ = o.page_;
    o.pid_ = kNoPage;
    return *this;
  }
  ~GuardX() { release(); }

  void release() {
    if (pid_ != kNoPage) {
      bm_->unfixX(pid_, page_);
      pid_ = kNoPage;
    }
  }
  // Frees the page (it must be unreferenced now) and gives up the guard.
  void freePage() {
    uint64_t pid = pid_;
    pid_ = kNoPage;  // freePage unlocks it, also when it throws
    bm_->freePage(pid);
  }

  T* operator->() const { return reinterpret_cast<T*>(page_); }
  T* get() const { return reinterpret_cast<T*>(page_); }
  uint64_t pid() const { return pid_; }
  bool held() const { return pid_ != kNoPage; }

 private:
  // The buffer manager keeps a checkpoint's image of the page first, if it must; if it
  // cannot, the page is released unchanged and the error thrown.
  void markDirty() {
    try {
      bm_->markDirty(pid_, page_);
    } catch (...) {
      bm_->unfixX(pid_, page_);
      pid_ = kNoPage;
      throw;
    }
  }

  BM* bm_ = nullptr;
  uint64_t pid_ = kNoPage;
  Page* page_ = nullptr;
};

template <class T, class BM = BufferManager>
class GuardS {
 public:
  GuardS(BM& bm, uint64_t pid) : bm_(&bm), pid_(pid) { page_ = bm.fixS(pid); }
  GuardS(const GuardS&) = delete;
  GuardS& operator=(const GuardS&) = delete;
  ~GuardS() { bm_->unfixS(pid_, page_); }
  T* operator->() const { return reinterpret_cast<T*>(page_); }
  T* get() const { return reinterpret_cast<T*>(page_); }

 private:
  BM* bm_;
  uint64_t pid_;
  Page* page_;
};

}  // namespace vmstore::internal
