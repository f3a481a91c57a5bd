// vmstore bench suite: the README's main command. A few minutes at small scale: in-memory
// lookups, out-of-memory lookups (data about 10x the pool) and TPC-C (when the tpcc
// workload is built), each on every engine of this build; per-run CSV files, one summary
// table, and the plots of bench/plot.py when python3 can draw them.
#include <unistd.h>

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

#include "cli.hpp"
#include "engine.hpp"
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

struct SuiteCase {
  const char* label;     // the column of the summary table, the prefix of the CSV files
  const char* workload;
  uint64_t data;
  uint64_t pool;
  const char* what;
};

// 2,000,000 tuples of 8-byte keys and 120-byte values are 256 MB of key-value bytes.
const SuiteCase kCases[] = {
    {"lookup-mem", "lookup", 2'000'000, 1ull << 30,
     "random lookups, 2,000,000 tuples, pool 1G (in memory)"},
    {"lookup-oom", "lookup", 2'000'000, 24ull << 20,
     "random lookups, 2,000,000 tuples (256 MB), pool 24M (out of memory, ~10x)"},
    {"tpcc", "tpcc", 2, 1ull << 30, "TPC-C, 2 warehouses, pool 1G"},
};

std::string timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
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

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Runs bench/plot.py over the results; returns a line saying where the plots are or why
// there are none.
std::string plot(const std::string& outDir) {
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

}  // namespace

int cmdBenchSuite(int argc, char** argv) {
  Args args(argc, argv, 3,
            {{"seconds", true},
             {"out", true},
             {"threads", true},
             {"engines", true},
             {"durability", true}});
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

  std::vector<const SuiteCase*> cases;
  for (const SuiteCase& c : kCases) {
    if (bench::isWorkload(c.workload)) {
      cases.push_back(&c);
    } else {
      std::cerr << "suite: workload '" << c.workload << "' is not built; skipping " << c.label
                << "\n";
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(outDir, ec);
  if (ec) throw Failure(kExitFailure, "cannot create " + outDir + ": " + ec.message());
  std::ofstream jsonl(outDir + "/results.jsonl");
  std::ofstream summaryCsv(outDir + "/summary.csv");
  if (!jsonl || !summaryCsv) throw Failure(kExitFailure, "cannot write into " + outDir);
  summaryCsv
      << "case,engine,workload,threads,data,pool,tx_per_s,load_s,seconds,status,durability\n";

  const size_t total = cases.size() * engines.size();
  std::cerr << "vmstore bench suite: " << total << " runs (" << cases.size() << " workloads x "
            << engines.size() << " engines: " << [&] {
                 std::string s;
                 for (const auto& e : engines) s += (s.empty() ? "" : ", ") + e;
                 return s;
               }()
            << "), " << seconds << " s each plus loading, " << threads
            << " threads, durability " << durabilityName << "; results in " << outDir << "\n";
  for (const SuiteCase* c : cases) std::cerr << "  " << c->label << ": " << c->what << "\n";

  // case label -> engine -> tx/s (negative: failed)
  std::map<std::string, std::map<std::string, double>> table;
  size_t run = 0;
  int failures = 0;
  const auto suiteStart = std::chrono::steady_clock::now();
  for (const SuiteCase* c : cases) {
    for (const std::string& engine : engines) {
      ++run;
      std::cerr << "[" << run << "/" << total << "] " << c->label << " on " << engine << ": "
                << std::flush;
      bench::RunOptions opts;
      opts.workload = c->workload;
      opts.engine = engine;
      opts.threads = static_cast<unsigned>(threads);
      opts.data = c->data;
      opts.pool = c->pool;
      opts.seconds = seconds;
      opts.durability = durability;
      opts.csv = outDir + "/" + c->label + "-" + engine + ".csv";
      bench::RunnerIo io;  // no stdout, no progress: the suite prints its own lines
      io.removeTempDirOnSignal = true;
      std::string status = "ok";
      bench::RunResult result;
      try {
        result = bench::runBenchmark(opts, io);
        char load[32];
        std::snprintf(load, sizeof load, "%.1f", result.loadSeconds);
        std::cerr << withCommas(static_cast<uint64_t>(result.txPerSec)) << " tx/s (load " << load
                  << " s)\n";
        jsonl << "{\"case\":" << bench::jsonString(c->label) << "," << result.json.substr(1)
              << "\n"
              << std::flush;
        table[c->label][engine] = result.txPerSec;
      } catch (const std::exception& e) {
        status = "failed";
        ++failures;
        std::cerr << "FAILED: " << e.what() << "\n";
        table[c->label][engine] = -1;
      }
      summaryCsv << c->label << "," << engine << "," << c->workload << "," << threads << ","
                 << c->data << "," << c->pool << "," << result.txPerSec << ","
                 << result.loadSeconds << "," << result.measuredSeconds << "," << status << ","
                 << durabilityName << "\n"
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
  for (const SuiteCase* c : cases) {
    std::snprintf(cell, sizeof cell, "%16s", c->label);
    out << cell;
  }
  out << "\n";
  for (const std::string& engine : engines) {
    std::snprintf(cell, sizeof cell, "%-12s", engine.c_str());
    out << cell;
    for (const SuiteCase* c : cases) {
      const double v = table[c->label][engine];
      const std::string text = v < 0 ? "failed" : withCommas(static_cast<uint64_t>(v + 0.5));
      std::snprintf(cell, sizeof cell, "%16s", text.c_str());
      out << cell;
    }
    out << "\n";
  }
  out << "\nlookup-mem: pool 1G holds the data; lookup-oom: 256 MB of data through a 24M "
         "pool.\n";
  {
    std::ofstream txt(outDir + "/summary.txt");
    txt << out.str();
  }
  std::cout << out.str();
  std::cout << "results: " << outDir << " (per-run CSV, summary.csv, results.jsonl; "
            << static_cast<int>(elapsed) << " s)\n";
  std::cout.flush();
  std::cout << plot(outDir) << "\n";
  if (failures != 0) {
    throw Failure(kExitFailure, std::to_string(failures) + " of " + std::to_string(total) +
                                    " runs failed (see the messages above)");
  }
  return kExitOk;
}

}  // namespace vmstore::cli
