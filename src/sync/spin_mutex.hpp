// SpinMutex: a mutex for critical sections of a few hundred nanoseconds (the log's
// append), which spins briefly before it sleeps.
//
// Contract
// - lock()/unlock()/try_lock() as std::mutex (BasicLockable, usable with lock_guard).
// - A waiter spins (with a pause instruction) up to kSpins times, then sleeps on the
//   word (a futex through std::atomic::wait) until an unlock wakes it. pthread's default
//   mutex sleeps at once, which on a short, hot section costs a context switch per
//   hand-over.
// - tryLockSpinning(): try_lock, spinning as a waiter does (kSpins times) before it
//   gives up; never sleeps.
// - Not fair, not recursive. All zero when free: a table of them may live in zeroed
//   memory without being constructed (sync/key_locks.hpp).
// - SpinMutex is four bytes (a futex word). ByteSpinMutex is one byte, for tables of
//   many locks that should stay in the CPU's caches (sync/key_locks.hpp); its sleepers
//   wait through std::atomic<uint8_t>::wait, which the C++ library maps onto a futex of
//   its own, shared by the bytes that hash alike (a wake-up may be spurious; the waiter
//   looks again).
#pragma once

#include <atomic>
#include <cstdint>

namespace vmstore::internal {

template <class Word>
class BasicSpinMutex {
 public:
  void lock() {
    if (try_lock()) [[likely]] return;
    lockSlow();
  }
  bool try_lock() {
    Word free = kFree;
    return word_.compare_exchange_strong(free, kLocked, std::memory_order_acquire, std::memory_order_relaxed);
  }
  bool tryLockSpinning() {
    for (int i = 0; i < kSpins; i++) {
      if (word_.load(std::memory_order_relaxed) == kFree && try_lock()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    return false;
  }
  void unlock() {
    if (word_.exchange(kFree, std::memory_order_release) == kContended) word_.notify_one();
  }

 private:
  static constexpr Word kFree = 0;
  static constexpr Word kLocked = 1;     // held, nobody asleep
  static constexpr Word kContended = 2;  // held, someone may sleep
  static constexpr int kSpins = 200;

  void lockSlow() {
    if (tryLockSpinning()) return;
    // Mark it contended; whoever finds it free takes it contended (others may sleep).
    while (word_.exchange(kContended, std::memory_order_acquire) != kFree) {
      word_.wait(kContended, std::memory_order_relaxed);
    }
  }

  std::atomic<Word> word_{kFree};
};

using SpinMutex = BasicSpinMutex<uint32_t>;
using ByteSpinMutex = BasicSpinMutex<uint8_t>;
static_assert(sizeof(SpinMutex) == 4 && sizeof(ByteSpinMutex) == 1);

}  // namespace vmstore::internal
