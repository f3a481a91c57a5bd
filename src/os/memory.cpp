#include "os/memory.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <fstream>
#include <string>

namespace vmstore::internal {

namespace {

// The number in `path`, or 0 when it is absent, "max" or unreadable.
uint64_t readLimit(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text == "max") return 0;
  try {
    return std::stoull(text);
  } catch (...) {
    return 0;
  }
}

}  // namespace

bool parseProcCgroupLine(const std::string& line, ProcCgroupLine* out) {
  size_t a = line.find(':');
  size_t b = a == std::string::npos ? a : line.find(':', a + 1);
  if (b == std::string::npos) return false;
  out->id = line.substr(0, a);
  out->controllers = line.substr(a + 1, b - a - 1);
  out->path = line.substr(b + 1);
  return true;
}

uint64_t usableMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long pageSize = sysconf(_SC_PAGESIZE);
  uint64_t physical = pages > 0 && pageSize > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize) : 0;
  uint64_t best = physical;
  // This process's memory cgroup: "N:memory:/path" (v1) or "0::/path" (v2).
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    ProcCgroupLine parsed;
    if (!parseProcCgroupLine(line, &parsed)) continue;
    const std::string& controllers = parsed.controllers;
    const std::string& path = parsed.path;
    std::string file;
    if (controllers.empty()) {
      file = "/sys/fs/cgroup" + path + "/memory.max";
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      file = "/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes";
    } else {
      continue;
    }
    uint64_t limit = readLimit(file.c_str());
    if (limit != 0 && (best == 0 || limit < best)) best = limit;
  }
  return best;
}

uint64_t residentBytes() {
  // Without allocating (a measure of memory that took memory would move what it
  // measures, as under a sanitizer's quarantine of freed blocks).
  int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128];
  ssize_t n = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  char* end = nullptr;
  std::strtoull(text, &end, 10);  // the size, then the resident pages
  if (end == text) return 0;
  const char* at = end;
  const unsigned long long resident = std::strtoull(at, &end, 10);
  if (end == at) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::optional<uint64_t> tlbShootdowns() {
  std::ifstream in("/proc/interrupts");
  if (!in) return std::nullopt;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string label;
    if (!(fields >> label) || label != "TLB:") continue;
    uint64_t sum = 0;
    std::string tok;
    while (fields >> tok && !tok.empty() &&
           std::all_of(tok.begin(), tok.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      sum += std::strtoull(tok.c_str(), nullptr, 10);
    }
    return sum;
  }
  return std::nullopt;
}

bool transparentHugePagesOn() {
  static const bool on = [] {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    return std::getline(f, line) && line.find("[never]") == std::string::npos;
  }();
  return on;
}

}  // namespace vmstore::internal
