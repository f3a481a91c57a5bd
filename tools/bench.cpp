// vmstore bench: the command line of the benchmark runner (bench/runner.hpp). Parses the
// options into RunOptions and runs one workload or micro-benchmark; `vmstore bench suite`
// is in bench_suite.cpp.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include "cli.hpp"
#include "engine.hpp"
#include "runner.hpp"
#include "workload.hpp"

namespace vmstore::cli {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

void printBenchHelp() {
  std::printf(
      "usage: vmstore bench WORKLOAD [--engine=E] [--threads=N] [--data=N] [--pool=SIZE]\n"
      "                     [--seconds=S] [--dir=DIR] [--csv=FILE] [--check]\n"
      "                     [--distribution=zipfian|uniform] [--durability=sync|async|none]\n"
      "                     [--inflight=N] [--io=uring|sync] [--batch=N] [--scan-length=N]\n"
      "                     [--tpcc-warehouse=home|random] [--tpcc-locks=on|off]\n"
      "                     [--tpcc-get-many=on|off] [--tpcc-seed=N] [--transactions=on|off]\n"
      "                     [--warmup=S] [--trace=FILE]\n"
      "                     [--vmstore-config=KEY=VALUE,...]\n"
      "       vmstore bench suite [--seconds=S] [--out=DIR] [--threads=N] [--engines=E,...]\n"
      "                           [--durability=sync|async|none] [--cases=C,...]\n"
      "                           [--memory-bound=cgroup|unbounded|both]\n"
      "                           [--memory-allowance=SIZE] [--no-plots]\n"
      "       vmstore bench values [--engines=E,...] [--value-sizes=S,...] [--cases=mem,oom]\n"
      "                            [--seconds=S] [--threads=N] [--data=SIZE] [--pool=SIZE]\n"
      "                            [--oom-data=SIZE] [--oom-pool=SIZE] [--out=DIR]\n"
      "                            [--memory-bound=cgroup|unbounded] [--memory-allowance=SIZE]\n"
      "       vmstore bench values --zero-copy [--value-sizes=S] [--pool=SIZE] [--out=DIR]\n"
      "       vmstore bench values --churn [--engines=E,...] [--churn-data=SIZE] [--rounds=N]\n"
      "                            [--pool=SIZE] [--out=DIR]\n"
      "       vmstore bench policies [--workloads=W,...] [--policies=all|P,...] [--pools=5,10,25,50]\n"
      "                              [--seconds=S] [--warmup=S] [--threads=N] [--ycsb-data=N]\n"
      "                              [--tpcc-data=W] [--resident-set=hash|bitmap] [--no-opt]\n"
      "                              [--no-plots] [--out=DIR]\n"
      "\n"
      "Loads WORKLOAD into a fresh database of engine E, runs N worker threads for S\n"
      "seconds and prints one CSV row per second, then one JSON line (the last line of\n"
      "stdout). Progress goes to stderr. Defaults: --engine=vmstore --threads=2\n"
      "--seconds=10 --pool=1G --durability=none, --data per workload (lookup 10M tuples,\n"
      "ycsb-* 1M records, tpcc 4 warehouses), a temporary directory removed afterwards.\n"
      "\n"
      "--durability: none = no log, no sync (as the vmcache paper ran every engine); async =\n"
      "each committed write is in the OS page cache when it returns (survives a crash of\n"
      "the process); sync = each committed write is on stable storage when it returns.\n"
      "Each engine's mapping is in its adapter, bench/engines/*.cpp (hashbm: none only).\n"
      "\n"
      "--inflight=N: task mode (vmstore only): each of the threads runs N workers as tasks\n"
      "of a vmstore::TaskPool; a worker that misses on a page suspends while its read is in\n"
      "flight. Default: blocking mode, one worker per thread. --io=sync makes those misses\n"
      "block the thread instead (the baseline; default --io=uring). --batch=N (lookup): N\n"
      "keys per call of the engine's getMany (vmstore: Tree::getMany); (batch-write) puts\n"
      "per Database::write (default 64). --vmstore-config:\n"
      "more vmstore config keys for the vmstore engine (e.g. page_provider=false).\n"
      "--scan-length=N (scan): entries per range scan (default 10000); scan counts one\n"
      "transaction per entry read. --warmup=S: run S whole seconds first (their rows are\n"
      "printed; tx_per_s and tx count only the S seconds after). --trace=FILE (vmstore):\n"
      "record every page access of the run into FILE for `vmstore sim` (docs/POLICIES.md).\n"
      "--tpcc-warehouse=random (tpcc): each transaction on a uniformly random warehouse, as\n"
      "the original vmcache code runs TPC-C; default home: each worker on its own.\n"
      "--tpcc-locks=off (tpcc): no transaction locks, only each operation's atomicity, as\n"
      "the original vmcache code runs it (for comparing with it; not with --check).\n"
      "--tpcc-get-many=off (tpcc): new-order's item reads and stock-level's stock reads\n"
      "one get each, as the original vmcache code reads them; default on: one getMany.\n"
      "--tpcc-seed=N (tpcc): the seed of its random choices (NURand constants, rows), to\n"
      "repeat a run; default a random one, given as tpcc_seed in the JSON line.\n"
      "--transactions=on|off (vmstore): whether a workload's transactions run as\n"
      "vmstore::Transaction (default: unless --durability=none); with none and on, what\n"
      "transactions cost without the log.\n"
      "\n"
      "workloads:        %s\n"
      "micro-benchmarks: %s\n"
      "engines:          %s\n"
      "\n"
      "'suite' runs in-memory lookups, out-of-memory lookups and TPC-C on every engine and\n"
      "prints a table (docs/CLI.md). Each out-of-memory run is bounded by a memory cgroup\n"
      "of the pool plus --memory-allowance (default 48M), page cache included; where none\n"
      "can be made it runs unbounded and is labelled lookup-oom-unbounded.\n"
      "\n"
      "'values' measures large values (1K to 64M by default) on every engine: put and get\n"
      "MB/s in memory and out of memory (each engine in a memory cgroup), a zero-copy read\n"
      "of vmstore's largest value, or with --churn the space on storage after ten rounds of\n"
      "mixed sizes (docs/CLI.md).\n"
      "\n"
      "'policies' runs every replacement policy on TPC-C, YCSB-B and YCSB-C with the pool at\n"
      "5, 10, 25 and 50%% of the data: throughput, hit rate, victim-choice time, and the hit\n"
      "rates of Belady's OPT and of the simulator on a trace of the same run (docs/CLI.md).\n",
      joined(bench::WorkloadRegistry::instance().names()).c_str(),
      joined(bench::MicroRegistry::instance().names()).c_str(),
      joined(bench::engineNames()).c_str());
}

double parseSeconds(const Args& args, double fallback) {
  if (!args.has("seconds")) return fallback;
  const std::string text = args.str("seconds", "");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1e7) {
    throw UsageError("--seconds=" + text + ": not a positive number of seconds");
  }
  return v;
}

}  // namespace

