// `vmstore bench suite`'s memory bound, through the CLI as a user runs it: bad values of
// --memory-bound, --memory-allowance and --cases are usage errors (exit 2) that say why;
// the out-of-memory case with --memory-bound=both runs once in a memory cgroup of the pool
// plus the allowance (or, where no cgroup can be made, says so and labels every run
// unbounded) and once unbounded, each under its own label in summary.csv and results.jsonl.
// A workload run's bad --scan-length and --warmup are usage errors too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_cli.hpp"
#include "memory_cgroup.hpp"

namespace {

using vmsbench::bench;
using vmsbench::CliRun;
using vmsbench::readAll;
using vmstore::bench::MemoryCgroup;

CliRun suite(const vmsunit::ScratchDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), "suite");
  return bench(dir, std::move(args));
}

TEST(BenchSuiteMemoryBound, BadValuesAreUsageErrors) {
  SKIP_WITHOUT_CLI();
  vmsunit::ScratchDir dir;
  const std::string out = "--out=" + dir.file("never");
  vmsbench::expectUsageErrors(dir, {"suite"},
                              {
                                  {{"--memory-bound=sometimes", out}, "--memory-bound=sometimes: use cgroup, unbounded or both"},
                                  {{"--memory-allowance=lots", out}, "--memory-allowance=lots: not a size"},
                                  {{"--memory-allowance=100K", out}, "must be at least"},
                                  {{"--memory-allowance=2T", out}, "--memory-allowance: at most 1T"},
                                  {{"--cases=lookup-oom,nope", out}, "unknown case 'nope'"},
                              });
  EXPECT_FALSE(std::filesystem::exists(dir.file("never"))) << "a refused run wrote results";
}

TEST(BenchOptions, BadScanLengthAndWarmupAreUsageErrors) {
  SKIP_WITHOUT_CLI();
  vmsunit::ScratchDir dir;
  const std::string db = "--dir=" + dir.file("never");
  vmsbench::expectUsageErrors(dir, {},
                              {
                                  {{"lookup", "--scan-length=5", db}, "--scan-length is for the scan workload"},
                                  {{"scan", "--scan-length=0", db}, "--scan-length=0: must be at least 1"},
                                  {{"scan", "--warmup=4000", db}, "--warmup: at most 3600 seconds"},
                                  {{"scan", "--warmup=soon", db}, "--warmup=soon: not a count"},
                                  {{"lookup", "--tpcc-locks=off", db}, "--tpcc-locks is for tpcc"},
                                  {{"tpcc", "--tpcc-locks=maybe", db}, "--tpcc-locks=maybe: use on or off"},
                                  {{"tpcc", "--tpcc-locks=off", "--check", db}, "--check with --tpcc-locks=off"},
                                  {{"lookup", "--tpcc-get-many=off", db}, "--tpcc-get-many is for tpcc"},
                                  {{"tpcc", "--tpcc-get-many=yes", db}, "--tpcc-get-many=yes: use on or off"},
                                  {{"lookup", "--tpcc-seed=7", db}, "--tpcc-seed is for tpcc"},
                                  {{"tpcc", "--tpcc-seed=0", db}, "--tpcc-seed=0: must be at least 1"},
                                  {{"tpcc", "--tpcc-seed=x", db}, "--tpcc-seed=x: not a count"},
                                  {{"tpcc", "--transactions=maybe", db}, "--transactions=maybe: use on or off"},
                                  {{"tpcc", "--engine=lmdb", "--transactions=on", db}, "--transactions is for --engine=vmstore"},
                                  // A bare option before another is missing its value, not given that one.
                                  {{"tpcc", "--tpcc-locks", "--check", db}, "option --tpcc-locks needs a value"},
                              });
  EXPECT_FALSE(std::filesystem::exists(dir.file("never"))) << "a refused run made a database";
}

TEST(BenchSuiteMemoryBound, OutOfMemoryCaseBoundedAndUnboundedSideBySide) {
  SKIP_WITHOUT_CLI();
  vmsunit::ScratchDir dir;
  const std::string out = dir.file("results");
  CliRun run = suite(dir, {"--cases=lookup-oom", "--engines=vmstore", "--seconds=0.3",
                           "--memory-bound=both", "--memory-allowance=40M", "--no-plots",
                           "--out=" + out});
  ASSERT_EQ(run.result.exitCode, 0) << run.err;
  const std::string summary = readAll(out + "/summary.csv");
  const std::string jsonl = readAll(out + "/results.jsonl");
  const uint64_t limit = (24ull << 20) + (40ull << 20);
  std::string why;
  const bool cgroupsHere = MemoryCgroup::make(limit, &why) != nullptr;
  EXPECT_NE(summary.find("memory_bound,memory_limit,memory_peak"), std::string::npos) << summary;
  EXPECT_NE(summary.find("lookup-oom-unbounded,vmstore,"), std::string::npos) << summary;
  EXPECT_NE(summary.find(",unbounded,0,0"), std::string::npos) << summary;
  EXPECT_NE(jsonl.find("{\"case\":\"lookup-oom-unbounded\",\"memory_bound\":\"unbounded\""),
            std::string::npos)
      << jsonl;
  if (!cgroupsHere) {
    // Never labelled as bounded: one unbounded run, and the reason on stderr.
    EXPECT_EQ(summary.find("\nlookup-oom,"), std::string::npos) << summary;
    EXPECT_NE(run.err.find("no memory cgroup can be made"), std::string::npos) << run.err;
    GTEST_SKIP() << "no memory cgroup here (" << why << "); checked the unbounded label only";
  }
  // The bounded run: its limit, and a peak within it (the pool alone is 24 MiB).
  const std::string row = "\nlookup-oom,vmstore,";
  size_t at = summary.find(row);
  ASSERT_NE(at, std::string::npos) << summary;
  std::string line = summary.substr(at + 1, summary.find('\n', at + 1) - at - 1);
  EXPECT_NE(line.find(",ok,none,cgroup," + std::to_string(limit) + ","), std::string::npos) << line;
  const uint64_t peak = std::stoull(line.substr(line.rfind(',') + 1));
  EXPECT_GT(peak, 24ull << 20) << line;
  EXPECT_LE(peak, limit) << line;
  EXPECT_NE(jsonl.find("{\"case\":\"lookup-oom\",\"memory_bound\":\"cgroup\",\"memory_limit\":" +
                       std::to_string(limit)),
            std::string::npos)
      << jsonl;
  EXPECT_NE(readAll(out + "/summary.txt").find("every engine in a memory cgroup"), std::string::npos);
}

}  // namespace
