// FreeSpace: the ids of pages that are allocated in the data file but unused, to be
// handed out again before the file grows.
//
// Contract
// - Thread-safe, with no lock that every thread shares (issue 7 item 7): the ids live in
//   kShards shards, each with its own lock on a cache line of its own. A thread pushes to
//   its home shard (threads get homes round-robin) and pops from it first, then from
//   the others; an empty shard is passed over without taking its lock. pop() fails only
//   when every shard was seen empty.
// - Which free id pop() returns is unspecified (the home shard's last pushed, if any;
//   when every shard is empty, the first id of the smallest free run).
// - Runs of free ids, for variable-size pages: pushRun(pid, n) frees [pid, pid + n) and
//   merges it with free runs right before and after it; popRun(n) takes n contiguous
//   free ids from the smallest run that has them (best fit), leaving the rest of that
//   run free, or fails. Runs are kept apart from the single ids under one lock of their
//   own (variable-size pages are allocated far less often than pages).
// - The persisted form is a list of ids (runs spelled out); assign() finds the runs in
//   it again: ids that are adjacent to another free id become runs, the others singles.
// - snapshot() and assign() see or replace the whole set at once (every shard locked).
// - The set lives in memory; at every checkpoint (sync, close) the database writes it to
//   free-list pages, which are themselves taken from the set (so persisting it never
//   grows the file) and read back at open.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <utility>
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
    return runPages_.load(std::memory_order_relaxed) > 0 && popRun(1, pid);
  }
  void pushRun(uint64_t pid, uint64_t pages) {
    std::lock_guard g(runMutex_);
    addRunLocked(pid, pages);
  }
  bool popRun(uint64_t pages, uint64_t* pid) {
    std::lock_guard g(runMutex_);
    auto it = bySize_.lower_bound({pages, 0});
    if (it == bySize_.end()) return false;
    auto [len, start] = *it;
    bySize_.erase(it);
    byStart_.erase(start);
    if (len > pages) {
      byStart_[start + pages] = len - pages;
      bySize_.insert({len - pages, start + pages});
    }
    runPages_.fetch_sub(pages, std::memory_order_relaxed);
    *pid = start;
    return true;
  }
  uint64_t size() const {
    uint64_t n = runPages_.load(std::memory_order_relaxed);
    for (const Shard& s : shards_) n += s.count.load(std::memory_order_relaxed);
    return n;
  }
  // The longest free run (for tests and stats).
  uint64_t longestRun() const {
    std::lock_guard g(runMutex_);
    return bySize_.empty() ? 0 : bySize_.rbegin()->first;
  }
  std::vector<uint64_t> snapshot() const {
    AllLocked all(*this);
    std::vector<uint64_t> out;
    for (const Shard& s : shards_) out.insert(out.end(), s.pids.begin(), s.pids.end());
    for (auto [start, len] : byStart_) {
      for (uint64_t p = start; p < start + len; p++) out.push_back(p);
    }
    return out;
  }
  void assign(std::vector<uint64_t> pids) {
    AllLocked all(*this);
    for (Shard& s : shards_) s.pids.clear();
    byStart_.clear();
    bySize_.clear();
    runPages_.store(0, std::memory_order_relaxed);
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    size_t singles = 0;
    for (size_t i = 0; i < pids.size();) {
      size_t j = i + 1;
      while (j < pids.size() && pids[j] == pids[j - 1] + 1) j++;
      if (j - i == 1) {
        shards_[singles++ % kShards].pids.push_back(pids[i]);
      } else {
        addRunLocked(pids[i], j - i);
      }
      i = j;
    }
    for (Shard& s : shards_) s.count.store(s.pids.size(), std::memory_order_relaxed);
  }

 private:
  struct alignas(64) Shard {
    mutable std::mutex mutex;
    std::vector<uint64_t> pids;
    std::atomic<uint64_t> count{0};  // pids.size(), readable without the lock
  };
  // Every shard's lock, taken in index order, then the runs' lock.
  struct AllLocked {
    explicit AllLocked(const FreeSpace& f) : fs(f) {
      for (const Shard& s : fs.shards_) s.mutex.lock();
      fs.runMutex_.lock();
    }
    ~AllLocked() {
      fs.runMutex_.unlock();
      for (const Shard& s : fs.shards_) s.mutex.unlock();
    }
    const FreeSpace& fs;
  };
  static unsigned home() {
    static std::atomic<unsigned> next{0};
    thread_local unsigned mine = next.fetch_add(1, std::memory_order_relaxed) % kShards;
    return mine;
  }

  // runMutex_ held: adds [pid, pid + pages), merged with the free runs beside it.
  void addRunLocked(uint64_t pid, uint64_t pages) {
    runPages_.fetch_add(pages, std::memory_order_relaxed);
    auto next = byStart_.lower_bound(pid);
    if (next != byStart_.end() && next->first == pid + pages) {
      pages += next->second;
      bySize_.erase({next->second, next->first});
      next = byStart_.erase(next);
    }
    if (next != byStart_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == pid) {
        pid = prev->first;
        pages += prev->second;
        bySize_.erase({prev->second, prev->first});
        byStart_.erase(prev);
      }
    }
    byStart_[pid] = pages;
    bySize_.insert({pages, pid});
  }

  Shard shards_[kShards];
  mutable std::mutex runMutex_;
  std::map<uint64_t, uint64_t> byStart_;               // run start -> length
  std::set<std::pair<uint64_t, uint64_t>> bySize_;     // (length, start)
  std::atomic<uint64_t> runPages_{0};                  // ids in runs
};

}  // namespace vmstore::internal
