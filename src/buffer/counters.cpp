#include "buffer/counters.hpp"

namespace vmstore::internal {

int Counters::nextSlot() {
  static std::atomic<int> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) % kSlots;
}

}  // namespace vmstore::internal
