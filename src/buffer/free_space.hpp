// FreeSpace: the ids of pages that are allocated in the data file but unused, to be
// handed out again before the file grows.
//
// The set lives in memory; at every checkpoint (sync, close) the database writes it to
// free-list pages, which are themselves taken from the set (so persisting it never
// grows the file) and read back at open. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace vmstore::internal {

class FreeSpace {
 public:
  void push(uint64_t pid) {
    std::lock_guard g(mutex_);
    pids_.push_back(pid);
  }
  bool pop(uint64_t* pid) {
    std::lock_guard g(mutex_);
    if (pids_.empty()) return false;
    *pid = pids_.back();
    pids_.pop_back();
    return true;
  }
  uint64_t size() const {
    std::lock_guard g(mutex_);
    return pids_.size();
  }
  std::vector<uint64_t> snapshot() const {
    std::lock_guard g(mutex_);
    return pids_;
  }
  void assign(std::vector<uint64_t> pids) {
    std::lock_guard g(mutex_);
    pids_ = std::move(pids);
  }

 private:
  mutable std::mutex mutex_;
  std::vector<uint64_t> pids_;
};

}  // namespace vmstore::internal
