// MemoryCgroup: a fresh memory cgroup with a hard limit, made for one benchmark run so that
// everything the run uses (its heap, its buffer pool, and the kernel page cache of the
// files it reads and writes) stays within a stated budget. Without it, an engine that
// reads through the page cache (LMDB) or without direct I/O is not bounded by --pool.
//
// Contract
// - findMemoryCgroup(procSelfCgroup, mountinfo, &place, &why) reads the texts of
//   /proc/self/cgroup and /proc/self/mountinfo: the directory of this process's memory
//   cgroup, on the cgroup v1 memory hierarchy when one is mounted, else on the cgroup v2
//   hierarchy. False (why says which is missing) when there is none. Pure: no file access.
// - MemoryCgroup::make(limitBytes, &why) creates a new cgroup "vmstore-bench-<pid>-<n>":
//     v1: below this process's memory cgroup; memory.limit_in_bytes = limit and, when swap
//         accounting exists, memory.memsw.limit_in_bytes = limit (memory plus swap: no
//         swap beyond the limit); else memory.swappiness = 0.
//     v2: below this process's cgroup, after writing "+memory" into its
//         cgroup.subtree_control; when the kernel refuses that (the cgroup holds processes,
//         v2's no-internal-process rule) beside it, below the parent, if the parent's
//         subtree_control already has memory. memory.max = limit, memory.swap.max = 0
//         when the file exists.
//   It returns nullptr and sets *why (a sentence: what failed and the OS's reason) when no
//   cgroup can be made: not root, no memory controller, read-only cgroup file system.
//   Nothing is left behind on failure.
// - addProcess(pid) moves a process into it (before that process does any work, so all
//   its memory is charged here). False with *why on failure.
// - peakBytes(): the highest memory use charged (v1 memory.max_usage_in_bytes, v2
//   memory.peak; 0 where the kernel has no such file). oomKills(): processes the kernel
//   killed for this cgroup's limit (memory.oom_control / memory.events "oom_kill").
// - The destructor removes the cgroup; the caller must have waited for its processes.
//   It retries for up to a second while the kernel still lists exiting tasks.
// - describe(): one line for logs, e.g. "cgroup v1 below /sys/fs/cgroup/memory/x, limit
//   40.0 MiB, swap: memory+swap limited to the same (memsw)".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace vmstore::bench {

struct CgroupPlace {
  int version = 0;  // 1 or 2
  std::string dir;  // this process's memory cgroup, e.g. /sys/fs/cgroup/memory/a/b
};

bool findMemoryCgroup(const std::string& procSelfCgroup, const std::string& mountinfo,
                      CgroupPlace* place, std::string* why);

class MemoryCgroup {
 public:
  static std::unique_ptr<MemoryCgroup> make(uint64_t limitBytes, std::string* why);
  ~MemoryCgroup();
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  bool addProcess(pid_t pid, std::string* why);
  uint64_t peakBytes() const;
  uint64_t oomKills() const;
  uint64_t limitBytes() const { return limit_; }
  int version() const { return version_; }
  const std::string& dir() const { return dir_; }
  std::string describe() const;

 private:
  MemoryCgroup(int version, std::string dir, uint64_t limit, std::string swap)
      : version_(version), dir_(std::move(dir)), limit_(limit), swap_(std::move(swap)) {}
  int version_;
  std::string dir_;
  uint64_t limit_;
  std::string swap_;  // how swap is bounded, for describe()
};

}  // namespace vmstore::bench
