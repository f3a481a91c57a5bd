// Helpers shared by the micro-benchmarks (page-access, vm-alloc, read-io, ...): clocks, a
// xorshift generator, percentiles, scratch directories, hardware counters through
// perf_event_open, the TLB shootdown count of /proc/interrupts, thread ladders and
// JSON/CSV formatting.
//
// Contract
// - Header-only (inline), so that it does not depend on how the build collects bench/
//   sources.
// - Everything that may be missing on a machine (hardware counters, the TLB row of
//   /proc/interrupts) reports "not available" instead of failing: callers print "n/a"
//   in CSV and null in JSON.
#pragma once

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../workload.hpp"
#include "os/memory.hpp"
#include "vmstore/status.hpp"

namespace vmstore::bench::micro {

// A failed call of a micro-benchmark that uses the database: throws "BENCH: WHAT: status".
inline void checkStatus(const Status& s, std::string_view bench, const char* what) {
  if (!s.ok()) throw std::runtime_error(std::string(bench) + ": " + what + ": " + s.toString());
}

inline double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// xorshift64 (Marsaglia): state must not be 0.
inline uint64_t xorshift64(uint64_t x) {
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}

// Uniform-enough index in [0, n) from 64 random bits, without a division.
inline uint64_t fastRange(uint64_t x, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64);
}

// Counts user-space instructions and cache misses (last-level, as the kernel's generic
// PERF_COUNT_HW_CACHE_MISSES event) of the calling thread between start() and stop().
// On machines without a PMU (most VMs) or with a restrictive perf_event_paranoid, the
// counters are simply unavailable.
class PerfCounters {
 public:
  PerfCounters() {
    instFd_ = open(PERF_COUNT_HW_INSTRUCTIONS);
    missFd_ = open(PERF_COUNT_HW_CACHE_MISSES);
  }
  ~PerfCounters() {
    if (instFd_ >= 0) close(instFd_);
    if (missFd_ >= 0) close(missFd_);
  }
  PerfCounters(const PerfCounters&) = delete;
  PerfCounters& operator=(const PerfCounters&) = delete;

  bool available() const { return instFd_ >= 0 || missFd_ >= 0; }
  void start() {
    for (int fd : {instFd_, missFd_}) {
      if (fd < 0) continue;
      ioctl(fd, PERF_EVENT_IOC_RESET, 0);
      ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    }
  }
  void stop() {
    inst_ = finish(instFd_);
    miss_ = finish(missFd_);
  }
  std::optional<uint64_t> instructions() const { return inst_; }
  std::optional<uint64_t> cacheMisses() const { return miss_; }

 private:
  static int open(uint64_t config) {
    perf_event_attr a;
    std::memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = config;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
  }
  static std::optional<uint64_t> finish(int fd) {
    if (fd < 0) return std::nullopt;
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t v = 0;
    if (read(fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return std::nullopt;
    return v;
  }

  int instFd_ = -1;
  int missFd_ = -1;
  std::optional<uint64_t> inst_;
  std::optional<uint64_t> miss_;
};

// TLB shootdown interrupts of the machine so far (os/memory.hpp), or nothing.
using internal::tlbShootdowns;

// MemAvailable of /proc/meminfo in bytes (0 if unknown).
inline uint64_t memAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

inline unsigned hardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

// The thread counts to measure, 1..max: every count up to 8, then powers of two and max.
inline std::vector<unsigned> threadLadder(unsigned max) {
  std::vector<unsigned> out;
  for (unsigned t = 1; t <= max; t = t < 8 ? t + 1 : t * 2) out.push_back(t);
  if (out.empty() || out.back() != max) out.push_back(max);
  return out;
}

// The CLI always fills in --threads (default 2) and --seconds (default 10), so a value
// equal to RunOptions' default is taken as "not given" and the micro-benchmark's own
// default applies (an explicit --threads=2 or --seconds=10 therefore acts like none).

// The pool: --pool, or the benchmark's default. The CLI always passes --pool (default
// 1 GiB, where RunOptions says 0): either means "not given".
inline uint64_t poolBytes(const RunOptions& opts, uint64_t fallback) {
  constexpr uint64_t kCliDefaultPool = 1ull << 30;
  return opts.pool != 0 && opts.pool != kCliDefaultPool ? opts.pool : fallback;
}

// Time to spend on one measured configuration: --seconds, or the benchmark's default.
inline double secondsPerConfig(const RunOptions& opts, double fallback) {
  if (opts.seconds > 0 && opts.seconds != RunOptions{}.seconds) return opts.seconds;
  return fallback;
}

// The highest thread count to measure: --threads, or the hardware threads.
inline unsigned maxThreads(const RunOptions& opts) {
  if (opts.threads > 0 && opts.threads != RunOptions{}.threads) return opts.threads;
  return hardwareThreads();
}

// The p-quantile (0 <= p <= 1) of v by rank, 0 for none.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

inline std::string fmtNumber(double v, int precision = 3) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}
inline std::string jsonNumber(double v, int precision = 3) {
  if (!std::isfinite(v)) return "null";
  return fmtNumber(v, precision);
}
inline std::string jsonNumber(std::optional<double> v, int precision = 3) {
  return v ? jsonNumber(*v, precision) : "null";
}
inline std::string csvNumber(std::optional<double> v, int precision = 3) {
  return v ? fmtNumber(*v, precision) : "n/a";
}
inline std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace vmstore::bench::micro
