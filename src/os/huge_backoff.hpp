// HugeBackoff: whether populating huge pages pays here, learned from how long it takes.
//
// Contract
// - tryNow() says whether the next populate should ask for huge pages; report(ns, bytes)
//   tells how long one that did took. A populate slower than kSlowNsPerMiB (twice what
//   the 4 KiB faults it replaces would cost) makes the next `skip` calls of tryNow()
//   false, `skip` doubling with each slow populate in a row up to kMaxSkip; a fast one
//   sets it back to kFirstSkip.
// - Why: huge pages lose where the kernel has to take them from memory the hypervisor
//   has not backed. A VM with free page reporting (virtio-balloon) hands each idle
//   2 MiB block back to the host, and the first touch of its 4 KiB parts then costs a
//   host fault each: measured here, 2.5 ms per MiB against 0.1 ms for huge pages the
//   kernel had freed just before, and 0.45 ms for 4 KiB faults, which it serves from
//   warm small blocks.
// - Thread-safe (relaxed atomics; a race costs at most one populate more or less).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace vmstore::internal {

class HugeBackoff {
 public:
  static constexpr uint64_t kSlowNsPerMiB = 1'000'000;
  static constexpr uint32_t kFirstSkip = 8;
  static constexpr uint32_t kMaxSkip = 1024;

  bool tryNow() {
    uint32_t left = skipLeft_.load(std::memory_order_relaxed);
    if (left == 0) return true;
    skipLeft_.store(left - 1, std::memory_order_relaxed);
    return false;
  }
  void report(uint64_t ns, uint64_t bytes) {
    const uint64_t mib = std::max<uint64_t>(1, bytes >> 20);
    if (ns > kSlowNsPerMiB * mib) {
      const uint32_t skip = nextSkip_.load(std::memory_order_relaxed);
      skipLeft_.store(skip, std::memory_order_relaxed);
      nextSkip_.store(std::min(kMaxSkip, skip * 2), std::memory_order_relaxed);
    } else {
      nextSkip_.store(kFirstSkip, std::memory_order_relaxed);
    }
  }

 private:
  std::atomic<uint32_t> skipLeft_{0};
  std::atomic<uint32_t> nextSkip_{kFirstSkip};
};

}  // namespace vmstore::internal
