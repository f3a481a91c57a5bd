// Unit tests of sync/spin_mutex.hpp: mutual exclusion under contention (including the
// sleeping path, with more threads than cores and a section long enough to exhaust the
// spin), try_lock, and unlock waking a sleeper.
#include "sync/spin_mutex.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using vmstore::internal::SpinMutex;

TEST(SpinMutex, ExcludesUnderContention) {
  SpinMutex m;
  uint64_t counter = 0;  // plain: only ever changed under m
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  const int threads = 8, each = 20000;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < each; i++) {
        std::lock_guard g(m);
        if (inside.fetch_add(1) != 0) overlaps++;
        counter++;
        if ((i + t) % 1000 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));  // others sleep
        inside.fetch_sub(1);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(counter, static_cast<uint64_t>(threads) * each);
}

TEST(SpinMutex, TryLockFailsWhileHeldAndUnlockWakesASleeper) {
  SpinMutex m;
  m.lock();
  EXPECT_FALSE(m.try_lock());
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    m.lock();  // spins, then sleeps
    got = true;
    m.unlock();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(got.load());
  m.unlock();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_TRUE(m.try_lock());
  m.unlock();
}

}  // namespace
