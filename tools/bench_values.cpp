// vmstore bench values: large values on every engine (issue 8), side by side. Three
// parts, each measurement in a child process of its own (this executable with --child,
// bench/values/values_bench.hpp does the work):
// - throughput (the default): for each case (mem: the data fits the pool; oom: the data
//   is several times the pool, and every engine's child runs in a memory cgroup as
//   `bench suite` bounds lookup-oom), each value size and each engine: load, random gets
//   and random overwrites; MB/s, ops/s and each engine's ratio to the best per size;
// - zero-copy (after the throughput part, or alone with --zero-copy): ns per
//   Tree::getView + release and per Tree::readOptimistic of a resident value of the
//   largest size, beside a get of an 8-byte value;
// - churn (--churn, alone): space on storage after ten rounds of mixed sizes, per engine.
// Results: tables on stdout (and summary.txt), CSV and JSON lines in --out.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_isolated.hpp"
#include "cli.hpp"
#include "engine.hpp"
#include "memory_cgroup.hpp"
#include "values/values_bench.hpp"

namespace vmstore::cli {

double benchSeconds(const Args& args, double fallback);  // bench.cpp

namespace {

namespace values = bench::values;

constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
const std::vector<uint64_t> kDefaultSizes = {1 * kKiB, 16 * kKiB, 256 * kKiB, 4 * kMiB, 64 * kMiB};
constexpr double kDefaultSeconds = 5;
constexpr uint64_t kDefaultData = 256 * kMiB;
constexpr uint64_t kDefaultPool = 1 * kGiB;
constexpr uint64_t kDefaultOomData = 2 * kGiB;
constexpr uint64_t kDefaultOomPool = 160 * kMiB;  // holds a 64M value (at most half the pool)
// What the cgroup of an out-of-memory run allows beyond the pool, as in `bench suite`,
// plus the benchmark's own two buffers per thread (the value it puts and the value it
// reads), which scale with the value size. Measured with a 160 MiB pool and 2 GiB of
// data (docs/BENCHMARKS.md, "Large values"): beyond pool and buffers WiredTiger peaked at
// 203 MiB (16 KiB values) and RocksDB was killed at 192 MiB (1 KiB values), while vmstore
// used under 30 MiB; `bench suite`'s 48 MiB kills both. 256 MiB lets every engine run.
constexpr uint64_t kDefaultAllowance = 256 * kMiB;
constexpr uint64_t kDefaultChurnData = 256 * kMiB;
constexpr unsigned kDefaultRounds = 10;

enum class Part { kThroughput, kZeroCopy, kChurn };

struct Settings {
  Part part = Part::kThroughput;
  std::vector<std::string> engines;
  std::vector<uint64_t> sizes = kDefaultSizes;
  bool mem = true, oom = true;
  double seconds = kDefaultSeconds;
  unsigned threads = 1;
  uint64_t data = kDefaultData, pool = kDefaultPool;
  uint64_t oomData = kDefaultOomData, oomPool = kDefaultOomPool;
  bool cgroup = true;
  uint64_t allowance = kDefaultAllowance;
  uint64_t churnData = kDefaultChurnData;
  unsigned rounds = kDefaultRounds;
  std::string out;
  bool child = false;
  std::string dir;  // --child only
};

// 65536 -> "64K", 1 GiB -> "1G", 100 -> "100".
std::string sizeLabel(uint64_t b) {
  for (auto [unit, suffix] : {std::pair<uint64_t, const char*>{kGiB, "G"}, {kMiB, "M"}, {kKiB, "K"}}) {
    if (b >= unit && b % unit == 0) return std::to_string(b / unit) + suffix;
  }
  return std::to_string(b);
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string rate(double perSecond) {  // 1264411 -> "1.26M"
  if (perSecond >= 1e6) return fixed(perSecond / 1e6, 2) + "M";
  if (perSecond >= 1e4) return fixed(perSecond / 1e3, 1) + "K";
  return fixed(perSecond, perSecond >= 100 ? 0 : 1);
}

std::vector<uint64_t> parseSizes(const std::string& text) {
  std::vector<uint64_t> out;
  for (const std::string& item : splitList(text)) {
    uint64_t v = 0;
    if (!parseSize(item, &v)) throw UsageError("--value-sizes: '" + item + "' is not a size (examples: 1K, 64M)");
    if (v < values::kMinValueBytes) {
      throw UsageError("--value-sizes: " + item + " is below the smallest value measured, " +
                       std::to_string(values::kMinValueBytes) + " bytes");
    }
    if (v > kMaxValueSize) throw UsageError("--value-sizes: " + item + " is over 1G, the largest value vmstore takes");
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  if (out.empty()) throw UsageError("--value-sizes needs at least one size");
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> parseEngines(const Args& args) {
  std::vector<std::string> engines;
  if (!args.has("engines")) {
    for (const std::string& e : bench::engineNames()) {
      if (e != "hashbm") engines.push_back(e);
    }
    return engines;
  }
  engines = splitList(args.str("engines", ""));
  if (engines.empty()) throw UsageError("--engines needs at least one engine");
  for (const std::string& e : engines) {
    if (e == "hashbm") {
      throw UsageError("engine hashbm cannot take part: its buffer manager has no variable-size pages, so it "
                       "holds no value over one page");
    }
    try {
      bench::makeEngine(e);
    } catch (const std::invalid_argument& err) {
      throw UsageError(err.what());
    }
  }
  return engines;
}

// vmstore holds one value, with its page header, in at most half of its pool.
void requirePoolFor(uint64_t value, uint64_t pool, const char* option) {
  if (2 * (value + 4 * kKiB) > pool) {
    throw UsageError(std::string(option) + "=" + sizeLabel(pool) + ": a value of " + sizeLabel(value) +
                     " needs a pool of at least twice its size plus two pages (" + sizeLabel(2 * value + 8 * kKiB) +
                     "): vmstore holds one value, with its page header, in at most half of its pool");
  }
}

Settings parse(int argc, char** argv) {
  Args args(argc, argv, 3,
            {{"engines", true}, {"value-sizes", true}, {"cases", true}, {"seconds", true}, {"threads", true},
             {"data", true}, {"pool", true}, {"oom-data", true}, {"oom-pool", true}, {"memory-bound", true},
             {"memory-allowance", true}, {"churn", false}, {"zero-copy", false}, {"churn-data", true},
             {"rounds", true}, {"out", true}, {"child", false}, {"dir", true}});
  args.requirePositionals(0, 0);
  Settings s;
  if (args.has("churn") && args.has("zero-copy")) throw UsageError("--churn and --zero-copy: give at most one");
  s.part = args.has("churn") ? Part::kChurn : args.has("zero-copy") ? Part::kZeroCopy : Part::kThroughput;
  for (const char* opt : {"churn-data", "rounds"}) {
    if (args.has(opt) && s.part != Part::kChurn) throw UsageError(std::string("--") + opt + " is for --churn");
  }
  if (s.part == Part::kChurn) {
    for (const char* opt : {"value-sizes", "cases", "oom-data", "oom-pool", "memory-bound", "memory-allowance",
                            "seconds", "threads", "data"}) {
      if (args.has(opt)) throw UsageError(std::string("--") + opt + " does not apply to --churn");
    }
  }
  s.engines = parseEngines(args);
  if (s.engines.empty()) throw UsageError("no engines to run");
  if (s.part == Part::kZeroCopy && s.engines != std::vector<std::string>{"vmstore"} && args.has("engines")) {
    throw UsageError("--zero-copy measures vmstore's zero-copy reads: --engines must be vmstore");
  }
  if (args.has("value-sizes")) s.sizes = parseSizes(args.str("value-sizes", ""));
  if (args.has("cases")) {
    s.mem = s.oom = false;
    for (const std::string& c : splitList(args.str("cases", ""))) {
      if (c == "mem") {
        s.mem = true;
      } else if (c == "oom") {
        s.oom = true;
      } else {
        throw UsageError("--cases: unknown case '" + c + "' (cases: mem, oom)");
      }
    }
    if (!s.mem && !s.oom) throw UsageError("--cases needs at least one case");
  }
  s.seconds = benchSeconds(args, kDefaultSeconds);
  const uint64_t threads = args.count("threads", 1, 1);
  if (threads > 64) throw UsageError("--threads: at most 64");
  s.threads = static_cast<unsigned>(threads);
  s.data = args.size("data", kDefaultData, 1);
  s.pool = args.size("pool", kDefaultPool, 1 * kMiB);
  s.oomData = args.size("oom-data", kDefaultOomData, 1);
  s.oomPool = args.size("oom-pool", kDefaultOomPool, 1 * kMiB);
  const std::string bound = args.str("memory-bound", "cgroup");
  if (bound != "cgroup" && bound != "unbounded") throw UsageError("--memory-bound=" + bound + ": use cgroup or unbounded");
  s.cgroup = bound == "cgroup";
  s.allowance = args.size("memory-allowance", kDefaultAllowance, 1 * kMiB);
  if (s.allowance > (1ull << 40)) throw UsageError("--memory-allowance: at most 1T");
  s.churnData = args.size("churn-data", kDefaultChurnData, 1 * kMiB);
  const uint64_t rounds = args.count("rounds", kDefaultRounds, 1);
  if (rounds > 1000) throw UsageError("--rounds: at most 1000");
  s.rounds = static_cast<unsigned>(rounds);
  s.out = args.str("out", "");
  if (args.has("out") && s.out.empty()) throw UsageError("--out must not be empty");
  s.child = args.has("child");
  s.dir = args.str("dir", "");
  if (args.has("dir") != s.child) throw UsageError("--dir and --child go together (they are how the command runs its parts)");

  const uint64_t largest = s.sizes.back();
  if (s.part == Part::kChurn) {
    requirePoolFor(values::ChurnSpec{}.maxValue, s.pool, "--pool");
    if (2 * s.churnData > s.pool) throw UsageError("--churn-data must be at most half of --pool (the churn runs in memory)");
  } else if (s.part == Part::kZeroCopy || s.mem) {
    requirePoolFor(largest, s.pool, "--pool");
  }
  if (s.part == Part::kThroughput && s.mem && !s.child && 2 * s.data > s.pool) {
    throw UsageError("--data=" + sizeLabel(s.data) + " must be at most half of --pool=" + sizeLabel(s.pool) +
                     " (the in-memory case)");
  }
  if (s.part == Part::kThroughput && s.oom && !s.child) {
    requirePoolFor(largest, s.oomPool, "--oom-pool");
    if (s.oomData <= s.oomPool) throw UsageError("--oom-data must be larger than --oom-pool (the out-of-memory case)");
  }
  if (s.child && (s.engines.size() != 1 || (s.part == Part::kThroughput && s.sizes.size() != 1))) {
    throw UsageError("--child runs one engine and one value size");
  }
  return s;
}

// ---- the child: one measurement, its JSON line on stdout -----------------------------

int runChildPart(const Settings& s) {
  std::string json;
  if (s.part == Part::kChurn) {
    values::ChurnSpec spec;
    spec.engine = s.engines[0];
    spec.liveBytes = s.churnData;
    spec.rounds = s.rounds;
    spec.poolBytes = s.pool;
    spec.dir = s.dir;
    json = values::toJson(spec, values::runChurn(spec));
  } else if (s.part == Part::kZeroCopy) {
    values::ZeroCopySpec spec;
    spec.valueBytes = s.sizes.back();
    spec.poolBytes = s.pool;
    spec.dir = s.dir;
    json = values::toJson(spec, values::runZeroCopy(spec));
  } else {
    values::ThroughputSpec spec;
    spec.engine = s.engines[0];
    spec.valueBytes = s.sizes[0];
    spec.dataBytes = s.data;
    spec.poolBytes = s.pool;
    spec.threads = s.threads;
    spec.seconds = s.seconds;
    spec.dir = s.dir;
    std::cerr << "values: " << spec.engine << ", " << sizeLabel(spec.valueBytes) << " values, " << humanBytes(s.data)
              << " of them, pool " << humanBytes(s.pool) << ", " << s.threads << " thread(s), " << s.seconds
              << " s per phase, in " << s.dir << "\n";
    json = values::toJson(spec, values::runThroughput(spec));
  }
  std::cout << json << "\n" << std::flush;
  return kExitOk;
}

// ---- the parent: runs the children, prints the tables --------------------------------

struct Result {
  bool ok = false;
  std::string error;
  std::string json;
  uint64_t limit = 0, peak = 0;
  double field(const std::string& name) const {
    double v = 0;
    return ok && jsonNumber(json, name, &v) ? v : 0;
  }
};

// Runs `vmstore bench values ARGS... --child` (in a memory cgroup of `limit` bytes when
// limit > 0); stops the whole command on an interrupt.
Result runPart(std::vector<std::string> args, uint64_t limit, const std::string& logPath) {
  args.insert(args.begin(), {"bench", "values", "--child"});
  Result r;
  std::unique_ptr<bench::MemoryCgroup> cgroup;
  if (limit > 0) {
    std::string why;
    cgroup = bench::MemoryCgroup::make(limit, &why);
    if (!cgroup) {
      r.error = "cannot make its memory cgroup: " + why;
      return r;
    }
    r.limit = limit;
  }
  IsolatedResult child = runIsolatedCommand(args, cgroup.get(), logPath);
  if (child.interrupted) throw Failure(130, "interrupted");
  r.ok = child.ok;
  r.error = child.error;
  r.json = child.json;
  r.peak = child.peakBytes;
  return r;
}

class Report {
 public:
  explicit Report(const std::string& dir) : dir_(dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Failure(kExitFailure, "cannot create " + dir + ": " + ec.message());
    jsonl_.open(dir + "/results.jsonl");
    if (!jsonl_) throw Failure(kExitFailure, "cannot write into " + dir);
  }
  const std::string& dir() const { return dir_; }
  std::string log(const std::string& name) const { return dir_ + "/" + name + ".log"; }
  void json(const std::string& prefix, const Result& r) {
    if (!r.ok) {
      ++failures_;
      return;
    }
    jsonl_ << "{" << prefix << (r.limit ? ",\"memory_limit\":" + std::to_string(r.limit) +
                                              ",\"memory_peak\":" + std::to_string(r.peak)
                                        : std::string())
           << "," << r.json.substr(1) << "\n"
           << std::flush;
  }
  // Prints and keeps for summary.txt.
  void print(const std::string& text) {
    std::cout << text << std::flush;
    summary_ += text;
  }
  void finish() {
    std::ofstream txt(dir_ + "/summary.txt");
    txt << summary_;
  }
  int failures() const { return failures_; }

 private:
  std::string dir_;
  std::ofstream jsonl_;
  std::string summary_;
  int failures_ = 0;
};

struct ThroughputRun {
  std::string label;  // mem, oom or oom-unbounded
  uint64_t size;
  std::string engine;
  Result result;
};

const char* kPhases[][3] = {{"get", "gets (random keys, each value copied out and checked)", "get_mb_s"},
                            {"put", "puts (overwrites of random keys)", "put_mb_s"},
                            {"load", "loads (inserts into the empty table, ascending keys)", "load_mb_s"}};

double best(const std::vector<ThroughputRun>& runs, const std::string& label, uint64_t size, const std::string& field) {
  double b = 0;
  for (const ThroughputRun& r : runs) {
    if (r.label == label && r.size == size) b = std::max(b, r.result.field(field));
  }
  return b;
}

// One table per case and phase: sizes down, engines across, "MB/s ops/s ratio"; then
// where vmstore stands at each size.
std::string throughputTables(const Settings& s, const std::vector<ThroughputRun>& runs,
                             const std::vector<std::string>& labels) {
  std::ostringstream out;
  char cell[96];
  for (const std::string& label : labels) {
    const bool oom = label != "mem";
    out << "\n" << (oom ? "out of memory" : "in memory") << " (" << label << "): pool "
        << humanBytes(oom ? s.oomPool : s.pool) << ", " << humanBytes(oom ? s.oomData : s.data)
        << " of values per size, " << s.threads << " thread(s), " << s.seconds << " s per phase";
    if (label == "oom") out << ", each engine in a memory cgroup";
    if (label == "oom-unbounded") out << ", UNBOUNDED (no memory cgroup: the page cache may hold the data)";
    out << "\n";
    for (const auto& phase : kPhases) {
      const std::string field = phase[2];
      const std::string opsField = std::string(phase[0]) + (std::string(phase[0]) == "load" ? "_s" : "_ops_s");
      out << "\n" << phase[1] << ": MB/s, ops/s, ratio to the best\n";
      std::snprintf(cell, sizeof cell, "%-6s", "size");
      out << cell;
      for (const std::string& e : s.engines) {
        std::snprintf(cell, sizeof cell, "%28s", e.c_str());
        out << cell;
      }
      out << "\n";
      for (uint64_t size : s.sizes) {
        std::snprintf(cell, sizeof cell, "%-6s", sizeLabel(size).c_str());
        out << cell;
        const double top = best(runs, label, size, field);
        for (const std::string& e : s.engines) {
          const ThroughputRun* run = nullptr;
          for (const ThroughputRun& r : runs) {
            if (r.label == label && r.size == size && r.engine == e) run = &r;
          }
          std::string text = "-";
          if (run != nullptr && !run->result.ok) text = "failed";
          if (run != nullptr && run->result.ok) {
            const double mb = run->result.field(field);
            const double ops = std::string(phase[0]) == "load"
                                   ? run->result.field("keys") / std::max(run->result.field("load_s"), 1e-9)
                                   : run->result.field(opsField);
            text = fixed(mb, 1) + " " + rate(ops) + "/s " + fixed(top > 0 ? mb / top : 0, 2);
          }
          std::snprintf(cell, sizeof cell, "%28s", text.c_str());
          out << cell;
        }
        out << "\n";
      }
    }
    // Where vmstore stands: first, within 10% of the best, or behind (and who is first).
    if (std::find(s.engines.begin(), s.engines.end(), "vmstore") == s.engines.end() || s.engines.size() < 2) continue;
    out << "\nvmstore against the best (" << label << "):\n";
    for (uint64_t size : s.sizes) {
      out << "  " << sizeLabel(size) << ":";
      for (const auto& phase : kPhases) {
        const std::string field = phase[2];
        const double top = best(runs, label, size, field);
        double mine = -1;
        std::string leader;
        for (const ThroughputRun& r : runs) {
          if (r.label != label || r.size != size || !r.result.ok) continue;
          if (r.engine == "vmstore") mine = r.result.field(field);
          if (r.result.field(field) == top) leader = r.engine;
        }
        out << " " << phase[0] << " ";
        if (mine < 0 || top <= 0) {
          out << "n/a;";
        } else if (leader == "vmstore") {
          out << "first;";
        } else if (mine >= 0.9 * top) {
          out << "within 10% (" << fixed(mine / top, 2) << " of " << leader << ");";
        } else {
          out << "BEHIND (" << fixed(mine / top, 2) << " of " << leader << ");";
        }
      }
      out << "\n";
    }
  }
  return out.str();
}

void runThroughputPart(const Settings& s, Report& report) {
  std::vector<std::string> labels;
  if (s.mem) labels.push_back("mem");
  std::string noCgroup;
  if (s.oom) {
    bool bounded = s.cgroup;
    if (bounded) {
      if (!bench::MemoryCgroup::make(s.oomPool + s.allowance, &noCgroup)) {
        std::cerr << "values: no memory cgroup can be made (" << noCgroup
                  << "); the out-of-memory runs are UNBOUNDED and labelled oom-unbounded\n";
        bounded = false;
      }
    }
    labels.push_back(bounded ? "oom" : "oom-unbounded");
  }
  const size_t total = labels.size() * s.sizes.size() * s.engines.size();
  std::cerr << "vmstore bench values: " << total << " runs (" << labels.size() << " cases x " << s.sizes.size()
            << " sizes x " << s.engines.size() << " engines), " << s.seconds << " s per phase, results in "
            << report.dir() << "\n";
  std::vector<ThroughputRun> runs;
  std::ofstream csv(report.dir() + "/throughput.csv");
  csv << "case,engine,value_size,keys,data,pool,threads,load_mb_s,get_ops_s,get_mb_s,get_ratio,put_ops_s,put_mb_s,"
         "put_ratio,close_s,status,memory_limit,memory_peak\n";
  size_t n = 0;
  for (const std::string& label : labels) {
    const bool oom = label != "mem";
    const uint64_t pool = oom ? s.oomPool : s.pool;
    const uint64_t data = oom ? s.oomData : s.data;
    for (uint64_t size : s.sizes) {
      for (const std::string& engine : s.engines) {
        const std::string name = label + "-" + sizeLabel(size) + "-" + engine;
        std::cerr << "[" << ++n << "/" << total << "] " << label << " " << sizeLabel(size) << " on " << engine << ": "
                  << std::flush;
        const uint64_t limit = label == "oom" ? pool + s.allowance + 2 * s.threads * size : 0;
        Result r = runPart({"--engines=" + engine, "--value-sizes=" + std::to_string(size),
                            "--data=" + std::to_string(data), "--pool=" + std::to_string(pool),
                            "--seconds=" + fixed(s.seconds, 3), "--threads=" + std::to_string(s.threads)},
                           limit, report.log(name));
        if (r.ok) {
          std::cerr << "get " << fixed(r.field("get_mb_s"), 1) << " MB/s, put " << fixed(r.field("put_mb_s"), 1)
                    << " MB/s, load " << fixed(r.field("load_mb_s"), 1) << " MB/s"
                    << (limit ? ", peak memory " + humanBytes(r.peak) + " of " + humanBytes(limit) : "") << "\n";
        } else {
          std::cerr << "FAILED: " << r.error << "\n";
        }
        report.json("\"part\":\"throughput\",\"case\":\"" + label + "\"", r);
        runs.push_back({label, size, engine, r});
      }
      // This size's rows, now that its ratios are known.
      for (const ThroughputRun& run : runs) {
        if (run.label != label || run.size != size) continue;
        const Result& r = run.result;
        auto ratio = [&](const char* field) {
          const double top = best(runs, label, size, field);
          return fixed(top > 0 ? r.field(field) / top : 0, 3);
        };
        csv << label << "," << run.engine << "," << size << "," << r.field("keys") << "," << r.field("data") << ","
            << pool << "," << s.threads << "," << r.field("load_mb_s") << "," << r.field("get_ops_s") << ","
            << r.field("get_mb_s") << "," << ratio("get_mb_s") << "," << r.field("put_ops_s") << ","
            << r.field("put_mb_s") << "," << ratio("put_mb_s") << "," << r.field("close_s") << ","
            << (r.ok ? "ok" : "failed") << "," << r.limit << "," << r.peak << "\n"
            << std::flush;
      }
    }
  }
  report.print(throughputTables(s, runs, labels));

}

void runZeroCopyPart(const Settings& s, Report& report) {
  const uint64_t size = s.sizes.back();
  std::cerr << "zero-copy: a resident " << sizeLabel(size) << " value, vmstore, pool " << humanBytes(s.pool) << "\n";
  Result r = runPart({"--zero-copy", "--engines=vmstore", "--value-sizes=" + std::to_string(size),
                      "--pool=" + std::to_string(s.pool)},
                     0, report.log("zero-copy"));
  report.json("\"part\":\"zero-copy\"", r);
  if (!r.ok) {
    report.print("\nzero-copy: FAILED: " + r.error + "\n");
    return;
  }
  const double view = r.field("view_large_ns"), small = r.field("get_small_ns");
  const double optimistic = r.field("optimistic_large_ns");
  std::ostringstream out;
  out << "\nzero-copy reads (vmstore, one thread, median of " << values::kZeroCopyRounds << " rounds):\n"
      << "  Tree::getView + read 8 bytes + release, resident " << sizeLabel(size) << " value: " << fixed(view, 1)
      << " ns\n"
      << "  Tree::get of an 8-byte value (copied):                       " << fixed(small, 1) << " ns\n"
      << "  Tree::getView + read 8 bytes + release, an 8-byte value:     " << fixed(r.field("view_small_ns"), 1)
      << " ns\n"
      << "  Tree::readOptimistic reading 8 bytes, resident " << sizeLabel(size) << " value:   " << fixed(optimistic, 1)
      << " ns\n"
      << "  Tree::readOptimistic reading 8 bytes, an 8-byte value:       " << fixed(r.field("optimistic_small_ns"), 1)
      << " ns\n"
      << "  Tree::get of the " << sizeLabel(size) << " value (copied):                         "
      << fixed(r.field("get_large_ns") / 1e6, 3) << " ms\n"
      << "  target, a zero-copy read of the " << sizeLabel(size) << " value costs no more than a get of an 8-byte "
      << "value:\n"
      << "    held view (getView):          " << (view <= small ? "met" : "NOT met") << " ("
      << fixed(view / std::max(small, 1e-9), 2) << "x)\n"
      << "    optimistic (readOptimistic):  " << (optimistic <= small ? "met" : "NOT met") << " ("
      << fixed(optimistic / std::max(small, 1e-9), 2) << "x)\n";
  report.print(out.str());
}

void runChurnPart(const Settings& s, Report& report) {
  values::ChurnSpec shape;
  shape.liveBytes = s.churnData;
  const std::vector<uint64_t> sizes = values::churnSizes(shape);
  std::cerr << "vmstore bench values --churn: " << s.engines.size() << " engines, " << sizes.size() << " values of "
            << sizeLabel(shape.minValue) << " to " << sizeLabel(shape.maxValue) << " (log-uniform), "
            << humanBytes(s.churnData) << " live, " << s.rounds << " rounds, pool " << humanBytes(s.pool)
            << "; results in " << report.dir() << "\n";
  std::ofstream csv(report.dir() + "/churn.csv");
  csv << "engine,keys,live_bytes,written_bytes,disk_final,ratio_final,disk_worst,ratio_worst,disk_compacted,"
         "ratio_compacted,disk_closed,ratio_closed,status\n";
  std::ostringstream out;
  out << "\nspace after churn: " << sizes.size() << " values, " << sizeLabel(shape.minValue) << " to "
      << sizeLabel(shape.maxValue) << " log-uniform, " << humanBytes(s.churnData) << " live, dealt anew to the keys in "
      << "each of " << s.rounds << " rounds, each round ending with the engine's checkpoint\n"
      << "(allocated bytes of the engine's files; ratio = over the live bytes)\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-12s %22s %22s %22s %22s\n", "engine", "after the rounds",
                "worst, rounds 2..", "after compaction", "after close");
  out << line;
  for (const std::string& engine : s.engines) {
    std::cerr << "churn on " << engine << ": " << std::flush;
    Result r = runPart({"--churn", "--engines=" + engine, "--churn-data=" + std::to_string(s.churnData),
                        "--rounds=" + std::to_string(s.rounds), "--pool=" + std::to_string(s.pool)},
                       0, report.log("churn-" + engine));
    report.json("\"part\":\"churn\"", r);
    auto cellOf = [&](const char* disk, const char* ratio) {
      return r.ok ? humanBytes(static_cast<uint64_t>(r.field(disk))) + " " + fixed(r.field(ratio), 2) + "x"
                  : std::string("failed");
    };
    std::cerr << (r.ok ? cellOf("disk_final", "ratio_final") : "FAILED: " + r.error) << "\n";
    std::snprintf(line, sizeof line, "%-12s %22s %22s %22s %22s\n", engine.c_str(),
                  cellOf("disk_final", "ratio_final").c_str(), cellOf("disk_worst", "ratio_worst").c_str(),
                  cellOf("disk_compacted", "ratio_compacted").c_str(), cellOf("disk_closed", "ratio_closed").c_str());
    out << line;
    csv << engine << "," << r.field("keys") << "," << r.field("live_bytes") << "," << r.field("written_bytes");
    for (const char* f : {"disk_final", "ratio_final", "disk_worst", "ratio_worst", "disk_compacted",
                          "ratio_compacted", "disk_closed", "ratio_closed"}) {
      csv << "," << r.field(f);
    }
    csv << "," << (r.ok ? "ok" : "failed") << "\n" << std::flush;
  }
  report.print(out.str());
}

}  // namespace

int cmdBenchValues(int argc, char** argv) {
  const Settings s = parse(argc, argv);
  if (s.child) {
    try {
      return runChildPart(s);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  Report report(s.out.empty() ? "bench-results/values-" + timestamp() : s.out);
  if (s.part == Part::kChurn) {
    runChurnPart(s, report);
  } else {
    if (s.part == Part::kThroughput) runThroughputPart(s, report);
    if (std::find(s.engines.begin(), s.engines.end(), "vmstore") != s.engines.end()) runZeroCopyPart(s, report);
  }
  report.finish();
  std::cout << "results: " << report.dir() << " (summary.txt, results.jsonl, "
            << (s.part == Part::kChurn ? "churn.csv" : "throughput.csv") << ", one .log per run)\n";
  // A failed run shows in the tables; the exit status says so too.
  if (report.failures() > 0) {
    throw Failure(kExitFailure, std::to_string(report.failures()) + " run(s) failed (see the messages above)");
  }
  return kExitOk;
}

}  // namespace vmstore::cli
