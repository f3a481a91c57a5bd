// slru: segmented LRU (Karedla, Love and Wherry, IEEE Computer 1994; thesis §1.2.7). A
// page enters the probationary segment; a hit there promotes it to the protected segment
// (at most 80% of the pool), whose overflow goes back to probation's most recent end.
// Victims come from probation's least recent end, then from protected's. A hit takes the
// policy's spin lock (it moves a list entry), as exact LRU does.
#include <mutex>

#include "policy/policies.hpp"
#include "policy/policy_base.hpp"

namespace vmstore::internal {

namespace {

constexpr int kProbation = 1;
constexpr int kProtected = 2;

class SlruPolicy final : public ListPolicy {
 public:
  SlruPolicy(uint64_t poolPages, uint64_t maxPages)
      : ListPolicy(maxPages), protectedMax_(std::max<uint64_t>(1, poolPages * 8 / 10)) {}
  const char* name() const override { return "slru"; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    if (lists_.listOf(pid) != 0) return;
    offered_[pid] = 0;
    lists_.pushBack(kProbation, pid);
  }
  void hit(uint64_t pid) noexcept override {
    if (pid >= offered_.count()) return;
    std::lock_guard g(mu_);
    reference(pid);
  }
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    return offerFront(kProtected, n, out, offerFront(kProbation, n, out, 0));
  }
  void evicted(uint64_t pid) override { removed(pid); }
  void kept(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    reference(pid);
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return lists_.size(kProbation) + lists_.size(kProtected);
  }
  uint64_t memoryBytes() const override { return bytesFor(size()); }

 private:
  void reference(uint64_t pid) {
    int list = lists_.listOf(pid);
    if (list == kProtected) {
      lists_.moveToBack(kProtected, pid);
    } else if (list == kProbation) {
      lists_.remove(pid);
      lists_.pushBack(kProtected, pid);
      while (lists_.size(kProtected) > protectedMax_) {
        uint64_t old = lists_.popFront(kProtected);
        lists_.pushBack(kProbation, old);
      }
    }
  }
  const uint64_t protectedMax_;
};

}  // namespace

std::unique_ptr<Policy> makeSlruPolicy(uint64_t poolPages, uint64_t maxPages) {
  return std::make_unique<SlruPolicy>(poolPages, maxPages);
}

}  // namespace vmstore::internal
