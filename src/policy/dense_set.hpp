// DenseSet: the resident page ids as a dense array with O(1) insert, remove and uniform
// random choice (for random replacement, LeanStore's random cooling, and the policies
// that scan every resident page to choose: LRU-2, LFU-DA).
//
// Contract: insert needs pid absent, remove needs it present (contains() says); at(i)
// for i < size() in no particular order. Not thread-safe: the owning policy locks.
#pragma once

#include <cstdint>
#include <vector>

#include "policy/per_page.hpp"

namespace vmstore::internal {

class DenseSet {
 public:
  explicit DenseSet(uint64_t maxPages) : index_(maxPages) {}
  bool contains(uint64_t pid) const { return index_[pid] != 0; }
  void insert(uint64_t pid) {
    items_.push_back(pid);
    index_[pid] = items_.size();
  }
  void remove(uint64_t pid) {
    uint64_t i = index_[pid] - 1;
    uint64_t last = items_.back();
    items_[i] = last;
    index_[last] = i + 1;
    items_.pop_back();
    index_[pid] = 0;
  }
  uint64_t size() const { return items_.size(); }
  uint64_t at(uint64_t i) const { return items_[i]; }
  uint64_t memoryBytes() const { return items_.capacity() * sizeof(uint64_t) + items_.size() * sizeof(uint64_t); }

 private:
  std::vector<uint64_t> items_;
  PerPage<uint64_t> index_;  // position + 1; 0: absent
};

}  // namespace vmstore::internal
