// Migrator: moves the frames behind pages of the buffer pool's area to another NUMA node,
// keeping their virtual addresses (paper 003: migration by page-table remapping, never
// memcpy), and counts what that costs.
//
// Contract
// - migrate(runs, node, moved): moves every frame of each run (a page, or a
//   variable-size page of several ids) to `node`. moved[i] says whether all of run i's
//   frames are on `node` afterwards. A run that fails (the node is full, a frame is busy)
//   does not stop the others: the caller keeps it where it was and retries it later
//   (the optimistic error handling the paper asks of move_pages2).
//   kMovePages: one move_pages(2) call per `batch` frames. kMbind: one mbind(2) per frame
//   (each binds the frame's range to the node and moves it), then one mbind over the run
//   restoring the area's placement (preferred: the fastest tier's node), so the area's
//   ranges merge again (otherwise every page would become a mapping of its own).
// - A frame with no memory behind it (never touched: reads as zeros) counts as moved: it
//   takes no memory on any node, and when it is touched the area's placement applies.
// - Counters (read any time): frames moved, runs that failed, system calls, nanoseconds
//   spent, and TLB shootdown interrupts counted on this machine during the calls (the
//   "TLB:" row of /proc/interrupts, read before and after each migrate(); 0 where the
//   row is missing). Called by one thread at a time (the buffer manager's eviction mutex).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "os/vm_area.hpp"
#include "vmstore/options.hpp"

namespace vmstore::internal {

class Migrator {
 public:
  // homeNode: the area's placement (where frames are first allocated).
  Migrator(const VmArea& area, MigrateMode mode, size_t batch, int homeNode)
      : area_(area), mode_(mode), batch_(batch == 0 ? 1 : batch), homeNode_(homeNode) {}

  void migrate(std::span<const PageRun> runs, int node, std::vector<bool>* moved);
  // For tests: runs whose head `fail` names are not moved and reported failed, as if the
  // kernel had refused them (a full node). Empty function: none. Before use.
  void failForTest(std::function<bool(uint64_t pid)> fail) { failForTest_ = std::move(fail); }

  MigrateMode mode() const { return mode_; }
  size_t batch() const { return batch_; }
  uint64_t framesMoved() const { return framesMoved_.load(std::memory_order_relaxed); }
  uint64_t runsFailed() const { return runsFailed_.load(std::memory_order_relaxed); }
  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }
  uint64_t nanos() const { return nanos_.load(std::memory_order_relaxed); }
  uint64_t tlbShootdowns() const { return tlb_.load(std::memory_order_relaxed); }

 private:
  const VmArea& area_;
  const MigrateMode mode_;
  const size_t batch_;
  const int homeNode_;
  std::atomic<uint64_t> framesMoved_{0};
  std::atomic<uint64_t> runsFailed_{0};
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> nanos_{0};
  std::atomic<uint64_t> tlb_{0};
  std::function<bool(uint64_t)> failForTest_;
};

}  // namespace vmstore::internal
