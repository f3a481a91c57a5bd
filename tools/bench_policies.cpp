// vmstore bench policies: every replacement policy on the same workloads, out of memory,
// side by side (issue 10; the thesis 002 §1.3 did this for TPC-C). For each workload
// (default TPC-C, YCSB-B and YCSB-C, Zipfian 0.99) it first loads the data once with a
// pool that holds it all, to learn its size; then for each pool size (default 5, 10, 25
// and 50% of that size) and each policy it runs the workload in this process (fresh
// database, load, --warmup, --seconds) and records throughput, the measured phase's hit
// rate, misses, evictions and the time spent choosing victims. With the simulator
// (default; --no-opt skips it) one more run per workload and pool size records the
// page-reference string under clock (config trace=FILE), and `vmstore sim`'s library
// replays it through Belady's OPT and every policy at the same pool: the best hit rate
// any policy could have had there, and the simulator's figure beside the engine's.
// Results: summary.csv and a table on stdout, one CSV file per run (in runs/), and charts
// of hit rate against throughput (bench/plot.py, plots/) in --out.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_isolated.hpp"
#include "cli.hpp"
#include "policy/registry.hpp"
#include "runner.hpp"
#include "sim/simulator.hpp"
#include "trace/trace_reader.hpp"

namespace vmstore::cli {

double benchSeconds(const Args& args, double fallback);  // bench.cpp

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMinPool = 1ull << 20;  // vmstore's smallest pool

struct PolicyRun {
  std::string workload;
  unsigned poolPercent = 0;
  uint64_t poolBytes = 0;
  std::string policy;
  double txPerSec = 0;
  double hitRate = 0;
  double victimMsPerSec = 0;
  double simHitRate = -1;  // the simulator's, on the clock trace at this pool (-1: none)
  double optHitRate = -1;
  double a0HitRate = -1;  // the frequency oracle's (bench/sim/simulator.hpp), same trace
  uint64_t policyBytes = 0;       // memory of the policy's structures at the end
  uint64_t residentSetBytes = 0;  // memory of the resident set at the end
};

void printHelp() {
  std::printf(
      "usage: vmstore bench policies [--workloads=tpcc,ycsb-b,ycsb-c] [--policies=all|P,...]\n"
      "                              [--pools=5,10,25,50] [--seconds=S] [--warmup=S]\n"
      "                              [--threads=N] [--ycsb-data=N] [--tpcc-data=W]\n"
      "                              [--resident-set=hash|bitmap] [--no-opt] [--no-plots]\n"
      "                              [--out=DIR]\n"
      "\n"
      "Every replacement policy on each workload out of memory: the pool at each\n"
      "percentage of the loaded data's size. Prints one row per run (throughput, hit rate\n"
      "of the measured phase, victim-choice time) and, unless --no-opt, the hit rates\n"
      "Belady's OPT, the frequency oracle A0 and the simulator reach on a trace of the\n"
      "same workload at the same pool. Defaults: --seconds=10 --warmup=2 --threads=2\n"
      "--ycsb-data=1000000 records --tpcc-data=2 warehouses, --out=bench-results/policies-TIMESTAMP.\n"
      "policies: %s\n",
      [] {
        std::string s;
        for (const std::string& p : internal::policyNames()) s += (s.empty() ? "" : ", ") + p;
        return s;
      }()
          .c_str());
}

double jsonOr(const std::string& json, const std::string& key, double fallback) {
  double v = fallback;
  jsonNumber(json, key, &v);
  return v;
}

bench::RunResult runOne(const bench::RunOptions& opts, const std::string& csvPath, std::ostream& log) {
  bench::RunOptions o = opts;
  o.csv = csvPath;
  std::ostringstream discard;
  bench::RunnerIo io;
  io.out = &discard;  // the rows go to the CSV file
  io.log = nullptr;
  io.removeTempDirOnSignal = true;
  bench::RunResult r = bench::runBenchmark(o, io);
  log << "  " << o.workload << " pool " << humanBytes(o.pool) << " [" << o.vmstoreConfig
      << "]: " << withCommas(static_cast<uint64_t>(r.txPerSec)) << " tx/s, hit rate "
      << jsonOr(r.json, "hit_rate", 0) * 100 << "%\n"
      << std::flush;
  return r;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

int cmdBenchPolicies(int argc, char** argv) {
  Args args(argc, argv, 3,
            {{"workloads", true},
             {"policies", true},
             {"pools", true},
             {"seconds", true},
             {"warmup", true},
             {"threads", true},
             {"ycsb-data", true},
             {"tpcc-data", true},
             {"resident-set", true},
             {"no-opt", false},
             {"no-plots", false},
             {"out", true},
             {"help", false}});
  if (args.has("help")) {
    printHelp();
    return kExitOk;
  }
  args.requirePositionals(0, 0);
  std::vector<std::string> workloads = splitList(args.str("workloads", "tpcc,ycsb-b,ycsb-c"));
  for (const std::string& w : workloads) {
    if (!bench::isWorkload(w)) throw UsageError("--workloads: unknown workload " + w);
  }
  std::vector<std::string> policies = internal::policyNames();
  if (args.has("policies") && args.str("policies", "") != "all") {
    policies = splitList(args.str("policies", ""));
    for (const std::string& p : policies) {
      if (internal::policySummary(p).empty()) throw UsageError("--policies: unknown policy " + p);
    }
  }
  std::vector<unsigned> pools;
  for (const std::string& p : splitList(args.str("pools", "5,10,25,50"))) {
    char* end = nullptr;
    unsigned long v = std::strtoul(p.c_str(), &end, 10);
    if (p.empty() || *end != '\0' || v < 1 || v > 100) throw UsageError("--pools: " + p + " is not a percentage 1..100");
    pools.push_back(static_cast<unsigned>(v));
  }
  const std::string residentSet = args.str("resident-set", "hash");
  if (residentSet != "hash" && residentSet != "bitmap") throw UsageError("--resident-set: hash or bitmap");
  const bool withOpt = !args.has("no-opt");
  bench::RunOptions base;
  base.seconds = benchSeconds(args, 10);
  base.warmup = static_cast<unsigned>(args.count("warmup", 2, 0));
  base.threads = static_cast<unsigned>(std::min<uint64_t>(args.count("threads", 2, 1), 256));
  const uint64_t ycsbData = args.count("ycsb-data", 1000000, 1000);
  const uint64_t tpccData = args.count("tpcc-data", 2, 1);
  const std::string outDir = args.str("out", "bench-results/policies-" + timestamp());
  std::error_code ec;
  fs::create_directories(outDir + "/runs", ec);  // per-run CSV files apart from summary.csv
  if (ec) throw Failure(kExitFailure, "cannot create " + outDir + ": " + ec.message());

  std::ostream& log = std::cerr;
  std::vector<PolicyRun> runs;
  for (const std::string& workload : workloads) {
    bench::RunOptions wl = base;
    wl.workload = workload;
    wl.data = workload == "tpcc" ? tpccData : ycsbData;
    // The data's size: loaded once into a pool that holds it (1 s of the workload).
    bench::RunOptions sizing = wl;
    sizing.seconds = 1;
    sizing.warmup = 0;
    sizing.pool = 8ull << 30;
    log << workload << ": sizing the data (pool " << humanBytes(sizing.pool) << ")\n" << std::flush;
    bench::RunResult sized = runOne(sizing, outDir + "/runs/" + workload + "-sizing.csv", log);
    const uint64_t dataBytes = static_cast<uint64_t>(jsonOr(sized.json, "data_bytes", 0));
    if (dataBytes == 0) throw Failure(kExitFailure, workload + ": the engine did not report its data size");
    log << workload << ": " << humanBytes(dataBytes) << " of data\n" << std::flush;
    for (unsigned pct : pools) {
      bench::RunOptions run = wl;
      run.pool = std::max<uint64_t>(kMinPool, dataBytes * pct / 100 / kPage * kPage);
      std::map<std::string, double> simRates;
      double optRate = -1;
      double a0Rate = -1;
      if (withOpt) {
        // The page-reference string under clock at this pool, replayed offline.
        const std::string trace = outDir + "/" + workload + "-" + std::to_string(pct) + ".trace";
        bench::RunOptions traced = run;
        traced.vmstoreConfig = "policy=clock,resident_set=" + residentSet + ",trace=" + trace;
        log << workload << " " << pct << "%: recording a trace\n" << std::flush;
        bench::RunResult tr =
            runOne(traced, outDir + "/runs/" + workload + "-" + std::to_string(pct) + "-trace.csv", log);
        bench::sim::Trace t = bench::sim::readTraceFile(trace);
        const uint64_t poolPages = run.pool / kPage;
        // Only the measured phase counts (its accesses are the trace's last ones); the
        // load and the warm-up before it warm the simulated pool up.
        const uint64_t measured = static_cast<uint64_t>(jsonOr(tr.json, "page_accesses", 0));
        const uint64_t from = t.refs.size() > measured ? t.refs.size() - measured : 0;
        optRate = bench::sim::simulateOpt(t, poolPages, from).hitRate();
        a0Rate = bench::sim::simulateA0(t, poolPages, from).hitRate();
        for (const std::string& p : policies) {
          simRates[p] = bench::sim::simulate(t, p, poolPages, bench::sim::kEngineBatch, from).hitRate();
        }
        fs::remove(trace, ec);  // large; the figures are kept
      }
      for (const std::string& policy : policies) {
        bench::RunOptions one = run;
        one.vmstoreConfig = "policy=" + policy + ",resident_set=" + residentSet;
        bench::RunResult r =
            runOne(one, outDir + "/runs/" + workload + "-" + std::to_string(pct) + "-" + policy + ".csv", log);
        PolicyRun pr;
        pr.workload = workload;
        pr.poolPercent = pct;
        pr.poolBytes = run.pool;
        pr.policy = policy;
        pr.txPerSec = r.txPerSec;
        pr.hitRate = jsonOr(r.json, "hit_rate", 0);
        const double secs = std::max(r.measuredSeconds, 1e-9);
        pr.victimMsPerSec = jsonOr(r.json, "victim_ms", 0) / secs;
        if (auto it = simRates.find(policy); it != simRates.end()) pr.simHitRate = it->second;
        pr.optHitRate = optRate;
        pr.a0HitRate = a0Rate;
        pr.policyBytes = static_cast<uint64_t>(jsonOr(r.json, "policy_bytes", 0));
        pr.residentSetBytes = static_cast<uint64_t>(jsonOr(r.json, "resident_set_bytes", 0));
        runs.push_back(pr);
      }
    }
  }

  // summary.csv and the table.
  std::ofstream csv(outDir + "/summary.csv");
  csv << "workload,pool_percent,pool_bytes,policy,tx_per_s,hit_rate,victim_ms_per_s,sim_hit_rate,opt_hit_rate,"
         "policy_bytes,resident_set,resident_set_bytes,a0_hit_rate\n";
  std::printf("%-8s %5s %-10s %12s %9s %9s %9s %9s %10s\n", "workload", "pool", "policy", "tx/s", "hit %", "sim %",
              "A0 %", "OPT %", "victim ms/s");
  for (const PolicyRun& r : runs) {
    csv << r.workload << ',' << r.poolPercent << ',' << r.poolBytes << ',' << r.policy << ','
        << fixed(r.txPerSec, 1) << ',' << fixed(r.hitRate, 6) << ',' << fixed(r.victimMsPerSec, 3) << ','
        << fixed(r.simHitRate, 6) << ',' << fixed(r.optHitRate, 6) << ',' << r.policyBytes << ',' << residentSet
        << ',' << r.residentSetBytes << ',' << fixed(r.a0HitRate, 6) << '\n';
    std::printf("%-8s %4u%% %-10s %12s %9s %9s %9s %9s %10s\n", r.workload.c_str(), r.poolPercent, r.policy.c_str(),
                withCommas(static_cast<uint64_t>(r.txPerSec)).c_str(), fixed(r.hitRate * 100, 2).c_str(),
                r.simHitRate < 0 ? "-" : fixed(r.simHitRate * 100, 2).c_str(),
                r.a0HitRate < 0 ? "-" : fixed(r.a0HitRate * 100, 2).c_str(),
                r.optHitRate < 0 ? "-" : fixed(r.optHitRate * 100, 2).c_str(), fixed(r.victimMsPerSec, 2).c_str());
  }
  csv.close();
  if (!csv) throw Failure(kExitFailure, "cannot write " + outDir + "/summary.csv");
  std::cout << "results: " << outDir << "/summary.csv\n"
            << (args.has("no-plots") ? std::string("plots: skipped (--no-plots)") : runPlots(outDir)) << '\n';
  return kExitOk;
}

}  // namespace vmstore::cli
