// ResidentSet: the ids of the pages in memory, for the clock to walk (paper 000 §3.5).
//
// A fixed-size open-addressing hash table sized by the pool (not by storage), lock-free
// insert and remove. It is not touched on a cache hit, only on a miss and on eviction.
// Its memory is committed lazily (a VmArea, zero pages until written: a slot holds
// pid + 1, so zero is empty), so a small database in a large pool does not pay for the
// whole table at open.
// Contract: a pid is inserted at most once before it is removed again (the caller holds
// the page's exclusive lock while inserting or removing it).
#pragma once

#include <atomic>
#include <cstdint>

#include "os/vm_area.hpp"

namespace vmstore::internal {

class ResidentSet {
 public:
  explicit ResidentSet(uint64_t maxResident);
  void insert(uint64_t pid);
  // False if pid was not in the set.
  bool remove(uint64_t pid);
  uint64_t capacity() const { return mask_ + 1; }

  // The clock hand: visits the next `count` slots (wrapping around), calling fn(pid) for
  // each occupied one. Several threads may advance the hand at once.
  template <class Fn>
  void advanceClock(uint64_t count, Fn&& fn) {
    uint64_t start = hand_.fetch_add(count, std::memory_order_relaxed);
    for (uint64_t i = 0; i < count; i++) {
      uint64_t v = slots_[(start + i) & mask_].load(std::memory_order_relaxed);
      if (v != kEmpty && v != kTombstone) fn(v - 1);
    }
  }
  // Calls fn(pid) for every pid in the set.
  template <class Fn>
  void forEach(Fn&& fn) const {
    for (uint64_t i = 0; i <= mask_; i++) {
      uint64_t v = slots_[i].load(std::memory_order_relaxed);
      if (v != kEmpty && v != kTombstone) fn(v - 1);
    }
  }

 private:
  // A slot holds pid + 1 (pids stay far below ~0), or one of these.
  static constexpr uint64_t kEmpty = 0;
  static constexpr uint64_t kTombstone = ~0ull;
  static uint64_t capacityFor(uint64_t maxResident);
  uint64_t slotOf(uint64_t pid) const;

  uint64_t mask_;
  VmArea area_;
  std::atomic<uint64_t>* slots_;
  alignas(64) std::atomic<uint64_t> hand_{0};  // written by every eviction scan
};

}  // namespace vmstore::internal
