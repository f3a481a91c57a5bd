// PerPage<T>: one T per page id, for a policy's per-page state (counts, timestamps,
// list links), zero-initialized and committed lazily.
//
// Contract
// - Holds ids 0..count-1; operator[] outside that range is undefined (callers check
//   against count() where an id may come from a racing caller).
// - The array is one anonymous MAP_NORESERVE area (os/vm_area.hpp): memory is committed
//   only for the parts of the id range ever written, as the page states are, so sizing it
//   by storage (max_size) costs address space, not memory.
// - T must be trivially copyable and valid when all bytes are zero (std::atomic<integer>
//   and plain integers are).
#pragma once

#include <cstdint>
#include <type_traits>

#include "os/vm_area.hpp"

namespace vmstore::internal {

template <class T>
class PerPage {
  static_assert(std::is_trivially_destructible_v<T>);

 public:
  explicit PerPage(uint64_t count)
      : count_(count), area_((count * sizeof(T) + VmArea::kPageSize - 1) / VmArea::kPageSize + 1, 0),
        items_(reinterpret_cast<T*>(area_.base())) {}
  T& operator[](uint64_t pid) { return items_[pid]; }
  const T& operator[](uint64_t pid) const { return items_[pid]; }
  uint64_t count() const { return count_; }
  // Address space reserved; memory actually used is at most this.
  uint64_t reservedBytes() const { return count_ * sizeof(T); }

 private:
  uint64_t count_;
  VmArea area_;
  T* items_;
};

}  // namespace vmstore::internal
