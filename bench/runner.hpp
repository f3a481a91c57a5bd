// The runner of `vmstore bench`: makes the engine and the workload from their registries,
// loads, measures, reports, checks and closes; or runs a micro-benchmark.
//
// Contract
// - runBenchmark(opts) runs one benchmark to the end in the calling thread (plus the
//   worker threads it starts) and returns its result; the CLI (tools/bench.cpp) and the
//   tests (tests/bench/bench_test.cpp) both call it.
// - Output goes to RunnerIo::out (the CSV header, one row per measured second, and as
//   the last line one JSON object; its log_bytes, log_syncs, checkpoints and
//   log_full_waits are the engine's log writes, syncs, checkpoints and writes that waited
//   for log room during the measured phase, its other counters totals since open; its
//   cpu_idle_s and cpu.NAME.* fields the measured phase's idle seconds of the machine and
//   CPU seconds per thread name, bench/thread_cpu.hpp: blocking mode's workers are
//   "bench-worker", task mode's "vms-task"; the object is flat) and to opts.csv when set (the same CSV rows);
//   progress and messages go to RunnerIo::log. Either stream may be null (discarded).
// - Unknown workload or engine names, engines this build lacks, a durability the engine
//   does not support (hashbm has no log) and bad option values throw
//   std::invalid_argument with a message that lists the valid names (the CLI exits 2). Engine and workload failures (a wrong answer, an engine error) throw
//   std::runtime_error after the engine is closed and the temporary directory removed.
// - Problems found by --check do not throw: RunResult::problems lists them (ok false).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "engine.hpp"
#include "workload.hpp"

namespace vmstore::bench {

// The cache budget when --pool is not given (RunOptions::pool == 0): 1 GiB.
inline constexpr uint64_t kDefaultPoolBytes = 1ull << 30;

// The CSV header of every workload run (micro-benchmarks write their own).
inline constexpr const char* kCsvHeader =
    "second,tx,read_mb_s,written_mb_s,page_hits,page_misses,evictions,victim_ms,tlb_shootdowns,"
    "engine,workload,threads,durability";

struct RunnerIo {
  std::ostream* out = nullptr;  // CSV rows and the JSON line
  std::ostream* log = nullptr;  // progress lines and messages
  // With a temporary directory (opts.dir empty): on SIGINT/SIGTERM remove it and exit
  // 130. Only for a process that runs nothing else (the CLI): it installs its own
  // handlers for these signals while it runs and restores the previous ones after.
  bool removeTempDirOnSignal = false;
};

struct RunResult {
  bool ok = true;                     // false when --check found problems
  std::vector<std::string> problems;  // from Workload::check
  std::string json;                   // the JSON line, without the newline
  uint64_t totalTx = 0;               // transactions in the measured phase
  double txPerSec = 0;                // totalTx / measured seconds
  uint64_t conflicts = 0;             // transactions given up (TransactionConflict), whole run
  double loadSeconds = 0;
  double measuredSeconds = 0;
  EngineStats stats;                  // engine counters at the end of the run
};

// True when `name` is a registered workload or micro-benchmark.
bool isWorkload(const std::string& name);
bool isMicroBenchmark(const std::string& name);

// Runs the workload or micro-benchmark opts.workload (see the contract above).
RunResult runBenchmark(const RunOptions& opts, const RunnerIo& io);

// A JSON string literal for `s` (quotes included).
std::string jsonString(const std::string& s);

// Sum of the "TLB:" row of /proc/interrupts (TLB shootdowns on all CPUs); 0 when it
// cannot be read.
uint64_t tlbShootdowns();

}  // namespace vmstore::bench
