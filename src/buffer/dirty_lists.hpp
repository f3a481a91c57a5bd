// DirtyLists: the pages that became dirty in each of the two open checkpoint intervals,
// so that a checkpoint finds what it must write without reading the header of every
// resident page.
//
// Contract
// - note(tag, pid): page pid has just become dirty with tag (1 or 2, the interval's
//   parity; BufferManager::markDirty calls it on that change only, once per page per
//   interval unless the page was written or freed in between). Any thread; it appends to
//   the calling thread's slot under that slot's lock, which only take() and putBack()
//   also take, so writers do not share a cache line. Never throws: if memory runs out
//   the slot remembers that its list of that tag is incomplete.
// - take(tag): every pid noted with tag since the last take(tag), plus what was put
//   back; each slot's list is emptied. A pid may come more than once, and a page may no
//   longer be dirty (written by an eviction, freed) or be dirty with the other tag: the
//   caller checks each page's header. `complete` is false if a note was lost (out of
//   memory): then the caller must look at every resident page instead.
// - putBack(tag, pids, complete): returns what a failed flush did not write, for the
//   next take(tag).
// - A page that becomes dirty with tag t after take(t) is in the next take(t). So a
//   flush of t's pages is complete only if no page becomes dirty with t while it runs:
//   the checkpoint's cut moves writers to the other tag first, under the database's
//   writer gate; a flush of both tags while writers run (BufferManager::flushAll)
//   leaves what they dirty meanwhile to the next.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "sync/spin_mutex.hpp"
#include "sync/thread_index.hpp"

namespace vmstore::internal {

class DirtyLists {
 public:
  struct Taken {
    std::vector<uint64_t> pids;
    bool complete = true;
  };

  void note(uint8_t tag, uint64_t pid) noexcept {
    Slot& s = slots_[threadIndex() % kSlots];
    std::lock_guard g(s.mutex);
    List& l = s.lists[tag & 1];
    try {
      l.pids.push_back(pid);
    } catch (...) {
      l.complete = false;
    }
  }

  Taken take(uint8_t tag) {
    Taken t;
    for (Slot& s : slots_) {
      std::lock_guard g(s.mutex);
      List& l = s.lists[tag & 1];
      if (t.pids.empty()) {
        t.pids.swap(l.pids);
      } else {
        t.pids.insert(t.pids.end(), l.pids.begin(), l.pids.end());
        l.pids.clear();
        l.pids.shrink_to_fit();
      }
      t.complete = t.complete && l.complete;
      l.complete = true;
    }
    return t;
  }

  void putBack(uint8_t tag, Taken&& t) noexcept { putBack(tag, t.pids, t.complete); }
  void putBack(uint8_t tag, const std::vector<uint64_t>& pids, bool complete) noexcept {
    Slot& s = slots_[0];
    std::lock_guard g(s.mutex);
    List& l = s.lists[tag & 1];
    try {
      l.pids.insert(l.pids.end(), pids.begin(), pids.end());
    } catch (...) {
      l.complete = false;
    }
    l.complete = l.complete && complete;
  }

 private:
  static constexpr unsigned kSlots = 64;
  struct List {
    std::vector<uint64_t> pids;
    bool complete = true;
  };
  struct alignas(64) Slot {
    SpinMutex mutex;
    List lists[2];
  };
  Slot slots_[kSlots];
};

}  // namespace vmstore::internal
