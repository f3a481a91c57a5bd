// Unit tests of os/thread_name.hpp: a thread's name is what the kernel shows from when
// nameThread returns, cut to its 15 bytes, and it names that thread only.
#include "os/thread_name.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

namespace {

using vmstore::internal::nameThread;
using vmstore::internal::threadName;

// Runs a thread that waits until told, then reports its own name.
std::string nameSeenInside(const char* given) {
  std::atomic<bool> go{false};
  std::string inside;
  std::thread t([&] {
    while (!go.load()) std::this_thread::yield();
    inside = threadName();
  });
  nameThread(t, given);
  go.store(true);
  t.join();
  return inside;
}

TEST(ThreadName, NamesThatThreadOnly) {
  const std::string before = threadName();
  EXPECT_EQ(nameSeenInside("vms-test"), "vms-test");
  EXPECT_EQ(threadName(), before);
}

TEST(ThreadName, ALongNameIsCutToFifteenBytes) {
  EXPECT_EQ(nameSeenInside("vms-a-name-longer-than-the-kernel-keeps"), "vms-a-name-long");
}

TEST(ThreadName, AThreadNotRunningIsIgnored) {
  std::thread none;
  nameThread(none, "vms-nobody");  // no thread: nothing happens
  SUCCEED();
}

}  // namespace
