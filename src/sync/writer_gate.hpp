// WriterGate: a readers-writer lock whose shared side touches only the calling thread's
// own cache line, for a lock that every write takes shared and almost nothing takes
// exclusively (the database's writer gate: puts, deletes and batches shared; a tree
// drop, check() and a checkpoint's cut exclusive).
//
// Contract
// - Meets the standard SharedMutex requirements (lock, try_lock, unlock, lock_shared,
//   try_lock_shared, unlock_shared), so std::shared_lock / std::unique_lock and
//   task::acquire (task/cooperative.hpp) work with it. Not recursive: a thread that holds
//   it shared must not take it exclusively (that waits for itself).
// - Shared: one locked add on a per-thread slot and one load of a flag that changes only
//   when an exclusive holder comes or goes; no cache line is written by two threads.
//   Many threads hold it shared at once.
// - Exclusive: one holder at a time. A would-be holder first raises the flag (new shared
//   holders then wait), then waits until every slot is empty, so a stream of shared
//   holders cannot starve it. If the slots are not empty within kRaisedAtMost, it lowers
//   the flag for kLoweredFor and tries again: a shared holder may be waiting for another
//   thread that needs the gate shared before it can go on (a writer waiting for a page
//   that a reader holds, the reader's thread writing to another tree next), and a flag
//   kept up would deadlock them. try_lock() fails at once unless the gate is free; lock()
//   waits: outside a task on a futex (std::atomic::wait) for the flag and by yielding
//   while shared holders finish; inside a task (task/scheduler.hpp) by letting the
//   thread's other tasks run, since a shared holder may be one of them. So lock() and
//   lock_shared() are task-aware themselves: call them rather than task::acquire, whose
//   try_lock loop would give up the flag between tries and could be starved.
// - Shared waiters wait the same way (a futex outside a task, the thread's other tasks
//   inside one). The exclusive side reads every slot (64 lines): it is for rare callers.
// - unlock_shared() may run on another thread than lock_shared() did (the slot's count
//   then goes negative on one and stays positive on the other; only the sum counts).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "sync/per_thread_count.hpp"

namespace vmstore::internal {

class WriterGate {
 public:
  WriterGate() = default;
  WriterGate(const WriterGate&) = delete;
  WriterGate& operator=(const WriterGate&) = delete;

  // The shared side's fast path is inline: every write takes it.
  void lock_shared() {
    if (!try_lock_shared()) [[unlikely]] waitShared();
  }
  bool try_lock_shared() {
    // The add comes before the flag's load, and an exclusive holder raises the flag before
    // it sums the slots (both sequentially consistent): one of them sees the other.
    shared_.add(1);
    if (exclusive_.load(std::memory_order_seq_cst) == 0) [[likely]] return true;
    shared_.add(-1);
    return false;
  }
  void unlock_shared() { shared_.add(-1, std::memory_order_release); }

  void lock();
  bool try_lock();
  void unlock();

 private:
  static constexpr std::chrono::microseconds kRaisedAtMost{2000};
  static constexpr std::chrono::microseconds kLoweredFor{200};
  bool sharedHeld() const { return shared_.sum() != 0; }
  // lock_shared() once the gate was found raised: waits (the task, or the thread) until
  // it is lowered, and takes it.
  void waitShared();
  // Raises the flag if it is down (true), else leaves it (false).
  bool raise() {
    uint32_t down = 0;
    return exclusive_.compare_exchange_strong(down, 1, std::memory_order_seq_cst);
  }

  PerThreadCount shared_;  // shared holders
  // 1 while an exclusive holder holds or waits for the gate; on a line of its own, read
  // by every shared acquire and written only by exclusive ones.
  alignas(64) std::atomic<uint32_t> exclusive_{0};
  char pad_[64 - sizeof(std::atomic<uint32_t>)];
};

}  // namespace vmstore::internal
