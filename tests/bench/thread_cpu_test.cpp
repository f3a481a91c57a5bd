// bench/thread_cpu: the CPU a named thread burns shows under its name, only between the
// two samples that bracket it, and the JSON form lists every name once.
#include "thread_cpu.hpp"

#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <thread>

#include "os/thread_name.hpp"

namespace vmstore::bench {
namespace {

double threadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

TEST(ThreadCpu, ANamedThreadsCpuShowsUnderItsName) {
  std::atomic<int> phase{0};  // 0: wait, 1: spin, 2: spun, 3: end
  std::thread t([&] {
    while (phase.load() == 0) std::this_thread::yield();
    const double from = threadCpuSeconds();
    while (threadCpuSeconds() - from < 0.3) {
    }
    phase.store(2);
    while (phase.load() != 3) std::this_thread::yield();
  });
  internal::nameThread(t, "bench-spin");
  const CpuSample before = sampleCpu();
  ASSERT_FALSE(before.threads.empty());
  phase.store(1);
  while (phase.load() != 2) std::this_thread::yield();
  const CpuSample after = sampleCpu();
  phase.store(3);
  t.join();

  const CpuUse use = cpuBetween(before, after);
  ASSERT_EQ(use.byName.count("bench-spin"), 1u);
  const CpuUse::Group& g = use.byName.at("bench-spin");
  EXPECT_EQ(g.count, 1u);
  // 0.3 s of its own CPU, in ticks of 10 ms: at least 0.2 s, and not what it had before.
  EXPECT_GE(g.user + g.sys, 0.2);
  EXPECT_LT(g.user + g.sys, 5.0);
  EXPECT_GE(use.idle, 0.0);

  const std::string json = cpuJson(use);
  EXPECT_EQ(json.rfind(",\"cpu_idle_s\":", 0), 0u) << json;
  EXPECT_NE(json.find(",\"cpu.bench-spin.user_s\":"), std::string::npos) << json;
  EXPECT_NE(json.find(",\"cpu.bench-spin.sys_s\":"), std::string::npos) << json;
  EXPECT_NE(json.find(",\"cpu.bench-spin.threads\":1"), std::string::npos) << json;
  EXPECT_EQ(json.find("{"), std::string::npos) << "flat: " << json;
}

TEST(ThreadCpu, NumberedKernelThreadNamesShareOneName) {
  std::atomic<bool> end{false};
  std::thread a([&] { while (!end.load()) std::this_thread::yield(); });
  std::thread b([&] { while (!end.load()) std::this_thread::yield(); });
  // As io_uring names its workers (iou-wrk-TID); a name of its own, as the process may
  // hold real io_uring workers of earlier tests.
  internal::nameThread(a, "bench-wrk-123");
  internal::nameThread(b, "bench-wrk-4567");
  const CpuSample s = sampleCpu();
  end.store(true);
  a.join();
  b.join();
  const CpuUse use = cpuBetween(CpuSample{}, s);
  ASSERT_EQ(use.byName.count("bench-wrk"), 1u);
  EXPECT_EQ(use.byName.at("bench-wrk").count, 2u);
  EXPECT_EQ(use.byName.count("bench-wrk-123"), 0u);
}

}  // namespace
}  // namespace vmstore::bench
