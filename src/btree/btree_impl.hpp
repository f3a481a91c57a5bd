// Definitions of BasicBTree<BM> (btree.hpp), included by the files that instantiate it:
// btree.cpp (vmcache) and btree_hash.cpp (the hash-table buffer manager).
#pragma once

#include "btree/btree.hpp"

#include <algorithm>
#include <thread>
#include <type_traits>

#include "task/cooperative.hpp"
#include "vmstore/limits.hpp"

namespace vmstore::internal {

namespace btree_detail {

constexpr unsigned kKeyBuf = kMaxKeySize * 2;
constexpr unsigned kMaxSlots = (kPageSize - BTreeNode::kHeaderSize) / BTreeNode::kSlotSize;

// Releases a page fixed shared (BM::fixS) when it goes out of scope.
template <class BM>
struct UnfixS {
  BM& bm;
  uint64_t pid;
  UnfixS(BM& b, uint64_t p) : bm(b), pid(p) {}
  UnfixS(const UnfixS&) = delete;
  UnfixS& operator=(const UnfixS&) = delete;
  ~UnfixS() { bm.unfixS(pid); }
};

// A value stored out of line: a page of its own, header then the bytes. A value longer
// than one page's room is a variable-size page (buffer_manager.hpp) of as many ids as it
// needs: the bytes are contiguous in memory, `data` runs on past the first 4 KiB.
struct ValuePage {
  PageHeader page;
  uint32_t len;
  uint32_t pad;
  uint8_t data[kPageSize - sizeof(PageHeader) - 8];
};
static_assert(sizeof(ValuePage) == kPageSize);
constexpr size_t kValueHeader = offsetof(ValuePage, data);
// The ids a value of len bytes takes.
constexpr uint64_t valuePages(uint64_t len) { return (kValueHeader + len + kPageSize - 1) / kPageSize; }
static_assert(valuePages(kMaxValueSize) <= kMaxSpanPages);

// Whether a page reached through a value reference of len bytes is that value's page.
inline bool isValuePage(const ValuePage* value, uint64_t len) {
  return value->page.kind == PageKind::kValue && value->len == len;
}

// Whether the buffer manager offers variable-size pages (the hash-table baseline of the
// benchmarks does not: values over one page are refused there).
template <class BM>
constexpr bool kHasSpans = requires(BM& bm) { bm.allocSpan(PageKind::kValue, 2); };

// Before retrying after r: wait for the shared holders an upgrade failed on (see
// Restart), else, after a few attempts, let the writer we raced finish.
template <class BM>
void backOff(BM& bm, const Restart& r, unsigned attempt) {
  if constexpr (requires { bm.waitForShared(uint64_t{}); }) {
    if (r.sharedPid != ~0ull) {
      bm.waitForShared(r.sharedPid);
      return;
    }
  }
  if (attempt > 4) task::pause();
}

// Runs fn until it completes without an optimistic-validation Restart.
template <class BM, class Fn>
auto withRestarts(BM& bm, Fn&& fn) {
  for (unsigned attempt = 0;; attempt++) {
    try {
      return fn();
    } catch (const Restart& r) {
      backOff(bm, r, attempt);
    }
  }
}

}  // namespace btree_detail

using namespace btree_detail;

template <class BM>
uint64_t BasicBTree<BM>::create(BM& bm) {
  NodeX root(bm, bm.allocPage(PageKind::kBTreeLeaf));
  root->init(true, {}, {});
  return root.pid();
}

template <class BM>
void BasicBTree<BM>::throwCorrupt(uint64_t pid, const std::string& what) {
  throw StorageError(Status::Corruption("page " + std::to_string(pid) + ": " + what));
}

template <class BM>
void BasicBTree<BM>::descend(Bytes key, NodeO* parent, NodeO* node, uint64_t stopAt) {
  *node = NodeO(bm_, root_);
  if ((*node)->dropped()) {
    node->validate();
    throw StorageError(Status::NotFound("the tree was dropped"));
  }
  while (node->pid() != stopAt) {
    if ((*node)->isLeaf()) return;
    if (!(*node)->isInner()) {
      node->validate();
      throwCorrupt(node->pid(), "not a B+tree node");
    }
    *parent = std::move(*node);
    *node = NodeO(bm_, (*parent)->lookupInner(key), *parent);
  }
}

template <class BM>
void BasicBTree<BM>::lookupResident(std::span<const Bytes> keys, std::span<Lookup> out, Copier copy, void* ctx) {
  walkResident<false>(keys, out.data(), nullptr, copy, ctx);
}

template <class BM>
void BasicBTree<BM>::locateLeaves(std::span<const Bytes> keys, std::span<LeafHint> out) {
  walkResident<true>(keys, nullptr, out.data(), nullptr, nullptr);
}

template <class BM>
template <bool kLocate>
void BasicBTree<BM>::walkResident(std::span<const Bytes> keys, Lookup* out, LeafHint* leaves, Copier copy, void* ctx) {
  // A key's next step. Each step requests the lines its next step reads.
  enum Step : uint8_t {
    kVisit,   // the node `next` (state word and header requested): hold it, start its search
    kSearch,  // finish the search of `node` (slots and prefix requested)
    kChild,   // inner: read the child reference at pos (requested)
    kCopy,    // leaf: copy the value at pos (requested)
    kDone,
  };
  struct Walk {
    NodeO node;  // the node searched last (optimistic); none before the root
    uint64_t next = kNoPage;
    BTreeNode::Search search{};
    unsigned pos = 0;
    Step step = kVisit;
    bool follow = false;  // searched from where the key before it was found (kVisit)
  };
  auto request = [&](uint64_t pid) {
    if constexpr (requires { bm_.prefetch(pid); }) bm_.prefetch(pid);
  };
  request(root_);
  for (size_t base = 0; base < keys.size(); base += kLookupGroup) {
    const size_t n = std::min(kLookupGroup, keys.size() - base);
    Walk walk[kLookupGroup];
    size_t active = n;
    auto finish = [&](size_t i, Lookup result) {
      if constexpr (kLocate) {
        if (result == Lookup::kLeft) leaves[base + i] = LeafHint{};
      } else {
        out[base + i] = result;
      }
      walk[i].step = kDone;
      walk[i].node = NodeO();
      active--;
    };
    for (size_t i = 0; i < n; i++) walk[i].next = root_;
    // The group's walk. In ascending key order (a sorted batch) keys follow each other
    // (kVisit); in another order a key seldom goes the way of the one before it, and the
    // walk is the plain one.
    auto walkGroup = [&](auto ascendingOrder) {
      constexpr bool kAscending = decltype(ascendingOrder)::value;
      const Bytes* const groupKeys = keys.data() + base;
      while (active > 0) {
        for (size_t i = 0; i < n; i++) {
          Walk& w = walk[i];
          switch (w.step) {
            case kVisit: {
              const Bytes key = groupKeys[i];
              const bool atRoot = !w.node.held();
              NodeO node = NodeO::ifResident(bm_, w.next);
              // `next` came from w.node, which must still be as it was when read.
              if (!node.held() || !w.node.valid() || !(node->isLeaf() || node->isInner()) ||
                  (atRoot && node->dropped())) {
                finish(i, Lookup::kLeft);
                break;
              }
              if constexpr (kLocate) {
                if (node->isLeaf()) {  // its version now: a write that finds it unchanged may go to it
                  leaves[base + i] = LeafHint{w.next, PageState::versionOf(node.version())};
                  // Requested for the write: its fences (leafFromHint) and the slots its search
                  // starts from. Prefetches only: a node changed meanwhile costs nothing.
                  __builtin_prefetch(node->lowerFenceKey().data());
                  __builtin_prefetch(node->upperFenceKey().data());
                  (void)node->searchStart(key);
                  finish(i, Lookup::kFound);
                  break;
                }
              }
              w.node = std::move(node);
              // In an ascending group, the key before this one holds the same node, its
              // search next: this key's answer is most often the same slot (the same child),
              // so its search starts there (lowerBoundNear), with nothing requested (the key
              // before reads those lines first).
              if constexpr (kAscending) {
                w.follow = i > 0 && walk[i - 1].step == kSearch && walk[i - 1].node.pid() == w.node.pid();
              }
              if (!kAscending || !w.follow) w.search = w.node->searchStart(key);
              w.step = kSearch;
              break;
            }
            case kSearch: {
              const Bytes key = groupKeys[i];
              bool found;
              if (!kAscending || !w.follow) {
                w.pos = w.node->searchFinish(key, w.search, &found);
              } else if (const Walk& before = walk[i - 1]; before.step == kChild || before.step == kCopy) {
                w.pos = w.node->lowerBoundNear(key, before.pos, &found);  // it searched this node just now
              } else {
                w.pos = w.node->lowerBound(key, &found);  // it stopped (absent, or left to the caller)
              }
              if (w.node->isInner()) {
                if (w.pos < w.node->count) __builtin_prefetch(w.node->payloadPtr(w.pos));
                w.step = kChild;
              } else if (found) {
                const uint8_t* value = w.node->payloadPtr(w.pos);
                __builtin_prefetch(value);
                __builtin_prefetch(value + 64);
                w.step = kCopy;
              } else {
                finish(i, w.node.valid() ? Lookup::kAbsent : Lookup::kLeft);
              }
              break;
            }
            case kChild:
              w.next = w.pos < w.node->count ? w.node->child(w.pos) : w.node->upper;
              request(w.next);
              w.step = kVisit;
              break;
            case kCopy:
              if (w.node->outOfLine(w.pos)) {
                finish(i, Lookup::kLeft);
                break;
              }
              copy(ctx, base + i,
                   Bytes(w.node->payloadPtr(w.pos), std::min<size_t>(w.node->payloadLen(w.pos), kPageSize)));
              finish(i, w.node.valid() ? Lookup::kFound : Lookup::kLeft);
              break;
            case kDone:
              break;
          }
        }
      }
    };
    bool ascending = true;
    for (size_t i = 1; i < n && ascending; i++) ascending = compareBytes(keys[base + i - 1], keys[base + i]) <= 0;
    if (ascending) {
      walkGroup(std::true_type{});
    } else {
      walkGroup(std::false_type{});
    }
  }
}

template <class BM>
bool BasicBTree<BM>::findInLeaf(Bytes key, NodeO* leaf, unsigned* pos) {
  NodeO parent;
  descend(key, &parent, leaf, kNoPage);
  bool found;
  *pos = (*leaf)->lowerBound(key, &found);
  if (!found) leaf->validate();
  return found;
}

template <class BM>
bool BasicBTree<BM>::get(Bytes key, uint8_t* buf, size_t cap, size_t* vlen) {
  return withRestarts(bm_, [&] {
    NodeO node;
    unsigned pos;
    if (!findInLeaf(key, &node, &pos)) return false;
    if (!node->outOfLine(pos)) {
      size_t n = node->payloadLen(pos);
      if (cap > 0) std::memcpy(buf, node->payloadPtr(pos), std::min(n, cap));
      node.validate();
      *vlen = n;
      return true;
    }
    ValueRef ref = valueRefAt(node.get(), pos);
    withValue(node, ref, [&](size_t at, const uint8_t* data, size_t n, size_t) {
      if (at < cap) std::memcpy(buf + at, data, std::min(n, cap - at));
    });
    node.validate();
    *vlen = ref.len;
    return true;
  });
}

template <class BM>
void BasicBTree<BM>::copyValue(NodeO& leaf, unsigned pos, std::string* out) {
  if (!leaf->outOfLine(pos)) {
    unsigned n = std::min<unsigned>(leaf->payloadLen(pos), kPageSize);
    assignBytes(out, leaf->payloadPtr(pos), n);
    return;
  }
  withValue(leaf, valueRefAt(leaf.get(), pos), [&](size_t at, const uint8_t* data, size_t n, size_t len) {
    if (at == 0) {
      out->clear();  // again after a restart
      out->reserve(len);
    }
    out->append(reinterpret_cast<const char*>(data), n);
  });
}

template <class BM>
template <class Fn>
void BasicBTree<BM>::withValue(NodeO& leaf, ValueRef ref, Fn&& fn) {
  const uint64_t pages = valuePages(ref.len);
  if (pages == 1) {
    // Optimistic: fn copies what may be torn; the validation below discards it.
    GuardO<ValuePage, BM> value(bm_, ref.pid, leaf);
    bool intact = isValuePage(value.get(), ref.len);
    if (intact) fn(size_t{0}, static_cast<const uint8_t*>(value->data), size_t{ref.len}, size_t{ref.len});
    value.validate();
    if (!intact) {
      leaf.validate();
      throwCorrupt(ref.pid, "not the value page its leaf refers to");
    }
    return;
  }
  if constexpr (!kHasSpans<BM>) {
    throwCorrupt(ref.pid, "a value over one page, which this buffer manager cannot hold");
  } else {
    // The leaf held shared while the value is fixed (and maybe read from storage): a
    // writer changes the leaf before it frees a value, so the reference stays current
    // and the ids it names stay this value's.
    if (!bm_.tryShareAt(leaf.pid(), leaf.version())) throw Restart();
    // Bytes handed on as they come in when the value is read from storage, so that the
    // copy overlaps the read of the rest; the remainder (all, when resident) after.
    struct Feed {
      Fn* fn;
      size_t len;
      size_t fed = 0;
      void upTo(const uint8_t* page, size_t pageBytes) {
        size_t end = std::min(len, pageBytes > kValueHeader ? pageBytes - kValueHeader : 0);
        if (end <= fed) return;
        (*fn)(fed, page + kValueHeader + fed, end - fed, len);
        fed = end;
      }
    } feed{&fn, ref.len};
    const SpanArrival arrival{[](void* c, const Page* page, size_t upTo) {
                                static_cast<Feed*>(c)->upTo(reinterpret_cast<const uint8_t*>(page), upTo);
                              },
                              &feed};
    const ValuePage* value = fixValueAndReleaseLeaf(leaf.pid(), ref, &arrival);
    UnfixS<BM> unfix{bm_, ref.pid};
    feed.upTo(reinterpret_cast<const uint8_t*>(value), kValueHeader + ref.len);
  }
}

template <class BM>
const ValuePage* BasicBTree<BM>::fixValueAndReleaseLeaf(uint64_t leafPid, ValueRef ref, const SpanArrival* arrival) {
  if constexpr (!kHasSpans<BM>) {
    throwCorrupt(ref.pid, "a value over one page, which this buffer manager cannot hold");
  } else {
    const ValuePage* value;
    try {
      value = reinterpret_cast<const ValuePage*>(bm_.fixS(ref.pid, valuePages(ref.len), arrival));
    } catch (...) {
      bm_.unfixS(leafPid);
      throw;
    }
    bm_.unfixS(leafPid);
    if (!isValuePage(value, ref.len)) {
      bm_.unfixS(ref.pid);
      throwCorrupt(ref.pid, "not the value page its leaf refers to");
    }
    return value;
  }
}

template <class BM>
bool BasicBTree<BM>::getString(Bytes key, std::string* value) {
  return withRestarts(bm_, [&] {
    NodeO parent;
    NodeO node;
    descend(key, &parent, &node, kNoPage);
    bool found;
    unsigned pos = node->lowerBound(key, &found);
    if (found) copyValue(node, pos, value);
    node.validate();
    return found;
  });
}

template <class BM>
bool BasicBTree<BM>::pin(Bytes key, uint64_t* pinned, const uint8_t** data, size_t* len) {
  if constexpr (!kHasSpans<BM>) {
    throw StorageError(Status::InvalidArgument("zero-copy reads need the vmcache buffer manager"));
  } else {
    return withRestarts(bm_, [&] {
      NodeO leaf;
      unsigned pos;
      if (!findInLeaf(key, &leaf, &pos)) return false;
      if (leaf->outOfLine(pos)) {
        // A resident value page is shared without sharing the leaf (two atomic
        // operations fewer): the reference was read optimistically, and the leaf's
        // version, unchanged once the value is held, says it was current (a value is
        // freed only after its leaf changed). Anything else takes the path below.
        const ValueRef ref = valueRefAt(leaf.get(), pos);
        if (bm_.tryFixSResident(ref.pid)) {
          const auto* value = reinterpret_cast<const ValuePage*>(bm_.pageAt(ref.pid));
          if (!bm_.optimisticValid(leaf.pid(), leaf.page(), leaf.version())) {
            bm_.unfixS(ref.pid);
            throw Restart();
          }
          if (!isValuePage(value, ref.len)) {
            bm_.unfixS(ref.pid);
            throwCorrupt(ref.pid, "not the value page its leaf refers to");
          }
          *pinned = ref.pid;
          *data = value->data;
          *len = ref.len;
          return true;
        }
      }
      // Shared at the version the search saw: pos and the slot are still what they were.
      if (!bm_.tryShareAt(leaf.pid(), leaf.version())) throw Restart();
      const BTreeNode* node = leaf.get();
      if (!node->outOfLine(pos)) {
        *pinned = leaf.pid();
        *data = node->payloadPtr(pos);
        *len = node->payloadLen(pos);
        return true;
      }
      ValueRef ref = valueRefAt(node, pos);
      const ValuePage* value = fixValueAndReleaseLeaf(leaf.pid(), ref);
      *pinned = ref.pid;
      *data = value->data;
      *len = ref.len;
      return true;
    });
  }
}

template <class BM>
bool BasicBTree<BM>::readOptimistic(Bytes key, Reader fn, void* ctx) {
  if constexpr (!kHasSpans<BM>) {
    throw StorageError(Status::InvalidArgument("zero-copy reads need the vmcache buffer manager"));
  } else {
    return withRestarts(bm_, [&] {
      NodeO leaf;
      unsigned pos;
      if (!findInLeaf(key, &leaf, &pos)) return false;
      if (!leaf->outOfLine(pos)) {
        // The slot was read optimistically: a torn one may point anywhere in its 64 KiB
        // of offsets, so fn gets only bytes inside the leaf's page.
        const uint8_t* data = leaf->payloadPtr(pos);
        const size_t len = leaf->payloadLen(pos);
        if (data + len > reinterpret_cast<const uint8_t*>(leaf.get()) + kPageSize) {
          leaf.validate();
          throwCorrupt(leaf.pid(), "a value past the end of its leaf");
        }
        fn(ctx, Bytes(data, len));
        leaf.validate();
        return true;
      }
      const ValueRef ref = valueRefAt(leaf.get(), pos);
      const auto resident = GuardO<ValuePage, BM>::ifResident(bm_, ref.pid);
      if (resident.held()) {
        // The leaf unchanged now says the reference is current, and the value is freed
        // only after its leaf changes; from here the value page's version alone says
        // whether fn read it whole.
        leaf.validate();
        if (!isValuePage(resident.get(), ref.len)) {
          resident.validate();
          throwCorrupt(ref.pid, "not the value page its leaf refers to");
        }
        fn(ctx, Bytes(resident->data, ref.len));
        resident.validate();
        return true;
      }
      // Not resident, or locked: read in (or waited for) and held shared for one run.
      if (!bm_.tryShareAt(leaf.pid(), leaf.version())) throw Restart();
      const ValuePage* value = fixValueAndReleaseLeaf(leaf.pid(), ref);
      UnfixS<BM> unfix{bm_, ref.pid};
      fn(ctx, Bytes(value->data, ref.len));
      return true;
    });
  }
}

template <class BM>
void BasicBTree<BM>::unpin(uint64_t pinned) {
  if constexpr (kHasSpans<BM>) bm_.unfixS(pinned);
}

template <class BM>
uint64_t BasicBTree<BM>::allocValue(size_t len, const std::function<void(uint8_t*)>& fill, bool fillWritesAll) {
  const uint64_t pages = valuePages(len);
  Page* p;
  if constexpr (kHasSpans<BM>) {
    p = fillWritesAll ? bm_.allocSpan(PageKind::kValue, pages, kValueHeader, kValueHeader + len)
                      : bm_.allocSpan(PageKind::kValue, pages);
  } else {
    if (pages > 1) throw StorageError(Status::TooBig("values over one page need variable-size pages, which this buffer manager lacks"));
    p = bm_.allocPage(PageKind::kValue);
  }
  GuardX<ValuePage, BM> page(bm_, p);
  page->len = static_cast<uint32_t>(len);
  try {
    fill(page->data);
  } catch (...) {
    uint64_t pid = page.pid();
    page.release();
    freeValuePage(ValueRef{pid, static_cast<uint32_t>(len)});
    throw;
  }
  return page.pid();
}

template <class BM>
uint64_t BasicBTree<BM>::writeValuePage(Bytes value) {
  return allocValue(value.size(), [&](uint8_t* data) { std::memcpy(data, value.data(), value.size()); }, true);
}

template <class BM>
void BasicBTree<BM>::linkValue(Bytes key, uint64_t pid, size_t len) {
  ValueRef ref{pid, static_cast<uint32_t>(len)};
  ValueRef old = insertEntry(key, Bytes(reinterpret_cast<const uint8_t*>(&ref), sizeof(ref)), true);
  if (old.pid != kNoPage) freeValuePage(old);
}

template <class BM>
const uint8_t* BasicBTree<BM>::holdValue(uint64_t pid, size_t len) {
  if constexpr (kHasSpans<BM>) {
    return reinterpret_cast<const ValuePage*>(bm_.fixS(pid, valuePages(len)))->data;
  } else {
    throw StorageError(Status::InvalidArgument("holding a value needs the vmcache buffer manager"));
  }
}

template <class BM>
void BasicBTree<BM>::freeValuePage(ValueRef ref) {
  // Never read from storage: a failed read must not undo a done change.
  if constexpr (kHasSpans<BM>) {
    bm_.freeSpan(ref.pid, valuePages(ref.len));
  } else {
    bm_.freePageById(ref.pid);
  }
}

template <class BM>
bool BasicBTree<BM>::leafFromHint(Bytes key, const LeafHint& hint, NodeO* leaf) {
  if (hint.pid == kNoPage) return false;
  NodeO g = NodeO::ifResident(bm_, hint.pid);
  // (A guard's version is the whole state word: a shared holder or a sleeper there is no change.)
  if (!g.held() || PageState::versionOf(g.version()) != hint.version) return false;  // changed, or not resident
  // Unchanged since the caller let go of it: still a leaf of this tree. Is key in
  // (lower fence, upper fence]? An empty lower fence is -infinity, an empty upper one
  // +infinity.
  const Bytes lower = g->lowerFenceKey();
  const Bytes upper = g->upperFenceKey();
  const bool inRange = g->isLeaf() && (lower.empty() || compareBytes(key, lower) > 0) &&
                       (upper.empty() || compareBytes(key, upper) <= 0);
  g.validate();
  if (!inRange) return false;
  *leaf = std::move(g);
  return true;
}

template <class BM>
void BasicBTree<BM>::put(Bytes key, Bytes value, LeafHint* hint) {
  if (BTreeNode::storedInline(key.size(), value.size())) {
    ValueRef old = insertEntry(key, value, false, hint);
    if (old.pid != kNoPage) freeValuePage(old);
    return;
  }
  ValueRef ref{writeValuePage(value), static_cast<uint32_t>(value.size())};
  ValueRef old;
  try {
    old = insertEntry(key, Bytes(reinterpret_cast<const uint8_t*>(&ref), sizeof(ref)), true, hint);
  } catch (...) {
    freeValuePage(ref);
    throw;
  }
  if (old.pid != kNoPage) freeValuePage(old);
}

template <class BM>
bool BasicBTree<BM>::updateInPlace(Bytes key, Decide decide, void* ctx, LeafHint* hint) {
  uint8_t copy[BTreeNode::kMaxEntry];  // an inline value (key and value fit one entry)
  std::string outOfLine;
  NodeO leaf;
  unsigned pos = 0;
  bool found = false;
  bool inlineValue = false;
  unsigned len = 0;
  bool tryHint = hint != nullptr;  // once: a restart descends
  withRestarts(bm_, [&] {
    const bool hinted = tryHint && leafFromHint(key, *hint, &leaf);
    tryHint = false;
    if (!hinted) {
      NodeO parent;
      descend(key, &parent, &leaf, kNoPage);
    }
    pos = leaf->lowerBound(key, &found);
    inlineValue = found && !leaf->outOfLine(pos);
    if (inlineValue) {
      len = leaf->payloadLen(pos);
      if (len > sizeof copy) {
        leaf.validate();
        throwCorrupt(leaf.pid(), "inline value longer than an entry");
      }
      std::memcpy(copy, leaf->payloadPtr(pos), len);
    } else if (found) {
      copyValue(leaf, pos, &outOfLine);
    }
    leaf.validate();
  });
  const Bytes current = inlineValue ? Bytes(copy, len) : asBytes(outOfLine);
  const std::optional<Bytes> next = decide(ctx, found ? &current : nullptr);
  // An inline value of the same size is written over; an absent key whose value would be
  // inline goes into the leaf read, if it has room.
  const bool overwrite = next && inlineValue && next->size() == len;
  const bool insert = next && !found && BTreeNode::storedInline(key.size(), next->size());
  if (!overwrite && !insert) {
    // The leaf as read, for the put or remove that usually follows: unchanged since, it
    // takes the write without a descent.
    if (hint != nullptr) *hint = LeafHint{leaf.pid(), PageState::versionOf(leaf.version())};
    return false;
  }
  for (unsigned attempt = 0;; attempt++) {
    try {
      if (!leaf.held()) {  // the leaf changed after the read: find the key again
        NodeO parent;
        descend(key, &parent, &leaf, kNoPage);
        pos = leaf->lowerBound(key, &found);
        if (insert ? found : (!found || leaf->outOfLine(pos) || leaf->payloadLen(pos) != len)) {
          leaf.validate();
          return false;  // changed by someone the caller did not keep out: put instead
        }
      }
      const uint64_t version = leaf.version();
      NodeX node(std::move(leaf));  // Restart if the leaf changed since it was read
      if (insert) {
        const unsigned klen = static_cast<unsigned>(key.size());
        const unsigned plen = static_cast<unsigned>(next->size());
        // No room: the caller's put splits (the hint is stale by then: it descends).
        if (!node->makeSpaceFor(klen, plen)) return false;
        node->insertAt(pos, key, *next, false);
      } else {
        node->overwritePayload(pos, *next);
      }
      if (hint != nullptr) *hint = hintAfterRelease(node.pid(), version);
      return true;
    } catch (const Restart& r) {
      leaf = NodeO();
      backOff(bm_, r, attempt);
    }
  }
}

template <class BM>
typename BasicBTree<BM>::ValueRef BasicBTree<BM>::insertEntry(Bytes key, Bytes payload, bool outOfLine, LeafHint* hint) {
  unsigned klen = static_cast<unsigned>(key.size());
  unsigned plen = static_cast<unsigned>(payload.size());
  bool tryHint = hint != nullptr;  // once: a restart, or a leaf too full, descends
  for (unsigned attempt = 0;; attempt++) {
    try {
      NodeO parentO;
      NodeO nodeO;
      const bool hinted = tryHint && leafFromHint(key, *hint, &nodeO);
      tryHint = false;
      if (!hinted) descend(key, &parentO, &nodeO, kNoPage);
      const uint64_t version = nodeO.version();
      NodeX node(std::move(nodeO));
      bool found;
      unsigned pos = node->lowerBound(key, &found);
      if (found && !outOfLine && !node->outOfLine(pos) && plen <= node->payloadLen(pos)) {
        // An inline value no larger than the inline one it replaces: overwritten where
        // it is (no slot moves, no heap compaction; a shorter one leaves its tail unused
        // until the next compaction).
        node->overwritePayload(pos, payload);
        if (hint != nullptr) *hint = hintAfterRelease(node.pid(), version);
        return ValueRef{kNoPage, 0};
      }
      if (found) {
        // Replace in place if the new entry fits once the old one is gone.
        unsigned freed = BTreeNode::kSlotSize + node->slot[pos].keyLen + node->payloadLen(pos);
        if (node->spaceNeeded(klen, plen) <= node->freeSpaceAfterCompaction() + freed) {
          ValueRef old{kNoPage, 0};
          if (node->outOfLine(pos)) old = valueRefAt(node.get(), pos);
          node->removeSlot(pos);
          node->makeSpaceFor(klen, plen);  // compacts the heap; the slots keep their order
          node->insertAt(pos, key, payload, outOfLine);
          if (hint != nullptr) *hint = hintAfterRelease(node.pid(), version);
          return old;
        }
      } else if (node->makeSpaceFor(klen, plen)) {
        node->insertAt(pos, key, payload, outOfLine);
        if (hint != nullptr) *hint = hintAfterRelease(node.pid(), version);
        return ValueRef{kNoPage, 0};
      }
      if (hinted) continue;  // a split needs the parent: descend (the leaf is let go)
      NodeX parent;
      if (parentO.held()) parent = NodeX(std::move(parentO));
      split(node, parent, key);
    } catch (const Restart& r) {
      backOff(bm_, r, attempt);
    }
  }
}

template <class BM>
bool BasicBTree<BM>::split(NodeX& node, NodeX& parent, Bytes key) {
  if (node.pid() == root_) {
    // The root keeps its page id: its content moves into a new child below it.
    NodeX child(bm_, bm_.allocPage(node->page.kind));
    node->copyContentTo(child.get());
    node->init(false, {}, {});
    node->upper = child.pid();
    parent = std::move(node);
    node = std::move(child);
  }
  uint8_t sep[kKeyBuf];
  unsigned sepLen;
  unsigned leftCount;
  unsigned count = node->count;
  if (node->isLeaf() && count < 2) {
    // One entry that leaves no room for the new one: split around the new key, so
    // that the new key gets a node of its own side with nothing else in it.
    bool found;
    unsigned pos = node->lowerBound(key, &found);
    if (pos == 0) {
      leftCount = 0;
      sepLen = static_cast<unsigned>(key.size());
      std::memcpy(sep, key.data(), sepLen);
    } else {
      leftCount = 1;
      sepLen = node->copyKey(0, sep, kKeyBuf);
    }
  } else {
    bool found;
    leftCount = node->chooseSplit(node->lowerBound(key, &found), sep, &sepLen);
  }
  if (!parent->makeSpaceFor(sepLen, sizeof(uint64_t))) {
    uint64_t parentPid = parent.pid();
    node.release();
    parent.release();
    ensureSpace(parentPid, Bytes(sep, sepLen), sizeof(uint64_t));
    return false;
  }
  NodeX left(bm_, bm_.allocPage(node->page.kind));
  node->split(left.get(), left.pid(), parent.get(), leftCount, Bytes(sep, sepLen));
  return true;
}

template <class BM>
void BasicBTree<BM>::ensureSpace(uint64_t pid, Bytes key, unsigned payloadLen) {
  for (unsigned attempt = 0;; attempt++) {
    try {
      NodeO parentO;
      NodeO nodeO;
      descend(key, &parentO, &nodeO, pid);
      if (nodeO.pid() != pid) {  // no longer on the path: somebody else restructured it
        nodeO.validate();
        return;
      }
      if (nodeO->spaceNeeded(static_cast<unsigned>(key.size()), payloadLen) <= nodeO->freeSpaceAfterCompaction()) {
        nodeO.validate();
        return;
      }
      NodeX parent;
      if (parentO.held()) parent = NodeX(std::move(parentO));
      NodeX node(std::move(nodeO));
      if (split(node, parent, key)) return;
    } catch (const Restart& r) {
      backOff(bm_, r, attempt);
    }
  }
}

template <class BM>
bool BasicBTree<BM>::remove(Bytes key, std::string* old, LeafHint* hint) {
  bool tryHint = hint != nullptr;  // once: a restart descends
  return withRestarts(bm_, [&] {
    NodeO nodeO;
    const bool hinted = tryHint && leafFromHint(key, *hint, &nodeO);
    tryHint = false;
    if (!hinted) {
      NodeO parent;
      descend(key, &parent, &nodeO, kNoPage);
    }
    bool found;
    unsigned pos = nodeO->lowerBound(key, &found);
    if (!found) {
      nodeO.validate();
      return false;
    }
    if (old != nullptr) copyValue(nodeO, pos, old);  // what it read counts once the latch below is had
    const uint64_t version = nodeO.version();
    NodeX node(std::move(nodeO));  // Restart if the leaf changed since it was read
    ValueRef value{kNoPage, 0};
    if (node->outOfLine(pos)) value = valueRefAt(node.get(), pos);
    node->removeSlot(pos);
    bool underfull = node->underfull();
    uint64_t pid = node.pid();
    if (hint != nullptr) *hint = hintAfterRelease(pid, version);
    node.release();
    if (value.pid != kNoPage) freeValuePage(value);
    if (underfull && pid != root_) mergeUnderfull(key, pid);
    return true;
  });
}

template <class BM>
void BasicBTree<BM>::mergeUnderfull(Bytes key, uint64_t pid) {
  // Best effort: the delete already happened; a merge that cannot be done now is
  // tried again by a later delete in the same node.
  uint64_t parentPid = kNoPage;
  bool parentUnderfull = false;
  bool rootEmpty = false;
  try {
    withRestarts(bm_, [&] {
      NodeO parentO;
      NodeO nodeO;
      descend(key, &parentO, &nodeO, pid);
      if (nodeO.pid() != pid || !parentO.held() || !nodeO->underfull()) {
        nodeO.validate();
        return;
      }
      NodeX parent(std::move(parentO));
      NodeX node(std::move(nodeO));
      bool found;
      unsigned pos = parent->lowerBound(key, &found);
      unsigned count = parent->count;
      if (count == 0 || (pos < count ? parent->child(pos) : parent->upper) != pid) return;
      NodeX left;
      NodeX right;
      unsigned sepSlot;
      if (pos < count) {
        sepSlot = pos;
        uint64_t rightPid = pos + 1 < count ? parent->child(pos + 1) : parent->upper;
        left = std::move(node);
        right = NodeX(bm_, rightPid);
      } else {
        sepSlot = count - 1;
        right = std::move(node);
        left = NodeX(bm_, parent->child(count - 1));
      }
      if (left->page.kind == right->page.kind && left->mergeInto(sepSlot, parent.get(), right.get())) {
        left.freePage();
      }
      parentPid = parent.pid();
      parentUnderfull = parent->underfull();
      rootEmpty = parentPid == root_ && parent->count == 0;
    });
    if (rootEmpty) {
      shrinkRoot();
    } else if (parentUnderfull && parentPid != kNoPage && parentPid != root_) {
      mergeUnderfull(key, parentPid);  // inner nodes merge the same way
    }
  } catch (const StorageError&) {
    // A sibling could not be read; the tree is intact, only less compact.
  }
}

template <class BM>
void BasicBTree<BM>::shrinkRoot() {
  NodeX root(bm_, root_);
  while (root->isInner() && root->count == 0) {
    NodeX child(bm_, root->upper);
    child->copyContentTo(root.get());
    child.freePage();
  }
}

template <class BM>
void BasicBTree<BM>::readLeaf(Bytes from, bool forward, LeafBatch* out, unsigned readAhead, unsigned maxEntries) {
  std::vector<uint64_t> ahead;
  withRestarts(bm_, [&] {
    out->count = 0;
    out->more = false;
    out->fence.clear();
    NodeO parent;
    NodeO node;
    descend(from, &parent, &node, kNoPage);
    if (node->count > kMaxSlots) {
      node.validate();
      throwCorrupt(node.pid(), "slot count out of range");
    }
    bool found;
    unsigned pos = node->lowerBound(from, &found);
    uint8_t key[kKeyBuf];
    auto add = [&](unsigned i) {  // into the batch's next strings, reusing their memory
      unsigned n = node->copyKey(i, key, kKeyBuf);
      if (out->count == out->keys.size()) {
        out->keys.emplace_back();
        out->values.emplace_back();
      }
      out->keys[out->count].assign(reinterpret_cast<char*>(key), n);
      copyValue(node, i, &out->values[out->count]);
      out->count++;
    };
    Bytes fence;
    if (forward) {
      unsigned end = node->count;
      if (end - std::min(pos, end) > maxEntries) {
        end = pos + maxEntries;
        out->more = true;
      }
      for (unsigned i = pos; i < end; i++) add(i);
      fence = node->upperFenceKey();
    } else {
      unsigned end = std::min<unsigned>(found ? pos + 1 : pos, node->count);  // keys <= from
      unsigned stop = 0;
      if (end > maxEntries) {
        stop = end - maxEntries;
        out->more = true;
      }
      for (unsigned i = end; i-- > stop;) add(i);
      fence = node->lowerFenceKey();
    }
    if (!out->more) {
      out->fence.assign(reinterpret_cast<const char*>(fence.data()), std::min<size_t>(fence.size(), kKeyBuf));
    }
    node.validate();
    if (readAhead > 0 && !out->more && parent.pid() != kNoPage && !fence.empty()) {
      leavesAhead(parent, from, forward, readAhead, &ahead);
    }
  });
  if constexpr (requires(BM& bm) { bm.readAhead(std::span<const uint64_t>()); }) {
    if (!ahead.empty()) bm_.readAhead(ahead);  // no page is held here
  }
}

template <class BM>
void BasicBTree<BM>::scanInPlace(Bytes from, Visit visit, void* ctx) {
  if constexpr (!kHasSpans<BM>) {
    throw StorageError(Status::InvalidArgument("zero-copy scans need the vmcache buffer manager"));
  } else {
    uint8_t at[kKeyBuf];  // where the next leaf's entries start
    unsigned atLen = static_cast<unsigned>(std::min<size_t>(from.size(), kKeyBuf));
    if (atLen > 0) std::memcpy(at, from.data(), atLen);  // an empty start may have no bytes at all
    uint8_t key[kKeyBuf];
    std::vector<uint64_t> ahead;
    bool readIn = false;  // the leaves ahead of this one were just read in
    for (unsigned readAhead = 0;;) {
      const BTreeNode* node = nullptr;
      uint64_t pid = kNoPage;
      unsigned pos = 0;
      withRestarts(bm_, [&] {
        NodeO parent;
        NodeO leaf;
        descend(Bytes(at, atLen), &parent, &leaf, kNoPage);
        if (leaf->count > kMaxSlots) {
          leaf.validate();
          throwCorrupt(leaf.pid(), "slot count out of range");
        }
        bool found;
        pos = leaf->lowerBound(Bytes(at, atLen), &found);
        ahead.clear();
        if (readAhead > 0 && !readIn && parent.pid() != kNoPage) leavesAhead(parent, Bytes(at, atLen), true, readAhead, &ahead);
        if (!ahead.empty()) {
          leaf.validate();
          return;  // read them in first, with nothing held
        }
        // Shared at the version the search saw: pos and the slots are what it saw.
        if (!bm_.tryShareAt(leaf.pid(), leaf.version())) throw Restart();
        node = leaf.get();
        pid = leaf.pid();
      });
      if (pid == kNoPage) {
        if constexpr (requires(BM& bm) { bm.readAhead(std::span<const uint64_t>()); }) bm_.readAhead(ahead);
        readIn = true;  // then this leaf again, which is in memory now
        continue;
      }
      UnfixS<BM> leafHeld{bm_, pid};
      for (unsigned i = pos; i < node->count; i++) {
        const unsigned n = node->copyKey(i, key, kKeyBuf);
        if (!node->outOfLine(i)) {
          if (!visit(ctx, Bytes(key, n), Bytes(node->payloadPtr(i), node->payloadLen(i)))) return;
          continue;
        }
        // The leaf held shared keeps the reference current (a writer changes the leaf
        // before it frees a value).
        const ValueRef ref = valueRefAt(node, i);
        const auto* value = reinterpret_cast<const ValuePage*>(bm_.fixS(ref.pid, valuePages(ref.len)));
        UnfixS<BM> valueHeld{bm_, ref.pid};
        if (!isValuePage(value, ref.len)) {
          throwCorrupt(ref.pid, "not the value page its leaf refers to");
        }
        if (!visit(ctx, Bytes(key, n), Bytes(value->data, ref.len))) return;
      }
      const Bytes fence = node->upperFenceKey();
      if (fence.empty()) return;
      atLen = static_cast<unsigned>(std::min<size_t>(fence.size(), kKeyBuf - 1));
      std::memcpy(at, fence.data(), atLen);
      at[atLen++] = 0;  // the smallest key above this leaf
      readAhead = nextReadAhead(readAhead);
      readIn = false;
    }
  }
}

template <class BM>
void BasicBTree<BM>::leavesAhead(NodeO& parent, Bytes key, bool forward, unsigned n, std::vector<uint64_t>* out) {
  out->clear();
  const unsigned count = parent->count;
  if (count > kMaxSlots) {
    parent.validate();
    throwCorrupt(parent.pid(), "slot count out of range");
  }
  bool found;
  const unsigned pos = parent->lowerBound(key, &found);  // the leaf's slot (count: upper)
  auto childAt = [&](unsigned i) { return i >= count ? parent->upper : parent->child(i); };
  if (forward) {
    for (unsigned i = pos + 1; i <= count && out->size() < n; i++) out->push_back(childAt(i));
  } else {
    for (unsigned i = std::min(pos, count); i-- > 0 && out->size() < n;) out->push_back(childAt(i));
  }
  parent.validate();  // the ids are the parent's children: safe to look up
  for (uint64_t pid : *out) {
    if (pid == 0 || pid >= bm_.pageCount()) throwCorrupt(parent.pid(), "child page id out of range");
  }
  if (out->empty() || !bm_.mayNeedRead(out->front())) out->clear();
}

template <class BM>
bool BasicBTree<BM>::isDropped() {
  return withRestarts(bm_, [&] {
    NodeO root(bm_, root_);
    bool d = root->dropped();
    root.validate();
    return d;
  });
}

template <class BM>
void BasicBTree<BM>::drop(std::vector<PageRun>* pages, Page* savedRoot) {
  pages->clear();
  // The root stays locked until the walk is done: it cannot be evicted meanwhile, so
  // undoing a failed walk is a copy that cannot fail (a read of an evicted root could,
  // on the very device that made the walk fail).
  NodeX root(bm_, root_);
  if (root->dropped()) throw StorageError(Status::NotFound("the tree was dropped"));
  std::memcpy(savedRoot, root.get(), kPageSize);
  root->init(true, {}, {});
  root->flags = BTreeNode::kDropped;
  // Nobody reaches the rest any more: every new descent stops at the dropped root, and
  // operations already below it fail validation once a page they read is freed.
  try {
    std::vector<uint64_t> pending;
    auto visit = [&](const BTreeNode* node) {
      for (unsigned i = 0; i < node->count; i++) {
        if (node->isInner()) {
          pending.push_back(node->child(i));
        } else if (node->outOfLine(i)) {
          ValueRef ref = valueRefAt(node, i);
          pages->push_back({ref.pid, valuePages(ref.len)});
        }
      }
      if (node->isInner()) pending.push_back(node->upper);
    };
    visit(reinterpret_cast<const BTreeNode*>(savedRoot));
    while (!pending.empty()) {
      uint64_t pid = pending.back();
      pending.pop_back();
      pages->push_back({pid, 1});
      GuardS<BTreeNode, BM> node(bm_, pid);
      visit(node.get());
    }
  } catch (...) {
    restoreRoot(root.get(), savedRoot);
    throw;
  }
}

template <class BM>
void BasicBTree<BM>::undrop(const Page* savedRoot) {
  NodeX root(bm_, root_);
  restoreRoot(root.get(), savedRoot);
}

template <class BM>
void BasicBTree<BM>::restoreRoot(BTreeNode* root, const Page* savedRoot) {
  std::memcpy(reinterpret_cast<unsigned char*>(root) + sizeof(PageHeader),
              reinterpret_cast<const unsigned char*>(savedRoot) + sizeof(PageHeader), kPagePayload);
  root->page.kind = savedRoot->header.kind;  // drop made it a leaf: an inner root is one again
}

template <class BM>
void BasicBTree<BM>::verify(std::vector<std::string>* problems, std::vector<uint64_t>* pages, TreeShape* shape) {
  TreeShape counted;
  double leafUsed = 0;
  double innerUsed = 0;
  struct Item {
    uint64_t pid;
    std::string lower, upper;
    unsigned depth;
  };
  std::vector<Item> stack{{root_, "", "", 0}};
  int leafDepth = -1;
  auto problem = [&](uint64_t pid, const std::string& what) {
    problems->push_back("tree at page " + std::to_string(root_) + ", page " + std::to_string(pid) + ": " + what);
  };
  while (!stack.empty()) {
    Item item = std::move(stack.back());
    stack.pop_back();
    pages->push_back(item.pid);
    try {
      GuardS<BTreeNode, BM> node(bm_, item.pid);
      std::string err = node->verify();
      if (!err.empty()) {
        problem(item.pid, err);
        continue;
      }
      auto str = [](Bytes b) { return std::string(reinterpret_cast<const char*>(b.data()), b.size()); };
      if (str(node->lowerFenceKey()) != item.lower || str(node->upperFenceKey()) != item.upper) {
        problem(item.pid, "fence keys differ from the separators in its parent");
      }
      double used = static_cast<double>(BTreeNode::kHeaderSize + node->count * sizeof(BTreeNode::Slot) +
                                        node->spaceUsed) / kPageSize;
      if (node->isLeaf()) {
        counted.leaf_pages++;
        counted.keys += node->count;
        leafUsed += used;
        if (leafDepth < 0) leafDepth = static_cast<int>(item.depth);
        if (leafDepth != static_cast<int>(item.depth)) problem(item.pid, "leaves at different depths");
        for (unsigned i = 0; i < node->count; i++) {
          if (!node->outOfLine(i)) continue;
          ValueRef ref = valueRefAt(node.get(), i);
          const uint64_t n = valuePages(ref.len);
          for (uint64_t id = ref.pid; id < ref.pid + n; id++) pages->push_back(id);
          counted.value_pages += n;
          try {
            bool matches;
            if constexpr (kHasSpans<BM>) {
              const auto* value = reinterpret_cast<const ValuePage*>(bm_.fixS(ref.pid, n));
              matches = isValuePage(value, ref.len);
              bm_.unfixS(ref.pid);
            } else {
              GuardS<ValuePage, BM> value(bm_, ref.pid);
              matches = isValuePage(value.get(), ref.len);
            }
            if (!matches) problem(ref.pid, "value page does not match its reference");
          } catch (const StorageError& e) {
            // A value too large for this pool (or no frame free) says nothing of the
            // data: the whole verify fails with it instead (a pool too small to check).
            if (e.status().code() == Status::Code::kNoMemory) throw;
            problem(ref.pid, e.status().message());
          }
        }
      } else {
        counted.inner_pages++;
        innerUsed += used;
        std::string lower = item.lower;
        for (unsigned i = 0; i < node->count; i++) {
          std::string sep = node->keyString(i);
          stack.push_back({node->child(i), lower, sep, item.depth + 1});
          lower = std::move(sep);
        }
        stack.push_back({node->upper, lower, item.upper, item.depth + 1});
      }
    } catch (const StorageError& e) {
      if (e.status().code() == Status::Code::kNoMemory) throw;  // as above
      problem(item.pid, e.status().message());
    }
  }
  if (shape != nullptr) {
    counted.height = static_cast<uint32_t>(leafDepth + 1);
    if (counted.leaf_pages > 0) counted.leaf_fill = leafUsed / static_cast<double>(counted.leaf_pages);
    if (counted.inner_pages > 0) counted.inner_fill = innerUsed / static_cast<double>(counted.inner_pages);
    *shape = counted;
  }
}

template <class BM>
uint64_t BasicBTree<BM>::countKeys() {
  uint64_t n = 0;
  scan({}, true, [&](std::string_view, std::string_view) {
    n++;
    return true;
  });
  return n;
}

}  // namespace vmstore::internal
