// random: evict a resident page chosen uniformly at random (thesis §1.2.1). No state per
// page beyond membership, nothing to do on a hit (no hook on the hit path), and the
// quickest choice of all: the baseline every policy must beat on hit rate to pay for its
// overhead.
#include <mutex>
#include <random>

#include "policy/policies.hpp"
#include "policy/policy_base.hpp"

namespace vmstore::internal {

namespace {

class RandomPolicy final : public DensePolicy {
 public:
  explicit RandomPolicy(uint64_t maxPages) : DensePolicy(maxPages) {}
  const char* name() const override { return "random"; }
  bool tracksHits() const override { return false; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    add(pid);
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
  void evicted(uint64_t pid) override { removed(pid); }
  void kept(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
  }
  uint64_t memoryBytes() const override {
    std::lock_guard g(mu_);
    return bytesFor(0);
  }

 private:
  std::mt19937_64 rng_{0x5eed};
};

}  // namespace

std::unique_ptr<Policy> makeRandomPolicy(uint64_t, uint64_t maxPages) {
  return std::make_unique<RandomPolicy>(maxPages);
}

}  // namespace vmstore::internal
