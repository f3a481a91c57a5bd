// ResidentPages: the resident set of a buffer manager, either structure (issue 10 item 3):
// the open-addressing hash table sized by the pool (ResidentSet, the paper's) or the
// atomic bitmap over page ids (ResidentBitmap, the student report's). Config
// resident_set=hash|bitmap.
//
// Contract: that of ResidentSet (resident_set.hpp), whichever structure is chosen; the
// choice is fixed at construction. It is touched on misses and evictions only, never on
// a hit, so the switch between the two costs nothing on the hit path.
#pragma once

#include <cstdint>
#include <memory>

#include "buffer/resident_bitmap.hpp"
#include "buffer/resident_set.hpp"

namespace vmstore::internal {

enum class ResidentSetKind { kHash, kBitmap };

class ResidentPages {
 public:
  ResidentPages(ResidentSetKind kind, uint64_t poolPages, uint64_t maxPages) : kind_(kind) {
    if (kind == ResidentSetKind::kHash) {
      hash_ = std::make_unique<ResidentSet>(poolPages);
    } else {
      bitmap_ = std::make_unique<ResidentBitmap>(maxPages);
    }
  }
  ResidentSetKind kind() const { return kind_; }
  void insert(uint64_t pid) { hash_ ? hash_->insert(pid) : bitmap_->insert(pid); }
  bool remove(uint64_t pid) { return hash_ ? hash_->remove(pid) : bitmap_->remove(pid); }
  uint64_t capacity() const { return hash_ ? hash_->capacity() : bitmap_->capacity(); }
  // Bytes the structure takes now (the hash table's slots; the bitmap's words up to its
  // highest id).
  uint64_t memoryBytes() const { return hash_ ? hash_->capacity() * sizeof(uint64_t) : bitmap_->memoryBytes(); }
  template <class Fn>
  void advanceClock(uint64_t count, Fn&& fn) {
    hash_ ? hash_->advanceClock(count, fn) : bitmap_->advanceClock(count, fn);
  }
  template <class Fn>
  void forEach(Fn&& fn) const {
    hash_ ? hash_->forEach(fn) : bitmap_->forEach(fn);
  }

 private:
  ResidentSetKind kind_;
  std::unique_ptr<ResidentSet> hash_;
  std::unique_ptr<ResidentBitmap> bitmap_;
};

}  // namespace vmstore::internal
