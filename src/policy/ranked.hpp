// rankedVictims: the shared victim choice of the policies that rank every resident page by
// a key (LRU-2: the time of the second-to-last reference; LFU-DA: count plus inflation):
// the n not-yet-offered pages with the smallest keys, in order, chosen with one pass of
// nth_element over a snapshot of the keys (O(resident pages) per batch of victims, which
// is what the thesis calls these policies' slow selection, §1.3.5).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "policy/dense_set.hpp"
#include "policy/per_page.hpp"

namespace vmstore::internal {

template <class KeyOf>
size_t rankedVictims(const DenseSet& resident, PerPage<uint8_t>& offered, size_t n, uint64_t* out,
                     std::vector<std::pair<uint64_t, uint64_t>>& scratch, KeyOf&& keyOf) {
  scratch.clear();
  for (uint64_t i = 0; i < resident.size(); i++) {
    uint64_t pid = resident.at(i);
    if (!offered[pid]) scratch.emplace_back(keyOf(pid), pid);
  }
  size_t k = std::min(n, scratch.size());
  std::nth_element(scratch.begin(), scratch.begin() + static_cast<long>(k), scratch.end());
  std::sort(scratch.begin(), scratch.begin() + static_cast<long>(k));
  for (size_t i = 0; i < k; i++) {
    out[i] = scratch[i].second;
    offered[out[i]] = 1;
  }
  return k;
}

}  // namespace vmstore::internal
