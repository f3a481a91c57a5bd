// FreeSpace: the ids of pages that are allocated in the data file but unused, to be
// handed out again before the file grows.
//
// Contract
// - Thread-safe, with no lock that every thread shares (issue 7 item 7): the ids live in
//   kShards shards, each with its own lock on a cache line of its own. A thread pushes to
//   its home shard (threads get homes round-robin) and pops from it first, then from
//   the others; an empty shard is passed over without taking its lock. pop() fails only
//   when every shard was seen empty.
// - Which free id pop() returns is unspecified (the home shard's last pushed, if any).
// - snapshot() and assign() see or replace the whole set at once (every shard locked).
// - The set lives in memory; at every checkpoint (sync, close) the database writes it to
//   free-list pages, which are themselves taken from the set (so persisting it never
//   grows the file) and read back at open.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace vmstore::internal {

class FreeSpace {
 public:
  static constexpr unsigned kShards = 16;

  void push(uint64_t pid) {
    Shard& s = shards_[home()];
    std::lock_guard g(s.mutex);
    s.pids.push_back(pid);
    s.count.store(s.pids.size(), std::memory_order_relaxed);
  }
  bool pop(uint64_t* pid) {
    const unsigned h = home();
    for (unsigned i = 0; i < kShards; i++) {
      Shard& s = shards_[(h + i) % kShards];
      if (s.count.load(std::memory_order_relaxed) == 0) continue;
      std::lock_guard g(s.mutex);
      if (s.pids.empty()) continue;
      *pid = s.pids.back();
      s.pids.pop_back();
      s.count.store(s.pids.size(), std::memory_order_relaxed);
      return true;
    }
    return false;
  }
  uint64_t size() const {
    uint64_t n = 0;
    for (const Shard& s : shards_) n += s.count.load(std::memory_order_relaxed);
    return n;
  }
  std::vector<uint64_t> snapshot() const {
    AllLocked all(*this);
    std::vector<uint64_t> out;
    for (const Shard& s : shards_) out.insert(out.end(), s.pids.begin(), s.pids.end());
    return out;
  }
  void assign(std::vector<uint64_t> pids) {
    AllLocked all(*this);
    for (Shard& s : shards_) s.pids.clear();
    for (size_t i = 0; i < pids.size(); i++) shards_[i % kShards].pids.push_back(pids[i]);
    for (Shard& s : shards_) s.count.store(s.pids.size(), std::memory_order_relaxed);
  }

 private:
  struct alignas(64) Shard {
    mutable std::mutex mutex;
    std::vector<uint64_t> pids;
    std::atomic<uint64_t> count{0};  // pids.size(), readable without the lock
  };
  // Every shard's lock, taken in index order.
  struct AllLocked {
    explicit AllLocked(const FreeSpace& f) : fs(f) {
      for (const Shard& s : fs.shards_) s.mutex.lock();
    }
    ~AllLocked() {
      for (const Shard& s : fs.shards_) s.mutex.unlock();
    }
    const FreeSpace& fs;
  };
  static unsigned home() {
    static std::atomic<unsigned> next{0};
    thread_local unsigned mine = next.fetch_add(1, std::memory_order_relaxed) % kShards;
    return mine;
  }

  Shard shards_[kShards];
};

}  // namespace vmstore::internal
