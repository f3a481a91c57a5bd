#include "buffer/resident_set.hpp"

#include <bit>
#include <stdexcept>

#include "os/mix64.hpp"

namespace vmstore::internal {

ResidentSet::ResidentSet(uint64_t maxResident) {
  // 1.5x headroom keeps probe sequences short even with tombstones around.
  uint64_t cap = std::bit_ceil(maxResident + maxResident / 2 + 1);
  mask_ = cap - 1;
  slots_ = std::make_unique<std::atomic<uint64_t>[]>(cap);
  for (uint64_t i = 0; i < cap; i++) slots_[i].store(kEmpty, std::memory_order_relaxed);
}

uint64_t ResidentSet::slotOf(uint64_t pid) const {
  return mix64(pid) & mask_;  // spreads sequential pids across the table
}

void ResidentSet::insert(uint64_t pid) {
  uint64_t pos = slotOf(pid);
  for (uint64_t probes = 0; probes <= mask_; probes++, pos = (pos + 1) & mask_) {
    uint64_t cur = slots_[pos].load(std::memory_order_relaxed);
    while (cur == kEmpty || cur == kTombstone) {
      if (slots_[pos].compare_exchange_weak(cur, pid, std::memory_order_relaxed)) return;
    }
  }
  throw std::logic_error("resident set full: more resident pages than the pool allows");
}

bool ResidentSet::remove(uint64_t pid) {
  uint64_t pos = slotOf(pid);
  for (uint64_t probes = 0; probes <= mask_; probes++, pos = (pos + 1) & mask_) {
    uint64_t cur = slots_[pos].load(std::memory_order_relaxed);
    if (cur == kEmpty) return false;
    if (cur == pid) {
      slots_[pos].store(kTombstone, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

}  // namespace vmstore::internal
