// Unit tests of os/memory.hpp: the TLB shootdown count is the sum of /proc/interrupts'
// "TLB:" row (or nothing without one) and never goes back; a database's stats count
// only the shootdowns since it opened; /proc/<pid>/cgroup lines parse.
#include "os/memory.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "unit_util.hpp"
#include "vmstore/vmstore.hpp"

namespace {

using vmstore::internal::parseProcCgroupLine;
using vmstore::internal::ProcCgroupLine;
using vmstore::internal::tlbShootdowns;

bool machineHasTlbRow() {
  std::ifstream in("/proc/interrupts");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string label;
    if (fields >> label && label == "TLB:") return true;
  }
  return false;
}

TEST(Memory, TlbShootdownsAreTheInterruptRowOrNothing) {
  std::optional<uint64_t> first = tlbShootdowns();
  if (!machineHasTlbRow()) {
    EXPECT_FALSE(first.has_value());
    GTEST_SKIP() << "no TLB row in /proc/interrupts on this machine";
  }
  ASSERT_TRUE(first.has_value());
  std::optional<uint64_t> second = tlbShootdowns();
  ASSERT_TRUE(second.has_value());
  EXPECT_GE(*second, *first) << "interrupt counts never go back";
}

TEST(Memory, DatabaseStatsCountShootdownsSinceOpenOnly) {
  if (!machineHasTlbRow()) GTEST_SKIP() << "no TLB row in /proc/interrupts on this machine";
  vmsunit::ScratchDir dir;
  const uint64_t before = tlbShootdowns().value_or(0);
  std::unique_ptr<vmstore::Database> db;
  vmstore::Options options;
  options.pool_size = 1 << 20;
  options.durability = vmstore::Durability::kNone;
  ASSERT_TRUE(vmstore::Database::open(dir.file("db"), options, &db).ok());
  vmstore::Tree* tree = nullptr;
  ASSERT_TRUE(db->openTree("", true, &tree).ok());
  for (int i = 0; i < 20000; i++) ASSERT_TRUE(tree->put("key" + std::to_string(i), std::string(200, 'v')).ok());
  vmstore::Stats s = db->stats();
  const uint64_t after = tlbShootdowns().value_or(0);
  EXPECT_GT(s.evictions, 0u);
  EXPECT_LE(s.tlb_shootdowns, after - before) << "counted from before the open (since boot?)";
  ASSERT_TRUE(db->close().ok());
}

TEST(Memory, ProcCgroupLinesParse) {
  ProcCgroupLine v1;
  ASSERT_TRUE(parseProcCgroupLine("4:memory:/user.slice/a:b", &v1));
  EXPECT_EQ(v1.id, "4");
  EXPECT_EQ(v1.controllers, "memory");
  EXPECT_EQ(v1.path, "/user.slice/a:b");
  ProcCgroupLine v2;
  ASSERT_TRUE(parseProcCgroupLine("0::/", &v2));
  EXPECT_EQ(v2.controllers, "");
  EXPECT_EQ(v2.path, "/");
  EXPECT_FALSE(parseProcCgroupLine("garbage", &v2));
}

}  // namespace
