// HashBufferManager: the traditional buffer manager (paper 000 §2, Figure 1a), built as
// the control experiment for vmcache's page-table translation: the same B+tree
// (BasicBTree<HashBufferManager>) runs over it in `vmstore bench --engine=hashbm`.
//
// Contract (the guard protocol of buffer_manager.hpp, so guards.hpp works unchanged)
// - A fixed array of pool frames; a hash table maps page id -> frame. Every access,
//   hits included, looks the page up in the table exactly once (lock-free reads); that
//   lookup is what vmcache replaces with address arithmetic. tryOptimisticBegin() always
//   declines (and mayNeedRead() is always true), so a child guard validates its parent
//   (one load of a word it already has in cache) instead of paying a second lookup.
// - The table is open addressing with linear probing over entries of {page id, frame}
//   (one cache line holds four), at most half full. Removing an entry shifts the later
//   entries of its cluster back (no tombstones), so a lookup, hit or miss, probes only
//   its own cluster however many pages were evicted. A lock-free lookup that races with
//   such a shift may miss a resident page or return a frame that now holds another page;
//   every caller re-checks under the table latch or against the frame's page id.
// - Each frame has a PageState word (same encoding as vmcache); optimistic readers
//   validate the frame's version, and a frame's reuse for another page bumps it.
// - A miss takes a free frame or evicts one by clock (marking, then taking marked
//   unlocked frames), one page at a time under the table latch. A dirty victim stays
//   mapped and exclusively locked while it is written outside the latch (readers of it
//   wait on its lock); then the latch is taken again to unmap it. A failed write leaves
//   it resident and dirty. The missing page is read outside the latch too. Memory is
//   never returned to the kernel: frames are reused in place.
// - Pages are verified (checksum, id) on read like vmcache's; errors are StorageError.
// - No persistence beyond write-back of evicted pages: the benchmark uses fresh files.
// - checkTable() is for tests, with no other thread using the manager.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
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
  // Always true: see the contract (a hit costs one table lookup, in optimisticBegin).
  bool mayNeedRead(uint64_t) const { return true; }
  bool tryOptimisticBegin(uint64_t, Page**, uint64_t*) { return false; }
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

  // The table against the frames, for tests (no other thread may use the manager):
  // every entry's frame holds its page, every resident frame has exactly one entry, no
  // entry is cut off from its home slot by an empty one. longestCluster is the longest
  // run of occupied slots, which bounds the probes of any lookup, hit or miss.
  struct TableReport {
    uint64_t slots = 0;
    uint64_t entries = 0;
    uint64_t longestCluster = 0;
    std::vector<std::string> problems;
  };
  TableReport checkTable() const;

 private:
  static constexpr uint64_t kEmpty = ~0ull;     // an empty slot's page id; an unused frame's
  static constexpr uint64_t kNoFrame = ~0ull;   // load(): the page was loaded by another thread

  // One table entry; pid is written last on insert (release) and read first (acquire).
  struct Slot {
    std::atomic<uint64_t> pid;
    std::atomic<uint64_t> frame;
  };

  [[noreturn]] void throwNoSuchPage(uint64_t pid) const;
  Page* frameAt(uint64_t f) const { return reinterpret_cast<Page*>(frames_.pageAddress(f)); }
  uint64_t frameOf(const Page* p) const {
    return static_cast<uint64_t>(reinterpret_cast<const char*>(p) - frames_.base()) / kPageSize;
  }
  uint64_t slotOf(uint64_t pid) const;  // the home slot
  int64_t lookup(uint64_t pid) const;   // frame or -1 (see the contract for races)
  int64_t lookupLocked(uint64_t pid);   // the same under the table latch: exact
  // The frame holding pid (reading it in first if needed); it may be gone again by the
  // time the caller looks at its state, which the callers' loops handle.
  int64_t residentFrame(uint64_t pid);
  void insertLocked(uint64_t pid, uint64_t frame);
  void removeLocked(uint64_t pid);  // backward-shift deletion
  // Maps pid to the exclusively locked frame f.
  void mapLocked(uint64_t pid, uint64_t f);
  // Unmaps the page of the exclusively locked frame f (the frame stays locked).
  void unmapLocked(uint64_t f);
  // An exclusively locked frame: a free one or a clean victim, unmapped (*dirtyVictim
  // stays kEmpty), or a dirty victim still mapped (*dirtyVictim is its page id; the
  // caller writes it back and unmaps it).
  uint64_t takeFrameLocked(uint64_t* dirtyVictim);
  // Writes the dirty page of the exclusively locked frame f back; on failure the page
  // stays dirty, the frame is unlocked and StorageError is thrown.
  void writeBack(uint64_t f, uint64_t pid);
  // Makes pid resident in a frame it returns exclusively locked (reads the page when
  // `read`), or kNoFrame when another thread made it resident meanwhile.
  uint64_t load(uint64_t pid, bool read);

  DataFile* file_;
  uint64_t poolPages_;
  uint64_t maxPages_;
  VmArea frames_;
  std::unique_ptr<PageState[]> frameState_;
  std::unique_ptr<std::atomic<uint64_t>[]> framePid_;
  std::unique_ptr<Slot[]> slots_;
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
