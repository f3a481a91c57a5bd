// sieve: SIEVE (Zhang et al., NSDI 2024). One queue, newest at the back, and a visited bit
// per page. The hand moves from the oldest page toward the newest, clearing visited bits
// and offering the first page without one; it stays where it stopped (it does not return
// to the oldest end after an eviction, which is what sets SIEVE apart from FIFO with
// reinsertion) and wraps to the oldest end after the newest. New pages join at the back.
// A hit sets the visited bit: one relaxed store, no lock.
#include <atomic>
#include <mutex>

#include "policy/policies.hpp"
#include "policy/policy_base.hpp"

namespace vmstore::internal {

namespace {

constexpr int kQueue = 1;

class SievePolicy final : public ListPolicy {
 public:
  explicit SievePolicy(uint64_t maxPages) : ListPolicy(maxPages), visited_(maxPages) {}
  const char* name() const override { return "sieve"; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    if (lists_.listOf(pid) != 0) return;
    offered_[pid] = 0;
    visited_[pid].store(0, std::memory_order_relaxed);
    lists_.pushBack(kQueue, pid);
  }
  void hit(uint64_t pid) noexcept override {
    if (pid < visited_.count()) visited_[pid].store(1, std::memory_order_relaxed);
  }
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    size_t found = 0;
    // Two full turns at most: the first clears every bit it passes.
    for (uint64_t steps = 0, limit = 2 * lists_.size(kQueue) + 1; found < n && steps < limit; steps++) {
      if (hand_ == IdLists::kNil) hand_ = lists_.front(kQueue);
      if (hand_ == IdLists::kNil) break;
      uint64_t pid = hand_;
      hand_ = lists_.next(pid);
      if (offered_[pid]) continue;
      if (visited_[pid].load(std::memory_order_relaxed)) {
        visited_[pid].store(0, std::memory_order_relaxed);
        continue;
      }
      offered_[pid] = 1;
      out[found++] = pid;
    }
    return found;
  }
  void evicted(uint64_t pid) override { removed(pid); }
  void removed(uint64_t pid) override {
    std::lock_guard g(mu_);
    if (hand_ == pid && lists_.listOf(pid) != 0) hand_ = lists_.next(pid);
    forget(pid);
  }
  void kept(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    visited_[pid].store(1, std::memory_order_relaxed);
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return lists_.size(kQueue);
  }
  uint64_t memoryBytes() const override { return bytesFor(size(), 1); }

 private:
  PerPage<std::atomic<uint8_t>> visited_;
  uint64_t hand_ = IdLists::kNil;
};

}  // namespace

std::unique_ptr<Policy> makeSievePolicy(uint64_t, uint64_t maxPages) {
  return std::make_unique<SievePolicy>(maxPages);
}

}  // namespace vmstore::internal
