// arc: Adaptive Replacement Cache (Megiddo and Modha, FAST 2003). Resident pages seen once
// recently are in T1, those seen at least twice in T2, both LRU; B1 and B2 remember the ids
// evicted from T1 and T2 (ghosts, at most c = pool pages in all, as the paper's
// directory of 2c). The target size p of T1 adapts: a miss on an id in B1 says T1 was too
// small (p grows by max(1, |B2|/|B1|)), one in B2 that T2 was (p shrinks by max(1,
// |B1|/|B2|)). REPLACE, adapted to a batch: each candidate comes from T1 while T1 holds
// more than p pages not yet offered, else from T2. A hit moves the page to T2's recent end
// under the policy's spin lock.
#include <algorithm>
#include <mutex>

#include "policy/policies.hpp"
#include "policy/policy_base.hpp"

namespace vmstore::internal {

namespace {

constexpr int kT1 = 1;
constexpr int kT2 = 2;
constexpr int kB1 = 3;
constexpr int kB2 = 4;
constexpr uint64_t kSlack = 64;  // ghosts beyond the bounds kept until the next admit (a batch)

class ArcPolicy final : public ListPolicy {
 public:
  ArcPolicy(uint64_t poolPages, uint64_t maxPages) : ListPolicy(maxPages), c_(std::max<uint64_t>(1, poolPages)) {}
  const char* name() const override { return "arc"; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    int list = lists_.listOf(pid);
    if (list == kT1 || list == kT2) return;
    offered_[pid] = 0;
    if (list == kB1) {
      uint64_t delta = std::max<uint64_t>(1, lists_.size(kB2) / std::max<uint64_t>(1, lists_.size(kB1)));
      p_ = std::min(c_, p_ + delta);
      lists_.remove(pid);
      lists_.pushBack(kT2, pid);
    } else if (list == kB2) {
      uint64_t delta = std::max<uint64_t>(1, lists_.size(kB1) / std::max<uint64_t>(1, lists_.size(kB2)));
      p_ = p_ > delta ? p_ - delta : 0;
      lists_.remove(pid);
      lists_.pushBack(kT2, pid);
    } else {
      lists_.pushBack(kT1, pid);
    }
    trimGhosts();
  }
  void hit(uint64_t pid) noexcept override {
    if (pid >= offered_.count()) return;
    std::lock_guard g(mu_);
    reference(pid);
  }
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    size_t found = 0;
    uint64_t t1 = lists_.front(kT1);
    uint64_t t2 = lists_.front(kT2);
    uint64_t t1Left = lists_.size(kT1);  // T1 pages not offered by this call
    auto nextFree = [&](uint64_t pid) {
      while (pid != IdLists::kNil && offered_[pid]) pid = lists_.next(pid);
      return pid;
    };
    while (found < n) {
      t1 = nextFree(t1);
      t2 = nextFree(t2);
      bool fromT1 = t1 != IdLists::kNil && (t1Left > p_ || t2 == IdLists::kNil);
      uint64_t pid = fromT1 ? t1 : t2;
      if (pid == IdLists::kNil) break;
      offered_[pid] = 1;
      out[found++] = pid;
      if (fromT1) t1Left--;
    }
    return found;
  }
  void evicted(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    int list = lists_.listOf(pid);
    if (list == kT1 || list == kT2) {
      lists_.remove(pid);
      lists_.pushBack(list == kT1 ? kB1 : kB2, pid);
      // Trimmed at the next admit, after its ghost check (the engine evicts first).
      trimGhosts(kSlack);
    }
  }
  void kept(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    reference(pid);
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return lists_.size(kT1) + lists_.size(kT2);
  }
  uint64_t memoryBytes() const override {
    std::lock_guard g(mu_);
    return bytesFor(lists_.size(kT1) + lists_.size(kT2) + lists_.size(kB1) + lists_.size(kB2));
  }
  // The adaptive target of T1 (tests).
  uint64_t target() const {
    std::lock_guard g(mu_);
    return p_;
  }

 private:
  void reference(uint64_t pid) {
    int list = lists_.listOf(pid);
    if (list == kT1 || list == kT2) {
      lists_.remove(pid);
      lists_.pushBack(kT2, pid);
    }
  }
  // The paper's directory bounds: |T1| + |B1| <= c and all four lists <= 2c.
  void trimGhosts(uint64_t slack = 0) {
    while (lists_.size(kB1) > 0 && lists_.size(kT1) + lists_.size(kB1) > c_ + slack) lists_.popFront(kB1);
    while (lists_.size(kB2) > 0 &&
           lists_.size(kT1) + lists_.size(kT2) + lists_.size(kB1) + lists_.size(kB2) > 2 * c_ + slack) {
      lists_.popFront(kB2);
    }
  }

  const uint64_t c_;
  uint64_t p_ = 0;
};

}  // namespace

std::unique_ptr<Policy> makeArcPolicy(uint64_t poolPages, uint64_t maxPages) {
  return std::make_unique<ArcPolicy>(poolPages, maxPages);
}

}  // namespace vmstore::internal
