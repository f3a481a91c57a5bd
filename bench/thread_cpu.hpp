// Thread CPU: how much CPU each of this process's threads used over a stretch of a run,
// grouped by thread name, and how long the machine's CPUs were idle meanwhile. So a
// benchmark's JSON line says where its CPU went (the workers, vmstore's background
// threads, named "vms-..." by os/thread_name.hpp, or nowhere) without a profiler.
//
// Contract
// - sampleCpu() reads /proc/self/task/*/stat and /proc/stat: each live thread's name
//   and user and system time, and the machine's idle time (idle and iowait), in
//   clock ticks. A file that cannot be read leaves its part empty (zero). A name that
//   ends in "-" and digits (io_uring's worker threads, iou-wrk-TID) is kept without
//   them, so that threads of one kind share one name.
// - cpuBetween(a, b) is, per thread name, the user and system seconds of the threads
//   live at b since a (a thread started after a counts from zero; one that ended before
//   b is not counted), and the machine's idle seconds between them, all CPUs together.
// - cpuJson(c) writes it as fields of a flat JSON object (the runner's line stays
//   flat): ,"cpu_idle_s":S then for each name, in order, ,"cpu.NAME.user_s":S,
//   "cpu.NAME.sys_s":S,"cpu.NAME.threads":N; times to two decimals.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace vmstore::bench {

struct CpuSample {
  struct Thread {
    std::string name;
    uint64_t user = 0;  // clock ticks
    uint64_t sys = 0;
  };
  std::map<int, Thread> threads;  // by thread id
  uint64_t idle = 0;              // the machine's idle and iowait ticks
};

struct CpuUse {
  struct Group {
    double user = 0;  // seconds
    double sys = 0;
    unsigned count = 0;  // threads of this name
  };
  std::map<std::string, Group> byName;
  double idle = 0;  // seconds, all CPUs
};

CpuSample sampleCpu();
CpuUse cpuBetween(const CpuSample& a, const CpuSample& b);
std::string cpuJson(const CpuUse& c);

}  // namespace vmstore::bench
