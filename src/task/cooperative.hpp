// Blocking points made task-aware: inside a task (task/scheduler.hpp) they suspend the
// task instead of blocking its thread, because the holder of what it waits for may be
// another task of the same thread, which can only go on once this thread is free.
//
// Contract
// - acquire(lock): lock a std::unique_lock / std::shared_lock (constructed with
//   std::defer_lock). A free lock is taken by one try_lock(), in or outside a task.
//   Otherwise, outside a task: lock(); inside a task: try_lock() until it succeeds,
//   letting the thread's other tasks run between tries.
// - lock(mutex): acquire() of a std::unique_lock of mutex, returned held.
// - pause(): inside a task, lets the thread's other tasks run once; outside, yields the
//   CPU (std::this_thread::yield).
// - waitChange(word, old): returns once word may no longer hold old (a wake-up may be
//   spurious: the caller looks again). Inside a task: Scheduler::waitChange; outside:
//   word.wait(old) (a futex), so whoever changes word must notify it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

#include "task/scheduler.hpp"

namespace vmstore::internal::task {

template <class Lock>
void acquire(Lock& lock) {
  if (lock.try_lock()) [[likely]] return;  // free: no need to know whether this is a task
  Scheduler* s = Scheduler::current();
  if (s == nullptr) {
    lock.lock();
    return;
  }
  while (!lock.try_lock()) s->waiting();
}

template <class Mutex>
std::unique_lock<Mutex> lock(Mutex& mutex) {
  std::unique_lock<Mutex> held(mutex, std::defer_lock);
  acquire(held);
  return held;
}

inline void pause() {
  if (Scheduler* s = Scheduler::current()) {
    s->waiting();
  } else {
    std::this_thread::yield();
  }
}

inline void waitChange(const std::atomic<uint32_t>& word, uint32_t old) {
  if (Scheduler* s = Scheduler::current()) {
    s->waitChange(word, old);
  } else {
    word.wait(old, std::memory_order_acquire);
  }
}

}  // namespace vmstore::internal::task
