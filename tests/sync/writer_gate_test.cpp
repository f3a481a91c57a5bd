// Unit tests of sync/writer_gate.hpp: shared holders exclude an exclusive one and the
// other way round, an exclusive waiter is not starved by a stream of shared holders, and
// inside tasks a waiter lets the thread's other tasks (among them the holder) run.
#include "sync/writer_gate.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "task/cooperative.hpp"
#include "task/scheduler.hpp"

namespace {

using vmstore::internal::WriterGate;
namespace task = vmstore::internal::task;

TEST(WriterGate, SharedHoldersExcludeAnExclusiveOneAndNotEachOther) {
  WriterGate gate;
  ASSERT_TRUE(gate.try_lock_shared());
  ASSERT_TRUE(gate.try_lock_shared());  // a second shared holder, same thread
  EXPECT_FALSE(gate.try_lock());
  gate.unlock_shared();
  EXPECT_FALSE(gate.try_lock());
  gate.unlock_shared();
  ASSERT_TRUE(gate.try_lock());
  EXPECT_FALSE(gate.try_lock_shared());
  EXPECT_FALSE(gate.try_lock());
  gate.unlock();
  EXPECT_TRUE(gate.try_lock_shared());
  gate.unlock_shared();
}

TEST(WriterGate, AFailedTryLockLeavesSharedHoldersFree) {
  WriterGate gate;
  gate.lock_shared();
  EXPECT_FALSE(gate.try_lock());  // must lower its flag again
  std::thread other([&] {
    ASSERT_TRUE(gate.try_lock_shared());
    gate.unlock_shared();
  });
  other.join();
  gate.unlock_shared();
}

TEST(WriterGate, AnExclusiveHolderSeesNoSharedHolderAndNoOtherExclusiveOne) {
  // Shared holders add to a counter and exclusive holders check it is untouched while
  // they hold the gate, from 4 threads at once.
  WriterGate gate;
  std::atomic<int> shared{0};
  std::atomic<int> exclusive{0};
  std::atomic<int> violations{0};
  std::atomic<int64_t> exclusiveRounds{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; i++) {
        if ((i + t) % 16 == 0) {
          std::unique_lock lock(gate);
          if (exclusive.fetch_add(1) != 0 || shared.load() != 0) violations++;
          exclusiveRounds++;
          exclusive.fetch_sub(1);
        } else {
          std::shared_lock lock(gate);
          shared.fetch_add(1);
          if (exclusive.load() != 0) violations++;
          shared.fetch_sub(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(exclusiveRounds.load(), 4 * 20000 / 16);
}

TEST(WriterGate, AStreamOfSharedHoldersDoesNotStarveAnExclusiveWaiter) {
  // Two threads take the gate shared back to back without pause (their holds overlap,
  // so the gate is never free of shared holders on its own); lock() must still get it.
  WriterGate gate;
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; t++) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        std::shared_lock lock(gate);
        std::this_thread::yield();
      }
    });
  }
  for (int i = 0; i < 50; i++) {
    gate.lock();
    gate.unlock();
  }
  stop = true;
  for (auto& th : readers) th.join();
}

TEST(WriterGate, AnExclusiveWaiterLetsInASharedHolderThatAnotherOneWaitsFor) {
  // A holds the gate shared until B has been inside it too; X wants it exclusively in
  // between. A flag kept up until A leaves would deadlock the three.
  WriterGate gate;
  std::atomic<bool> bWasInside{false};
  std::atomic<bool> xWaits{false};
  std::thread a([&] {
    std::shared_lock lock(gate);
    while (!bWasInside) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // A is inside
  std::thread x([&] {
    xWaits = true;
    std::unique_lock lock(gate);
    EXPECT_TRUE(bWasInside.load());
  });
  while (!xWaits) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // X has raised the flag
  std::thread b([&] {
    std::shared_lock lock(gate);
    bWasInside = true;
  });
  b.join();
  a.join();
  x.join();
}

TEST(WriterGate, InsideTasksAWaiterLetsTheHoldingTaskRun) {
  // One thread, two tasks: the first holds the gate shared across a yield, the second
  // wants it exclusively meanwhile. A waiter that blocked its thread would hang here.
  WriterGate gate;
  std::vector<int> order;
  task::Scheduler s;
  s.spawn([&] {
    std::shared_lock lock(gate, std::defer_lock);
    task::acquire(lock);
    order.push_back(1);
    task::Scheduler::current()->yield();
    task::Scheduler::current()->yield();
    order.push_back(2);
  });
  s.spawn([&] {
    gate.lock();  // raises the flag, then lets the other tasks run until the first lets go
    std::unique_lock lock(gate, std::adopt_lock);
    order.push_back(3);
    std::shared_lock again(gate, std::defer_lock);
    EXPECT_FALSE(again.try_lock());
  });
  s.spawn([&] {
    // A third task wanting it shared while the exclusive one waits or holds it.
    task::Scheduler::current()->yield();
    gate.lock_shared();  // inside a task: waits as a task
    order.push_back(4);
    gate.unlock_shared();
  });
  s.run();
  // The first task held it shared; the exclusive one came after it let go, and the
  // third, which asked while the flag was up, after the exclusive one.
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

TEST(WriterGate, SharedReleasedOnAnotherThreadStillLetsAnExclusiveHolderIn) {
  WriterGate gate;
  gate.lock_shared();
  std::thread([&] { gate.unlock_shared(); }).join();
  ASSERT_TRUE(gate.try_lock());
  gate.unlock();
}

}  // namespace
