#include "sync/page_state.hpp"

#include <thread>

#include "sync/futex.hpp"
#include "task/scheduler.hpp"

namespace vmstore::internal {

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the futex waits on the upper half of the state word");

// The upper 32 bits hold the lock state and the parked bit: every release changes them.
uint32_t* upperHalf(std::atomic<uint64_t>* word) {
  return reinterpret_cast<uint32_t*>(reinterpret_cast<char*>(word) + 4);
}

inline void cpuRelax() { __builtin_ia32_pause(); }

}  // namespace

void PageState::unlockS() {
  uint64_t w = word_.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t s = stateOf(w);
    uint64_t desired = make(s - 1, versionOf(w));
    bool wake = false;
    if (s - 1 == 0 && isParked(w)) {
      wake = true;  // last shared holder: a writer may be waiting
    } else {
      desired |= (w & kParkedBit);
    }
    if (word_.compare_exchange_weak(w, desired, std::memory_order_release)) {
      if (wake) wakeAll();
      return;
    }
  }
}

void PageState::waitChange(uint64_t observed) {
  // Inside a task the holder may be another task of this thread (suspended in a read):
  // let it run instead of blocking the thread.
  if (task::Scheduler* s = task::Scheduler::current()) {
    s->waiting();
    return;
  }
  // Short spin: most locks are held for well under a microsecond.
  for (int i = 0; i < 128; i++) {
    if (word_.load(std::memory_order_relaxed) != observed) return;
    cpuRelax();
  }
  for (int i = 0; i < 4; i++) {
    std::this_thread::yield();
    if (word_.load(std::memory_order_relaxed) != observed) return;
  }
  // Park: announce ourselves, then sleep while the upper half still shows it.
  uint64_t parked = observed | kParkedBit;
  if (!isParked(observed)) {
    if (!word_.compare_exchange_strong(observed, parked, std::memory_order_relaxed)) return;
  }
  uint32_t expect = static_cast<uint32_t>(parked >> 32);
  futexWait(upperHalf(&word_), expect);
}

void PageState::wakeAll() {
  futexWake(upperHalf(&word_));
}

}  // namespace vmstore::internal
