// CallGate: lets close() wait for the calls in flight on a handle and refuse later ones.
//
// Contract
// - enter() returns false once close() has begun; otherwise the caller is "in flight"
//   until it calls leave() (use CallGate::Pass, the RAII form).
// - close() marks the gate closed, then waits until no call is in flight. After it
//   returns, every enter() returns false. Calls may come from any number of threads.
// - The hot path is one locked add on a per-thread slot (no shared cache line) and one
//   load: entering and closing are ordered by sequentially consistent operations
//   (a caller's add before its load of `closed`; close's store before its sums).
#pragma once

#include <atomic>
#include <thread>

#include "sync/per_thread_count.hpp"

namespace vmstore::internal {

class CallGate {
 public:
  [[gnu::always_inline]] bool enter() {
    inFlight_.add(1);
    if (closed_.load(std::memory_order_seq_cst)) {
      inFlight_.add(-1);
      return false;
    }
    return true;
  }
  void leave() { inFlight_.add(-1); }

  void close() {
    closed_.store(true, std::memory_order_seq_cst);
    while (inFlight_.sum() != 0) std::this_thread::yield();
  }
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  class Pass {
   public:
    [[gnu::always_inline]] explicit Pass(CallGate& gate) : gate_(gate), entered_(gate.enter()) {}
    ~Pass() {
      if (entered_) gate_.leave();
    }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    explicit operator bool() const { return entered_; }

   private:
    CallGate& gate_;
    bool entered_;
  };

 private:
  PerThreadCount inFlight_;
  std::atomic<bool> closed_{false};
};

}  // namespace vmstore::internal
