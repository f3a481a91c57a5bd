// Policy: a page-replacement policy of the buffer manager (issue 10; thesis 002 ch. 1).
//
// Contract
// - A policy decides which resident pages to evict. It knows page ids, nothing else: no
//   page contents, no locks of the buffer manager, no storage. The same object runs in
//   the engine (many threads) and in the trace simulator (one thread), so what the
//   simulator says about a policy is what the engine does with it.
// - The buffer manager calls:
//   admit(pid)    when pid became resident (read in after a miss, or allocated). pid is
//                 not resident in the policy before; admit resets whatever the policy kept
//                 about pid's residency (ghost history of an evicted pid may remain and be
//                 consulted: ARC, 2Q, S3-FIFO).
//   hit(pid)      on an access to a resident page, optimistic reads included, but only if
//                 tracksHits() is true. It may race with eviction: pid may have been
//                 evicted or freed just before (or never admitted); hit must then be
//                 harmless (ignore it). It is the hot path: make it cheap.
//   victims(n, out)
//                 appends up to n distinct resident pids, the best victim first, and
//                 returns how many. It may age or reorder its own state (move a clock
//                 hand, decrement counts) but must not forget the pids it returns: each
//                 is then reported back exactly once, by evicted() or kept().
//   evicted(pid)  a candidate was evicted: forget it as resident (ghost history allowed).
//   kept(pid)     a candidate could not be evicted now (locked, in use): keep it, and
//                 treat that as a reference (thesis 1.2.4.2: a page in use is warm).
//   removed(pid)  pid was freed (deleted data): forget it, no ghost history.
// - Threads: hit, admit and removed may be called by any thread at any time, concurrently
//   with each other and with victims/evicted/kept. victims, evicted and kept are called
//   by one thread at a time (the buffer manager's eviction mutex). Each policy protects
//   its own structures; the cost of that protection on a hit is part of what the
//   benchmarks measure (thesis 1.3.5: a latch on every hit does not scale).
// - A variable-size page is one pid (its head) to the policy.
// - size() is the number of pids the policy holds as resident; after any sequence of
//   calls that respects the contract it equals admits - evicted - removed.
// - Policies are created by name (makePolicy, registry.hpp) with the pool size in pages
//   and the largest page id + 1 the policy may see (per-page state arrays are sized by
//   that, committed lazily: PerPage, per_page.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace vmstore::internal {

class Policy {
 public:
  virtual ~Policy() = default;
  virtual const char* name() const = 0;
  // False for policies that learn nothing from hits (FIFO, random): the buffer manager
  // then calls no hook on the hit path.
  virtual bool tracksHits() const { return true; }

  virtual void admit(uint64_t pid) = 0;
  virtual void hit(uint64_t pid) noexcept = 0;
  virtual size_t victims(size_t n, uint64_t* out) = 0;
  virtual void evicted(uint64_t pid) = 0;
  virtual void kept(uint64_t pid) = 0;
  virtual void removed(uint64_t pid) = 0;
  virtual uint64_t size() const = 0;
  // Bytes of memory the policy's structures take (resident and ghost entries), for the
  // statistics: what a policy costs in memory beside its hit rate.
  virtual uint64_t memoryBytes() const = 0;
};

}  // namespace vmstore::internal
