// The test binary's main. With VMSTORE_TEST_TASK_MODE=1 in the environment, every test
// runs inside a task (task/scheduler.hpp) on the main thread, so that each vmstore call
// the tests make takes the task paths: page misses read through the thread's io_uring
// ring, and every wait (page locks, key locks, the writer gate) suspends the task
// instead of blocking (`make test` runs the suite both ways).
// With VMSTORE_TEST_POLICY=NAME, every database and buffer manager the tests open with the
// default policy runs replacement policy NAME instead (`make test-policies`).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <cstring>

#include "policy/registry.hpp"
#include "scratch_registry.hpp"
#include "task/scheduler.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Databases of passed tests are removed as each test ends (scratch_registry.hpp).
  ::testing::UnitTest::GetInstance()->listeners().Append(new vmstscratch::ScratchCleanup);
  if (const char* policy = std::getenv("VMSTORE_TEST_POLICY"); policy != nullptr && *policy != '\0') {
    try {
      vmstore::internal::makePolicy(policy, 256, 256);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "VMSTORE_TEST_POLICY: %s\n", e.what());
      return 2;
    }
    vmstore::internal::setDefaultPolicyOverride(policy);
  }
  const char* mode = std::getenv("VMSTORE_TEST_TASK_MODE");
  if (mode == nullptr || std::strcmp(mode, "1") != 0) return RUN_ALL_TESTS();
  int rc = 1;
  vmstore::internal::task::Scheduler scheduler(8, 64u << 20);  // a large stack for test bodies
  scheduler.spawn([&] { rc = RUN_ALL_TESTS(); });
  scheduler.run();
  return rc;
}
