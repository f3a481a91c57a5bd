// The parts the policies share, so that each policy file holds only its own decisions.
//
// Contract
// - ListPolicy: a spin lock, IdLists (id_list.hpp) and the per-page "offered" flag of the
//   victims contract (policy.hpp: a pid offered by victims() is not offered again until
//   evicted() or kept() answers it). offerFront(list, ...) offers the not-yet-offered
//   ids of a list from its front; forget(pid) (under the lock) takes pid out of every
//   list and clears its flag, which is what removed() does.
// - DensePolicy: the same over a DenseSet (dense_set.hpp) of the resident ids, for the
//   policies that choose among all resident pages (random, LRU-2, LFU-DA); size() is the
//   set's size.
#pragma once

#include <cstdint>
#include <mutex>

#include "policy/dense_set.hpp"
#include "policy/id_list.hpp"
#include "policy/per_page.hpp"
#include "policy/policy.hpp"
#include "sync/spin_mutex.hpp"

namespace vmstore::internal {

class ListPolicy : public Policy {
 public:
  void removed(uint64_t pid) override {
    std::lock_guard g(mu_);
    forget(pid);
  }

 protected:
  explicit ListPolicy(uint64_t maxPages) : lists_(maxPages), offered_(maxPages) {}
  // Appends to out[found..n) up to `limit` ids of `list` not offered yet, front first,
  // marking them offered; returns the new `found`. Under mu_.
  size_t offerFront(int list, size_t n, uint64_t* out, size_t found, uint64_t limit = ~0ull) {
    for (uint64_t pid = lists_.front(list); pid != IdLists::kNil && found < n && limit > 0; pid = lists_.next(pid)) {
      if (offered_[pid]) continue;
      offered_[pid] = 1;
      out[found++] = pid;
      limit--;
    }
    return found;
  }
  // Under mu_.
  void forget(uint64_t pid) {
    offered_[pid] = 0;
    if (lists_.listOf(pid) != 0) lists_.remove(pid);
  }
  // Bytes of the lists' links and flags for `ids` ids, plus `perId` more bytes each.
  static uint64_t bytesFor(uint64_t ids, uint64_t perId = 0) { return IdLists::bytesFor(ids) + ids * (1 + perId); }

  mutable SpinMutex mu_;
  IdLists lists_;
  PerPage<uint8_t> offered_;
};

class DensePolicy : public Policy {
 public:
  void removed(uint64_t pid) override {
    std::lock_guard g(mu_);
    forget(pid);
  }
  uint64_t size() const override {
    std::lock_guard g(mu_);
    return resident_.size();
  }

 protected:
  explicit DensePolicy(uint64_t maxPages) : resident_(maxPages), offered_(maxPages) {}
  // Under mu_: true when pid was resident (and now is not).
  bool forget(uint64_t pid) {
    offered_[pid] = 0;
    if (!resident_.contains(pid)) return false;
    resident_.remove(pid);
    return true;
  }
  // Under mu_: admits pid unless resident; false if it was.
  bool add(uint64_t pid) {
    if (resident_.contains(pid)) return false;
    offered_[pid] = 0;
    resident_.insert(pid);
    return true;
  }
  // Bytes of the set and flags, plus `perId` more bytes per resident id. Under mu_.
  uint64_t bytesFor(uint64_t perId) const { return resident_.memoryBytes() + resident_.size() * (1 + perId); }

  mutable SpinMutex mu_;
  DenseSet resident_;
  PerPage<uint8_t> offered_;
};

}  // namespace vmstore::internal
