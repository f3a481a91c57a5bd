#include "buffer/counters.hpp"

namespace vmstore::internal {

int Counters::threadSlot() {
  static std::atomic<int> next{0};
  thread_local int slot = next.fetch_add(1, std::memory_order_relaxed) % kSlots;
  return slot;
}

}  // namespace vmstore::internal
