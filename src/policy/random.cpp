// random: evict a resident page chosen uniformly at random (thesis §1.2.1). No state per
// page beyond membership, nothing to do on a hit (no hook on the hit path), and the
// quickest choice of all: the baseline every policy must beat on hit rate to pay for its
// overhead.
#include <mutex>
#include <random>

#include "policy/dense_set.hpp"
#include "policy/policies.hpp"
#include "sync/spin_mutex.hpp"

namespace vmstore::internal {

namespace {

class RandomPolicy final : public Policy {
 public:
  explicit RandomPolicy(uint64_t maxPages) : resident_(maxPages), offered_(maxPages) {}
  const char* name() const override { return "random"; }
  bool tracksHits() const override { return false; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    if (resident_.contains(pid)) return;
    offered_[pid] = 0;
    resident_.insert(pid);
  }
  void hit(uint64_t) noexcept override {}
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    size_t found = 0;
    const uint64_t size = resident_.size();
    for (uint64_t tries = 0; found < n && size > 0 && tries < 4 * n + size; tries++) {
      uint64_t pid = resident_.at(rng_() % size);
      if (offered_[pid]) continue;
      offered_[pid] = 1;
      out[found++] = pid;
    }
    return found;
  }
  void evicted(uint64_t pid) override { drop(pid); }
  void removed(uint64_t pid) override { drop(pid); }
  void kept(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return resident_.size();
  }
  uint64_t memoryBytes() const override {
    std::lock_guard g(mu_);
    return resident_.memoryBytes() + resident_.size();
  }

 private:
  void drop(uint64_t pid) {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    if (resident_.contains(pid)) resident_.remove(pid);
  }

  mutable SpinMutex mu_;
  DenseSet resident_;
  PerPage<uint8_t> offered_;
  std::mt19937_64 rng_{0x5eed};
};

}  // namespace

std::unique_ptr<Policy> makeRandomPolicy(uint64_t, uint64_t maxPages) {
  return std::make_unique<RandomPolicy>(maxPages);
}

}  // namespace vmstore::internal
