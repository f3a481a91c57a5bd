// Futex waits and wakes on a 32-bit word of this process (FUTEX_*_PRIVATE), for the
// waits std::atomic::wait cannot express: a word inside a wider one, and a wait with a
// timeout.
//
// Contract
// - futexWait(word, expect) sleeps while *word holds expect, until a futexWake on the
//   same word, a signal, or (timeout > 0) timeout has passed; it returns at once when
//   the word no longer holds expect. Returns may be spurious: callers re-check their
//   condition in a loop.
// - futexWake(word) wakes every thread sleeping on word.
#pragma once
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>

namespace vmstore::internal {

inline void futexWait(const uint32_t* word, uint32_t expect,
                      std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero()) {
  timespec ts{};
  const timespec* limit = nullptr;
  if (timeout.count() > 0) {
    ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
    limit = &ts;  // FUTEX_WAIT: a relative time
  }
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expect, limit, nullptr, 0);
}

inline void futexWake(const uint32_t* word) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

// The same on a std::atomic<uint32_t> (one 32-bit word).
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);
inline void futexWait(const std::atomic<uint32_t>& word, uint32_t expect,
                      std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero()) {
  futexWait(reinterpret_cast<const uint32_t*>(&word), expect, timeout);
}
inline void futexWake(const std::atomic<uint32_t>& word) { futexWake(reinterpret_cast<const uint32_t*>(&word)); }

}  // namespace vmstore::internal
