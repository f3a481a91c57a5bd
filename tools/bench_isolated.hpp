// One benchmark run of `vmstore bench suite` in a process of its own: `vmstore bench
// WORKLOAD ...` executed as a child (this same executable), optionally inside a memory
// cgroup (bench/memory_cgroup.hpp), so that its memory, page cache included, is bounded.
//
// Contract
// - runIsolated(opts, cgroup, logPath) runs the workload opts.workload on opts.engine with
//   opts' threads, data, pool, seconds, durability and csv, in a fresh child process whose
//   stderr goes to logPath. With a cgroup the child joins it before it does any work.
//   The database directory is a fresh temporary one made here and removed here after the
//   child has exited, however it ended (a child killed by the cgroup's limit cannot).
// - Returns the child's figures from its JSON line (tx/s, load and measured seconds, the
//   line itself) and, with a cgroup, its peak memory; or ok false with `error` saying what
//   went wrong (exit status, a kill by the cgroup's out-of-memory killer, the log's last
//   lines). When the child cannot be placed in the cgroup it is not run: placed is false.
//   interrupted is true when SIGINT or SIGTERM ended the child (or it exited 130 after
//   cleaning up for one): the caller should stop, not go on to the next run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runner.hpp"

namespace vmstore::bench {
class MemoryCgroup;
}

namespace vmstore::cli {

struct IsolatedResult {
  bool ok = false;
  bool placed = true;  // false: the child could not join the cgroup and did not run
  bool interrupted = false;
  std::string error;
  std::string json;  // the child's JSON line
  double txPerSec = 0;
  double loadSeconds = 0;
  double measuredSeconds = 0;
  uint64_t peakBytes = 0;  // with a cgroup: its highest charge (memory.max_usage / peak)
};

IsolatedResult runIsolated(const bench::RunOptions& opts, bench::MemoryCgroup* cgroup,
                           const std::string& logPath);

// The same for any command of this executable that prints its result as a JSON line
// last: runs `vmstore ARGS... --dir=TMP` (TMP made and removed as above) and returns that
// line in json; the figures (txPerSec, ...) stay 0.
IsolatedResult runIsolatedCommand(const std::vector<std::string>& args, bench::MemoryCgroup* cgroup,
                                  const std::string& logPath);

// The number after "key": in a flat JSON object (a child's result line); false when
// absent.
bool jsonNumber(const std::string& json, const std::string& key, double* out);

}  // namespace vmstore::cli
