// KeyLocks: one tree's set of locks that its keys map to by hash, so that changes of one
// key are applied and logged in the same order (the log's order is the order recovery
// replays).
//
// Contract
// - Each tree has its own KeyLocks (a key of one tree never waits for a lock of another
//   tree's key: a thread holding a view of one tree may write to another, value_view.hpp).
// - of(key) is the lock of that key; different keys of the tree may share one. Hold it
//   across applying a change and appending its log record, and no longer than the write.
// - A change of several keys (a batch, over one or more trees) holds all their locks:
//   a KeySlot names one (its table and number), and Held locks a sorted list of distinct
//   KeySlots in ascending order (so two such changes never wait for each other in a
//   cycle) and unlocks them when it goes. Inside a task (task/scheduler.hpp) a busy lock
//   suspends the task, not its thread.
// - The locks are ByteSpinMutexes (sync/spin_mutex.hpp), one byte each, 64 to a cache
//   line, in an anonymous mapping of their own (os/anonymous_memory.hpp: all zero is all
//   free): 16 KiB of address space a tree, of which a 4 KiB page becomes memory once one
//   of its 4,096 locks is first taken, so an idle tree costs none. One byte rather than a
//   four-byte futex word so that the locks of the trees in use stay in the CPU's caches:
//   with four-byte locks, taking one cost a miss to the shared cache about every time
//   (docs/BENCHMARKS.md, "Stop 50"). Two threads meet on a line only when their keys'
//   numbers share one. Plain mutexes measured no better (docs/BENCHMARKS.md).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string_view>

#include "os/mix64.hpp"
#include "os/anonymous_memory.hpp"
#include "sync/spin_mutex.hpp"

namespace vmstore::internal {

class KeyLocks;

// One lock of one tree's KeyLocks; ordered by table, then number.
struct KeySlot {
  KeyLocks* table = nullptr;
  uint32_t slot = 0;
  friend bool operator==(const KeySlot&, const KeySlot&) = default;
  friend bool operator<(const KeySlot& a, const KeySlot& b) {
    return a.table != b.table ? std::less<KeyLocks*>()(a.table, b.table) : a.slot < b.slot;
  }
};

class KeyLocks {
 public:
  // 16,384: a transaction (vmstore/transaction.hpp) holds its keys' locks to its commit,
  // and one that holds a lock another waits for may be waiting for one of the other's
  // in turn, by chance of the hash. With 4,096 a TPC-C delivery (about 150 keys of the
  // order-line tree) met a new-order's order lines in about one case in three, and in
  // task mode thousands of transactions a run were given up; with 16,384 tens, with
  // 65,536 a few. But every write takes a lock, and a larger table costs cache misses:
  // TPC-C with durability none ran 3% slower with 16,384, 6% with 65,536 (medians of
  // five runs, docs/BENCHMARKS.md, "Stop 46", with four-byte locks: 16,384 one-byte
  // locks take the room 4,096 did then).
  static constexpr size_t kCount = 16384;
  KeyLocks() : area_(kCount * sizeof(ByteSpinMutex)) {}
  ByteSpinMutex& of(std::string_view key) { return locks_[slotOf(key)]; }
  static uint32_t slotOf(std::string_view key) { return static_cast<uint32_t>(hash(key) % kCount); }
  KeySlot slot(std::string_view key) { return {this, slotOf(key)}; }
  ByteSpinMutex& at(uint32_t slot) { return locks_[slot]; }

  // Holds the locks of `slots` (ascending, distinct; the span must outlive the Held).
  class Held {
   public:
    explicit Held(std::span<const KeySlot> slots);
    ~Held() { release(); }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    void release();

   private:
    std::span<const KeySlot> slots_;
    size_t held_ = 0;
  };

 private:
  // Spreads keys over the locks (nothing more is asked of it): the length, then the key
  // 8 bytes at a time (the last 8 read overlapping), then mix64 so that every input bit
  // moves the low bits the lock is chosen by; a few instructions for a short key where
  // std::hash costs about fifty.
  static uint64_t hash(std::string_view key) {
    const char* p = key.data();
    size_t n = key.size();
    uint64_t h = (n + 1) * 0x9E3779B97F4A7C15ull;
    auto mix = [&h](uint64_t w) { h = (h ^ w) * 0x9E3779B97F4A7C15ull; };
    if (n < 8) {
      uint64_t w = 0;
      for (size_t i = 0; i < n; i++) w = (w << 8) | static_cast<uint8_t>(p[i]);
      mix(w);
    } else {
      uint64_t w;
      for (size_t i = 0; i + 8 < n; i += 8) {
        std::memcpy(&w, p + i, 8);
        mix(w);
      }
      std::memcpy(&w, p + n - 8, 8);
      mix(w);
    }
    return mix64(h);
  }

  AnonymousMemory area_;  // zero: free locks
  ByteSpinMutex* const locks_ = reinterpret_cast<ByteSpinMutex*>(area_.base());
};

}  // namespace vmstore::internal
