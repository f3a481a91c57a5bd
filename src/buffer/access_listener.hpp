// AccessListener: told of every page access of a buffer manager, for recording the
// page-reference string of a workload (issue 10 item 4: `vmstore bench --trace`).
//
// Contract
// - BufferManager::setAccessListener(l) (before use from many threads; nullptr: none)
//   makes every access call l->onAccess(pid, miss): hits (optimistic ones included, the
//   same accesses a policy's hit() sees) with miss == false, and every page read in on
//   demand with miss == true (read-ahead is not an access: no call). An access that
//   misses is reported once, as a miss. A variable-size page is reported as its head.
// - Called from any thread, concurrently; the listener protects itself, and must be
//   cheap (it is on the hit path) and must not throw.
// - The listener must outlive its registration.
#pragma once

#include <cstdint>

namespace vmstore::internal {

class AccessListener {
 public:
  virtual ~AccessListener() = default;
  virtual void onAccess(uint64_t pid, bool miss) noexcept = 0;
};

}  // namespace vmstore::internal
