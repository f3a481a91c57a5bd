#include "sync/key_locks.hpp"

#include <cassert>

#include "task/cooperative.hpp"

namespace vmstore::internal {

KeyLocks::Held::Held(KeyLocks& locks, std::span<const uint32_t> slots) : locks_(locks), slots_(slots) {
  try {
    for (uint32_t slot : slots_) {
      assert(held_ == 0 || slot > slots_[held_ - 1]);
      task::lock(locks_.at(slot)).release();  // held until release()
      held_++;
    }
  } catch (...) {
    release();
    throw;
  }
}

void KeyLocks::Held::release() {
  while (held_ > 0) locks_.at(slots_[--held_]).unlock();
}

}  // namespace vmstore::internal
