#include "policy/clock.hpp"

#include <mutex>

namespace vmstore::internal {

ClockPolicy::ClockPolicy(uint64_t poolPages, uint64_t maxPages)
    : slotOf_(maxPages), ref_(maxPages), offered_(maxPages) {
  ring_.reserve(poolPages);
}

void ClockPolicy::admit(uint64_t pid) {
  std::lock_guard g(mu_);
  if (slotOf_[pid].load(std::memory_order_relaxed) != 0) return;  // already resident
  uint64_t slot;
  if (!freeSlots_.empty()) {
    slot = freeSlots_.back();
    freeSlots_.pop_back();
    ring_[slot] = pid;
  } else {
    slot = ring_.size();
    ring_.push_back(pid);
  }
  slotOf_[pid].store(slot + 1, std::memory_order_relaxed);
  ref_[pid].store(1, std::memory_order_relaxed);
  offered_[pid] = 0;
  size_.fetch_add(1, std::memory_order_relaxed);
}

void ClockPolicy::drop(uint64_t pid) {
  std::lock_guard g(mu_);
  uint64_t slot = slotOf_[pid].load(std::memory_order_relaxed);
  if (slot == 0) return;
  ring_[slot - 1] = kEmpty;
  freeSlots_.push_back(slot - 1);
  slotOf_[pid].store(0, std::memory_order_relaxed);
  offered_[pid] = 0;
  size_.fetch_sub(1, std::memory_order_relaxed);
}

void ClockPolicy::kept(uint64_t pid) {
  std::lock_guard g(mu_);
  if (slotOf_[pid].load(std::memory_order_relaxed) == 0) return;
  offered_[pid] = 0;
  ref_[pid].store(1, std::memory_order_relaxed);
}

size_t ClockPolicy::victims(size_t n, uint64_t* out) {
  std::lock_guard g(mu_);
  size_t found = 0;
  // Two turns suffice: the first clears every bit it passes.
  for (uint64_t steps = 0, limit = 2 * ring_.size() + 1; found < n && steps < limit && !ring_.empty(); steps++) {
    if (hand_ >= ring_.size()) hand_ = 0;
    uint64_t pid = ring_[hand_++];
    if (pid == kEmpty || offered_[pid]) continue;
    if (ref_[pid].load(std::memory_order_relaxed)) {
      ref_[pid].store(0, std::memory_order_relaxed);
      continue;
    }
    offered_[pid] = 1;
    out[found++] = pid;
  }
  return found;
}

uint64_t ClockPolicy::memoryBytes() const {
  std::lock_guard g(mu_);
  // Ring and free slots, and per resident page its slot, bit and flag.
  return (ring_.capacity() + freeSlots_.capacity()) * sizeof(uint64_t) + size() * (sizeof(uint64_t) + 2);
}

}  // namespace vmstore::internal
