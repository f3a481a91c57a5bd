// gclock: generalized clock (Effelsberg and Härder, TODS 1984; thesis §1.2.10.1, the
// GCLOCK-V1 "FixFull" variant it evaluated): a usage count per page instead of a bit. A
// page read in starts at F = 25, each hit adds R = 5 (capped at 255), a candidate kept
// because it was in use gets R too, and the hand subtracts S = 1 from each page it passes,
// offering pages it finds at 0. When a turn finds too few, the next takes the least count
// left at once, so a call sweeps a bounded number of turns. Frequency and recency both
// count; the price is a longer sweep per victim. A hit is one relaxed load and store of
// the page's count (no lock).
#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "policy/per_page.hpp"
#include "policy/policies.hpp"
#include "sync/spin_mutex.hpp"

namespace vmstore::internal {

namespace {

constexpr uint8_t kFetch = 25;  // F
constexpr uint8_t kRef = 5;     // R
constexpr uint8_t kMax = 255;
// Turns of the hand per victims() call: one of single steps, one that brings the least
// count to 0, one that offers those pages, and one more for a batch not yet full.
constexpr int kTurns = 4;

class GclockPolicy final : public Policy {
 public:
  GclockPolicy(uint64_t poolPages, uint64_t maxPages) : slotOf_(maxPages), count_(maxPages), offered_(maxPages) {
    ring_.reserve(poolPages);
  }
  const char* name() const override { return "gclock"; }
  void admit(uint64_t pid) override {
    std::lock_guard g(mu_);
    if (slotOf_[pid] != 0) return;
    uint64_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
      ring_[slot] = pid;
    } else {
      slot = ring_.size();
      ring_.push_back(pid);
    }
    slotOf_[pid] = slot + 1;
    count_[pid].store(kFetch, std::memory_order_relaxed);
    offered_[pid] = 0;
    size_++;
  }
  void hit(uint64_t pid) noexcept override {
    if (pid >= count_.count()) return;
    uint8_t c = count_[pid].load(std::memory_order_relaxed);
    count_[pid].store(static_cast<uint8_t>(std::min<unsigned>(kMax, c + kRef)), std::memory_order_relaxed);
  }
  size_t victims(size_t n, uint64_t* out) override {
    std::lock_guard g(mu_);
    size_t found = 0;
    // The hand's first turn takes S = 1 from each count it passes. A turn that finds too
    // few victims is followed by one that takes the smallest count left, all at once: the
    // pages with the least count reach 0 together, as that many turns of single steps
    // would bring them there, but a call costs at most kTurns turns of the ring under the
    // lock, not up to kMax + 1 of them (with hot pages, one call held the lock for
    // hundreds of turns, and every miss's admit waited behind it).
    uint64_t take = 1;
    for (int turn = 0; turn < kTurns && found < n && !ring_.empty(); turn++) {
      unsigned least = kMax;
      for (uint64_t steps = 0, len = ring_.size(); steps < len && found < n; steps++) {
        if (hand_ >= ring_.size()) hand_ = 0;
        uint64_t pid = ring_[hand_++];
        if (pid == kEmpty || offered_[pid]) continue;
        unsigned c = count_[pid].load(std::memory_order_relaxed);
        if (c == 0) {
          offered_[pid] = 1;
          out[found++] = pid;
          continue;
        }
        c = c > take ? c - static_cast<unsigned>(take) : 0;
        count_[pid].store(static_cast<uint8_t>(c), std::memory_order_relaxed);
        least = std::min(least, c);
      }
      take = std::max(1u, least);
    }
    return found;
  }
  void evicted(uint64_t pid) override { drop(pid); }
  void removed(uint64_t pid) override { drop(pid); }
  void kept(uint64_t pid) override {
    {
      std::lock_guard g(mu_);
      offered_[pid] = 0;
    }
    hit(pid);
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return size_;
  }
  uint64_t memoryBytes() const override {
    std::lock_guard g(mu_);
    return (ring_.capacity() + free_.capacity()) * sizeof(uint64_t) + size_ * (sizeof(uint64_t) + 2);
  }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  void drop(uint64_t pid) {
    std::lock_guard g(mu_);
    offered_[pid] = 0;
    uint64_t slot = slotOf_[pid];
    if (slot == 0) return;
    ring_[slot - 1] = kEmpty;
    free_.push_back(slot - 1);
    slotOf_[pid] = 0;
    size_--;
  }

  mutable SpinMutex mu_;
  std::vector<uint64_t> ring_;
  std::vector<uint64_t> free_;
  uint64_t hand_ = 0;
  uint64_t size_ = 0;
  PerPage<uint64_t> slotOf_;  // slot + 1
  PerPage<std::atomic<uint8_t>> count_;
  PerPage<uint8_t> offered_;
};

}  // namespace

std::unique_ptr<Policy> makeGclockPolicy(uint64_t poolPages, uint64_t maxPages) {
  return std::make_unique<GclockPolicy>(poolPages, maxPages);
}

}  // namespace vmstore::internal
