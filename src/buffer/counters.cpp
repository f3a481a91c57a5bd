#include "buffer/counters.hpp"

namespace vmstore::internal {

Counters::~Counters() {
  for (auto& b : blocks_) delete b.load(std::memory_order_relaxed);
}

Counters::Slot& Counters::slotBeyondInline(unsigned index) {
  if (index < kInline) return inline_[index];
  const unsigned k = (index - kInline) / kBlock;
  Block* b = blocks_[k].load(std::memory_order_acquire);
  if (b == nullptr) {
    Block* fresh = new Block;
    if (blocks_[k].compare_exchange_strong(b, fresh, std::memory_order_acq_rel)) {
      b = fresh;
    } else {
      delete fresh;  // another thread of this block installed one first (now in b)
    }
  }
  return b->slots[(index - kInline) % kBlock];
}

uint64_t Counters::sum(Counter c) const {
  const int i = static_cast<int>(c);
  uint64_t s = 0;
  for (const Slot& slot : inline_) s += slot.v[i].load(std::memory_order_relaxed);
  for (const auto& block : blocks_) {
    const Block* b = block.load(std::memory_order_acquire);
    if (b == nullptr) continue;
    for (const Slot& slot : b->slots) s += slot.v[i].load(std::memory_order_relaxed);
  }
  return s;
}

}  // namespace vmstore::internal
