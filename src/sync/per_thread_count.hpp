// PerThreadCount: a count that many threads change often and few read, kept in
// per-thread slots so that no cache line is written by two threads.
//
// Contract
// - add(d) changes the calling thread's slot: one locked add on a line of its own (the
//   slot is threadIndex() % kSlots; more than kSlots live threads share slots, which
//   costs speed, never correctness).
// - sum() reads every slot (kSlots lines): the total of all adds. Only the sum means
//   anything: a thread may take back what another added (its slot then goes negative).
// - Both are sequentially consistent by default, so the Dekker pattern of the gates
//   built on it holds: a thread that adds and then loads a flag, and one that stores the
//   flag and then sums, cannot both miss each other.
#pragma once

#include <atomic>
#include <cstdint>

#include "sync/thread_index.hpp"

namespace vmstore::internal {

class PerThreadCount {
 public:
  static constexpr unsigned kSlots = 64;

  void add(int64_t d, std::memory_order order = std::memory_order_seq_cst) {
    slots_[threadIndex() % kSlots].n.fetch_add(d, order);
  }
  int64_t sum() const {
    int64_t total = 0;
    for (const Slot& s : slots_) total += s.n.load(std::memory_order_seq_cst);
    return total;
  }

 private:
  struct alignas(64) Slot {
    std::atomic<int64_t> n{0};
  };
  Slot slots_[kSlots];
};

}  // namespace vmstore::internal
