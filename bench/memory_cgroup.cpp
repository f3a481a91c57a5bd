// MemoryCgroup: see memory_cgroup.hpp for the contract.
#include "memory_cgroup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "os/memory.hpp"

namespace vmstore::bench {

namespace {

std::vector<std::string> splitOn(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

// Mount points in mountinfo escape space, tab, newline and backslash as \ooo.
std::string unescapeMount(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct CgroupMount {
  std::string root;        // the hierarchy path mounted there
  std::string mountPoint;
};

// The mount of the v1 memory hierarchy (version 1) or the v2 hierarchy (version 2).
bool findMount(const std::string& mountinfo, int version, CgroupMount* out) {
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::vector<std::string> pre = splitOn(line.substr(0, dash), ' ');
    std::istringstream post(line.substr(dash + 3));
    std::string fstype, source, superOpts;
    if (pre.size() < 5 || !(post >> fstype >> source >> superOpts)) continue;
    bool match = false;
    if (version == 1 && fstype == "cgroup") {
      for (const std::string& o : splitOn(superOpts, ',')) match = match || o == "memory";
    } else if (version == 2 && fstype == "cgroup2") {
      match = true;
    }
    if (!match) continue;
    out->root = unescapeMount(pre[3]);
    out->mountPoint = unescapeMount(pre[4]);
    return true;
  }
  return false;
}

// mountPoint + the part of `path` below the mounted root; false if it is not below it.
bool joinBelowRoot(const CgroupMount& m, const std::string& path, std::string* dir) {
  std::string rel;
  if (m.root == "/") {
    rel = path;
  } else if (path == m.root) {
    rel = "/";
  } else if (path.compare(0, m.root.size() + 1, m.root + "/") == 0) {
    rel = path.substr(m.root.size());
  } else {
    return false;
  }
  *dir = m.mountPoint + (rel == "/" ? "" : rel);
  return true;
}

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Writes `value` into a cgroup file; false with *why naming the file and the OS's reason.
bool writeFile(const std::string& path, const std::string& value, std::string* why) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    *why = "cannot write '" + value + "' into " + path + ": " +
           (n < 0 ? std::strerror(err) : "short write");
    return false;
  }
  return true;
}

bool hasWord(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w) {
    if (w == word) return true;
  }
  return false;
}

// The number after `key` in a "key value" per line file (memory.events, oom_control).
uint64_t keyedValue(const std::string& path, const std::string& key) {
  std::istringstream in(readText(path));
  std::string k;
  uint64_t v;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

uint64_t numberIn(const std::string& path) {
  std::istringstream in(readText(path));
  uint64_t v = 0;
  return in >> v ? v : 0;
}

bool machineHasSwap() {
  std::istringstream in(readText("/proc/swaps"));
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) lines += line.empty() ? 0 : 1;
  return lines > 1;  // the first line is the header
}

std::string parentOf(const std::string& dir) {
  size_t slash = dir.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : dir.substr(0, slash);
}

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

std::atomic<unsigned> cgroupCounter{0};

}  // namespace

bool findMemoryCgroup(const std::string& procSelfCgroup, const std::string& mountinfo,
                      CgroupPlace* place, std::string* why) {
  std::string v1Path, v2Path;
  bool haveV2 = false;
  std::istringstream in(procSelfCgroup);
  std::string line;
  while (std::getline(in, line)) {
    internal::ProcCgroupLine parsed;
    if (!internal::parseProcCgroupLine(line, &parsed)) continue;
    if (parsed.id == "0" && parsed.controllers.empty()) {
      v2Path = parsed.path;
      haveV2 = true;
    }
    for (const std::string& c : splitOn(parsed.controllers, ',')) {
      if (c == "memory") v1Path = parsed.path;
    }
  }
  CgroupMount m;
  if (!v1Path.empty()) {
    if (!findMount(mountinfo, 1, &m)) {
      *why = "this process is in the cgroup v1 memory hierarchy, but it is not mounted";
      return false;
    }
    if (!joinBelowRoot(m, v1Path, &place->dir)) {
      *why = "this process's memory cgroup " + v1Path + " is outside the mounted hierarchy " +
             m.root;
      return false;
    }
    place->version = 1;
    return true;
  }
  if (haveV2) {
    if (!findMount(mountinfo, 2, &m)) {
      *why = "no cgroup v1 memory hierarchy, and the cgroup v2 hierarchy is not mounted";
      return false;
    }
    if (!joinBelowRoot(m, v2Path, &place->dir)) {
      *why = "this process's cgroup " + v2Path + " is outside the mounted hierarchy " + m.root;
      return false;
    }
    place->version = 2;
    return true;
  }
  *why = "this process is in no memory cgroup (no cgroup v1 memory controller, no cgroup v2)";
  return false;
}

