#include "sync/writer_gate.hpp"

#include <chrono>
#include <thread>

#include "task/scheduler.hpp"

namespace vmstore::internal {

void WriterGate::waitShared() {
  do {
    if (task::Scheduler* s = task::Scheduler::current()) {
      s->waiting();
    } else {
      exclusive_.wait(1, std::memory_order_acquire);
    }
  } while (!try_lock_shared());
}

bool WriterGate::try_lock() {
  if (!raise()) return false;
  if (!sharedHeld()) return true;
  unlock();  // shared holders remain: give up at once
  return false;
}

void WriterGate::lock() {
  task::Scheduler* s = task::Scheduler::current();
  for (;;) {
    while (!raise()) {  // another exclusive holder: wait for it to go
      if (s != nullptr) {
        s->waiting();
      } else {
        exclusive_.wait(1, std::memory_order_acquire);
      }
    }
    // New shared holders now wait; those inside finish their writes.
    const auto until = std::chrono::steady_clock::now() + kRaisedAtMost;
    while (sharedHeld() && std::chrono::steady_clock::now() < until) {
      if (s != nullptr) {
        s->waiting();
      } else {
        std::this_thread::yield();
      }
    }
    if (!sharedHeld()) return;
    // A shared holder is still inside: it may be waiting for a thread that needs the
    // gate shared to go on (a writer waiting for a page a reader holds, whose thread
    // writes next). Let shared holders in for a while, then raise the flag again.
    unlock();
    if (s != nullptr) {
      s->yield();
    } else {
      std::this_thread::sleep_for(kLoweredFor);
    }
  }
}

void WriterGate::unlock() {
  exclusive_.store(0, std::memory_order_seq_cst);
  exclusive_.notify_all();
}

}  // namespace vmstore::internal
