// Counters: per-thread event counters of a buffer manager (LeanStore style).
//
// Each thread increments its own cache-line-sized slot with plain relaxed loads and
// stores (no locked instruction on the hot path); stats() sums the slots. Threads map to
// slots by a per-thread index modulo kSlots: beyond kSlots threads two may share a slot
// and an increment can be lost, which is acceptable for statistics.
#pragma once

#include <atomic>
#include <cstdint>

namespace vmstore::internal {

// kProviderEvictions: the part of kEvictions the page provider did (the rest was inline).
// kReadAheadPages: the part of kMisses read ahead of need (BufferManager::readAhead).
enum class Counter : int {
  kHits,
  kMisses,
  kEvictions,
  kPagesWritten,
  kRestarts,
  kReleaseCalls,
  kProviderEvictions,
  kReadAheadPages,
  kCount
};

class Counters {
 public:
  static constexpr int kSlots = 64;
  void add(Counter c, uint64_t n = 1) {
    auto& v = slots_[threadSlot()].v[static_cast<int>(c)];
    v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t sum(Counter c) const {
    uint64_t s = 0;
    for (const auto& slot : slots_) s += slot.v[static_cast<int>(c)].load(std::memory_order_relaxed);
    return s;
  }

 private:
  static int threadSlot() {
    thread_local int slot = nextSlot();
    return slot;
  }
  static int nextSlot();
  struct alignas(64) Slot {
    std::atomic<uint64_t> v[static_cast<int>(Counter::kCount)] = {};
  };
  Slot slots_[kSlots];
};

}  // namespace vmstore::internal
