// MemoryCgroup and runChild (bench/memory_cgroup.hpp, bench/child_run.hpp): finding this
// process's memory cgroup from /proc texts (v1 and v2), and, where a cgroup can be made
// (root with a memory controller; otherwise these tests skip with the reason), children
// that run inside one: their output, their peak, the page cache bounded by the limit, a
// child killed for going over it, and the cgroup removed afterwards.
#include "memory_cgroup.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <memory>
#include <string>

#include "child_run.hpp"
#include "unit_util.hpp"

namespace {

using vmstore::bench::CgroupPlace;
using vmstore::bench::ChildResult;
using vmstore::bench::findMemoryCgroup;
using vmstore::bench::MemoryCgroup;
using vmstore::bench::runChild;

const char* kMountinfoV1 =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(MemoryCgroup, FindsTheV1MemoryHierarchyFirst) {
  CgroupPlace place;
  std::string why;
  ASSERT_TRUE(findMemoryCgroup("9:name=systemd:/\n4:memory:/box/job 1\n1:cpu:/\n0::/\n",
                               kMountinfoV1, &place, &why))
      << why;
  EXPECT_EQ(place.version, 1);
  EXPECT_EQ(place.dir, "/sys/fs/cgroup/memory/box/job 1");
}

TEST(MemoryCgroup, FindsV2AndStripsTheMountedRoot) {
  const char* mountinfo =
      "29 23 0:26 /outer /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
  CgroupPlace place;
  std::string why;
  ASSERT_TRUE(findMemoryCgroup("0::/outer/user.slice/x.scope\n", mountinfo, &place, &why)) << why;
  EXPECT_EQ(place.version, 2);
  EXPECT_EQ(place.dir, "/sys/fs/cgroup/user.slice/x.scope");
  ASSERT_TRUE(findMemoryCgroup("0::/outer\n", mountinfo, &place, &why)) << why;
  EXPECT_EQ(place.dir, "/sys/fs/cgroup");
  // A cgroup outside what is mounted cannot be reached.
  EXPECT_FALSE(findMemoryCgroup("0::/elsewhere\n", mountinfo, &place, &why));
  EXPECT_NE(why.find("outside"), std::string::npos) << why;
}

TEST(MemoryCgroup, SaysWhyWhenThereIsNone) {
  CgroupPlace place;
  std::string why;
  EXPECT_FALSE(findMemoryCgroup("1:cpu:/\n", kMountinfoV1, &place, &why));
  EXPECT_NE(why.find("no memory cgroup"), std::string::npos) << why;
  why.clear();
  EXPECT_FALSE(findMemoryCgroup("4:memory:/a\n", "32 31 0:29 / /c rw - cgroup cgroup rw,cpu\n",
                                &place, &why));
  EXPECT_NE(why.find("not mounted"), std::string::npos) << why;
}

// A cgroup of `limit` bytes, or a skip saying why none can be made here.
#define MAKE_CGROUP_OR_SKIP(var, limit)                                               \
  std::string why_##var;                                                             \
  std::unique_ptr<MemoryCgroup> var = MemoryCgroup::make(limit, &why_##var);         \
  if (!var) GTEST_SKIP() << "no memory cgroup can be made here: " << why_##var

bool isDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

TEST(MemoryCgroup, ChildRunsInsideAndTheCgroupIsRemovedAfter) {
  MAKE_CGROUP_OR_SKIP(cg, 64ull << 20);
  const std::string dir = cg->dir();
  EXPECT_TRUE(isDir(dir));
  EXPECT_NE(cg->describe().find("limit 64.0 MiB"), std::string::npos) << cg->describe();
  std::string why;
  // The child reports the cgroup it runs in: the new one, from its first instruction.
  ChildResult r = runChild({"/bin/sh", "-c", "cat /proc/self/cgroup; echo done"}, "", cg.get(), &why);
  ASSERT_TRUE(r.started) << why;
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.out.find(dir.substr(dir.rfind('/'))), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done\n"), std::string::npos);
  EXPECT_GT(r.peakBytes, 0u);
  EXPECT_EQ(r.oomKills, 0u);
  cg.reset();
  EXPECT_FALSE(isDir(dir)) << dir << " was left behind";
}

TEST(MemoryCgroup, PageCacheStaysWithinTheLimit) {
  const uint64_t limit = 32ull << 20;
  MAKE_CGROUP_OR_SKIP(cg, limit);
  vmsunit::ScratchDir scratch;
  const std::string file = scratch.file("big");
  std::string why;
  // 96 MiB written and read back through the page cache: three times the limit.
  ChildResult r = runChild({"/bin/sh", "-c",
                            "dd if=/dev/zero of='" + file + "' bs=1M count=96 2>/dev/null && "
                            "cat '" + file + "' | wc -c"},
                           "", cg.get(), &why);
  ASSERT_TRUE(r.started) << why;
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.out.find("100663296"), std::string::npos) << r.out;
  EXPECT_GT(r.peakBytes, 0u);
  EXPECT_LE(r.peakBytes, limit);
  EXPECT_EQ(r.oomKills, 0u);
}

TEST(MemoryCgroup, ChildOverTheLimitIsKilled) {
  MAKE_CGROUP_OR_SKIP(cg, 16ull << 20);
  std::string why;
  // The shell keeps 64 MiB of command output in its own memory: anonymous, not reclaimable
  // (no swap beyond the limit), so the limit's out-of-memory killer ends it.
  ChildResult r = runChild({"/bin/sh", "-c", "x=$(head -c 67108864 /dev/zero | tr '\\0' a); echo survived"},
                           "", cg.get(), &why);
  ASSERT_TRUE(r.started) << why;
  EXPECT_EQ(r.out.find("survived"), std::string::npos) << "a 64 MiB shell variable fit in 16 MiB";
  EXPECT_GE(r.oomKills, 1u);
}

TEST(MemoryCgroup, ChildWithoutCgroupAndBadProgram) {
  std::string why;
  ChildResult r = runChild({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, "", nullptr, &why);
  ASSERT_TRUE(r.started) << why;
  EXPECT_EQ(r.exitCode, 3);
  EXPECT_EQ(r.out, "out\n");
  r = runChild({"/nonexistent/program"}, "", nullptr, &why);
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.exitCode, 127);
  r = runChild({}, "", nullptr, &why);
  EXPECT_FALSE(r.started);
  EXPECT_FALSE(why.empty());
}

}  // namespace
