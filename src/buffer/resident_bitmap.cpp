#include "buffer/resident_bitmap.hpp"

namespace vmstore::internal {

ResidentBitmap::ResidentBitmap(uint64_t maxPages)
    : area_((maxPages / 64 + 1) * sizeof(uint64_t) / VmArea::kPageSize + 1, 0),
      words_(reinterpret_cast<std::atomic<uint64_t>*>(area_.base())) {}

}  // namespace vmstore::internal
