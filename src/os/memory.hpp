// Memory facts of this machine and process, for sizing checks.
//
// Contract
// - usableMemoryBytes(): the physical memory, or the memory-cgroup limit of this process
//   when that is lower (cgroup v1 memory.limit_in_bytes or v2 memory.max); 0 if unknown.
// - parseProcCgroupLine(line, &out): one line of /proc/<pid>/cgroup, "ID:CONTROLLERS:PATH"
//   (v2: "0::PATH", CONTROLLERS empty); false when the line has fewer than two colons.
// - tlbShootdowns(): TLB shootdown interrupts received by all CPUs of this machine since
//   boot (the "TLB:" row of /proc/interrupts, every process's), or nothing where the row
//   is missing (other architectures, a restricted /proc).
// - residentBytes(): this process's resident memory now (/proc/self/statm), 0 where it
//   cannot be read. It allocates nothing.
// - transparentHugePagesOn(): false where the kernel has transparent huge pages off
//   ("[never]" in /sys/kernel/mm/transparent_hugepage/enabled) or lacks them. Read once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vmstore::internal {

uint64_t usableMemoryBytes();

struct ProcCgroupLine {
  std::string id;
  std::string controllers;  // comma-separated (v1), empty (v2)
  std::string path;
};
bool parseProcCgroupLine(const std::string& line, ProcCgroupLine* out);

std::optional<uint64_t> tlbShootdowns();

uint64_t residentBytes();

bool transparentHugePagesOn();

}  // namespace vmstore::internal
