// The test binary's main. With VMSTORE_TEST_TASK_MODE=1 in the environment, every test
// runs inside a task (task/scheduler.hpp) on the main thread, so that each vmstore call
// the tests make takes the task paths: page misses read through the thread's io_uring
// ring, and every wait (page locks, key locks, the writer gate) suspends the task
// instead of blocking (`make test` runs the suite both ways).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "task/scheduler.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* mode = std::getenv("VMSTORE_TEST_TASK_MODE");
  if (mode == nullptr || std::strcmp(mode, "1") != 0) return RUN_ALL_TESTS();
  int rc = 1;
  vmstore::internal::task::Scheduler scheduler(8, 64u << 20);  // a large stack for test bodies
  scheduler.spawn([&] { rc = RUN_ALL_TESTS(); });
  scheduler.run();
  return rc;
}