double benchSeconds(const Args& args, double fallback) { return parseSeconds(args, fallback); }

bench::Durability benchDurability(const Args& args) {
  bench::Durability d = bench::Durability::kNone;
  if (!args.has("durability")) return d;
  const std::string text = args.str("durability", "");
  if (!bench::parseDurability(text, &d)) {
    throw UsageError("--durability=" + text + ": use sync, async or none");
  }
  return d;
}

int cmdBench(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[2], "--help") == 0 || std::strcmp(argv[2], "-h") == 0 ||
      std::strcmp(argv[2], "help") == 0) {
    if (argc < 3) {
      throw UsageError("missing workload (workloads: " +
                       joined(bench::WorkloadRegistry::instance().names()) +
                       "; micro-benchmarks: " +
                       joined(bench::MicroRegistry::instance().names()) + "; or suite)");
    }
    printBenchHelp();
    return kExitOk;
  }
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      printBenchHelp();
      return kExitOk;
    }
  }
  if (std::strcmp(argv[2], "suite") == 0) return cmdBenchSuite(argc, argv);
  if (std::strcmp(argv[2], "values") == 0) return cmdBenchValues(argc, argv);
  if (std::strcmp(argv[2], "policies") == 0) return cmdBenchPolicies(argc, argv);
  if (argv[2][0] == '-') throw UsageError(std::string("missing workload before ") + argv[2]);

  Args args(argc, argv, 3,
            {{"engine", true},
             {"threads", true},
             {"data", true},
             {"pool", true},
             {"seconds", true},
             {"dir", true},
             {"csv", true},
             {"check", false},
             {"distribution", true},
             {"durability", true},
             {"inflight", true},
             {"io", true},
             {"batch", true},
             {"scan-length", true},
             {"tpcc-warehouse", true},
             {"tpcc-locks", true},
             {"tpcc-get-many", true},
             {"tpcc-seed", true},
             {"transactions", true},
             {"warmup", true},
             {"trace", true},
             {"vmstore-config", true}});
  args.requirePositionals(0, 0);
  bench::RunOptions opts;
  opts.workload = argv[2];
  opts.engine = args.str("engine", opts.engine);
  const uint64_t threads = args.count("threads", opts.threads, 1);
  if (threads > 4096) throw UsageError("--threads: at most 4096");
  opts.threads = static_cast<unsigned>(threads);
  opts.data = args.count("data", 0, 1);
  opts.pool = args.size("pool", 0, 1ull << 20);  // 0: the runner's default (1G)
  opts.seconds = parseSeconds(args, opts.seconds);
  opts.dir = args.str("dir", "");
  if (args.has("dir") && opts.dir.empty()) throw UsageError("--dir must not be empty");
  opts.csv = args.str("csv", "");
  if (args.has("csv") && opts.csv.empty()) throw UsageError("--csv needs a file name");
  opts.check = args.has("check");
  opts.distribution = args.str("distribution", opts.distribution);
  opts.durability = benchDurability(args);
  const uint64_t inflight = args.count("inflight", 0, 1);
  if (inflight > 4096) throw UsageError("--inflight: at most 4096");
  opts.inflight = static_cast<unsigned>(inflight);
  const std::string ioMode = args.str("io", "uring");
  if (ioMode != "uring" && ioMode != "sync") throw UsageError("--io=" + ioMode + ": use uring or sync");
  opts.syncIo = ioMode == "sync";
  const uint64_t batch = args.count("batch", 0, 1);
  if (batch > 4096) throw UsageError("--batch: at most 4096");
  opts.batch = static_cast<unsigned>(batch);
  opts.scanLength = args.count("scan-length", 0, 1);
  const uint64_t warmup = args.count("warmup", 0, 0);
  if (warmup > 3600) throw UsageError("--warmup: at most 3600 seconds");
  opts.warmup = static_cast<unsigned>(warmup);
  if (args.has("scan-length") && opts.workload != "scan") throw UsageError("--scan-length is for the scan workload");
  const std::string warehouse = args.str("tpcc-warehouse", "home");
  if (warehouse != "home" && warehouse != "random") {
    throw UsageError("--tpcc-warehouse=" + warehouse + ": use home or random");
  }
  if (args.has("tpcc-warehouse") && opts.workload != "tpcc") throw UsageError("--tpcc-warehouse is for tpcc");
  opts.tpccRandomWarehouse = warehouse == "random";
  // --NAME=on|off (default on).
  auto onOff = [&](const std::string& name) {
    const std::string v = args.str(name, "on");
    if (v != "on" && v != "off") throw UsageError("--" + name + "=" + v + ": use on or off");
    return v == "on";
  };
  // ... of the tpcc workload.
  auto tpccSwitch = [&](const std::string& name) {
    const bool on = onOff(name);
    if (args.has(name) && opts.workload != "tpcc") throw UsageError("--" + name + " is for tpcc");
    return on;
  };
  opts.tpccLocks = tpccSwitch("tpcc-locks");
  opts.tpccGetMany = tpccSwitch("tpcc-get-many");
  if (args.has("tpcc-seed")) {
    if (opts.workload != "tpcc") throw UsageError("--tpcc-seed is for tpcc");
    opts.tpccSeed = args.count("tpcc-seed", 0, 1);
  }
  if (!opts.tpccLocks && opts.check) {
    throw UsageError("--check with --tpcc-locks=off: without the lock table concurrent transactions may break "
                     "TPC-C's consistency conditions (drop --check, or use --tpcc-locks=on)");
  }
  opts.vmstoreConfig = args.str("vmstore-config", "");
  if (args.has("transactions")) {
    const bool on = onOff("transactions");
    if (opts.engine != "vmstore") throw UsageError("--transactions is for --engine=vmstore");
    opts.transactions = on;
  }
  if (args.has("trace")) {
    // The page-reference string of the run, for `vmstore sim` (config trace=FILE).
    const std::string trace = args.str("trace", "");
    if (trace.empty() || trace.find(',') != std::string::npos) throw UsageError("--trace needs a file name without ','");
    if (opts.engine != "vmstore") throw UsageError("--trace records vmstore's page accesses: use it with --engine=vmstore");
    opts.vmstoreConfig += (opts.vmstoreConfig.empty() ? "" : ",") + std::string("trace=") + trace;
  }

  bench::RunnerIo io;
  io.out = &std::cout;
  io.log = &std::cerr;
  io.removeTempDirOnSignal = true;
  bench::RunResult result;
  try {
    result = bench::runBenchmark(opts, io);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::cout.flush();
  if (!result.ok) {
    throw Failure(kExitFailure, "--check found " + std::to_string(result.problems.size()) +
                                    " problem(s)");
  }
  return kExitOk;
}

}  // namespace vmstore::cli
