// `vmstore bench policies` the way a user runs it: a tiny run end to end (summary.csv
// with one row per policy, the OPT and simulator columns filled and OPT on top), and its
// usage errors.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "bench_cli.hpp"

namespace {

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string f;
  while (std::getline(in, f, ',')) out.push_back(f);
  return out;
}

TEST(BenchPolicies, TinyRunWritesASummaryWithOpt) {
  SKIP_WITHOUT_CLI();
  vmsunit::ScratchDir dir;
  const std::string out = dir.file("results");
  vmsbench::CliRun run = vmsbench::bench(dir, {"policies", "--workloads=ycsb-c", "--policies=clock,sieve,lru",
                                               "--pools=20", "--seconds=1", "--warmup=0", "--ycsb-data=20000",
                                               "--no-plots", "--out=" + out});
  ASSERT_EQ(run.result.exitCode, 0) << run.err;
  std::string summary = vmsbench::readAll(out + "/summary.csv");
  std::stringstream lines(summary);
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header,
            "workload,pool_percent,pool_bytes,policy,tx_per_s,hit_rate,victim_ms_per_s,sim_hit_rate,opt_hit_rate,"
            "policy_bytes,resident_set,resident_set_bytes,a0_hit_rate");
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f = fields(line);
    ASSERT_EQ(f.size(), 13u) << line;
    EXPECT_EQ(f[10], "hash");
    EXPECT_GT(std::stoull(f[11]), 0u) << line;
    if (f[3] != "clock") {
      EXPECT_GT(std::stoull(f[9]), 0u) << line;
    }
    EXPECT_EQ(f[0], "ycsb-c");
    EXPECT_EQ(f[1], "20");
    EXPECT_GT(std::stod(f[4]), 0) << line;
    double hit = std::stod(f[5]), sim = std::stod(f[7]), opt = std::stod(f[8]);
    EXPECT_GT(hit, 0.0) << line;
    EXPECT_LT(hit, 1.0) << line;
    EXPECT_GE(opt, sim) << "OPT is the best hit rate on the trace: " << line;
    double a0 = std::stod(f[12]);
    EXPECT_GT(a0, 0.0) << line;
    EXPECT_LE(a0, 1.0) << line;
    rows++;
  }
  EXPECT_EQ(rows, 3);
  EXPECT_NE(run.result.out.find("sieve"), std::string::npos) << run.result.out;
}

TEST(BenchPolicies, BadArgumentsAreUsageErrors) {
  SKIP_WITHOUT_CLI();
  vmsunit::ScratchDir dir;
  for (std::vector<std::string> args : {std::vector<std::string>{"policies", "--policies=mru"},
                                        std::vector<std::string>{"policies", "--workloads=nope"},
                                        std::vector<std::string>{"policies", "--pools=0"},
                                        std::vector<std::string>{"policies", "--resident-set=tree"}}) {
    vmsbench::CliRun run = vmsbench::bench(dir, args);
    EXPECT_EQ(run.result.exitCode, 2) << args[1] << ": " << run.err;
    EXPECT_NE(run.err.find(args[1].substr(2, args[1].find('=') - 2)), std::string::npos) << run.err;
  }
}

}  // namespace
