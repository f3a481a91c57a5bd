// The micro-benchmarks of `vmstore bench` (bench/micro/) at tiny sizes: each runs through
// the runner, writes its CSV rows and ends with a JSON line whose main field is positive.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "runner.hpp"
#include "workload.hpp"

namespace vmstore::bench {
namespace {

struct MicroRun {
  std::string csvHeader;
  int csvRows = 0;
  std::string json;
};

MicroRun runMicro(RunOptions opts) {
  std::ostringstream out;
  std::ostringstream log;
  RunnerIo io;
  io.out = &out;
  io.log = &log;
  RunResult result = runBenchmark(opts, io);
  MicroRun run;
  std::istringstream lines(out.str());
  std::string line, last;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (run.csvHeader.empty()) {
      run.csvHeader = line;
    } else if (line[0] != '{') {
      run.csvRows++;
    }
    last = line;
  }
  run.json = last;
  EXPECT_EQ(result.json, last);
  return run;
}

// The value of a numeric JSON field, or -1 when it is missing or null.
double field(const std::string& json, const std::string& name) {
  std::smatch m;
  std::regex re("\"" + name + "\":(-?[0-9.eE+-]+)");
  if (!std::regex_search(json, m, re)) return -1;
  return std::stod(m[1].str());
}

std::string stringField(const std::string& json, const std::string& name) {
  std::smatch m;
  std::regex re("\"" + name + "\":\"([^\"]*)\"");
  return std::regex_search(json, m, re) ? m[1].str() : "";
}

TEST(MicroBench, Registered) {
  for (const char* name : {"page-access", "vm-alloc", "read-io", "checkpoint-latency", "open-latency", "batch-write"}) {
    EXPECT_TRUE(isMicroBenchmark(name)) << name;
  }
}

TEST(MicroBench, PageAccessTiny) {
  RunOptions opts;
  opts.workload = "page-access";
  opts.data = 64ull << 20;
  opts.seconds = 0.05;
  MicroRun run = runMicro(opts);
  EXPECT_EQ(run.csvHeader.rfind("variant,step,working_set,", 0), 0u) << run.csvHeader;
  EXPECT_EQ(run.csvRows, 12);  // 6 lines x 2 working sets
  EXPECT_GT(field(run.json, "overhead"), 0) << run.json;
  EXPECT_GT(field(run.json, "dram_array_ns"), 0) << run.json;
  EXPECT_GT(field(run.json, "cache_version_ns"), 0) << run.json;
  EXPECT_GT(field(run.json, "dram_hash_ns"), 0) << run.json;
}

TEST(MicroBench, VmAllocTiny) {
  RunOptions opts;
  opts.workload = "vm-alloc";
  opts.threads = 1;
  opts.seconds = 0.1;
  MicroRun run = runMicro(opts);
  EXPECT_EQ(run.csvHeader.rfind("variant,threads,ops,", 0), 0u) << run.csvHeader;
  EXPECT_EQ(run.csvRows, 2);
  EXPECT_GT(field(run.json, "madvise_ops_per_s"), 0) << run.json;
  if (stringField(run.json, "process_madvise") == "available") {
    EXPECT_GT(field(run.json, "batch_speedup"), 0) << run.json;
  } else {
    EXPECT_NE(run.json.find("\"batch_speedup\":null"), std::string::npos) << run.json;
  }
}

TEST(MicroBench, CheckpointLatencyTiny) {
  RunOptions opts;
  opts.workload = "checkpoint-latency";
  opts.threads = 2;
  opts.data = 100;
  opts.pool = 8ull << 20;
  opts.seconds = 0.1;
  MicroRun run = runMicro(opts);
  EXPECT_EQ(run.csvHeader, "threads,checkpoints,p50_ms,p99_ms,max_ms,cut_wait_avg_ms,puts_per_s") << run.csvHeader;
  EXPECT_EQ(run.csvRows, 2);  // 1 and 2 threads
  EXPECT_GT(field(run.json, "checkpoints"), 0) << run.json;
  EXPECT_GT(field(run.json, "max_ms"), 0) << run.json;
  EXPECT_GT(field(run.json, "puts_per_s"), 0) << run.json;
  EXPECT_GE(field(run.json, "cut_wait_max_ms"), field(run.json, "cut_wait_avg_ms")) << run.json;
}

// Its batches read a written key back now and then (a wrong value fails the run).
TEST(MicroBench, BatchWriteTiny) {
  RunOptions opts;
  opts.workload = "batch-write";
  opts.data = 2000;
  opts.batch = 16;
  opts.pool = 8ull << 20;
  opts.seconds = 0.05;
  opts.threads = 2;  // the CLI's default: this benchmark runs one thread all the same
  MicroRun run = runMicro(opts);
  EXPECT_EQ(run.csvHeader, "config,batch,puts_per_s") << run.csvHeader;
  EXPECT_EQ(field(run.json, "threads"), 1) << run.json;
  EXPECT_EQ(run.csvRows, 5);  // single, update, sorted, insert, delete
  EXPECT_EQ(field(run.json, "batch"), 16) << run.json;
  for (const char* name :
       {"single_puts_per_s", "update_puts_per_s", "sorted_puts_per_s", "insert_puts_per_s", "delete_per_s"}) {
    EXPECT_GT(field(run.json, name), 0) << name << ": " << run.json;
  }
}

TEST(MicroBench, ReadIoTiny) {
  RunOptions opts;
  opts.workload = "read-io";
  opts.threads = 1;
  opts.data = 16ull << 20;
  opts.seconds = 0.05;
  MicroRun run = runMicro(opts);
  EXPECT_EQ(run.csvHeader.rfind("api,target,threads,queue_depth,", 0), 0u) << run.csvHeader;
  EXPECT_GE(run.csvRows, 2);  // pread into both targets (+ io_uring QD 1..128 with liburing)
  EXPECT_GT(field(run.json, "iops"), 0) << run.json;
  EXPECT_GT(field(run.json, "fixed_iops_best"), 0) << run.json;
  EXPECT_EQ(field(run.json, "threads"), 1) << run.json;  // the most it ran
}

}  // namespace
}  // namespace vmstore::bench
