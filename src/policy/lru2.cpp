// lru2: LRU-K with K = 2 (O'Neil, O'Neil and Weikum, SIGMOD 1993; thesis §1.2.6.2, the
// "Timestamp-Sorting" implementation). Each page keeps the logical times of its last two
// references; the victim is the page whose second-to-last reference is oldest. Pages
// referenced only once since they were admitted have no second reference and go first,
// oldest first (their key is their one reference time, below every real second-reference
// time). The history of an evicted page is retained for as long as its id is not reused
// (per-page arrays; the paper's "retained information period" is unbounded here), so a
// page read in again has two references. A hit is lock-free: one atomic increment of the
// logical clock and two relaxed stores. Choosing victims ranks every resident page
// (ranked.hpp). No correlated reference period: every access counts.
#include <atomic>
#include <mutex>
#include <vector>

#include "policy/policies.hpp"
#include "policy/policy_base.hpp"
#include "policy/ranked.hpp"

namespace vmstore::internal {

namespace {

class Lru2Policy final : public DensePolicy {
 public:
  explicit Lru2Policy(uint64_t maxPages) : DensePolicy(maxPages), last_(maxPages), prev_(maxPages) {}
  const char* name() const override { return "lru2"; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    if (!add(pid)) return;
    // The history of an evicted page is retained (the paper's retained information): its
    // last reference before eviction becomes the second-to-last now. Without it, pages
    // cycling through a pool smaller than their loop would always look referenced once
    // and go before any page referenced twice, however long ago.
    prev_[pid].store(last_[pid].load(std::memory_order_relaxed), std::memory_order_relaxed);
    last_[pid].store(tick(), std::memory_order_relaxed);
  }
  void hit(uint64_t pid) noexcept override {
    if (pid >= last_.count()) return;
    uint64_t now = tick();
    prev_[pid].store(last_[pid].load(std::memory_order_relaxed), std::memory_order_relaxed);
    last_[pid].store(now, std::memory_order_relaxed);
  }
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    // Key: one reference only -> its time (small); two -> clock range + second-to-last.
    const uint64_t offset = 1ull << 62;
    return rankedVictims(resident_, offered_, n, out, scratch_, [&](uint64_t pid) {
      uint64_t p = prev_[pid].load(std::memory_order_relaxed);
      return p == 0 ? last_[pid].load(std::memory_order_relaxed) : offset + p;
    });
  }
  void evicted(uint64_t pid) override { removed(pid); }
  void kept(uint64_t pid) override {
    {
      std::lock_guard g(mu_);
      offered_[pid] = 0;
    }
    hit(pid);
  }
  uint64_t memoryBytes() const override {
    std::lock_guard g(mu_);
    return bytesFor(2 * sizeof(uint64_t));
  }

 private:
  uint64_t tick() { return clock_.fetch_add(1, std::memory_order_relaxed) + 1; }

  alignas(64) std::atomic<uint64_t> clock_{0};
  PerPage<std::atomic<uint64_t>> last_;
  PerPage<std::atomic<uint64_t>> prev_;
  std::vector<std::pair<uint64_t, uint64_t>> scratch_;
};

}  // namespace

std::unique_ptr<Policy> makeLru2Policy(uint64_t, uint64_t maxPages) {
  return std::make_unique<Lru2Policy>(maxPages);
}

}  // namespace vmstore::internal
