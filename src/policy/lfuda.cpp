// lfuda: LFU with dynamic aging (Arlitt et al., SIGMETRICS Perf. Eval. Review 2000;
// thesis §1.2.14). Each page's key is its reference count plus the inflation L at the
// time it was admitted; the victim has the smallest key, and L becomes the key of the
// last page evicted, so a page admitted now starts level with what survived, and pages
// that were hot long ago age out instead of staying forever (LFU's pollution). A hit is
// one relaxed atomic increment (no lock). Choosing victims ranks every resident page
// (ranked.hpp), the thesis's "slow selection of eviction candidates".
#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "policy/policies.hpp"
#include "policy/policy_base.hpp"
#include "policy/ranked.hpp"

namespace vmstore::internal {

namespace {

class LfudaPolicy final : public DensePolicy {
 public:
  explicit LfudaPolicy(uint64_t maxPages) : DensePolicy(maxPages), key_(maxPages) {}
  const char* name() const override { return "lfuda"; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    if (add(pid)) key_[pid].store(inflation_ + 1, std::memory_order_relaxed);
  }
  void hit(uint64_t pid) noexcept override {
    if (pid < key_.count()) key_[pid].fetch_add(1, std::memory_order_relaxed);
  }
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    return rankedVictims(resident_, offered_, n, out, scratch_,
                         [&](uint64_t pid) { return key_[pid].load(std::memory_order_relaxed); });
  }
  void evicted(uint64_t pid) override {
    std::lock_guard g(mu_);
    if (forget(pid)) inflation_ = std::max(inflation_, key_[pid].load(std::memory_order_relaxed));
  }
  void kept(uint64_t pid) override {
    {
      std::lock_guard g(mu_);
      offered_[pid] = 0;
    }
    hit(pid);
  }
  uint64_t memoryBytes() const override {
    std::lock_guard g(mu_);
    return bytesFor(sizeof(uint64_t));
  }

 private:
  uint64_t inflation_ = 0;  // L
  PerPage<std::atomic<uint64_t>> key_;
  std::vector<std::pair<uint64_t, uint64_t>> scratch_;
};

}  // namespace

std::unique_ptr<Policy> makeLfudaPolicy(uint64_t, uint64_t maxPages) {
  return std::make_unique<LfudaPolicy>(maxPages);
}

}  // namespace vmstore::internal
