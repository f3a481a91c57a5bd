// slru: segmented LRU (Karedla, Love and Wherry, IEEE Computer 1994; thesis §1.2.7). A
// page enters the probationary segment; a hit there promotes it to the protected segment
// (at most 80% of the pool), whose overflow goes back to probation's most recent end.
// Victims come from probation's least recent end, then from protected's. A hit takes the
// policy's spin lock (it moves a list entry), as exact LRU does.
#include <mutex>

#include "policy/id_list.hpp"
#include "policy/policies.hpp"
#include "sync/spin_mutex.hpp"

namespace vmstore::internal {

namespace {

constexpr int kProbation = 1;
constexpr int kProtected = 2;

class SlruPolicy final : public Policy {
 public:
  SlruPolicy(uint64_t poolPages, uint64_t maxPages)
      : protectedMax_(std::max<uint64_t>(1, poolPages * 8 / 10)), lists_(maxPages), offered_(maxPages) {}
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
    size_t found = 0;
    for (int list : {kProbation, kProtected}) {
      for (uint64_t pid = lists_.front(list); pid != IdLists::kNil && found < n; pid = lists_.next(pid)) {
        if (offered_[pid]) continue;
        offered_[pid] = 1;
        out[found++] = pid;
      }
    }
    return found;
  }
  void evicted(uint64_t pid) override { drop(pid); }
  void removed(uint64_t pid) override { drop(pid); }
  void kept(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    reference(pid);
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return lists_.size(kProbation) + lists_.size(kProtected);
  }
  uint64_t memoryBytes() const override { return IdLists::bytesFor(size()) + size(); }

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
  void drop(uint64_t pid) {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    if (lists_.listOf(pid) != 0) lists_.remove(pid);
  }

  const uint64_t protectedMax_;
  mutable SpinMutex mu_;
  IdLists lists_;
  PerPage<uint8_t> offered_;
};

}  // namespace

std::unique_ptr<Policy> makeSlruPolicy(uint64_t poolPages, uint64_t maxPages) {
  return std::make_unique<SlruPolicy>(poolPages, maxPages);
}

}  // namespace vmstore::internal
