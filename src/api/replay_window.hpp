// ReplayWindow: log operations copied out of the records replay hands over, held until
// the window is full, so that recovery can first bring in the pages they need with many
// reads in flight (DatabaseImpl::replayLog), then apply them in their order.
//
// Contract
// - add(ops) copies every operation (kind, tree name, key, value or patch); ops() views
//   those copies in the order added, valid until the next add or clear.
// - full() once it holds maxOps operations (kMaxOps at most; the caller sizes it to its
//   pool, so that the pages read for one window stay resident until it is applied) or
//   kMaxBytes bytes of names, keys and values (a single larger record is held whole).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "wal/log_record.hpp"

namespace vmstore::internal {

class ReplayWindow {
 public:
  static constexpr size_t kMaxOps = 1024;
  static constexpr size_t kMaxBytes = 8 << 20;

  explicit ReplayWindow(size_t maxOps) : maxOps_(std::clamp<size_t>(maxOps, 1, kMaxOps)) {}

  void add(std::span<const LogOp> ops) {
    for (const LogOp& op : ops) {
      owned_.push_back({op.kind, std::string(op.tree), std::string(op.key), std::string(op.value)});
      bytes_ += op.tree.size() + op.key.size() + op.value.size();
    }
    views_.clear();
  }
  bool full() const { return owned_.size() >= maxOps_ || bytes_ >= kMaxBytes; }
  bool empty() const { return owned_.empty(); }
  std::span<const LogOp> ops() {
    if (views_.size() != owned_.size()) {
      views_.clear();
      for (const Owned& o : owned_) views_.push_back({o.kind, o.tree, o.key, o.value});
    }
    return views_;
  }
  void clear() {
    owned_.clear();
    views_.clear();
    bytes_ = 0;
  }

 private:
  struct Owned {
    LogOpKind kind;
    std::string tree, key, value;
  };
  size_t maxOps_;
  std::vector<Owned> owned_;
  std::vector<LogOp> views_;
  size_t bytes_ = 0;
};

}  // namespace vmstore::internal
