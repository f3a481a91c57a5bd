// readTrace: a whole trace file (trace_format.hpp) into memory, for the simulator.
//
// Contract
// - Reads through the Io interface. Returns a Status: IOError when the file cannot be
//   read, Corruption (naming the file and the block) on a bad magic, a truncated block
//   or a malformed reference. On success *out holds every reference in file order, the
//   largest page id seen and the number of references the engine recorded as misses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace_format.hpp"
#include "vmstore/status.hpp"

namespace vmstore::internal {

struct Trace {
  std::vector<TraceRef> refs;
  uint64_t maxPid = 0;
  uint64_t misses = 0;    // references the engine recorded as misses
  uint64_t distinct = 0;  // distinct page ids
  double engineHitRate() const {
    return refs.empty() ? 0 : 1.0 - static_cast<double>(misses) / static_cast<double>(refs.size());
  }
};

Status readTrace(const std::string& path, Trace* out);

}  // namespace vmstore::internal
