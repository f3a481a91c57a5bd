#include "sync/writer_gate.hpp"

#include <thread>

#include "sync/thread_index.hpp"
#include "task/scheduler.hpp"

namespace vmstore::internal {

std::atomic<int64_t>& WriterGate::mySlot() { return slots_[threadIndex() % kSlots].n; }

bool WriterGate::sharedHeld() const {
  int64_t sum = 0;
  for (const Slot& s : slots_) sum += s.n.load(std::memory_order_seq_cst);
  return sum != 0;
}

bool WriterGate::try_lock_shared() {
  std::atomic<int64_t>& slot = mySlot();
  // The add comes before the flag's load, and an exclusive holder raises the flag before
  // it sums the slots (both sequentially consistent): one of them sees the other.
  slot.fetch_add(1, std::memory_order_seq_cst);
  if (exclusive_.load(std::memory_order_seq_cst) == 0) [[likely]] return true;
  slot.fetch_sub(1, std::memory_order_seq_cst);
  return false;
}

void WriterGate::lock_shared() {
  while (!try_lock_shared()) {
    if (task::Scheduler* s = task::Scheduler::current()) {
      s->waiting();
    } else {
      exclusive_.wait(1, std::memory_order_acquire);
    }
  }
}

void WriterGate::unlock_shared() { mySlot().fetch_sub(1, std::memory_order_release); }

bool WriterGate::try_lock() {
  if (!raise()) return false;
  if (!sharedHeld()) return true;
  unlock();  // shared holders remain: give up at once
  return false;
}

void WriterGate::lock() {
  task::Scheduler* s = task::Scheduler::current();
  while (!raise()) {  // another exclusive holder: wait for it to go
    if (s != nullptr) {
      s->waiting();
    } else {
      exclusive_.wait(1, std::memory_order_acquire);
    }
  }
  // New shared holders now wait; those inside finish their writes.
  while (sharedHeld()) {
    if (s != nullptr) {
      s->waiting();
    } else {
      std::this_thread::yield();
    }
  }
}

void WriterGate::unlock() {
  exclusive_.store(0, std::memory_order_seq_cst);
  exclusive_.notify_all();
}

}  // namespace vmstore::internal
