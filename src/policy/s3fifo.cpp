// s3fifo: S3-FIFO (Yang et al., SOSP 2023). Three FIFO queues: a small one S (10% of the
// pool) that new pages enter, a main one M, and a ghost queue G of ids evicted from S
// (as many ids as the pool has pages). Each page has a frequency of 0..3, raised on a hit
// by one relaxed atomic store (no lock). Eviction takes from S while S holds more than its
// share, else from M. From S's old end, a page hit since it entered moves to M (most
// one-hit wonders never do); one that was not is offered, and if evicted its id goes to
// G. From M's old end, a page with a frequency above 0 goes back to M's new end with its
// frequency decremented; one at 0 is offered. A page admitted while its id is in G goes
// straight to M.
#include <algorithm>
#include <atomic>
#include <mutex>

#include "policy/policies.hpp"
#include "policy/policy_base.hpp"

namespace vmstore::internal {

namespace {

constexpr int kS = 1;
constexpr int kM = 2;
constexpr int kG = 3;
constexpr uint8_t kMaxFreq = 3;
constexpr uint64_t kSlack = 64;  // ghosts beyond G's bound kept until the next admit (a batch)

class S3FifoPolicy final : public ListPolicy {
 public:
  S3FifoPolicy(uint64_t poolPages, uint64_t maxPages)
      : ListPolicy(maxPages), smallMax_(std::max<uint64_t>(1, poolPages / 10)),
        ghostMax_(std::max<uint64_t>(1, poolPages)), freq_(maxPages) {}
  const char* name() const override { return "s3fifo"; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    int list = lists_.listOf(pid);
    if (list == kS || list == kM) return;
    offered_[pid] = 0;
    freq_[pid].store(0, std::memory_order_relaxed);
    if (list == kG) {
      lists_.remove(pid);
      lists_.pushBack(kM, pid);
    } else {
      lists_.pushBack(kS, pid);
    }
    while (lists_.size(kG) > ghostMax_) lists_.popFront(kG);
  }
  void hit(uint64_t pid) noexcept override {
    if (pid >= freq_.count()) return;
    uint8_t f = freq_[pid].load(std::memory_order_relaxed);
    if (f < kMaxFreq) freq_[pid].store(static_cast<uint8_t>(f + 1), std::memory_order_relaxed);
  }
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    size_t found = 0;
    // Bounded work: every page is looked at a few times at most (M's reinsertions
    // decrement frequencies, so a page returns to M's old end at most kMaxFreq times).
    uint64_t budget = 2 * (kMaxFreq + 1) * (lists_.size(kS) + lists_.size(kM)) + 8;
    uint64_t sOffered = 0;
    uint64_t sCursor = lists_.front(kS);
    uint64_t mCursor = lists_.front(kM);
    bool mDone = false;  // M has nothing left to offer in this call: S must give
    while (found < n && budget-- > 0) {
      bool fromS = lists_.size(kS) > smallMax_ + sOffered || lists_.size(kM) == 0 || mDone;
      if (fromS) {
        while (sCursor != IdLists::kNil && offered_[sCursor]) sCursor = lists_.next(sCursor);
        if (sCursor == IdLists::kNil) {
          if (lists_.size(kM) == 0 || mDone) break;
          fromS = false;
        } else {
          uint64_t pid = sCursor;
          sCursor = lists_.next(pid);
          if (freq_[pid].load(std::memory_order_relaxed) > 0) {
            freq_[pid].store(0, std::memory_order_relaxed);
            lists_.remove(pid);
            lists_.pushBack(kM, pid);
          } else {
            offered_[pid] = 1;
            out[found++] = pid;
            sOffered++;
          }
          continue;
        }
      }
      // (M may have been empty when this call began, or the cursor ran off its end.)
      if (mCursor == IdLists::kNil) mCursor = lists_.front(kM);
      while (mCursor != IdLists::kNil && offered_[mCursor]) mCursor = lists_.next(mCursor);
      if (mCursor == IdLists::kNil) {
        // Every page of M is offered already (S is within its share counted in pages
        // ids, but a pool of large values holds few ids): go on with S.
        mDone = true;
        continue;
      }
      uint64_t pid = mCursor;
      mCursor = lists_.next(pid);
      uint8_t f = freq_[pid].load(std::memory_order_relaxed);
      if (f > 0) {
        freq_[pid].store(static_cast<uint8_t>(f - 1), std::memory_order_relaxed);
        lists_.moveToBack(kM, pid);
        if (mCursor == IdLists::kNil) mCursor = lists_.front(kM);
      } else {
        offered_[pid] = 1;
        out[found++] = pid;
      }
    }
    return found;
  }
  void evicted(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    int list = lists_.listOf(pid);
    if (list == kS) {
      lists_.remove(pid);
      lists_.pushBack(kG, pid);
      // Trimmed at the next admit, after its ghost check (the engine evicts first).
      while (lists_.size(kG) > ghostMax_ + kSlack) lists_.popFront(kG);
    } else if (list == kM) {
      lists_.remove(pid);
    }
  }
  void kept(uint64_t pid) override {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    hit(pid);
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return lists_.size(kS) + lists_.size(kM);
  }
  uint64_t memoryBytes() const override {
    std::lock_guard g(mu_);
    return bytesFor(lists_.size(kS) + lists_.size(kM) + lists_.size(kG), 1);
  }

 private:
  const uint64_t smallMax_;
  const uint64_t ghostMax_;
  PerPage<std::atomic<uint8_t>> freq_;
};

}  // namespace

std::unique_ptr<Policy> makeS3FifoPolicy(uint64_t poolPages, uint64_t maxPages) {
  return std::make_unique<S3FifoPolicy>(poolPages, maxPages);
}

}  // namespace vmstore::internal
