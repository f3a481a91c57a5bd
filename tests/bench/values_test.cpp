// `vmstore bench values` (bench/values/, tools/bench_values.cpp): each measurement on
// every engine of this build at a tiny size through its API (throughput, churn, the
// zero-copy figure), then the command as a user runs it: a tiny configuration of every
// part on every engine completes (exit 0, a row per engine, size and case), and bad
// options are usage errors (exit 2) that say why and leave nothing behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "engine.hpp"
#include "values/values_bench.hpp"

namespace vmstore::bench::values {
namespace {

// The engines `bench values` compares by default: every engine of the build but hashbm.
std::vector<std::string> valueEngines() {
  std::vector<std::string> out;
  for (const std::string& e : engineNames()) {
    if (e != "hashbm") out.push_back(e);
  }
  return out;
}

TEST(BenchValues, ThroughputOnEveryEngine) {
  for (const std::string& engine : valueEngines()) {
    for (uint64_t size : {uint64_t{1} << 10, uint64_t{64} << 10}) {
      vmsunit::ScratchDir dir;
      ThroughputSpec spec;
      spec.engine = engine;
      spec.valueBytes = size;
      spec.dataBytes = 512 << 10;
      spec.poolBytes = 16 << 20;
      spec.threads = 2;
      spec.seconds = 0.05;
      spec.dir = dir.file("db");
      ThroughputResult r = runThroughput(spec);
      EXPECT_EQ(r.keys, spec.dataBytes / size) << engine;
      EXPECT_EQ(r.load.bytes, r.keys * size) << engine;
      EXPECT_GE(r.get.ops, 2u) << engine << ": at least one get per thread";
      EXPECT_GE(r.put.ops, 2u) << engine;
      EXPECT_LE(r.put.bytes, kPutRewrites * r.keys * size + 2 * size) << engine << ": the put phase's cap";
      EXPECT_GT(r.get.mbPerSec(), 0) << engine;
      const std::string json = toJson(spec, r);
      EXPECT_EQ(json.find("{\"engine\":\"" + engine + "\",\"value_size\":" + std::to_string(size)), 0u) << json;
      EXPECT_NE(json.find("\"put_mb_s\":"), std::string::npos) << json;
    }
  }
}

TEST(BenchValues, ChurnOnEveryEngine) {
  for (const std::string& engine : valueEngines()) {
    vmsunit::ScratchDir dir;
    ChurnSpec spec;
    spec.engine = engine;
    spec.liveBytes = 2 << 20;
    spec.maxValue = 256 << 10;
    spec.rounds = 3;
    spec.poolBytes = 16 << 20;
    spec.dir = dir.file("db");
    ChurnResult r = runChurn(spec);
    uint64_t live = 0;
    for (uint64_t s : churnSizes(spec)) live += s;
    EXPECT_EQ(r.liveBytes, live);
    EXPECT_GE(r.liveBytes, spec.liveBytes);
    EXPECT_EQ(r.writtenBytes, 3 * live);
    ASSERT_EQ(r.diskAfterRound.size(), 3u) << engine;
    EXPECT_GT(r.diskAfterRound[0], 0u) << engine;
    EXPECT_GE(r.worst, r.diskAfterRound[2]) << engine;
    EXPECT_GT(r.diskAfterClose, 0u) << engine;
    EXPECT_FALSE(r.files.empty()) << engine;
  }
}

TEST(BenchValues, ChurnSizesAreAFixedLogUniformMultiset) {
  ChurnSpec spec;
  spec.liveBytes = 64 << 20;
  const std::vector<uint64_t> a = churnSizes(spec);
  EXPECT_EQ(a, churnSizes(spec));
  uint64_t sum = 0, small = 0;
  for (uint64_t s : a) {
    EXPECT_GE(s, spec.minValue);
    EXPECT_LE(s, spec.maxValue);
    sum += s;
    small += s < (128 << 10) ? 1 : 0;  // the lower half of the exponents: about half the values
  }
  EXPECT_GE(sum, spec.liveBytes);
  EXPECT_LT(sum, spec.liveBytes + spec.maxValue);
  EXPECT_GT(small, a.size() / 3);
  EXPECT_LT(small, 2 * a.size() / 3);
}

TEST(BenchValues, ZeroCopyFigure) {
  vmsunit::ScratchDir dir;
  ZeroCopySpec spec;
  spec.valueBytes = 1 << 20;
  spec.poolBytes = 8 << 20;
  spec.seconds = 0.01;
  spec.dir = dir.file("db");
  ZeroCopyResult r = runZeroCopy(spec);
  EXPECT_GT(r.viewLargeNs, 0);
  EXPECT_GT(r.getSmallNs, 0);
  EXPECT_GT(r.viewSmallNs, 0);
  EXPECT_GT(r.getLargeNs, r.viewLargeNs) << "a copy of 1 MiB costs more than a view";
  EXPECT_GT(r.optSmallNs, 0);
  EXPECT_GT(r.getLargeNs, r.optLargeNs) << "a copy of 1 MiB costs more than an optimistic read";
}

TEST(BenchValues, BadSpecsAreInvalidArgument) {
  vmsunit::ScratchDir dir;
  ThroughputSpec spec;
  spec.engine = "vmstore";
  spec.valueBytes = 16;
  spec.dataBytes = 1 << 20;
  spec.poolBytes = 16 << 20;
  spec.dir = dir.file("db");
  EXPECT_THROW(runThroughput(spec), std::invalid_argument);
  spec.valueBytes = 4096;
  spec.seconds = 0;
  EXPECT_THROW(runThroughput(spec), std::invalid_argument);
  spec.seconds = 1;
  spec.engine = "nosuch";
  EXPECT_THROW(runThroughput(spec), std::invalid_argument);
  ZeroCopySpec zero;
  zero.valueBytes = 8 << 20;
  zero.poolBytes = 16 << 20;  // a value needs a little more than half
  zero.dir = dir.file("zero");
  EXPECT_THROW(runZeroCopy(zero), std::invalid_argument);
  ChurnSpec churn;
  churn.engine = "vmstore";
  churn.minValue = 1 << 20;
  churn.maxValue = 1 << 10;
  churn.dir = dir.file("churn");
  EXPECT_THROW(runChurn(churn), std::invalid_argument);
}

// ---- through the CLI ---------------------------------------------------------------

using vmsbench::CliRun;
using vmsbench::readAll;

CliRun values(const vmsunit::ScratchDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), "values");
  return vmsbench::bench(dir, std::move(args));
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(BenchValuesCli, TinyRunOnEveryEngine) {
  SKIP_WITHOUT_CLI();
  vmsunit::ScratchDir dir;
  const std::string out = dir.file("results");
  CliRun run = values(dir, {"--value-sizes=4K,64K", "--data=512K", "--pool=16M", "--oom-data=4M", "--oom-pool=1M",
                            "--memory-allowance=64M", "--seconds=0.05", "--out=" + out});
  ASSERT_EQ(run.result.exitCode, 0) << run.err;
  const std::vector<std::string> engines = valueEngines();
  const std::string csv = readAll(out + "/throughput.csv");
  EXPECT_EQ(count(csv, ",ok,"), 2 * 2 * engines.size()) << csv;  // cases x sizes x engines
  for (const std::string& e : engines) {
    EXPECT_NE(csv.find("mem," + e + ",65536,8,"), std::string::npos) << csv;
    EXPECT_NE(run.result.out.find(e), std::string::npos) << run.result.out;
  }
  EXPECT_NE(run.result.out.find("gets (random keys"), std::string::npos) << run.result.out;
  EXPECT_NE(run.result.out.find("zero-copy reads (vmstore"), std::string::npos) << run.result.out;
  EXPECT_NE(run.result.out.find("vmstore against the best (mem)"), std::string::npos) << run.result.out;
  const std::string jsonl = readAll(out + "/results.jsonl");
  EXPECT_EQ(count(jsonl, "\"part\":\"throughput\""), 2 * 2 * engines.size()) << jsonl;
  EXPECT_EQ(count(jsonl, "\"part\":\"zero-copy\""), 1u) << jsonl;
  EXPECT_EQ(readAll(out + "/summary.txt").find("in memory (mem)"), 1u);
}

TEST(BenchValuesCli, TinyChurnOnEveryEngine) {
  SKIP_WITHOUT_CLI();
  vmsunit::ScratchDir dir;
  const std::string out = dir.file("results");
  CliRun run = values(dir, {"--churn", "--churn-data=1M", "--rounds=2", "--pool=16M", "--out=" + out});
  ASSERT_EQ(run.result.exitCode, 0) << run.err;
  const std::string csv = readAll(out + "/churn.csv");
  for (const std::string& e : valueEngines()) EXPECT_NE(csv.find("\n" + e + ","), std::string::npos) << csv;
  EXPECT_EQ(count(csv, ",ok\n"), valueEngines().size()) << csv;
  EXPECT_NE(run.result.out.find("space after churn"), std::string::npos) << run.result.out;
}

TEST(BenchValuesCli, BadOptionsAreUsageErrors) {
  SKIP_WITHOUT_CLI();
  vmsunit::ScratchDir dir;
  const std::string out = "--out=" + dir.file("never");
  std::vector<vmsbench::UsageCase> cases = {
      {{"--value-sizes=12"}, "--value-sizes: 12 is below the smallest value measured, 64 bytes"},
      {{"--value-sizes=2G"}, "--value-sizes: 2G is over 1G"},
      {{"--value-sizes=big"}, "--value-sizes: 'big' is not a size"},
      {{"--engines=hashbm"}, "engine hashbm cannot take part"},
      {{"--engines=nosuch"}, "unknown engine 'nosuch'"},
      {{"--cases=disk"}, "--cases: unknown case 'disk' (cases: mem, oom)"},
      {{"--churn", "--zero-copy"}, "--churn and --zero-copy: give at most one"},
      {{"--rounds=3"}, "--rounds is for --churn"},
      {{"--churn", "--value-sizes=1K"}, "--value-sizes does not apply to --churn"},
      {{"--pool=64M"}, "--pool=64M: a value of 64M needs a pool of at least twice its size plus two pages"},
      {{"--oom-pool=128M"}, "--oom-pool=128M: a value of 64M needs a pool of at least"},
      {{"--data=1G"}, "--data=1G must be at most half of --pool=1G"},
      {{"--oom-data=100M", "--oom-pool=200M"}, "--oom-data must be larger than --oom-pool"},
      {{"--memory-bound=maybe"}, "--memory-bound=maybe: use cgroup or unbounded"},
      {{"--seconds=0"}, "--seconds=0: not a positive number of seconds"},
      {{"--threads=0"}, "--threads=0: must be at least 1"},
      {{"--dir=/tmp/x"}, "--dir and --child go together"},
      {{"--zero-copy", "--engines=lmdb"}, "--zero-copy measures vmstore's zero-copy reads: --engines must be vmstore"},
  };
  for (vmsbench::UsageCase& c : cases) c.args.push_back(out);
  vmsbench::expectUsageErrors(dir, {"values"}, cases);
  EXPECT_FALSE(std::filesystem::exists(dir.file("never"))) << "a refused run wrote results";
}

}  // namespace
}  // namespace vmstore::bench::values
