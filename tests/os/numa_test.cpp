// Unit tests of os/numa.hpp. On one node: moving to the node a page is on succeeds and
// moves nothing, an unbacked page reports -ENOENT, a node that does not exist is refused
// as a whole. With two nodes or more (the NUMA guest, `make numa-test`): pages move to
// another node and back in batches and by mbind, keep their contents and addresses, and
// the query says where each one is.
#include "os/numa.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace {

namespace numa = vmstore::internal::numa;

struct Mapping {
  size_t pages;
  char* base;
  explicit Mapping(size_t n) : pages(n) {
    base = static_cast<char*>(mmap(nullptr, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Mapping() { munmap(base, pages * 4096); }
  std::vector<void*> addrs(size_t from = 0) const {
    std::vector<void*> a;
    for (size_t i = from; i < pages; i++) a.push_back(base + i * 4096);
    return a;
  }
};

TEST(Numa, MemoryNodesAreListed) {
  std::vector<int> nodes = numa::memoryNodes();
  ASSERT_FALSE(nodes.empty());
  for (size_t i = 1; i < nodes.size(); i++) EXPECT_LT(nodes[i - 1], nodes[i]);
}

TEST(Numa, MovingToTheNodeAPageIsOnChangesNothing) {
  int node = numa::memoryNodes().front();
  Mapping m(64);
  ASSERT_NE(m.base, MAP_FAILED);
  for (size_t i = 0; i < 48; i++) std::memset(m.base + i * 4096, static_cast<int>(i + 1), 4096);
  std::vector<void*> addrs = m.addrs();
  std::vector<int> where(addrs.size());
  int r = numa::nodesOf(addrs, where);
  if (r == -ENOSYS) GTEST_SKIP() << "no NUMA support in this kernel";
  ASSERT_EQ(r, 0);
  for (size_t i = 0; i < 48; i++) EXPECT_GE(where[i], 0) << i;
  for (size_t i = 48; i < 64; i++) {  // never touched: no frame (-EFAULT before Linux 6.x)
    EXPECT_TRUE(where[i] == -ENOENT || where[i] == -EFAULT) << i << ": " << where[i];
  }
  std::vector<int> status(addrs.size());
  // 64 pages in batches of 8: eight calls; the touched pages stay where they are.
  long calls = numa::movePages(addrs, where[0], 8, status);
  ASSERT_EQ(calls, 8);
  for (size_t i = 0; i < 48; i++) EXPECT_EQ(status[i], where[i]) << i;
  for (size_t i = 48; i < 64; i++) EXPECT_LT(status[i], 0) << i;
  EXPECT_EQ(numa::mbindPage(m.base, node), 0);
  for (size_t i = 0; i < 48; i++) ASSERT_EQ(m.base[i * 4096 + 100], static_cast<char>(i + 1));
  EXPECT_EQ(numa::preferNode(m.base, 64 * 4096, node), 0);
}

TEST(Numa, ANodeThatDoesNotExistIsRefused) {
  Mapping m(4);
  ASSERT_NE(m.base, MAP_FAILED);
  std::memset(m.base, 1, 4 * 4096);
  std::vector<void*> addrs = m.addrs();
  std::vector<int> status(addrs.size());
  EXPECT_LT(numa::movePages(addrs, 1000, 4, status), 0);
  EXPECT_LT(numa::movePages(addrs, -1, 4, status), 0);
  EXPECT_LT(numa::mbindPage(m.base, 1000), 0);
  EXPECT_EQ(m.base[5], 1);
}

TEST(Numa, PagesMoveBetweenNodesAndBack) {
  std::vector<int> nodes = numa::memoryNodes();
  if (nodes.size() < 2) GTEST_SKIP() << "one NUMA node here; `make numa-test` runs this in a guest with several";
  const size_t n = 1024;
  Mapping m(n);
  ASSERT_NE(m.base, MAP_FAILED);
  for (size_t i = 0; i < n; i++) std::memset(m.base + i * 4096, static_cast<int>(i % 251), 4096);
  std::vector<void*> addrs = m.addrs();
  std::vector<int> status(n), where(n);
  for (int target : {nodes[1], nodes[0]}) {
    ASSERT_GT(numa::movePages(addrs, target, 512, status), 0);
    // A page may be busy for a moment (-EBUSY): moved again, as the buffer manager does.
    for (int retry = 0; retry < 10; retry++) {
      std::vector<void*> again;
      for (size_t i = 0; i < n; i++) {
        if (status[i] != target) again.push_back(addrs[i]);
      }
      if (again.empty()) break;
      std::vector<int> st(again.size());
      ASSERT_GT(numa::movePages(again, target, 512, st), 0);
      for (size_t i = 0, j = 0; i < n; i++) {
        if (status[i] != target) status[i] = st[j++];
      }
    }
    for (size_t i = 0; i < n; i++) ASSERT_EQ(status[i], target) << i;
    ASSERT_EQ(numa::nodesOf(addrs, where), 0);
    for (size_t i = 0; i < n; i++) ASSERT_EQ(where[i], target) << i;
  }
  // The per-page baseline.
  for (size_t i = 0; i < 16; i++) ASSERT_EQ(numa::mbindPage(addrs[i], nodes[1]), 0) << i;
  ASSERT_EQ(numa::nodesOf(addrs, where), 0);
  for (size_t i = 0; i < 16; i++) EXPECT_EQ(where[i], nodes[1]) << i;
  for (size_t i = 0; i < n; i++) {
    ASSERT_EQ(m.base[i * 4096 + 4095], static_cast<char>(i % 251)) << "page " << i << " kept its contents";
  }
}

}  // namespace
