// Counters: per-thread event counters of a buffer manager (LeanStore style).
//
// Contract
// - add() increments the calling thread's own cache-line-sized slot with plain relaxed
//   loads and stores (no locked instruction on the hot path); sum() adds up the slots.
// - Slots are never shared by two live threads (issue 7 item 7): a thread's slot is its
//   threadIndex() (sync/thread_index.hpp). The first kInline slots live in the object;
//   more are allocated in blocks of kBlock as threads appear, up to kMaxThreads live
//   threads. Beyond that (more than 4,096 threads at once) threads share slots
//   modulo kMaxThreads and an increment can be lost, acceptable for statistics.
// - A slot's counts stay when its thread exits; a later thread with the same index
//   counts on from there, so sums never go back.
#pragma once

#include <atomic>
#include <cstdint>

#include "sync/thread_index.hpp"

namespace vmstore::internal {

// kProviderEvictions: the part of kEvictions the page provider did (the rest was inline);
// kProviderBatches: the provider's batches that evicted something.
// kReadAheadPages: the part of kMisses read ahead of need (BufferManager::readAhead).
// kHugePageBytes: bytes of large variable-size pages backed by huge pages when filled.
// kVictimNanos: time spent choosing eviction candidates (clock sweep or the policy's
// victims()); kVictimsKept: candidates that could not be evicted (in use).
enum class Counter : int {
  kHits,
  kMisses,
  kEvictions,
  kPagesWritten,
  kRestarts,
  kReleaseCalls,
  kProviderEvictions,
  kProviderBatches,
  kReadAheadPages,
  kHugePageBytes,
  kVictimNanos,
  kVictimsKept,
  kCount
};

class Counters {
 public:
  static constexpr unsigned kInline = 64;
  static constexpr unsigned kBlock = 64;
  static constexpr unsigned kMaxThreads = 4096;

  Counters() = default;
  ~Counters();
  Counters(const Counters&) = delete;
  Counters& operator=(const Counters&) = delete;

  void add(Counter c, uint64_t n = 1) {
    auto& v = slotOf(threadIndex()).v[static_cast<int>(c)];
    v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t sum(Counter c) const;

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> v[static_cast<int>(Counter::kCount)] = {};
  };
  struct Block {
    Slot slots[kBlock];
  };
  static constexpr unsigned kBlocks = (kMaxThreads - kInline) / kBlock;

  Slot& slotOf(unsigned index) {
    if (index < kInline) [[likely]] return inline_[index];
    return slotBeyondInline(index % kMaxThreads);
  }
  Slot& slotBeyondInline(unsigned index);

  Slot inline_[kInline];
  std::atomic<Block*> blocks_[kBlocks] = {};
};

}  // namespace vmstore::internal
