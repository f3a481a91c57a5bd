// Iterator: walks a tree one leaf at a time (BTree::readForward / readBackward), keeping
// the entries read in memory so that key() and value() stay valid until the iterator
// moves. A seek copies only the first few entries (BTree::kFirstReadEntries: most scans
// end there); moving past them reads the rest of that leaf, then whole leaves. Moving
// on from one leaf to the next grows its read-ahead (BTree::nextReadAhead); a seek
// starts again without.
#include <string>

#include "api/database_impl.hpp"
#include "vmstore/database.hpp"

namespace vmstore {

using internal::BTree;
using internal::CallGate;
using internal::DatabaseImpl;
using internal::LeafBatch;
using internal::StorageError;
using internal::asBytes;

struct Iterator::State {
  internal::TreeImpl* tree = nullptr;
  LeafBatch batch;
  size_t idx = 0;
  bool forward = true;
  bool valid = false;
  unsigned ahead = 0;  // read-ahead of the next leaf read (0: a seek)
  Status status;

  template <class Fn>
  void guarded(Fn&& fn) {
    CallGate::Pass pass(tree->db->gate());
    if (!pass) {
      status = DatabaseImpl::closedStatus();
      valid = false;
      return;
    }
    try {
      status = Status::OK();
      fn();
    } catch (const StorageError& e) {
      status = e.status();
      valid = false;
    } catch (const std::bad_alloc&) {
      status = Status::NoMemory("out of memory");
      valid = false;
    }
  }
  // A seek: the next leaf read is the first of a scan.
  void startScan() { ahead = 0; }
  // The next leaf read continues the scan.
  void continueScan() { ahead = tree->btree.nextReadAhead(ahead); }
  // First entry >= from, moving right across leaves that hold nothing at or above it.
  // limit: the entries copied from the first leaf read.
  void loadForward(std::string from, unsigned limit = BTree::kAllEntries) {
    forward = true;
    for (;; continueScan()) {
      tree->btree.readForward(asBytes(from), &batch, ahead, limit);
      idx = 0;
      if (batch.count > 0) {
        valid = true;
        return;
      }
      if (batch.fence.empty()) {
        valid = false;
        return;
      }
      from = batch.fence + '\0';  // the smallest key above this leaf
    }
  }
  // Last entry <= from (< from when exclusive), moving left likewise.
  void loadBackward(std::string from, bool exclusive, unsigned limit = BTree::kAllEntries) {
    forward = false;
    for (;; continueScan()) {
      // One more when exclusive: the first entry may be from itself.
      tree->btree.readBackward(asBytes(from), &batch, ahead, limit == BTree::kAllEntries ? limit : limit + 1);
      idx = (exclusive && batch.count > 0 && batch.keys[0] == from) ? 1 : 0;
      exclusive = false;
      if (idx < batch.count) {
        valid = true;
        return;
      }
      if (batch.fence.empty()) {
        valid = false;
        return;
      }
      from = batch.fence;  // keys <= the lower fence live in the leaves to the left
    }
  }
};

Iterator::Iterator(std::unique_ptr<State> state) : state_(std::move(state)) {}
Iterator::Iterator(Iterator&&) noexcept = default;
Iterator& Iterator::operator=(Iterator&&) noexcept = default;
Iterator::~Iterator() = default;

Iterator Tree::newIterator() const {
  auto state = std::make_unique<Iterator::State>();
  state->tree = impl_;
  return Iterator(std::move(state));
}

void Iterator::seek(std::string_view key) {
  state_->guarded([&] {
    state_->startScan();
    state_->loadForward(std::string(key), BTree::kFirstReadEntries);
  });
}
void Iterator::seekForPrev(std::string_view key) {
  state_->guarded([&] {
    state_->startScan();
    state_->loadBackward(std::string(key), false, BTree::kFirstReadEntries);
  });
}
void Iterator::seekToFirst() { seek({}); }
void Iterator::seekToLast() {
  // Above every key: longer than the longest key, all 0xff.
  state_->guarded([&] {
    state_->startScan();
    state_->loadBackward(std::string(kMaxKeySize + 1, '\xff'), false, BTree::kFirstReadEntries);
  });
}

void Iterator::next() {
  State& s = *state_;
  if (!s.valid) return;
  s.guarded([&] {
    if (!s.forward) {
      s.startScan();  // turning around
      s.loadForward(s.batch.keys[s.idx] + '\0', BTree::kFirstReadEntries);
      return;
    }
    if (++s.idx < s.batch.count) return;
    if (s.batch.more) {  // the rest of the same leaf
      s.loadForward(s.batch.keys[s.batch.count - 1] + '\0');
      return;
    }
    if (s.batch.fence.empty()) {
      s.valid = false;
      return;
    }
    s.continueScan();
    s.loadForward(s.batch.fence + '\0');
  });
}

void Iterator::prev() {
  State& s = *state_;
  if (!s.valid) return;
  s.guarded([&] {
    if (s.forward) {
      s.startScan();  // turning around
      s.loadBackward(s.batch.keys[s.idx], true, BTree::kFirstReadEntries);
      return;
    }
    if (++s.idx < s.batch.count) return;
    if (s.batch.more) {  // the rest of the same leaf, below the last entry read
      s.loadBackward(s.batch.keys[s.batch.count - 1], true);
      return;
    }
    if (s.batch.fence.empty()) {
      s.valid = false;
      return;
    }
    s.continueScan();
    s.loadBackward(s.batch.fence, false);
  });
}

bool Iterator::valid() const { return state_->valid; }
std::string_view Iterator::key() const { return state_->batch.keys[state_->idx]; }
std::string_view Iterator::value() const { return state_->batch.values[state_->idx]; }
Status Iterator::status() const { return state_->status; }

}  // namespace vmstore
