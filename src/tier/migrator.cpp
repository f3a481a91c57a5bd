#include "tier/migrator.hpp"

#include <cerrno>
#include <chrono>
#include <optional>

#include "os/memory.hpp"
#include "os/numa.hpp"

namespace vmstore::internal {

void Migrator::migrate(std::span<const PageRun> runs, int node, std::vector<bool>* moved) {
  moved->assign(runs.size(), false);
  if (runs.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  const std::optional<uint64_t> tlbBefore = tlbShootdowns();
  std::vector<void*> addrs;
  std::vector<bool> refused(runs.size(), false);
  for (size_t i = 0; i < runs.size(); i++) {
    refused[i] = failForTest_ && failForTest_(runs[i].pid);
    if (refused[i]) continue;
    for (uint64_t f = 0; f < runs[i].pages; f++) addrs.push_back(area_.pageAddress(runs[i].pid + f));
  }
  std::vector<int> status(addrs.size(), -EINVAL);
  uint64_t calls = 0;
  if (!addrs.empty() && mode_ == MigrateMode::kMovePages) {
    long r = numa::movePages(addrs, node, batch_, status);
    if (r < 0) {
      std::fill(status.begin(), status.end(), static_cast<int>(r));  // refused as a whole
      calls += 1;
    } else {
      calls += static_cast<uint64_t>(r);
    }
  } else if (!addrs.empty()) {
    for (size_t i = 0; i < addrs.size(); i++) {
      int r = numa::mbindPage(addrs[i], node);
      status[i] = r == 0 ? node : r;
      calls++;
    }
    // Back to the area's own placement, so its ranges merge again (nothing moves).
    for (size_t i = 0; i < runs.size(); i++) {
      if (refused[i]) continue;
      const PageRun& run = runs[i];
      numa::preferNode(area_.pageAddress(run.pid), run.pages * VmArea::kPageSize, homeNode_);
      calls++;
    }
  }
  size_t at = 0;
  uint64_t frames = 0;
  uint64_t failed = 0;
  for (size_t i = 0; i < runs.size(); i++) {
    bool ok = !refused[i];
    for (uint64_t f = 0; f < runs[i].pages && !refused[i]; f++, at++) {
      // -ENOENT (-EFAULT before Linux 6.x): no frame behind the address (never
      // touched, or released): nothing to move.
      if (status[at] != node && status[at] != -ENOENT && status[at] != -EFAULT) ok = false;
    }
    (*moved)[i] = ok;
    if (ok) {
      frames += runs[i].pages;
    } else {
      failed++;
    }
  }
  const std::optional<uint64_t> tlbAfter = tlbShootdowns();
  framesMoved_.fetch_add(frames, std::memory_order_relaxed);
  runsFailed_.fetch_add(failed, std::memory_order_relaxed);
  calls_.fetch_add(calls, std::memory_order_relaxed);
  nanos_.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - start)
                                             .count()),
                   std::memory_order_relaxed);
  if (tlbBefore && tlbAfter && *tlbAfter > *tlbBefore) tlb_.fetch_add(*tlbAfter - *tlbBefore, std::memory_order_relaxed);
}

}  // namespace vmstore::internal
