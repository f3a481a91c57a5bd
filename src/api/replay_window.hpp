// ReplayWindow: log operations copied out of the records replay hands over, held until
// the window is full, so that recovery can apply them in groups (the leaves of a group's
// keys found side by side, DatabaseImpl::replayLog) and, with data larger than the pool,
// first bring in the pages they need with many reads in flight.
//
// Contract
// - add(ops) copies every operation (kind, tree name, key, value or patch) into one
//   buffer of bytes; ops() views those copies in the order added, valid until the next
//   add or clear. No allocation per operation: the buffer and the list keep their
//   memory across clear().
// - full() once it holds maxOps operations (clamped to [1, kMaxOps]; the caller sizes
//   it) or kMaxBytes bytes of names, keys and values (a single larger record is held
//   whole).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
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
      owned_.push_back({op.kind, keep(op.tree), keep(op.key), keep(op.value)});
    }
    viewsValid_ = false;
  }
  size_t size() const { return owned_.size(); }
  bool full() const { return owned_.size() >= maxOps_ || bytes_.size() >= kMaxBytes; }
  bool empty() const { return owned_.empty(); }
  std::span<const LogOp> ops() {
    if (!viewsValid_) {
      views_.clear();
      for (const Owned& o : owned_) views_.push_back({o.kind, view(o.tree), view(o.key), view(o.value)});
      viewsValid_ = true;
    }
    return views_;
  }
  void clear() {
    owned_.clear();
    views_.clear();
    bytes_.clear();
    viewsValid_ = false;
  }

 private:
  struct Span {  // bytes_[at, at + size): offsets, which stay right when bytes_ grows
    size_t at, size;
  };
  struct Owned {
    LogOpKind kind;
    Span tree, key, value;
  };
  Span keep(std::string_view s) {
    Span r{bytes_.size(), s.size()};
    bytes_.append(s);
    return r;
  }
  std::string_view view(Span s) const { return std::string_view(bytes_).substr(s.at, s.size); }

  size_t maxOps_;
  std::vector<Owned> owned_;
  std::vector<LogOp> views_;
  bool viewsValid_ = false;
  std::string bytes_;
};

}  // namespace vmstore::internal
