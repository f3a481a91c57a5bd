// IdLists: several doubly-linked lists of page ids sharing one array of links, for the
// list-based policies (FIFO, LRU, SLRU, 2Q, ARC, S3-FIFO, SIEVE, LeanStore's cooling
// stage). A page id is in at most one of the lists at a time.
//
// Contract
// - Lists are numbered 1..kMaxLists-1; listOf(pid) is 0 when pid is in none.
// - pushBack/pushFront need pid in no list; remove needs it in one; all O(1). front()/
//   back() are kNil on an empty list; next(pid) walks from front to back, prev(pid) back.
// - Not thread-safe: the owning policy locks around it.
// - Memory: 17 bytes per page id ever used (lazily committed, PerPage), plus the heads.
#pragma once

#include <array>
#include <cstdint>

#include "policy/per_page.hpp"

namespace vmstore::internal {

class IdLists {
 public:
  static constexpr uint64_t kNil = ~0ull;
  static constexpr int kMaxLists = 8;

  explicit IdLists(uint64_t maxPages) : nodes_(maxPages) {}

  int listOf(uint64_t pid) const { return nodes_[pid].list; }
  uint64_t size(int list) const { return heads_[list].size; }
  uint64_t front(int list) const { return heads_[list].first; }
  uint64_t back(int list) const { return heads_[list].last; }
  uint64_t next(uint64_t pid) const { return nodes_[pid].next; }
  uint64_t prev(uint64_t pid) const { return nodes_[pid].prev; }

  void pushBack(int list, uint64_t pid) {
    Head& h = heads_[list];
    Node& n = nodes_[pid];
    n.list = static_cast<uint8_t>(list);
    n.prev = h.last;
    n.next = kNil;
    if (h.last != kNil) nodes_[h.last].next = pid; else h.first = pid;
    h.last = pid;
    h.size++;
  }
  void pushFront(int list, uint64_t pid) {
    Head& h = heads_[list];
    Node& n = nodes_[pid];
    n.list = static_cast<uint8_t>(list);
    n.next = h.first;
    n.prev = kNil;
    if (h.first != kNil) nodes_[h.first].prev = pid; else h.last = pid;
    h.first = pid;
    h.size++;
  }
  void remove(uint64_t pid) {
    Node& n = nodes_[pid];
    Head& h = heads_[n.list];
    if (n.prev != kNil) nodes_[n.prev].next = n.next; else h.first = n.next;
    if (n.next != kNil) nodes_[n.next].prev = n.prev; else h.last = n.prev;
    n.list = 0;
    h.size--;
  }
  void moveToBack(int list, uint64_t pid) {
    remove(pid);
    pushBack(list, pid);
  }
  // Removes and returns the front id (kNil when empty).
  uint64_t popFront(int list) {
    uint64_t pid = heads_[list].first;
    if (pid != kNil) remove(pid);
    return pid;
  }
  // Bytes of links for `ids` page ids (what a policy reports as its memory).
  static uint64_t bytesFor(uint64_t ids) { return ids * sizeof(Node); }

 private:
  struct Node {
    uint64_t prev;
    uint64_t next;
    uint8_t list;  // 0: none
  };
  struct Head {
    uint64_t first = kNil;
    uint64_t last = kNil;
    uint64_t size = 0;
  };
  PerPage<Node> nodes_;
  std::array<Head, kMaxLists> heads_{};
};

}  // namespace vmstore::internal
