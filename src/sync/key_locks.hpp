// KeyLocks: a fixed set of mutexes a key maps to by hash, so that changes of one key are
// applied and logged in the same order (the log's order is the order recovery replays).
//
// Contract
// - of(tree, key) is the mutex of that key of that tree; different keys may share one.
//   Hold it across applying a change and appending its log record, nothing longer.
// - A change of several keys (a batch) holds all their mutexes: slotOf() numbers them,
//   and Held locks a sorted list of distinct numbers in ascending order (so two such
//   changes never wait for each other in a cycle) and unlocks them when it goes. Inside
//   a task (task/scheduler.hpp) a busy mutex suspends the task, not its thread.
// - Each mutex sits on its own cache line. Plain mutexes: spinning ones measured no
//   better at 2 threads and worse at 32 (docs/BENCHMARKS.md).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string_view>

#include "os/mix64.hpp"

namespace vmstore::internal {

class KeyLocks {
 public:
  // 4,096 (256 KiB): a batch of 30 keys beside another of 30 shares a mutex with it by
  // chance in about one case of five at 1,024, one of twenty at this size.
  static constexpr size_t kCount = 4096;
  std::mutex& of(const void* tree, std::string_view key) { return locks_[slotOf(tree, key)].m; }
  static uint32_t slotOf(const void* tree, std::string_view key) {
    return static_cast<uint32_t>(hash(tree, key) % kCount);
  }
  std::mutex& at(uint32_t slot) { return locks_[slot].m; }

  // Holds the mutexes of `slots` (ascending, distinct; the span must outlive the Held).
  class Held {
   public:
    Held(KeyLocks& locks, std::span<const uint32_t> slots);
    ~Held() { release(); }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    void release();

   private:
    KeyLocks& locks_;
    std::span<const uint32_t> slots_;
    size_t held_ = 0;
  };

 private:
  // Spreads keys over the mutexes (nothing more is asked of it): the tree and the length,
  // then the key 8 bytes at a time (the last 8 read overlapping), then mix64 so that
  // every input bit moves the low bits the mutex is chosen by; a few instructions for a
  // short key where std::hash costs about fifty.
  static uint64_t hash(const void* tree, std::string_view key) {
    const char* p = key.data();
    size_t n = key.size();
    uint64_t h = (reinterpret_cast<uintptr_t>(tree) ^ n) * 0x9E3779B97F4A7C15ull;
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

  struct alignas(64) Slot {
    std::mutex m;
  };
  std::array<Slot, kCount> locks_;
};

}  // namespace vmstore::internal
