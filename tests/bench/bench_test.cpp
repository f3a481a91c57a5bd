// The benchmark runner (bench/runner.hpp) end to end, through its API: every registered
// workload on every engine of this build runs for a moment at tiny scale (2 threads),
// completes transactions, passes its --check, and prints the CSV header, per-second rows
// and a well-formed JSON line last; every micro-benchmark runs at a tiny size; bad names
// are std::invalid_argument. Each case well under a second or two; the file under 60 s.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine.hpp"
#include "runner.hpp"
#include "workload.hpp"

#ifndef VMSTORE_TEST_TMPDIR
#define VMSTORE_TEST_TMPDIR "/tmp"
#endif

namespace vmstore::bench {
namespace {

// A flat JSON object of string, number, boolean and null values (what the runner writes):
// the fields, or false when `text` is not one.
bool parseFlatJson(const std::string& text, std::map<std::string, std::string>* fields) {
  size_t i = 0;
  auto ws = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  };
  auto str = [&](std::string* out) {
    if (i >= text.size() || text[i] != '"') return false;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\') {
        if (++i >= text.size()) return false;
      }
      out->push_back(text[i]);
    }
    if (i >= text.size()) return false;
    ++i;
    return true;
  };
  ws();
  if (i >= text.size() || text[i++] != '{') return false;
  ws();
  if (i < text.size() && text[i] == '}') return ++i == text.size();
  while (true) {
    std::string key, value;
    ws();
    if (!str(&key)) return false;
    ws();
    if (i >= text.size() || text[i++] != ':') return false;
    ws();
    if (i < text.size() && text[i] == '"') {
      if (!str(&value)) return false;
    } else {
      while (i < text.size() && text[i] != ',' && text[i] != '}' && text[i] != ' ') {
        value.push_back(text[i++]);
      }
      if (value.empty()) return false;
      if (value != "true" && value != "false" && value != "null") {
        size_t used = 0;
        try {
          std::stod(value, &used);
        } catch (...) {
          return false;
        }
        if (used != value.size()) return false;
      }
    }
    if (fields->count(key) != 0) return false;
    (*fields)[key] = value;
    ws();
    if (i >= text.size()) return false;
    if (text[i] == '}') return ++i == text.size();
    if (text[i++] != ',') return false;
  }
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

size_t commas(const std::string& s) { return std::count(s.begin(), s.end(), ','); }

// Tiny data of each workload: records, or warehouses for tpcc.
uint64_t tinyData(const std::string& workload) {
  if (workload == "tpcc") return 1;
  return 5000;
}

struct Case {
  std::string engine;
  std::string workload;
};

std::vector<Case> allCases() {
  std::vector<Case> out;
  for (const std::string& w : WorkloadRegistry::instance().names()) {
    for (const std::string& e : engineNames()) out.push_back({e, w});
  }
  return out;
}

