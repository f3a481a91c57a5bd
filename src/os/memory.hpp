// Memory facts of this machine and process, for sizing checks.
//
// Contract
// - usableMemoryBytes(): the physical memory, or the memory-cgroup limit of this process
//   when that is lower (cgroup v1 memory.limit_in_bytes or v2 memory.max); 0 if unknown.
#pragma once

#include <cstdint>

namespace vmstore::internal {

uint64_t usableMemoryBytes();

}  // namespace vmstore::internal
