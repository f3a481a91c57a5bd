// FIFO and LRU: one queue of resident pages, oldest first.
// - fifo: first in, first out (Belady 1966's FIFO; thesis §1.2.2). Hits teach it nothing:
//   no hook on the hit path at all. A candidate kept because it was in use goes to the
//   back, as if admitted again.
// - lru: least recently used, exact (thesis §1.2.4.1, "Hash-Map-Doubly-Linked-List"): a
//   hit moves the page to the back under the policy's one spin lock. That lock on every
//   hit is what the thesis found not to scale (§1.3.5); here it is measured, not avoided.
#include <mutex>

#include "policy/policies.hpp"
#include "policy/policy_base.hpp"

namespace vmstore::internal {

namespace {

constexpr int kQueue = 1;

class QueuePolicy final : public ListPolicy {
 public:
  QueuePolicy(bool lru, uint64_t maxPages) : ListPolicy(maxPages), lru_(lru) {}
  const char* name() const override { return lru_ ? "lru" : "fifo"; }
  bool tracksHits() const override { return lru_; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    if (lists_.listOf(pid) != 0) return;
    offered_[pid] = 0;
    lists_.pushBack(kQueue, pid);
  }
  void hit(uint64_t pid) noexcept override {
    if (!lru_ || pid >= offered_.count()) return;
    std::lock_guard g(mu_);
    if (lists_.listOf(pid) == kQueue) lists_.moveToBack(kQueue, pid);
  }
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    return offerFront(kQueue, n, out, 0);
  }
  void evicted(uint64_t pid) override { removed(pid); }
  void kept(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    if (lists_.listOf(pid) == kQueue) lists_.moveToBack(kQueue, pid);
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return lists_.size(kQueue);
  }
  uint64_t memoryBytes() const override { return bytesFor(size()); }

 private:
  const bool lru_;
};

}  // namespace

std::unique_ptr<Policy> makeFifoPolicy(uint64_t, uint64_t maxPages) {
  return std::make_unique<QueuePolicy>(false, maxPages);
}
std::unique_ptr<Policy> makeLruPolicy(uint64_t, uint64_t maxPages) {
  return std::make_unique<QueuePolicy>(true, maxPages);
}

}  // namespace vmstore::internal
