// Unit tests of sync/spin_mutex.hpp: mutual exclusion under contention (including the
// sleeping path, with more threads than cores and a section long enough to exhaust the
// spin), try_lock, and unlock waking a sleeper; each for the four-byte SpinMutex and the
// one-byte ByteSpinMutex, and neighbouring bytes of one table held and slept on apart.
#include "sync/spin_mutex.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using vmstore::internal::ByteSpinMutex;
using vmstore::internal::SpinMutex;

template <class M>
class SpinMutexes : public ::testing::Test {};
using Widths = ::testing::Types<SpinMutex, ByteSpinMutex>;
TYPED_TEST_SUITE(SpinMutexes, Widths);

TYPED_TEST(SpinMutexes, ExcludeUnderContention) {
  TypeParam m;
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

TYPED_TEST(SpinMutexes, TryLockFailsWhileHeldAndUnlockWakesASleeper) {
  TypeParam m;
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

// Byte locks side by side in one zeroed table (as KeyLocks keeps them): each excludes on
// its own, a sleeper on one byte is woken by its unlock while its neighbours are taken
// and released all the time, and no neighbour's bits are disturbed.
TEST(ByteSpinMutex, NeighboursInOneTableAreIndependent) {
  alignas(64) unsigned char table[64] = {};  // all zero: all free
  auto at = [&](int i) -> ByteSpinMutex& { return *reinterpret_cast<ByteSpinMutex*>(&table[i]); };
  uint64_t counters[8] = {};
  const int threads = 8, each = 20000;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < each; i++) {
        const int k = (i * 7 + t) % 8;  // several threads on each byte, all on one line
        std::lock_guard g(at(k));
        counters[k]++;
        if ((i + t) % 2000 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  // Meanwhile a sleeper on byte 9, held here: it must wake on this unlock only.
  at(9).lock();
  std::atomic<bool> got{false};
  std::thread sleeper([&] {
    at(9).lock();
    got = true;
    at(9).unlock();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(got.load());
  at(9).unlock();
  sleeper.join();
  EXPECT_TRUE(got.load());
  for (auto& t : ts) t.join();
  uint64_t total = 0;
  for (uint64_t c : counters) total += c;
  EXPECT_EQ(total, static_cast<uint64_t>(threads) * each);
  for (int i = 0; i < 64; i++) EXPECT_EQ(table[i], 0) << "byte " << i << " left held";
}

}  // namespace
