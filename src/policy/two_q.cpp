// 2q: full 2Q (Johnson and Shasha, VLDB 1994). A page seen for the first time enters A1in,
// a FIFO of at most Kin = 25% of the pool; evicted from there, its id is remembered in
// A1out, a FIFO of ids only (Kout = 50% of the pool). A page admitted while its id is in
// A1out was wanted again soon: it goes to Am, an LRU of the rest of the pool. Hits move a
// page in Am to its recent end (under the policy's spin lock); hits in A1in change
// nothing (the paper's correlated-reference rule). Victims come from A1in while it holds
// more than Kin pages, else from Am.
#include <algorithm>
#include <mutex>

#include "policy/policies.hpp"
#include "policy/policy_base.hpp"

namespace vmstore::internal {

namespace {

constexpr int kA1in = 1;
constexpr int kAm = 2;
constexpr int kA1out = 3;  // ghost ids
constexpr uint64_t kSlack = 64;  // ghosts beyond Kout kept until the next admit (a batch)

class TwoQPolicy final : public ListPolicy {
 public:
  TwoQPolicy(uint64_t poolPages, uint64_t maxPages)
      : ListPolicy(maxPages), kin_(std::max<uint64_t>(1, poolPages / 4)), kout_(std::max<uint64_t>(1, poolPages / 2)) {}
  const char* name() const override { return "2q"; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    int list = lists_.listOf(pid);
    if (list == kA1in || list == kAm) return;
    offered_[pid] = 0;
    if (list == kA1out) {
      lists_.remove(pid);
      lists_.pushBack(kAm, pid);
    } else {
      lists_.pushBack(kA1in, pid);
    }
    while (lists_.size(kA1out) > kout_) lists_.popFront(kA1out);
  }
  void hit(uint64_t pid) noexcept override {
    if (pid >= offered_.count()) return;
    std::lock_guard g(mu_);
    if (lists_.listOf(pid) == kAm) lists_.moveToBack(kAm, pid);
  }
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    // A1in above its share first (as many as it exceeds Kin by), then Am, then A1in.
    uint64_t excess = lists_.size(kA1in) > kin_ ? lists_.size(kA1in) - kin_ : 0;
    size_t found = offerFront(kA1in, n, out, 0, excess);
    found = offerFront(kAm, n, out, found);
    return offerFront(kA1in, n, out, found);
  }
  void evicted(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    int list = lists_.listOf(pid);
    if (list == kA1in) {
      lists_.remove(pid);
      lists_.pushBack(kA1out, pid);
      // Trimmed to Kout at the next admit, after its ghost check: the engine evicts
      // before it admits, and the id it admits may be the oldest ghost.
      while (lists_.size(kA1out) > kout_ + kSlack) lists_.popFront(kA1out);
    } else if (list == kAm) {
      lists_.remove(pid);
    }
  }
  void kept(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    int list = lists_.listOf(pid);
    if (list == kAm || list == kA1in) lists_.moveToBack(list, pid);
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return lists_.size(kA1in) + lists_.size(kAm);
  }
  uint64_t memoryBytes() const override {
    std::lock_guard g(mu_);
    return bytesFor(lists_.size(kA1in) + lists_.size(kAm) + lists_.size(kA1out));
  }

 private:
  const uint64_t kin_;
  const uint64_t kout_;
};

}  // namespace

std::unique_ptr<Policy> makeTwoQPolicy(uint64_t poolPages, uint64_t maxPages) {
  return std::make_unique<TwoQPolicy>(poolPages, maxPages);
}

}  // namespace vmstore::internal
