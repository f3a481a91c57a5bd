// leanstore: LeanStore's replacement (Leis et al., ICDE 2018; thesis §1.2.15) without
// pointer swizzling, which vmstore does not need (the page table translates). Pages are
// hot by default. When asked for victims, the policy first tops up a FIFO cooling stage
// to 10% of the pool with resident pages chosen at random (the paper's "random choice"),
// then offers the pages that have been cooling longest. A hit on a cooling page makes it
// hot again (taken out of the stage under the lock); a hit on a hot page costs one
// relaxed load of its state and nothing else. A candidate kept because it was in use
// becomes hot again (the paper re-queues it; see kept()).
#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>

#include "policy/dense_set.hpp"
#include "policy/policies.hpp"
#include "policy/policy_base.hpp"

namespace vmstore::internal {

namespace {

constexpr int kCooling = 1;
constexpr uint8_t kHot = 0;
constexpr uint8_t kCold = 1;

class LeanStorePolicy final : public ListPolicy {
 public:
  LeanStorePolicy(uint64_t poolPages, uint64_t maxPages)
      : ListPolicy(maxPages), coolingMax_(std::max<uint64_t>(1, poolPages / 10)), resident_(maxPages), state_(maxPages) {}
  const char* name() const override { return "leanstore"; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    if (resident_.contains(pid)) return;
    offered_[pid] = 0;
    state_[pid].store(kHot, std::memory_order_relaxed);
    resident_.insert(pid);
  }
  void hit(uint64_t pid) noexcept override {
    if (pid >= state_.count() || state_[pid].load(std::memory_order_relaxed) != kCold) return;
    std::lock_guard g(mu_);
    if (lists_.listOf(pid) == kCooling && !offered_[pid]) {
      lists_.remove(pid);
      state_[pid].store(kHot, std::memory_order_relaxed);
    }
  }
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    // Top up the cooling stage with random hot pages.
    uint64_t hot = resident_.size() - lists_.size(kCooling);
    for (uint64_t tries = 0; lists_.size(kCooling) < coolingMax_ + n && hot > 0 && tries < 4 * (coolingMax_ + n);
         tries++) {
      uint64_t pid = resident_.at(rng_() % resident_.size());
      if (lists_.listOf(pid) != 0) continue;
      state_[pid].store(kCold, std::memory_order_relaxed);
      lists_.pushBack(kCooling, pid);
      hot--;
    }
    return offerFront(kCooling, n, out, 0);
  }
  void evicted(uint64_t pid) override { removed(pid); }
  void removed(uint64_t pid) override {
    std::lock_guard g(mu_);
    forget(pid);
    if (resident_.contains(pid)) resident_.remove(pid);
    state_[pid].store(kHot, std::memory_order_relaxed);
  }
  void kept(uint64_t pid) override {
    // In use, so warm (the contract's reference): hot again. (The paper re-queues it
    // for a later retry; pages that stay unevictable, dirty ones on a full device, would
    // then clog the stage while random choice could find others.)
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    if (lists_.listOf(pid) == kCooling) {
      lists_.remove(pid);
      state_[pid].store(kHot, std::memory_order_relaxed);
    }
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return resident_.size();
  }
  uint64_t memoryBytes() const override {
    std::lock_guard g(mu_);
    return resident_.memoryBytes() + bytesFor(lists_.size(kCooling)) + 2 * resident_.size();
  }

 private:
  const uint64_t coolingMax_;
  DenseSet resident_;
  PerPage<std::atomic<uint8_t>> state_;
  std::mt19937_64 rng_{0x1ea5};
};

}  // namespace

std::unique_ptr<Policy> makeLeanStorePolicy(uint64_t poolPages, uint64_t maxPages) {
  return std::make_unique<LeanStorePolicy>(poolPages, maxPages);
}

}  // namespace vmstore::internal
