#include "tier/tier_map.hpp"

#include <stdexcept>

namespace vmstore::internal {

namespace {

uint64_t areaPages(uint64_t maxPages) { return (maxPages + VmArea::kPageSize - 1) / VmArea::kPageSize; }

}  // namespace

TierMap::TierMap(const std::vector<TierSpec>& tiers, uint64_t maxPages)
    : specs_(tiers), area_(areaPages(maxPages), 0), tiers_(reinterpret_cast<uint8_t*>(area_.base())) {
  if (tiers.empty() || tiers.size() > kMaxTiers) throw std::invalid_argument("TierMap: 1 to kMaxTiers tiers");
}

}  // namespace vmstore::internal
