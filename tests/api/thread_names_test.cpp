// The background threads a database and a task pool start carry names ("vms-..."), as
// /proc/PID/task/TID/comm (top -H, ps -L, perf, gdb) shows them, per durability mode.
#include <dirent.h>

#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "../e2e/test_util.hpp"
#include "vmstore/tasks.hpp"

namespace {

using namespace vmstest;

// The names of this process's threads.
std::multiset<std::string> threadNames() {
  std::multiset<std::string> names;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name)) names.insert(name);
  }
  closedir(d);
  return names;
}

TEST(ThreadNames, EachDurabilityModeNamesItsThreads) {
  struct Mode {
    const char* config;
    std::set<std::string> expected;
  };
  const Mode modes[] = {
      {"durability=sync", {"vms-checkpoint", "vms-provider", "vms-log-commit", "vms-log-prepare"}},
      {"durability=sync,log_zero_fill=false", {"vms-checkpoint", "vms-provider", "vms-log-commit"}},
      {"durability=async", {"vms-checkpoint", "vms-provider", "vms-log-flush", "vms-log-write"}},
      {"durability=none", {"vms-checkpoint", "vms-provider"}},
      {"durability=none,page_provider=false", {"vms-checkpoint"}},
  };
  for (const Mode& m : modes) {
    SCOPED_TRACE(m.config);
    auto db = openDb(freshDir(), m.config);
    ASSERT_TRUE(db);
    vmstore::Tree* t = nullptr;
    ASSERT_TRUE(db->openTree("t", true, &t).ok());
    ASSERT_TRUE(t->put("k", "v").ok());  // the log's threads start with its first write at the latest
    const auto names = threadNames();
    for (const std::string& n : m.expected) EXPECT_EQ(names.count(n), 1u) << n;
    for (const char* absent : {"vms-provider", "vms-log-commit", "vms-log-prepare", "vms-log-flush", "vms-log-write"}) {
      if (m.expected.count(absent) == 0) {
        EXPECT_EQ(names.count(absent), 0u) << absent;
      }
    }
    ASSERT_TRUE(db->close().ok());
  }
}

TEST(ThreadNames, ATaskPoolsThreadsAreNamed) {
  const size_t before = threadNames().count("vms-task");
  std::unique_ptr<vmstore::TaskPool> pool;
  ASSERT_TRUE(vmstore::TaskPool::create(3, 4, &pool).ok());
  EXPECT_EQ(threadNames().count("vms-task"), before + 3);
  pool.reset();
  EXPECT_EQ(threadNames().count("vms-task"), before);
}

}  // namespace
