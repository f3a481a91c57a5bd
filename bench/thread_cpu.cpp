#include "thread_cpu.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "runner.hpp"

namespace vmstore::bench {

namespace {

// A thread's name and times from its stat line: the name is between the first '(' and
// the last ')' (it may hold either); utime and stime are the 12th and 13th fields after.
bool parseStat(const std::string& line, CpuSample::Thread* out) {
  const size_t open = line.find('(');
  const size_t close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  out->name = line.substr(open + 1, close - open - 1);
  // One name for the kernel's numbered threads of a kind (io_uring's iou-wrk-TID).
  const size_t dash = out->name.rfind('-');
  if (dash != std::string::npos && dash + 1 < out->name.size() &&
      out->name.find_first_not_of("0123456789", dash + 1) == std::string::npos) {
    out->name.resize(dash);
  }
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 1; i <= 13 && rest >> field; i++) {
    if (i == 12) out->user = std::stoull(field);
    if (i == 13) out->sys = std::stoull(field);
  }
  return static_cast<bool>(rest);
}

std::string twoDecimals(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

CpuSample sampleCpu() {
  CpuSample s;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/stat");
      std::string line;
      CpuSample::Thread t;
      try {
        if (std::getline(in, line) && parseStat(line, &t)) s.threads[std::stoi(e->d_name)] = t;
      } catch (const std::exception&) {  // a malformed number: leave the thread out
      }
    }
    closedir(d);
  }
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t user, nice, system, idle, iowait;
  if (stat >> cpu >> user >> nice >> system >> idle >> iowait && cpu == "cpu") s.idle = idle + iowait;
  return s;
}

CpuUse cpuBetween(const CpuSample& a, const CpuSample& b) {
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  CpuUse c;
  for (const auto& [tid, t] : b.threads) {
    uint64_t user = t.user, sys = t.sys;
    if (auto it = a.threads.find(tid); it != a.threads.end()) {
      user = user >= it->second.user ? user - it->second.user : 0;
      sys = sys >= it->second.sys ? sys - it->second.sys : 0;
    }
    CpuUse::Group& g = c.byName[t.name];
    g.user += user / hz;
    g.sys += sys / hz;
    g.count++;
  }
  c.idle = b.idle >= a.idle ? (b.idle - a.idle) / hz : 0;
  return c;
}

std::string cpuJson(const CpuUse& c) {
  std::string j = ",\"cpu_idle_s\":" + twoDecimals(c.idle);
  for (const auto& [name, g] : c.byName) {
    j += "," + jsonString("cpu." + name + ".user_s") + ":" + twoDecimals(g.user) + "," +
         jsonString("cpu." + name + ".sys_s") + ":" + twoDecimals(g.sys) + "," + jsonString("cpu." + name + ".threads") +
         ":" + std::to_string(g.count);
  }
  return j;
}

}  // namespace vmstore::bench
