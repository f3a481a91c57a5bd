// vmstore::ValueView: a value read in place, without a copy (Tree::getView).
//
// Contract
// - A held view's data()/size() are the value's bytes in the buffer pool itself, valid
//   until release() (or the view's destruction, or a move-assignment over it). For every
//   value size: a value stored in its B+tree leaf is held by holding that leaf shared; a
//   larger one (a page of its own, up to 1 GiB, contiguous) by holding its page shared.
// - While a view is held, its value cannot change or go away: a writer that replaces or
//   deletes that key waits until the view is released. A view of a value stored in its
//   leaf also makes writers of the other keys of that leaf wait; the page held is never
//   evicted meanwhile.
// - So hold views briefly, and never let the holding thread (or a task of it) write to
//   the same tree while it holds one: a put or delete that has to wait for the view
//   would wait forever. Reads that copy (get, iterators) are fine; another view, a
//   getRange (it reads through a view) or a scan (Tree::scan) of the same tree is not:
//   while a writer waits for the first view, new views of that leaf wait for the writer
//   (so writers are not starved), which waits for the first view. Writes to other trees
//   of the database are fine, but not sync(), dropTree() or check() from the holding
//   thread: they wait for every writer in flight, and one may be waiting for the view. Database::close() waits until every view of the database
//   is released (never close from a thread that holds one).
// - A view may be released from another thread than the one that took it; a ValueView
//   object itself is not thread-safe. Reading the bytes is safe from any thread while it
//   is held; writing them is not allowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vmstore {

namespace internal {
class TreeImpl;
}  // namespace internal

class ValueView {
 public:
  ValueView() = default;
  ~ValueView() { release(); }
  ValueView(ValueView&& o) noexcept { *this = static_cast<ValueView&&>(o); }
  ValueView& operator=(ValueView&& o) noexcept;
  ValueView(const ValueView&) = delete;
  ValueView& operator=(const ValueView&) = delete;

  bool held() const { return tree_ != nullptr; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }
  // Lets the value go (writers may change it from now on); a no-op when not held.
  void release();

 private:
  friend class Tree;
  internal::TreeImpl* tree_ = nullptr;
  uint64_t pinned_ = 0;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace vmstore