std::unique_ptr<MemoryCgroup> MemoryCgroup::make(uint64_t limitBytes, std::string* why) {
  CgroupPlace place;
  if (!findMemoryCgroup(readText("/proc/self/cgroup"), readText("/proc/self/mountinfo"), &place,
                        why)) {
    return nullptr;
  }
  std::string parent = place.dir;
  if (place.version == 2) {
    if (!hasWord(readText(parent + "/cgroup.controllers"), "memory")) {
      *why = "cgroup v2: the memory controller is not available in " + parent;
      return nullptr;
    }
    std::string control = parent + "/cgroup.subtree_control";
    std::string refused;
    if (!hasWord(readText(control), "memory") && !writeFile(control, "+memory", &refused)) {
      // The no-internal-process rule: beside this cgroup instead, if the parent delegates
      // memory to its children already.
      std::string up = parentOf(parent);
      if (!hasWord(readText(up + "/cgroup.subtree_control"), "memory")) {
        *why = "cgroup v2: " + refused + ", and " + up + " does not enable memory for its children";
        return nullptr;
      }
      parent = up;
    }
  }
  std::string dir = parent + "/vmstore-bench-" + std::to_string(::getpid()) + "-" +
                    std::to_string(cgroupCounter.fetch_add(1));
  if (::mkdir(dir.c_str(), 0755) != 0) {
    *why = "cannot create the cgroup " + dir + ": " + std::strerror(errno);
    return nullptr;
  }
  // From here on, the object's destructor removes the directory on every failure.
  std::unique_ptr<MemoryCgroup> cgroup(new MemoryCgroup(place.version, dir, limitBytes, ""));
  const bool v1 = place.version == 1;
  // The memory limit, then swap: v1 bounds memory+swap by the same limit (memsw), v2
  // allows no swap at all.
  const std::string limitFile = dir + (v1 ? "/memory.limit_in_bytes" : "/memory.max");
  const std::string swapFile = dir + (v1 ? "/memory.memsw.limit_in_bytes" : "/memory.swap.max");
  if (!writeFile(limitFile, std::to_string(limitBytes), why)) return nullptr;
  std::string swap = machineHasSwap() ? "" : "no swap on this machine; ";
  if (exists(swapFile)) {
    if (!writeFile(swapFile, v1 ? std::to_string(limitBytes) : "0", why)) return nullptr;
    swap += v1 ? "memory+swap limited to the same (memsw)" : "memory.swap.max 0";
  } else if (v1) {
    std::string ignored;
    swap += writeFile(dir + "/memory.swappiness", "0", &ignored) ? "swappiness 0" : "swap not bounded";
  } else {
    swap += "swap not accounted";
  }
  cgroup->swap_ = swap;
  return cgroup;
}

MemoryCgroup::~MemoryCgroup() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (::rmdir(dir_.c_str()) != 0 && errno == EBUSY &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool MemoryCgroup::addProcess(pid_t pid, std::string* why) {
  return writeFile(dir_ + "/cgroup.procs", std::to_string(pid), why);
}

uint64_t MemoryCgroup::peakBytes() const {
  return numberIn(dir_ + (version_ == 1 ? "/memory.max_usage_in_bytes" : "/memory.peak"));
}

uint64_t MemoryCgroup::oomKills() const {
  return keyedValue(dir_ + (version_ == 1 ? "/memory.oom_control" : "/memory.events"), "oom_kill");
}

std::string MemoryCgroup::describe() const {
  return "cgroup v" + std::to_string(version_) + " below " + parentOf(dir_) + ", limit " + mib(limit_) +
         ", swap: " + swap_;
}

}  // namespace vmstore::bench
