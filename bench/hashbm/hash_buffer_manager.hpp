// HashBufferManager: the traditional buffer manager (paper 000 §2, Figure 1a), built as
// the control experiment for vmcache's page-table translation: the same B+tree
// (BasicBTree<HashBufferManager>) runs over it in `vmstore bench --engine=hashbm`.
//
// Contract (the guard protocol of buffer_manager.hpp, so guards.hpp works unchanged)
// - A fixed array of pool frames; a hash table maps page id -> frame. Every access,
//   hits included, first looks the page up in the table (lock-free reads); that lookup
//   is what vmcache replaces with address arithmetic.
// - Each frame has a PageState word (same encoding as vmcache); optimistic readers
//   validate the frame's version, and a frame's reuse for another page bumps it.
// - A miss takes a free frame or evicts one by clock (marking, then taking marked
//   unlocked frames; a dirty victim is written first), one page at a time under the
//   table latch, then reads the page outside the latch. Memory is never returned to the
//   kernel: frames are reused in place.
// - Pages are verified (checksum, id) on read like vmcache's; errors are StorageError.
// - No persistence beyond write-back of evicted pages: the benchmark uses fresh files.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "buffer/buffer_manager.hpp"
#include "buffer/counters.hpp"
#include "buffer/errors.hpp"
#include "buffer/free_space.hpp"
#include "buffer/page.hpp"
#include "os/data_file.hpp"
#include "os/vm_area.hpp"
#include "sync/page_state.hpp"
#include "vmstore/stats.hpp"

namespace vmstore::internal {

class HashBufferManager {
 public:
  HashBufferManager(DataFile* file, uint64_t poolPages, uint64_t maxPages, uint64_t pageCount);
  HashBufferManager(const HashBufferManager&) = delete;
  HashBufferManager& operator=(const HashBufferManager&) = delete;

  uint64_t pageCount() const { return pageCount_.load(std::memory_order_acquire); }
  void checkExists(uint64_t pid) const {
    if (pid == 0 || pid >= pageCount()) throwNoSuchPage(pid);
  }

  uint64_t optimisticBegin(uint64_t pid, Page** page);
  bool optimisticValid(uint64_t, const Page* page, uint64_t begin) const {
    return PageState::stillValid(begin, frameState_[frameOf(page)].load());
  }
  bool tryUpgradeX(uint64_t pid, Page* page, uint64_t begin);
  bool mayNeedRead(uint64_t pid) const { return lookup(pid) < 0; }
  Page* fixX(uint64_t pid);
  void unfixX(uint64_t, Page* page) { frameState_[frameOf(page)].unlockX(); }
  Page* fixS(uint64_t pid);
  void unfixS(uint64_t, Page* page) { frameState_[frameOf(page)].unlockS(); }

  Page* allocPage(PageKind kind);
  // The caller holds the page exclusively.
  void freePage(uint64_t pid);
  // Frees an unlocked page (this baseline reads it in to lock it).
  void freePageById(uint64_t pid) {
    fixX(pid);
    freePage(pid);
  }

  void markDirty(uint64_t, Page* page) { BufferManager::setDirty(page); }  // no checkpoints here
  void countRestart() { counters_.add(Counter::kRestarts); }
  Counters& counters() { return counters_; }
  void fillStats(Stats* s) const;

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  static constexpr uint64_t kTombstone = ~0ull - 1;

  [[noreturn]] void throwNoSuchPage(uint64_t pid) const;
  Page* frameAt(uint64_t f) const { return reinterpret_cast<Page*>(frames_.pageAddress(f)); }
  uint64_t frameOf(const Page* p) const {
    return static_cast<uint64_t>(reinterpret_cast<const char*>(p) - frames_.base()) / kPageSize;
  }
  uint64_t slotOf(uint64_t pid) const;
  int64_t lookup(uint64_t pid) const;  // frame or -1
  // The frame holding pid (reading it in first if needed); it may be gone again by the
  // time the caller looks at its state, which the callers' loops handle.
  int64_t residentFrame(uint64_t pid);
  void insertLocked(uint64_t pid, uint64_t frame);
  void removeLocked(uint64_t pid);
  uint64_t takeFrameLocked();  // returns an exclusively locked, unmapped frame
  // Makes pid resident in a frame it returns exclusively locked; reads it when `read`.
  uint64_t load(uint64_t pid, bool read);

  DataFile* file_;
  uint64_t poolPages_;
  uint64_t maxPages_;
  VmArea frames_;
  std::unique_ptr<PageState[]> frameState_;
  std::unique_ptr<std::atomic<uint64_t>[]> framePid_;
  std::unique_ptr<std::atomic<uint64_t>[]> slotPid_;
  std::unique_ptr<std::atomic<uint64_t>[]> slotFrame_;
  uint64_t mask_;
  std::mutex tableMutex_;
  std::vector<uint64_t> freeFrames_;
  uint64_t hand_ = 0;
  std::atomic<uint64_t> pageCount_;
  std::atomic<uint64_t> resident_{0};
  FreeSpace freeSpace_;
  Counters counters_;
};

}  // namespace vmstore::internal
