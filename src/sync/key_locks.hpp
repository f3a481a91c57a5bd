// KeyLocks: a fixed set of mutexes a key maps to by hash, so that changes of one key are
// applied and logged in the same order (the log's order is the order recovery replays).
//
// Contract
// - of(tree, key) is the mutex of that key of that tree; different keys may share one.
//   Hold it across applying a change and appending its log record, nothing longer.
// - Each mutex sits on its own cache line. Plain mutexes: spinning ones measured no
//   better at 2 threads and worse at 32 (docs/BENCHMARKS.md).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>

namespace vmstore::internal {

class KeyLocks {
 public:
  static constexpr size_t kCount = 1024;
  std::mutex& of(const void* tree, std::string_view key) {
    size_t h = std::hash<std::string_view>{}(key) ^ (reinterpret_cast<uintptr_t>(tree) * 0x9E3779B97F4A7C15ull);
    return locks_[(h ^ (h >> 29)) % kCount].m;
  }

 private:
  struct alignas(64) Slot {
    std::mutex m;
  };
  std::array<Slot, kCount> locks_;
};

}  // namespace vmstore::internal
