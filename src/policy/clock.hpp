// ClockPolicy: second chance (Corbató 1969; thesis 002 §1.2.8) as a Policy object.
//
// Contract (beyond policy.hpp)
// - Resident pids sit in a ring of slots; a hit sets the pid's reference bit (one relaxed
//   store, no lock); the hand clears set bits and offers pids whose bit is clear. A pid
//   admitted starts referenced, as a page read in by the engine starts unmarked.
// - This is the policy the buffer manager runs natively with the page-state mark
//   (mark = reference bit clear); this object is what the simulator and the policy tests
//   run, and what `policy=clock-object` would measure: the same decisions through the
//   generic hook.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "policy/per_page.hpp"
#include "policy/policy.hpp"
#include "sync/spin_mutex.hpp"

namespace vmstore::internal {

class ClockPolicy final : public Policy {
 public:
  ClockPolicy(uint64_t poolPages, uint64_t maxPages);
  const char* name() const override { return "clock"; }
  void admit(uint64_t pid) override;
  void hit(uint64_t pid) noexcept override {
    if (pid < ref_.count()) ref_[pid].store(1, std::memory_order_relaxed);
  }
  size_t victims(size_t n, uint64_t* out) override;
  void evicted(uint64_t pid) override { drop(pid); }
  void kept(uint64_t pid) override;
  void removed(uint64_t pid) override { drop(pid); }
  uint64_t size() const override { return size_.load(std::memory_order_relaxed); }
  uint64_t memoryBytes() const override;

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  void drop(uint64_t pid);

  mutable SpinMutex mu_;
  std::vector<uint64_t> ring_;      // a pid or kEmpty
  std::vector<uint64_t> freeSlots_;
  uint64_t hand_ = 0;
  PerPage<std::atomic<uint64_t>> slotOf_;  // slot + 1; 0: not resident
  PerPage<std::atomic<uint8_t>> ref_;      // reference bit
  PerPage<uint8_t> offered_;               // returned by victims(), not yet answered
  std::atomic<uint64_t> size_{0};
};

}  // namespace vmstore::internal
