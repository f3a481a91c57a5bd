// TierMap: which memory tier each resident page is in, and how many frames each tier
// holds against its budget (issue 11; paper 003, vmcache in tiered memory). Knows page
// ids and frame counts, not keys, not page contents.
//
// Contract
// - Tiers are numbered from 0 (fastest) to count() - 1 (slowest); each has a NUMA node
//   and a budget in frames (4 KiB pages). A variable-size page of n ids is n frames.
// - tryReserve(t, n) takes n frames of tier t's budget if they are free (lock-free; any
//   thread), release(t, n) gives them back. used(t) <= budget(t) always: the budget is a
//   hard limit, which is what lets the buffer manager say "each page in exactly one tier,
//   each tier within its budget".
// - tierOf(pid) / setTier(pid, t): the tier recorded for a resident page (its head).
//   Recorded by the buffer manager when the page becomes resident (tier 0, whose frames
//   it reserved first) and when it moves; meaningless for a page not resident.
// - Every page id has one byte, in an area committed lazily (like the page states).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "os/vm_area.hpp"
#include "vmstore/options.hpp"

namespace vmstore::internal {

struct TierSpec {
  int node = 0;
  uint64_t pages = 0;  // budget in frames
};

class TierMap {
 public:
  TierMap(const std::vector<TierSpec>& tiers, uint64_t maxPages);
  TierMap(const TierMap&) = delete;
  TierMap& operator=(const TierMap&) = delete;

  unsigned count() const { return static_cast<unsigned>(specs_.size()); }
  unsigned last() const { return count() - 1; }
  int node(unsigned t) const { return specs_[t].node; }
  uint64_t budget(unsigned t) const { return specs_[t].pages; }
  uint64_t used(unsigned t) const { return used_[t].load(std::memory_order_acquire); }
  uint64_t free(unsigned t) const {
    uint64_t u = used(t);
    return u >= budget(t) ? 0 : budget(t) - u;
  }

  bool tryReserve(unsigned t, uint64_t n) {
    uint64_t u = used_[t].load(std::memory_order_relaxed);
    do {
      if (u + n > specs_[t].pages) return false;
    } while (!used_[t].compare_exchange_weak(u, u + n, std::memory_order_acq_rel));
    return true;
  }
  void release(unsigned t, uint64_t n) { used_[t].fetch_sub(n, std::memory_order_acq_rel); }

  unsigned tierOf(uint64_t pid) const { return __atomic_load_n(&tiers_[pid], __ATOMIC_ACQUIRE); }
  void setTier(uint64_t pid, unsigned t) { __atomic_store_n(&tiers_[pid], static_cast<uint8_t>(t), __ATOMIC_RELEASE); }

 private:
  std::vector<TierSpec> specs_;
  std::atomic<uint64_t> used_[kMaxTiers] = {};
  VmArea area_;
  uint8_t* tiers_;
};

}  // namespace vmstore::internal
