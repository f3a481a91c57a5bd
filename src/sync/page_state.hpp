// PageState: the 64-bit state word of one page (vmcache, paper 000 §3.2-3.3).
//
// Layout, most significant bits first:
//   bits 56..63  lock state: 0 unlocked, 1..252 shared holders, 253 locked (exclusive),
//                254 marked (clock: candidate for eviction), 255 evicted
//   bit  55      parked: at least one thread sleeps on this word (futex) waiting for a
//                release; whoever releases a lock and sees it wakes the sleepers
//   bits 0..54   version: +1 on every exclusive unlock and on eviction, so an optimistic
//                reader that raced with a change or an eviction fails validation
//
// Contract
// - Exclusive access is needed to change a page, read it in, or evict it.
// - A shared-count change or a mark never changes the version: optimistic readers
//   stay valid across them (validate() accepts any state but locked or evicted).
// - Waiters spin briefly and then park on a futex on the upper 32 bits of the word
//   (the paper's parking lot bit; papers/004 measured the gain over spinning).
#pragma once

#include <atomic>
#include <cstdint>

namespace vmstore::internal {

class PageState {
 public:
  static constexpr uint64_t kUnlocked = 0;
  static constexpr uint64_t kMaxShared = 252;
  static constexpr uint64_t kLocked = 253;
  static constexpr uint64_t kMarked = 254;
  static constexpr uint64_t kEvicted = 255;

  static constexpr uint64_t kParkedBit = 1ull << 55;
  static constexpr uint64_t kVersionMask = kParkedBit - 1;

  static constexpr uint64_t stateOf(uint64_t w) { return w >> 56; }
  static constexpr uint64_t versionOf(uint64_t w) { return w & kVersionMask; }
  static constexpr bool isParked(uint64_t w) { return (w & kParkedBit) != 0; }
  static constexpr uint64_t make(uint64_t state, uint64_t version) {
    return (state << 56) | (version & kVersionMask);
  }
  static constexpr uint64_t nextVersion(uint64_t w) { return (versionOf(w) + 1) & kVersionMask; }

  // An optimistic read that began at word `begin` is still valid at word `now`.
  static constexpr bool stillValid(uint64_t begin, uint64_t now) {
    uint64_t s = stateOf(now);
    return versionOf(begin) == versionOf(now) && s != kLocked && s != kEvicted;
  }

  void initEvicted() { word_.store(make(kEvicted, 0), std::memory_order_relaxed); }
  uint64_t load() const { return word_.load(std::memory_order_acquire); }

  // Exclusive lock from an observed word in state unlocked, marked or evicted.
  bool tryLockX(uint64_t observed) {
    uint64_t s = stateOf(observed);
    if (s != kUnlocked && s != kMarked && s != kEvicted) return false;
    uint64_t desired = make(kLocked, versionOf(observed)) | (observed & kParkedBit);
    return word_.compare_exchange_strong(observed, desired, std::memory_order_acquire);
  }
  // Shared lock from an observed word in state unlocked, shared (< max) or marked.
  bool tryLockS(uint64_t observed) {
    uint64_t s = stateOf(observed);
    uint64_t next;
    if (s < kMaxShared) {
      next = s + 1;
    } else if (s == kMarked) {
      next = 1;
    } else {
      return false;
    }
    uint64_t desired = make(next, versionOf(observed)) | (observed & kParkedBit);
    return word_.compare_exchange_strong(observed, desired, std::memory_order_acquire);
  }
  // Shared (held alone) -> exclusive, keeping the version.
  bool tryUpgradeSToX() {
    uint64_t w = word_.load(std::memory_order_relaxed);
    if (stateOf(w) != 1) return false;
    return word_.compare_exchange_strong(w, make(kLocked, versionOf(w)) | (w & kParkedBit),
                                         std::memory_order_acquire);
  }
  // Unlocked -> marked (clock); false if the page was touched meanwhile.
  bool tryMark(uint64_t observed) {
    if (stateOf(observed) != kUnlocked) return false;
    return word_.compare_exchange_strong(observed, make(kMarked, versionOf(observed)) |
                                                       (observed & kParkedBit),
                                         std::memory_order_relaxed);
  }
  // Marked -> unlocked, same version (an access clears the mark).
  void tryUnmark(uint64_t observed) {
    if (stateOf(observed) != kMarked) return;
    word_.compare_exchange_strong(observed, make(kUnlocked, versionOf(observed)) |
                                                (observed & kParkedBit),
                                  std::memory_order_relaxed);
  }

  // Sets the parked bit on an observed word (someone waits for this page); false if
  // the word changed meanwhile.
  bool markWaiting(uint64_t observed) {
    return word_.compare_exchange_strong(observed, observed | kParkedBit, std::memory_order_relaxed);
  }
  void unlockX() { releaseTo(kUnlocked); }
  void unlockXEvicted() { releaseTo(kEvicted); }
  void unlockS();
  // Blocks the caller until the word differs from `observed` (spins, then parks); inside
  // a task (task/scheduler.hpp) it lets the thread's other tasks run once and returns
  // (the caller re-checks).
  void waitChange(uint64_t observed);

 private:
  void releaseTo(uint64_t state) {
    uint64_t old = word_.exchange(make(state, nextVersion(word_.load(std::memory_order_relaxed))),
                                  std::memory_order_release);
    if (isParked(old)) wakeAll();
  }
  void wakeAll();

  std::atomic<uint64_t> word_;
};

static_assert(sizeof(PageState) == 8);

}  // namespace vmstore::internal
