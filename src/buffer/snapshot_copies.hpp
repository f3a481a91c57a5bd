// SnapshotCopies: the pages a checkpoint in progress still has to write, copied aside
// because a writer changed them first (copy-on-write of a checkpoint snapshot).
//
// Contract
// - push(pid, epoch, copy) keeps the image of page pid as it was in checkpoint interval
//   `epoch`; takeAll() hands every kept image to the checkpoint that writes them (and
//   returns what it could not write with putBack()).
// - At most one image per page and interval is ever pushed: the buffer manager copies a
//   page only on the first change after a checkpoint's cut, and retags it.
// - size() is what is held now, in pages, for the buffer manager's cap on this memory.
// - Thread-safe (one mutex; a copy is pushed at most once per page per checkpoint).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "buffer/page.hpp"

namespace vmstore::internal {

class SnapshotCopies {
 public:
  struct Copy {
    uint64_t pid;
    uint32_t epoch;
    std::unique_ptr<Page> image;
  };

  void push(Copy copy) {
    std::lock_guard g(mutex_);
    copies_.push_back(std::move(copy));
  }
  std::vector<Copy> takeAll() {
    std::lock_guard g(mutex_);
    return std::move(copies_);
  }
  void putBack(std::vector<Copy>&& rest) {
    std::lock_guard g(mutex_);
    for (Copy& c : rest) copies_.push_back(std::move(c));
  }
  uint64_t size() const {
    std::lock_guard g(mutex_);
    return copies_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Copy> copies_;
};

}  // namespace vmstore::internal
