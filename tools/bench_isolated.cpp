// One suite run in a child process, optionally in a memory cgroup: see bench_isolated.hpp.
#include "bench_isolated.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "child_run.hpp"
#include "memory_cgroup.hpp"

namespace vmstore::cli {

namespace {

std::string selfExecutable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return buf;
}

std::string lastLines(const std::string& path, size_t count) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    // The loading progress redraws itself with \r: keep what the line shows last.
    size_t cr = line.rfind('\r');
    if (cr != std::string::npos) line = line.substr(cr + 1);
    lines.push_back(line);
    if (lines.size() > count) lines.pop_front();
  }
  std::string out;
  for (const std::string& l : lines) out += "\n    " + l;
  return out;
}

std::string fmtSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

bool jsonNumber(const std::string& json, const std::string& key, double* out) {
  const std::string needle = "\"" + key + "\":";
  size_t at = json.find(needle);
  if (at == std::string::npos) return false;
  const char* start = json.c_str() + at + needle.size();
  char* end = nullptr;
  double v = std::strtod(start, &end);
  if (end == start) return false;
  *out = v;
  return true;
}

IsolatedResult runIsolated(const bench::RunOptions& opts, bench::MemoryCgroup* cgroup,
                           const std::string& logPath) {
  std::vector<std::string> args = {"bench",
                                   opts.workload,
                                   "--engine=" + opts.engine,
                                   "--threads=" + std::to_string(opts.threads),
                                   "--data=" + std::to_string(opts.data),
                                   "--pool=" + std::to_string(opts.pool),
                                   "--seconds=" + fmtSeconds(opts.seconds),
                                   std::string("--durability=") + bench::durabilityName(opts.durability)};
  if (!opts.csv.empty()) args.push_back("--csv=" + opts.csv);
  IsolatedResult r = runIsolatedCommand(args, cgroup, logPath);
  if (!r.ok) return r;
  if (!jsonNumber(r.json, "tx_per_s", &r.txPerSec)) {
    r.ok = false;
    r.error = "the child printed no result line (its log: " + logPath + ")";
    return r;
  }
  jsonNumber(r.json, "load_s", &r.loadSeconds);
  jsonNumber(r.json, "seconds", &r.measuredSeconds);
  return r;
}

IsolatedResult runIsolatedCommand(const std::vector<std::string>& args, bench::MemoryCgroup* cgroup,
                                  const std::string& logPath) {
  IsolatedResult r;
  const std::string exe = selfExecutable();
  if (exe.empty()) {
    r.error = "cannot find this executable (/proc/self/exe) to run the benchmark in a child";
    return r;
  }
  // The child's database directory: made and removed here (see the contract).
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string dir = (base / "vmstore-bench-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) {
    r.error = "cannot create a temporary directory in " + base.string() + ": " + std::strerror(errno);
    return r;
  }
  struct RemoveDir {
    std::string path;
    ~RemoveDir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } removeDir{dir};
  std::vector<std::string> argv = {exe};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--dir=" + dir);
  std::string why;
  bench::ChildResult child = bench::runChild(argv, logPath, cgroup, &why);
  if (!child.started) {
    r.placed = cgroup == nullptr;  // with a cgroup: it could not be joined (or not forked)
    r.error = why;
    return r;
  }
  r.peakBytes = child.peakBytes;
  r.interrupted = child.exitCode == 130 || child.termSignal == SIGINT || child.termSignal == SIGTERM;
  if (child.exitCode != 0) {
    std::ostringstream msg;
    if (child.termSignal != 0) {
      msg << "killed by signal " << child.termSignal << " (" << strsignal(child.termSignal) << ")";
    } else {
      msg << "exited with status " << child.exitCode;
    }
    if (child.oomKills > 0) {
      msg << "; the memory cgroup's limit (" << cgroup->limitBytes() / (1024 * 1024)
          << " MiB) killed it: out of memory";
    }
    if (child.exitCode == 130) msg << " (interrupted)";
    msg << "; its log " << logPath << " ends:" << lastLines(logPath, 4);
    r.error = msg.str();
    return r;
  }
  // The JSON line is the last line of stdout.
  std::istringstream lines(child.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line[0] == '{') r.json = line;
  }
  if (r.json.empty()) {
    r.error = "the child printed no result line (its log: " + logPath + ")";
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace vmstore::cli
