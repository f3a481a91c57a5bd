// Shared pieces of the vmstore command-line tool: argument parsing, errors, output
// formatting, database opening and the synthetic data set used by demo and bench.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "vmstore/vmstore.hpp"
#include "workloads/records.hpp"

namespace vmstore::cli {

// Exit codes of the tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // not found, missing database, engine error
inline constexpr int kExitUsage = 2;    // bad command line
inline constexpr int kExitCorrupt = 3;  // check found damage

// Thrown for a bad command line: main prints the message and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown for a failure at run time: main prints the message and exits with `code`.
struct Failure : std::runtime_error {
  Failure(int exit_code, const std::string& message)
      : std::runtime_error(message), code(exit_code) {}
  int code;
};

// ---- argument parsing (args.cpp) -----------------------------------------------------

// One option a command accepts: "--name=VALUE" (or "--name VALUE") when takes_value,
// else the bare flag "--name".
struct OptionSpec {
  std::string_view name;
  bool takes_value;
};

// The command line of one command: positional arguments and options. "--" ends the
// options, so keys that start with "--" can be given after it.
class Args {
 public:
  Args(int argc, char** argv, int first, std::vector<OptionSpec> specs);

  // Between `min` and `max` positional arguments, else UsageError.
  void requirePositionals(size_t min, size_t max) const;
  size_t positionalCount() const { return positionals_.size(); }
  const std::string& positional(size_t i) const { return positionals_.at(i); }

  bool has(std::string_view name) const;
  std::string str(std::string_view name, std::string_view fallback) const;
  // Byte sizes ("64M", "4G"; powers of 1024) and counts (same syntax), at least `min`.
  uint64_t size(std::string_view name, uint64_t fallback, uint64_t min = 0) const;
  uint64_t count(std::string_view name, uint64_t fallback, uint64_t min = 0) const;

 private:
  const std::string* find(std::string_view name) const;
  std::vector<std::string> positionals_;
  std::vector<std::pair<std::string, std::string>> options_;  // name, value ("" for flags)
};

// ---- formatting and bytes (common.cpp) -----------------------------------------------

std::string toHex(std::string_view bytes);
// UsageError naming `what` on odd length or a non-hex digit.
std::string fromHex(std::string_view hex, std::string_view what);
// "1.5 GiB", "64.0 MiB", "812 B".
std::string humanBytes(uint64_t bytes);
// 1234567 -> "1,234,567".
std::string withCommas(uint64_t n);
// The local time as "20261121-103524" (names of result directories).
std::string timestamp();
// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> splitList(const std::string& s);
// A tree name for humans: "(default)" for "", else the name with control bytes escaped.
std::string treeLabel(std::string_view name);
// Writes all bytes to stdout; Failure when stdout is broken.
void writeOut(std::string_view bytes);

// ---- databases and directories (common.cpp) -------------------------------------------

// Opens `dir`. Errors become Failure(1) with a message; with create=false a missing
// database is "no vmstore database in DIR". Corruption is Failure(corrupt_exit).
// config: more config keys (the C API's string, e.g. "tiers=0:1G+1:4G"), applied last;
// a bad one is a usage error.
std::unique_ptr<Database> openDatabase(const std::string& dir, uint64_t pool_size,
                                       bool create, int corrupt_exit = kExitFailure,
                                       Durability durability = Durability::kSync,
                                       const std::string& config = "");
// Opens tree `name`; a missing tree (create=false) is Failure(1) "no tree NAME".
Tree* openTree(Database& db, std::string_view name, bool create);
// Closes and turns an error into Failure(1).
void closeDatabase(std::unique_ptr<Database>& db);
// Turns a non-OK status into Failure(1) "what: status".
void check(const Status& s, std::string_view what);

// Makes `dir` ready for a fresh database: a missing directory is fine; an empty one or
// one that holds only the files a vmstore database consists of is removed; anything
// else is a Failure (so no user file is ever removed).
void prepareFreshDirectory(const std::string& dir);
// The names of the entries of a database directory (learned from the engine once).
std::vector<std::string> databaseFileNames();

// ---- the synthetic data set of demo and bench (common.cpp / progress.cpp) -------------

// The key/value shape and generators are the benchmark's (one definition of the data
// set): 8-byte big-endian keys, 120-byte values that depend on the key.
using vmstore::bench::records::encodeKey;
using vmstore::bench::records::kKeySize;
using vmstore::bench::records::kValueSize;
using vmstore::bench::records::splitmix64;
using FastRandom = vmstore::bench::records::Random;
// The value stored under key i by demo: the benchmark's version-0 value.
inline void makeValue(uint64_t i, char out[kValueSize]) { vmstore::bench::records::makeValue(i, 0, out); }

// A bijection of [0, n) that looks random: visits every index once, in O(1) memory.
class Permutation {
 public:
  Permutation(uint64_t n, uint64_t seed);
  uint64_t operator()(uint64_t i) const;

 private:
  uint64_t scramble(uint64_t x) const;
  uint64_t n_;
  unsigned bits_;
  uint64_t mask_;
  uint64_t k1_, k2_, k3_;
};

// A progress line for long loops. On a terminal it is redrawn in place with "\r" (at
// most ~10 times a second); otherwise a separate line is printed at every 10%.
class Progress {
 public:
  Progress(FILE* out, std::string label, uint64_t total);
  // `done` items so far; cheap to call often.
  void update(uint64_t done);
  // Prints the final 100% line, with the elapsed time (measured since construction
  // unless `elapsed` >= 0 is given) and the rate.
  void finish(double elapsed = -1);
  double elapsedSeconds() const;

 private:
  void print(uint64_t done, bool final, double elapsed);
  FILE* out_;
  std::string label_;
  uint64_t total_;
  bool tty_;
  int next_decile_ = 1;
  double start_;
  double last_draw_ = 0;
};

// Seconds on a monotonic clock.
double nowSeconds();

// ---- commands ------------------------------------------------------------------------

int cmdPut(int argc, char** argv);    // commands.cpp
int cmdGet(int argc, char** argv);    // commands.cpp
int cmdDel(int argc, char** argv);    // commands.cpp
int cmdScan(int argc, char** argv);   // commands.cpp
int cmdStats(int argc, char** argv);  // inspect.cpp
int cmdCheck(int argc, char** argv);  // inspect.cpp
int cmdDemo(int argc, char** argv);   // demo.cpp
#ifdef VMSTORE_WITH_BENCH
int cmdBench(int argc, char** argv);       // bench.cpp: workloads and micro-benchmarks
int cmdBenchSuite(int argc, char** argv);  // bench_suite.cpp: `vmstore bench suite`
int cmdBenchValues(int argc, char** argv);  // bench_values.cpp: `vmstore bench values`
int cmdBenchPolicies(int argc, char** argv);  // bench_policies.cpp: `vmstore bench policies`
int cmdSim(int argc, char** argv);            // bench_sim.cpp: `vmstore sim`
// Runs bench/plot.py over a result directory (bench_suite.cpp); returns a line saying
// where the plots are or why there are none.
std::string runPlots(const std::string& outDir);
#endif

// The default pool of the small commands (put/get/del/scan/stats/check).
inline constexpr uint64_t kDefaultCommandPool = 64ull << 20;

}  // namespace vmstore::cli
