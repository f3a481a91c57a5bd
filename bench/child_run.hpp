// runChild: runs a program as a child process, optionally inside a MemoryCgroup that it
// joins before it executes anything, and collects its standard output. The bounded
// benchmark runs of `vmstore bench suite` are such children (tools/bench_suite.cpp).
//
// Contract
// - argv[0] is the program's path (no PATH search). The child's stdout is captured into
//   ChildResult::out; its stderr goes to the file stderrPath (created or truncated; the
//   parent's stderr when empty). Its stdin is /dev/null.
// - With a cgroup, the child is moved into it by the parent while it waits, before it
//   executes the program, so every page it ever touches is charged there. If the move
//   fails, the child is not started at all: runChild returns with started false and
//   *why set (the caller decides whether to run it unbounded instead, and labels it so).
// - SIGINT and SIGTERM are ignored by the parent while the child runs, and reset to their
//   defaults in the child: an interrupt stops the child (which cleans up after itself), and
//   the parent sees its exit status.
// - Returns after the child has exited: exitCode (or -1) and termSignal (or 0); with a
//   cgroup also its peak memory and the number of processes its limit killed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vmstore::bench {

class MemoryCgroup;

struct ChildResult {
  bool started = false;
  int exitCode = -1;   // when it exited
  int termSignal = 0;  // when a signal ended it
  std::string out;     // everything it wrote to stdout
  uint64_t peakBytes = 0;
  uint64_t oomKills = 0;
};

ChildResult runChild(const std::vector<std::string>& argv, const std::string& stderrPath,
                     MemoryCgroup* cgroup, std::string* why);

}  // namespace vmstore::bench
