#include "buffer/resident_set.hpp"

#include <bit>
#include <stdexcept>

#include "os/mix64.hpp"

namespace vmstore::internal {

uint64_t ResidentSet::capacityFor(uint64_t maxResident) {
  // 1.5x headroom keeps probe sequences short even with tombstones around.
  return std::bit_ceil(maxResident + maxResident / 2 + 1);
}

ResidentSet::ResidentSet(uint64_t maxResident)
    : mask_(capacityFor(maxResident) - 1),
      area_(((mask_ + 1) * sizeof(uint64_t) + VmArea::kPageSize - 1) / VmArea::kPageSize, 0),
      slots_(reinterpret_cast<std::atomic<uint64_t>*>(area_.base())) {}

uint64_t ResidentSet::slotOf(uint64_t pid) const {
  return mix64(pid) & mask_;  // spreads sequential pids across the table
}

void ResidentSet::insert(uint64_t pid) {
  uint64_t pos = slotOf(pid);
  for (uint64_t probes = 0; probes <= mask_; probes++, pos = (pos + 1) & mask_) {
    uint64_t cur = slots_[pos].load(std::memory_order_relaxed);
    while (cur == kEmpty || cur == kTombstone) {
      if (slots_[pos].compare_exchange_weak(cur, pid + 1, std::memory_order_relaxed)) return;
    }
  }
  throw std::logic_error("resident set full: more resident pages than the pool allows");
}

bool ResidentSet::remove(uint64_t pid) {
  uint64_t pos = slotOf(pid);
  for (uint64_t probes = 0; probes <= mask_; probes++, pos = (pos + 1) & mask_) {
    uint64_t cur = slots_[pos].load(std::memory_order_relaxed);
    if (cur == kEmpty) return false;
    if (cur == pid + 1) {
      slots_[pos].store(kTombstone, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

}  // namespace vmstore::internal
