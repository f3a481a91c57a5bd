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
#include "policy/id_list.hpp"
#include "policy/policies.hpp"
#include "sync/spin_mutex.hpp"

namespace vmstore::internal {

namespace {

constexpr int kCooling = 1;
constexpr uint8_t kHot = 0;
constexpr uint8_t kCold = 1;

class LeanStorePolicy final : public Policy {
 public:
  LeanStorePolicy(uint64_t poolPages, uint64_t maxPages)
      : coolingMax_(std::max<uint64_t>(1, poolPages / 10)), resident_(maxPages), cooling_(maxPages),
        state_(maxPages), offered_(maxPages) {}
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
    if (cooling_.listOf(pid) == kCooling && !offered_[pid]) {
      cooling_.remove(pid);
      state_[pid].store(kHot, std::memory_order_relaxed);
    }
  }
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    // Top up the cooling stage with random hot pages.
    uint64_t hot = resident_.size() - cooling_.size(kCooling);
    for (uint64_t tries = 0; cooling_.size(kCooling) < coolingMax_ + n && hot > 0 && tries < 4 * (coolingMax_ + n);
         tries++) {
      uint64_t pid = resident_.at(rng_() % resident_.size());
      if (cooling_.listOf(pid) != 0) continue;
      state_[pid].store(kCold, std::memory_order_relaxed);
      cooling_.pushBack(kCooling, pid);
      hot--;
    }
    size_t found = 0;
    for (uint64_t pid = cooling_.front(kCooling); pid != IdLists::kNil && found < n; pid = cooling_.next(pid)) {
      if (offered_[pid]) continue;
      offered_[pid] = 1;
      out[found++] = pid;
    }
    return found;
  }
  void evicted(uint64_t pid) override { drop(pid); }
  void removed(uint64_t pid) override { drop(pid); }
  void kept(uint64_t pid) override {
    // In use, so warm (the contract's reference): hot again. (The paper re-queues it
    // for a later retry; pages that stay unevictable, dirty ones on a full device, would
    // then clog the stage while random choice could find others.)
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    if (cooling_.listOf(pid) == kCooling) {
      cooling_.remove(pid);
      state_[pid].store(kHot, std::memory_order_relaxed);
    }
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return resident_.size();
  }
  uint64_t memoryBytes() const override {
    std::lock_guard g(mu_);
    return resident_.memoryBytes() + IdLists::bytesFor(cooling_.size(kCooling)) + 2 * resident_.size();
  }

 private:
  void drop(uint64_t pid) {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    if (cooling_.listOf(pid) != 0) cooling_.remove(pid);
    if (resident_.contains(pid)) resident_.remove(pid);
    state_[pid].store(kHot, std::memory_order_relaxed);
  }

  const uint64_t coolingMax_;
  mutable SpinMutex mu_;
  DenseSet resident_;
  IdLists cooling_;
  PerPage<std::atomic<uint8_t>> state_;
  PerPage<uint8_t> offered_;
  std::mt19937_64 rng_{0x1ea5};
};

}  // namespace

std::unique_ptr<Policy> makeLeanStorePolicy(uint64_t poolPages, uint64_t maxPages) {
  return std::make_unique<LeanStorePolicy>(poolPages, maxPages);
}

}  // namespace vmstore::internal
