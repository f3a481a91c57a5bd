// Unit tests of sync/thread_index.hpp: live threads never share an index, and an
// exited thread's index is reused, so indexes stay below the most threads alive at once.
#include "sync/thread_index.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

using vmstore::internal::threadIndex;

TEST(ThreadIndex, LiveThreadsHaveDistinctIndexesAndExitedOnesAreReused) {
  unsigned most = 0;
  for (int round = 0; round < 20; round++) {
    constexpr int kThreads = 8;
    std::mutex m;
    std::set<unsigned> seen;
    std::atomic<int> arrived{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&] {
        unsigned i = threadIndex();
        EXPECT_EQ(threadIndex(), i) << "a thread's index is stable";
        {
          std::lock_guard g(m);
          EXPECT_TRUE(seen.insert(i).second) << "two live threads share index " << i;
          most = std::max(most, i);
        }
        arrived++;
        while (arrived.load() < kThreads) std::this_thread::yield();  // all alive at once
      });
    }
    for (auto& th : threads) th.join();
  }
  // 160 threads started, never more than 8 (plus this one and the suite's own) alive.
  EXPECT_LT(most, 8u + 16u) << "indexes of exited threads are not reused";
}

}  // namespace
