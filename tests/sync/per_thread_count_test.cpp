// PerThreadCount (src/sync/per_thread_count.hpp): the sum of every thread's adds, also
// when a thread takes back what another added.
#include "sync/per_thread_count.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace {

using vmstore::internal::PerThreadCount;

TEST(PerThreadCount, SumsTheAddsOfManyThreads) {
  PerThreadCount count;
  EXPECT_EQ(count.sum(), 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; i++) count.add(1);
      for (int i = 0; i < t; i++) count.add(-1);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(count.sum(), 8 * 10000 - (0 + 1 + 2 + 3 + 4 + 5 + 6 + 7));
}

TEST(PerThreadCount, OneThreadTakesBackWhatAnotherAdded) {
  PerThreadCount count;
  std::thread adder([&] { count.add(5); });
  adder.join();
  EXPECT_EQ(count.sum(), 5);
  std::thread taker([&] { count.add(-5, std::memory_order_release); });
  taker.join();
  EXPECT_EQ(count.sum(), 0) << "only the sum counts, not any one slot";
}

}  // namespace
