// ResidentBitmap: the ids of the pages in memory as one bit per page id (student report
// 004: an atomic bitmap instead of a hash table), for the clock to walk.
//
// Contract (the same as ResidentSet's, resident_set.hpp, so either can serve)
// - insert(pid) / remove(pid): one atomic fetch_or / fetch_and on the pid's word; a pid
//   is inserted at most once before it is removed (the caller holds the page's lock).
// - The bitmap covers ids below maxPages; its memory is committed lazily (a VmArea), so
//   it costs maxPages / 8 bytes of address space and about (highest id used) / 8 bytes
//   of memory, against 16 to 32 bytes per pool page for the hash table: smaller while
//   the data is under about 128x the pool.
// - The clock hand walks ids 0..bound()-1, bound() being one past the highest id ever
//   inserted (rounded up to a word); capacity() is bound(), the number of positions one
//   full turn visits. Several threads may advance the hand at once.
// - Unlike the hash table, the walk visits ids in order, so the clock's sweep is also a
//   sweep through the file.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>

#include "os/vm_area.hpp"

namespace vmstore::internal {

class ResidentBitmap {
 public:
  explicit ResidentBitmap(uint64_t maxPages);
  void insert(uint64_t pid) {
    words_[pid / 64].fetch_or(1ull << (pid % 64), std::memory_order_relaxed);
    uint64_t b = bound_.load(std::memory_order_relaxed);
    uint64_t want = (pid / 64 + 1) * 64;
    while (b < want && !bound_.compare_exchange_weak(b, want, std::memory_order_relaxed)) {
    }
  }
  // False if pid was not in the set.
  bool remove(uint64_t pid) {
    uint64_t bit = 1ull << (pid % 64);
    return words_[pid / 64].fetch_and(~bit, std::memory_order_relaxed) & bit;
  }
  uint64_t capacity() const { return bound_.load(std::memory_order_relaxed); }
  uint64_t memoryBytes() const { return capacity() / 8; }

  // Visits the next `count` id positions (wrapping at capacity()), calling fn(pid) for
  // each resident one.
  template <class Fn>
  void advanceClock(uint64_t count, Fn&& fn) {
    uint64_t bound = capacity();
    if (bound == 0) return;
    uint64_t start = hand_.fetch_add(count, std::memory_order_relaxed) % bound;
    uint64_t end = start + count;
    for (uint64_t pos = start; pos < end;) {
      uint64_t at = pos % bound;
      uint64_t word = words_[at / 64].load(std::memory_order_relaxed) >> (at % 64);
      uint64_t span = std::min<uint64_t>(64 - at % 64, end - pos);
      if (span < 64) word &= (1ull << span) - 1;
      while (word != 0) {
        int i = std::countr_zero(word);
        fn(at + static_cast<uint64_t>(i));
        word &= word - 1;
      }
      pos += span;
    }
  }
  template <class Fn>
  void forEach(Fn&& fn) const {
    uint64_t bound = capacity();
    for (uint64_t w = 0; w < bound / 64; w++) {
      uint64_t word = words_[w].load(std::memory_order_relaxed);
      while (word != 0) {
        fn(w * 64 + static_cast<uint64_t>(std::countr_zero(word)));
        word &= word - 1;
      }
    }
  }

 private:
  VmArea area_;
  std::atomic<uint64_t>* words_;
  std::atomic<uint64_t> bound_{0};
  alignas(64) std::atomic<uint64_t> hand_{0};
};

}  // namespace vmstore::internal
