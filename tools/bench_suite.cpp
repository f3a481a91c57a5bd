// vmstore bench suite: the README's main command. A few minutes at small scale: in-memory
// lookups, out-of-memory lookups (data about 10x the pool) and TPC-C (when the tpcc
// workload is built), each on every engine of this build; per-run CSV files, one summary
// table, and the plots of bench/plot.py when python3 can draw them.
//
// Out of memory, every engine's run is bounded: it runs in a child process inside a memory
// cgroup of the pool plus --memory-allowance (bench_isolated.hpp), so that no engine keeps
// its data in the kernel's page cache beyond the budget. Where no cgroup can be made the
// run still happens, unbounded, and its results carry the label CASE-unbounded (column,
// CSV files, summary.csv's memory_bound, plots), never the bounded case's.
// --memory-bound=unbounded runs them unbounded on purpose; =both runs each twice.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
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
#include "engine.hpp"
#include "memory_cgroup.hpp"
#include "runner.hpp"
#include "workload.hpp"

#ifndef VMSTORE_SOURCE_DIR
#define VMSTORE_SOURCE_DIR "."
#endif

namespace vmstore::cli {

double benchSeconds(const Args& args, double fallback);  // bench.cpp
bench::Durability benchDurability(const Args& args);     // bench.cpp

namespace {

constexpr double kDefaultSuiteSeconds = 10;
// Memory the cgroup of an out-of-memory run allows beyond the pool: the process itself
// (code, heap, thread stacks, the engine's bookkeeping outside its cache). Measured in the
// lookup-oom run (docs/BENCHMARKS.md): vmstore peaks 4.2 to 5.4 MiB over its 24 MiB pool,
// but RocksDB needs more than 32 MiB over its block cache while it loads (with 32 MiB the
// limit kills it; with 16 MiB WiredTiger too), so the default is 48 MiB, the smallest
// multiple of 16 MiB with which every engine runs.
constexpr uint64_t kDefaultMemoryAllowance = 48ull << 20;

struct SuiteCase {
  const char* label;     // the column of the summary table, the prefix of the CSV files
  const char* workload;
  uint64_t data;
  uint64_t pool;
  const char* what;
  bool outOfMemory;      // bounded by a memory cgroup (see above)
};

// 2,000,000 tuples of 8-byte keys and 120-byte values are 256 MB of key-value bytes.
const SuiteCase kCases[] = {
    {"lookup-mem", "lookup", 2'000'000, 1ull << 30,
     "random lookups, 2,000,000 tuples, pool 1G (in memory)", false},
    {"lookup-oom", "lookup", 2'000'000, 24ull << 20,
     "random lookups, 2,000,000 tuples (256 MB), pool 24M (out of memory, ~10x)", true},
    {"tpcc", "tpcc", 2, 1ull << 30, "TPC-C, 2 warehouses, pool 1G", false},
};

// How an out-of-memory case is run: in a cgroup (bounded) or not (unbounded).
enum class Bound { kNotApplicable, kCgroup, kUnbounded };

const char* boundName(Bound b) {
  return b == Bound::kCgroup ? "cgroup" : b == Bound::kUnbounded ? "unbounded" : "n/a";
}

// One run of the suite: a case, an engine, and for out-of-memory cases the bound.
struct SuiteRun {
  const SuiteCase* c;
  Bound bound;
  std::string label;  // the case's label, with "-unbounded" for unbounded runs
};

std::string mibText(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

std::string runPlots(const std::string& outDir) {
  namespace fs = std::filesystem;
  std::string script;
  for (const std::string& candidate :
       {std::string("bench/plot.py"), std::string(VMSTORE_SOURCE_DIR) + "/bench/plot.py"}) {
    std::error_code ec;
    if (fs::exists(candidate, ec)) {
      script = candidate;
      break;
    }
  }
  if (script.empty()) return "plots: skipped (bench/plot.py not found)";
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) {
    return "plots: skipped (python3 is not installed)";
  }
  std::cerr << "plotting with " << script << "...\n" << std::flush;
  const std::string cmd = "python3 " + shellQuote(script) + " " + shellQuote(outDir) + " >&2";
  if (std::system(cmd.c_str()) != 0) {
    return "plots: skipped (" + script +
           " failed: is matplotlib installed? apt-get install python3-matplotlib)";
  }
  size_t pngs = 0;
  std::string where;  // the directory of the charts, when they share one
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(outDir, ec)) {
    if (entry.path().extension() != ".png") continue;
    const std::string dir = entry.path().parent_path().string();
    where = pngs++ == 0 || where == dir ? dir : outDir;
  }
  if (pngs == 0) return "plots: " + script + " wrote no .png files into " + outDir;
  return "plots: " + std::to_string(pngs) + " PNG charts in " + where;
}


int cmdBenchSuite(int argc, char** argv) {
  Args args(argc, argv, 3,
            {{"seconds", true},
             {"out", true},
             {"threads", true},
             {"engines", true},
             {"durability", true},
             {"cases", true},
             {"memory-bound", true},
             {"memory-allowance", true},
             {"no-plots", false}});
  args.requirePositionals(0, 0);
  const double seconds = benchSeconds(args, kDefaultSuiteSeconds);
  const uint64_t threads = args.count("threads", 2, 1);
  if (threads > 4096) throw UsageError("--threads: at most 4096");
  std::string outDir = args.str("out", "");
  if (args.has("out") && outDir.empty()) throw UsageError("--out must not be empty");
  if (outDir.empty()) outDir = "bench-results/" + timestamp();
  const bench::Durability durability = benchDurability(args);
  const char* durabilityName = bench::durabilityName(durability);
  std::vector<std::string> engines = bench::engineNames();
  if (args.has("engines")) {
    engines = splitList(args.str("engines", ""));
    for (const std::string& e : engines) {
      try {
        if (!bench::makeEngine(e)->supports(durability)) {
          throw UsageError("engine " + e + " does not support --durability=" + durabilityName);
        }
      } catch (const std::invalid_argument& err) {
        throw UsageError(err.what());
      }
    }
  } else {
    // Every engine of the build that offers this durability (hashbm has no log).
    std::vector<std::string> offering;
    for (const std::string& e : engines) {
      if (bench::makeEngine(e)->supports(durability)) {
        offering.push_back(e);
      } else {
        std::cerr << "suite: engine " << e << " does not support --durability="
                  << durabilityName << "; skipping it\n";
      }
    }
    engines = offering;
  }
  if (engines.empty()) throw UsageError("no engines to run");

  const std::string boundText = args.str("memory-bound", "cgroup");
  std::vector<Bound> oomBounds;
  if (boundText == "cgroup") {
    oomBounds = {Bound::kCgroup};
  } else if (boundText == "unbounded") {
    oomBounds = {Bound::kUnbounded};
  } else if (boundText == "both") {
    oomBounds = {Bound::kCgroup, Bound::kUnbounded};
  } else {
    throw UsageError("--memory-bound=" + boundText + ": use cgroup, unbounded or both");
  }
  const uint64_t allowance =
      args.size("memory-allowance", kDefaultMemoryAllowance, 1ull << 20);
  if (allowance > (1ull << 40)) throw UsageError("--memory-allowance: at most 1T");

  std::vector<std::string> wanted;
  if (args.has("cases")) {
    wanted = splitList(args.str("cases", ""));
    if (wanted.empty()) throw UsageError("--cases needs at least one case");
    for (const std::string& w : wanted) {
      bool known = false;
      for (const SuiteCase& c : kCases) known = known || w == c.label;
      if (!known) throw UsageError("--cases: unknown case '" + w + "' (cases: lookup-mem, lookup-oom, tpcc)");
    }
  }
  std::vector<const SuiteCase*> cases;
  for (const SuiteCase& c : kCases) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), c.label) == wanted.end()) continue;
    if (bench::isWorkload(c.workload)) {
      cases.push_back(&c);
    } else {
      std::cerr << "suite: workload '" << c.workload << "' is not built; skipping " << c.label
                << "\n";
    }
  }
  if (cases.empty()) throw UsageError("no cases to run");

  // Can a memory cgroup be made here? Tried once, so that the reason is printed once and
  // every bounded run of this suite is labelled the same way.
  std::string noCgroup;
  std::string cgroupLine;
  if (std::find(oomBounds.begin(), oomBounds.end(), Bound::kCgroup) != oomBounds.end()) {
    uint64_t probePool = 0;
    for (const SuiteCase* c : cases) probePool = c->outOfMemory ? c->pool : probePool;
    if (probePool != 0) {
      std::unique_ptr<bench::MemoryCgroup> probe = bench::MemoryCgroup::make(probePool + allowance, &noCgroup);
      if (probe) {
        cgroupLine = probe->describe();
      } else {
        std::cerr << "suite: no memory cgroup can be made (" << noCgroup
                  << "); the out-of-memory runs are UNBOUNDED (the kernel page cache is not "
                     "limited) and labelled so\n";
        oomBounds.erase(std::find(oomBounds.begin(), oomBounds.end(), Bound::kCgroup));
        if (oomBounds.empty()) oomBounds = {Bound::kUnbounded};
      }
    }
  }
  std::vector<SuiteRun> plan;  // one entry per case and bound; engines go inside
  for (const SuiteCase* c : cases) {
    if (!c->outOfMemory) {
      plan.push_back({c, Bound::kNotApplicable, c->label});
      continue;
    }
    for (Bound b : oomBounds) {
      plan.push_back({c, b, std::string(c->label) + (b == Bound::kUnbounded ? "-unbounded" : "")});
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(outDir, ec);
  if (ec) throw Failure(kExitFailure, "cannot create " + outDir + ": " + ec.message());
  std::ofstream jsonl(outDir + "/results.jsonl");
  std::ofstream summaryCsv(outDir + "/summary.csv");
  if (!jsonl || !summaryCsv) throw Failure(kExitFailure, "cannot write into " + outDir);
  summaryCsv << "case,engine,workload,threads,data,pool,tx_per_s,load_s,seconds,status,durability,"
                "memory_bound,memory_limit,memory_peak\n";

  const size_t total = plan.size() * engines.size();
  std::cerr << "vmstore bench suite: " << total << " runs (" << plan.size() << " cases x "
            << engines.size() << " engines: " << [&] {
                 std::string s;
                 for (const auto& e : engines) s += (s.empty() ? "" : ", ") + e;
                 return s;
               }()
            << "), " << seconds << " s each plus loading, " << threads
            << " threads, durability " << durabilityName << "; results in " << outDir << "\n";
  for (const SuiteRun& p : plan) {
    std::cerr << "  " << p.label << ": " << p.c->what;
    if (p.bound == Bound::kCgroup) {
      std::cerr << "; each engine in a memory cgroup of the pool + " << mibText(allowance)
                << " = " << mibText(p.c->pool + allowance) << " (" << cgroupLine << ")";
    } else if (p.bound == Bound::kUnbounded) {
      std::cerr << "; UNBOUNDED: no memory limit, the kernel page cache may hold the data";
    }
    std::cerr << "\n";
  }

  // case label -> engine -> tx/s (negative: failed); bounded runs' peak memory
  std::map<std::string, std::map<std::string, double>> table;
  std::map<std::string, uint64_t> peaks;
  size_t run = 0;
  int failures = 0;
  const auto suiteStart = std::chrono::steady_clock::now();
  for (const SuiteRun& p : plan) {
    const SuiteCase* c = p.c;
    for (const std::string& engine : engines) {
      ++run;
      std::cerr << "[" << run << "/" << total << "] " << p.label << " on " << engine << ": "
                << std::flush;
      bench::RunOptions opts;
      opts.workload = c->workload;
      opts.engine = engine;
      opts.threads = static_cast<unsigned>(threads);
      opts.data = c->data;
      opts.pool = c->pool;
      opts.seconds = seconds;
      opts.durability = durability;
      opts.csv = outDir + "/" + p.label + "-" + engine + ".csv";
      std::string status = "ok";
      bench::RunResult result;
      uint64_t limit = 0, peak = 0;
      std::string boundJson;
      try {
        if (p.bound == Bound::kNotApplicable) {
          bench::RunnerIo io;  // no stdout, no progress: the suite prints its own lines
          io.removeTempDirOnSignal = true;
          result = bench::runBenchmark(opts, io);
        } else {
          std::string why;
          std::unique_ptr<bench::MemoryCgroup> cgroup;
          if (p.bound == Bound::kCgroup) {
            cgroup = bench::MemoryCgroup::make(c->pool + allowance, &why);
            if (!cgroup) throw std::runtime_error("cannot make its memory cgroup: " + why);
            limit = cgroup->limitBytes();
          }
          IsolatedResult r =
              runIsolated(opts, cgroup.get(), outDir + "/" + p.label + "-" + engine + ".log");
          if (!r.placed) throw std::runtime_error("cannot run it in its memory cgroup: " + r.error);
          if (r.interrupted) throw Failure(130, "interrupted");
          if (!r.ok) throw std::runtime_error(r.error);
          peak = r.peakBytes;
          result.txPerSec = r.txPerSec;
          result.loadSeconds = r.loadSeconds;
          result.measuredSeconds = r.measuredSeconds;
          result.json = r.json;
        }
        boundJson = ",\"memory_bound\":" + bench::jsonString(boundName(p.bound));
        if (limit != 0) {
          boundJson += ",\"memory_limit\":" + std::to_string(limit) +
                       ",\"memory_peak\":" + std::to_string(peak);
        }
        char load[32];
        std::snprintf(load, sizeof load, "%.1f", result.loadSeconds);
        std::cerr << withCommas(static_cast<uint64_t>(result.txPerSec)) << " tx/s (load " << load
                  << " s" << (limit != 0 ? ", peak memory " + mibText(peak) + " of " + mibText(limit) : "")
                  << ")\n";
        jsonl << "{\"case\":" << bench::jsonString(p.label) << boundJson << ","
              << result.json.substr(1) << "\n"
              << std::flush;
        table[p.label][engine] = result.txPerSec;
        if (limit != 0) peaks[engine] = peak;
      } catch (const Failure&) {
        throw;  // interrupted: stop the suite
      } catch (const std::exception& e) {
        status = "failed";
        ++failures;
        std::cerr << "FAILED: " << e.what() << "\n";
        table[p.label][engine] = -1;
      }
      summaryCsv << p.label << "," << engine << "," << c->workload << "," << threads << ","
                 << c->data << "," << c->pool << "," << result.txPerSec << ","
                 << result.loadSeconds << "," << result.measuredSeconds << "," << status << ","
                 << durabilityName << "," << boundName(p.bound) << "," << limit << "," << peak
                 << "\n"
                 << std::flush;
    }
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - suiteStart).count();

  // The summary table: engines down, cases across, transactions per second.
  std::ostringstream out;
  out << "\nvmstore bench suite: transactions per second (" << threads << " threads, "
      << seconds << " s each, durability " << durabilityName
      << "; lookups: 2,000,000 tuples; tpcc: 2 warehouses)\n\n";
  char cell[64];
  std::snprintf(cell, sizeof cell, "%-12s", "engine");
  out << cell;
  for (const SuiteRun& p : plan) {
    std::snprintf(cell, sizeof cell, "%22s", p.label.c_str());
    out << cell;
  }
  if (!peaks.empty()) {
    std::snprintf(cell, sizeof cell, "%18s", "oom peak memory");
    out << cell;
  }
  out << "\n";
  for (const std::string& engine : engines) {
    std::snprintf(cell, sizeof cell, "%-12s", engine.c_str());
    out << cell;
    for (const SuiteRun& p : plan) {
      const double v = table[p.label][engine];
      const std::string text = v < 0 ? "failed" : withCommas(static_cast<uint64_t>(v + 0.5));
      std::snprintf(cell, sizeof cell, "%22s", text.c_str());
      out << cell;
    }
    if (!peaks.empty()) {
      const std::string text = peaks.count(engine) != 0 ? mibText(peaks[engine]) : "-";
      std::snprintf(cell, sizeof cell, "%18s", text.c_str());
      out << cell;
    }
    out << "\n";
  }
  out << "\nlookup-mem: pool 1G holds the data; lookup-oom: 256 MB of data through a 24M "
         "pool.\n";
  for (const SuiteRun& p : plan) {
    if (p.bound == Bound::kCgroup) {
      out << p.label << ": every engine in a memory cgroup of the pool + " << mibText(allowance)
          << " allowance = " << mibText(p.c->pool + allowance) << ", page cache included ("
          << cgroupLine << ").\n";
    } else if (p.bound == Bound::kUnbounded) {
      out << p.label << ": UNBOUNDED, no memory limit: the kernel page cache may hold the data "
          << "(LMDB reads through it); not comparable with bounded runs"
          << (noCgroup.empty() ? "" : " (no cgroup: " + noCgroup + ")") << ".\n";
    }
  }
  {
    std::ofstream txt(outDir + "/summary.txt");
    txt << out.str();
  }
  std::cout << out.str();
  std::cout << "results: " << outDir << " (per-run CSV, summary.csv, results.jsonl; "
            << static_cast<int>(elapsed) << " s)\n";
  std::cout.flush();
  std::cout << (args.has("no-plots") ? std::string("plots: skipped (--no-plots)") : runPlots(outDir))
            << "\n";
  if (failures != 0) {
    throw Failure(kExitFailure, std::to_string(failures) + " of " + std::to_string(total) +
                                    " runs failed (see the messages above)");
  }
  return kExitOk;
}

}  // namespace vmstore::cli