std::string caseName(const testing::TestParamInfo<Case>& info) {
  std::string name = info.param.engine + "_" + info.param.workload;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class WorkloadOnEngine : public testing::TestWithParam<Case> {};

TEST_P(WorkloadOnEngine, RunsAtTinyScale) {
  const Case& c = GetParam();
  const std::string dir = std::string(VMSTORE_TEST_TMPDIR) + "/bench_" + c.engine + "_" +
                          c.workload;
  std::filesystem::remove_all(dir);
  RunOptions opts;
  opts.workload = c.workload;
  opts.engine = c.engine;
  opts.threads = 2;
  opts.data = tinyData(c.workload);
  opts.pool = 64ull << 20;
  opts.seconds = 0.5;
  opts.dir = dir;
  opts.csv = dir + ".csv";
  opts.check = true;
  std::ostringstream out, log;
  RunResult result = runBenchmark(opts, RunnerIo{&out, &log, false});

  EXPECT_GT(result.totalTx, 0u) << log.str();
  EXPECT_GT(result.txPerSec, 0);
  EXPECT_TRUE(result.ok) << log.str();
  EXPECT_TRUE(result.problems.empty());

  const std::vector<std::string> stdoutLines = lines(out.str());
  ASSERT_GE(stdoutLines.size(), 3u) << out.str();
  EXPECT_EQ(stdoutLines.front(), kCsvHeader);
  for (size_t i = 1; i + 1 < stdoutLines.size(); ++i) {
    EXPECT_EQ(commas(stdoutLines[i]), commas(kCsvHeader)) << stdoutLines[i];
    EXPECT_TRUE(stdoutLines[i].ends_with(",none")) << stdoutLines[i];
  }
  EXPECT_EQ(stdoutLines.back(), result.json);
  std::map<std::string, std::string> json;
  ASSERT_TRUE(parseFlatJson(result.json, &json)) << result.json;
  EXPECT_EQ(json["engine"], c.engine);
  EXPECT_EQ(json["workload"], c.workload);
  EXPECT_EQ(json["threads"], "2");
  EXPECT_EQ(json["durability"], "none");  // the default: as the paper ran every engine
  EXPECT_EQ(json["log_bytes"], "0");
  EXPECT_EQ(json["log_syncs"], "0");
  EXPECT_EQ(json["data"], std::to_string(opts.data));
  EXPECT_EQ(json["pool"], std::to_string(opts.pool));
  EXPECT_GT(std::stod(json["tx_per_s"]), 0);
  EXPECT_EQ(json.count("load_s"), 1u);
  EXPECT_EQ(json.count("seconds"), 1u);
  EXPECT_EQ(json["check"], "ok");
  EXPECT_EQ(json.count("tlb_shootdowns"), 1u);
  if (c.workload == "tpcc") {  // the mode is in the results
    EXPECT_EQ(json["tpcc_locks"], "on");
    EXPECT_EQ(json["tpcc_get_many"], "on");
    EXPECT_EQ(json["tpcc_warehouse"], "home");
  }
  if (json["evictions"] == "0") {  // a 64 MiB pool holds the tiny data: nothing evicted
    EXPECT_EQ(json["tlb_shootdowns_per_eviction"], "null") << "no evictions to divide by";
  }

  // --csv holds the same CSV rows (no JSON line).
  std::ifstream csv(opts.csv);
  std::stringstream csvText;
  csvText << csv.rdbuf();
  std::vector<std::string> csvLines = lines(csvText.str());
  EXPECT_EQ(csvLines.size() + 1, stdoutLines.size());
  if (!csvLines.empty()) {
    EXPECT_EQ(csvLines.front(), kCsvHeader);
  }

  std::filesystem::remove_all(dir);
  std::filesystem::remove(opts.csv);
}

INSTANTIATE_TEST_SUITE_P(All, WorkloadOnEngine, testing::ValuesIn(allCases()), caseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WorkloadOnEngine);

// Every workload in task mode (vmstore only: 8 tasks per thread, a pool much smaller than
// the data so that tasks suspend on misses), with io=uring and io=sync, checked; and
// lookup through getMany batches. Other engines refuse task mode.
class WorkloadInTaskMode : public testing::TestWithParam<std::string> {};

// The settings the small runs below share: a 1 MiB pool (data far larger), half a
// second, checked afterwards, in dir.
RunOptions smallCheckedRun(const std::string& workload, const std::string& dir) {
  RunOptions opts;
  opts.workload = workload;
  opts.pool = 1ull << 20;
  opts.seconds = 0.5;
  opts.dir = dir;
  opts.check = true;
  return opts;
}

TEST_P(WorkloadInTaskMode, RunsAndChecks) {
  for (bool syncIo : {false, true}) {
    SCOPED_TRACE(syncIo ? "io=sync" : "io=uring");
    const std::string dir = std::string(VMSTORE_TEST_TMPDIR) + "/bench_tasks_" + GetParam();
    std::filesystem::remove_all(dir);
    RunOptions opts = smallCheckedRun(GetParam(), dir);
    opts.threads = 2;
    opts.inflight = 8;
    opts.syncIo = syncIo;
    opts.data = tinyData(GetParam());
    std::ostringstream out, log;
    RunResult result = runBenchmark(opts, RunnerIo{&out, &log, false});
    EXPECT_GT(result.totalTx, 0u) << log.str();
    EXPECT_TRUE(result.ok) << log.str();
    std::map<std::string, std::string> json;
    ASSERT_TRUE(parseFlatJson(result.json, &json)) << result.json;
    EXPECT_EQ(json["inflight"], "8");
    EXPECT_EQ(json["io"], syncIo ? "sync" : "uring");
    std::filesystem::remove_all(dir);
  }
}

INSTANTIATE_TEST_SUITE_P(All, WorkloadInTaskMode, testing::ValuesIn(WorkloadRegistry::instance().names()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(BenchRunner, LookupInGetManyBatchesAndTaskModeOnlyOnVmstore) {
  const std::string dir = std::string(VMSTORE_TEST_TMPDIR) + "/bench_batch";
  std::filesystem::remove_all(dir);
  RunOptions opts = smallCheckedRun("lookup", dir);
  opts.threads = 1;
  opts.batch = 64;
  opts.data = 20000;
  std::ostringstream out, log;
  RunResult result = runBenchmark(opts, RunnerIo{&out, &log, false});
  EXPECT_GT(result.totalTx, 0u) << log.str();
  EXPECT_TRUE(result.ok) << log.str();
  EXPECT_GT(result.stats.pageMisses, 0u);
  std::filesystem::remove_all(dir);
  for (const std::string& e : engineNames()) {
    if (e == "vmstore") continue;
    RunOptions other = opts;
    other.engine = e;
    other.batch = 0;
    other.inflight = 4;
    EXPECT_THROW(runBenchmark(other, RunnerIo{&out, nullptr, false}), std::invalid_argument) << e;
  }
}

TEST(BenchRunner, WorkloadsAndEnginesAreRegistered) {
  for (const char* w : {"lookup", "ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f"}) {
    EXPECT_TRUE(isWorkload(w)) << w;
  }
  const std::vector<std::string> engines = engineNames();
  ASSERT_FALSE(engines.empty());
  EXPECT_EQ(engines.front(), "vmstore");
  for (const std::string& e : engines) EXPECT_EQ(makeEngine(e)->name(), e);
}

TEST(BenchRunner, UnknownNamesAreInvalidArguments) {
  RunOptions opts;
  opts.workload = "no-such-workload";
  std::ostringstream out;
  try {
    runBenchmark(opts, RunnerIo{&out, nullptr, false});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("lookup"), std::string::npos) << e.what();
  }
  opts.workload = "lookup";
  opts.engine = "no-such-engine";
  try {
    runBenchmark(opts, RunnerIo{&out, nullptr, false});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("vmstore"), std::string::npos) << e.what();
  }
  EXPECT_THROW(makeEngine("no-such-engine"), std::invalid_argument);
  opts.engine = "vmstore";
  opts.distribution = "pareto";
  EXPECT_THROW(runBenchmark(opts, RunnerIo{&out, nullptr, false}), std::invalid_argument);
  EXPECT_TRUE(out.str().empty());
}

TEST(BenchRunner, NonEmptyDirIsRefusedAndUntouched) {
  const std::string dir = std::string(VMSTORE_TEST_TMPDIR) + "/bench_nonempty";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  { std::ofstream(dir + "/precious.txt") << "keep me"; }
  RunOptions opts;
  opts.workload = "lookup";
  opts.data = 100;
  opts.seconds = 0.1;
  opts.dir = dir;
  EXPECT_THROW(runBenchmark(opts, RunnerIo{}), std::invalid_argument);
  EXPECT_TRUE(std::filesystem::exists(dir + "/precious.txt"));
  std::filesystem::remove_all(dir);
}

TEST(BenchRunner, UniformYcsbAndTemporaryDirectory) {
  RunOptions opts;
  opts.workload = "ycsb-d";
  opts.data = 2000;
  opts.seconds = 0.3;
  opts.distribution = "uniform";
  std::ostringstream out;
  RunResult result = runBenchmark(opts, RunnerIo{&out, nullptr, false});
  EXPECT_GT(result.totalTx, 0u);
  std::map<std::string, std::string> json;
  ASSERT_TRUE(parseFlatJson(result.json, &json)) << result.json;
  EXPECT_EQ(json["distribution"], "uniform");
  EXPECT_EQ(json["pool"], std::to_string(kDefaultPoolBytes));
}

TEST(BenchRunner, WarmupRunsFirstAndIsNotCounted) {
  RunOptions opts;
  opts.workload = "lookup";
  opts.data = 2000;
  opts.seconds = 0.5;
  opts.warmup = 1;
  std::ostringstream out;
  RunResult result = runBenchmark(opts, RunnerIo{&out, nullptr, false});
  EXPECT_GT(result.totalTx, 0u);
  EXPECT_GT(result.measuredSeconds, 0.4);
  EXPECT_LT(result.measuredSeconds, 0.9) << "the warm-up second is not part of the measured phase";
  std::map<std::string, std::string> json;
  ASSERT_TRUE(parseFlatJson(result.json, &json)) << result.json;
  EXPECT_EQ(json["warmup_s"], "1");
  // Rows: the header, the warm-up second, the measured half second, the JSON line.
  const std::string text = out.str();
  EXPECT_GE(std::count(text.begin(), text.end(), '\n'), 4);
  // tx counts only the measured phase: the rows' sum is larger.
  uint64_t rowsTx = 0;
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line) && !line.empty() && line[0] != '{') {
    rowsTx += std::stoull(line.substr(line.find(',') + 1));
  }
  EXPECT_GT(rowsTx, result.totalTx);
}

class MicroBenchmarkTiny : public testing::TestWithParam<std::string> {};

TEST_P(MicroBenchmarkTiny, Runs) {
  RunOptions opts;
  opts.workload = GetParam();
  opts.threads = 1;
  opts.data = 16ull << 20;
  opts.seconds = 0.05;
  std::ostringstream out, log;
  RunResult result = runBenchmark(opts, RunnerIo{&out, &log, false});
  const std::vector<std::string> stdoutLines = lines(out.str());
  ASSERT_GE(stdoutLines.size(), 2u) << out.str();
  EXPECT_EQ(stdoutLines.back(), result.json);
  std::map<std::string, std::string> json;
  ASSERT_TRUE(parseFlatJson(result.json, &json)) << result.json;
  EXPECT_EQ(json["workload"], GetParam());
}

INSTANTIATE_TEST_SUITE_P(All, MicroBenchmarkTiny,
                         testing::ValuesIn(MicroRegistry::instance().names()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MicroBenchmarkTiny);

}  // namespace
}  // namespace vmstore::bench
