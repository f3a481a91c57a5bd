#include "sync/key_locks.hpp"

#include <cassert>

#include "task/cooperative.hpp"

namespace vmstore::internal {

KeyLocks::Held::Held(std::span<const KeySlot> slots) : slots_(slots) {
  try {
    for (const KeySlot& s : slots_) {
      assert(held_ == 0 || slots_[held_ - 1] < s);
      task::lock(s.table->at(s.slot)).release();  // held until release()
      held_++;
    }
  } catch (...) {
    release();
    throw;
  }
}

void KeyLocks::Held::release() {
  while (held_ > 0) {
    const KeySlot& s = slots_[--held_];
    s.table->at(s.slot).unlock();
  }
}

}  // namespace vmstore::internal
