// Unit tests of task/scheduler.hpp and task/cooperative.hpp: tasks run to completion and
// interleave at yields; reads through the ring are in flight together and return the
// right bytes; an exception a task lets escape reaches run(); a task suspended inside a
// catch handler keeps its own exception state; runEach covers every index, nested too,
// and inside a task runs its work interleaved with the caller's;
// a cooperative lock held by a suspended task lets the others wait without blocking the
// thread; tasks waiting for a word another thread changes sleep instead of spinning; and
// the buffer manager's misses read pages through the ring.
#include "task/scheduler.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "task/cooperative.hpp"
#include "unit_util.hpp"

namespace {

using vmstore::internal::task::Scheduler;
using vmstore::internal::task::runEach;

TEST(Scheduler, RunsEveryTaskAndInterleavesAtYields) {
  Scheduler s;
  std::vector<std::string> trace;
  Scheduler* outer = Scheduler::current();  // not null when the suite runs in task mode
  for (int t = 0; t < 3; t++) {
    s.spawn([&, t] {
      EXPECT_EQ(Scheduler::current(), &s);
      for (int i = 0; i < 2; i++) {
        trace.push_back(std::to_string(t) + ":" + std::to_string(i));
        Scheduler::current()->yield();
      }
    });
  }
  s.run();
  EXPECT_EQ(Scheduler::current(), outer);
  std::vector<std::string> expected{"0:0", "1:0", "2:0", "0:1", "1:1", "2:1"};
  EXPECT_EQ(trace, expected);
  EXPECT_EQ(s.stats().tasks, 3u);
}

TEST(Scheduler, TasksSpawnedByTasksRunToo) {
  Scheduler s;
  int ran = 0;
  s.spawn([&] {
    ran++;
    for (int i = 0; i < 10; i++) Scheduler::current()->spawn([&] { ran++; });
  });
  s.run();
  EXPECT_EQ(ran, 11);
}

TEST(Scheduler, ReadsAreInFlightTogetherAndReturnTheirBytes) {
  vmsunit::ScratchDir dir;
  std::string path = dir.file("pages");
  const int pages = 64;
  {
    int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    for (int p = 0; p < pages; p++) {
      char page[4096];
      std::memset(page, 'a' + p % 26, sizeof(page));
      std::memcpy(page, &p, sizeof(p));
      ASSERT_EQ(::pwrite(fd, page, sizeof(page), p * 4096), 4096);
    }
    ::close(fd);
  }
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  Scheduler s(16);
  vmsunit::AlignedPages bufs(pages);
  std::vector<ssize_t> results(pages, -1);
  for (int p = 0; p < pages; p++) {
    s.spawn([&, p] { results[p] = Scheduler::current()->pread(fd, bufs.page(p), 4096, p * 4096); });
  }
  s.run();
  ::close(fd);
  for (int p = 0; p < pages; p++) {
    ASSERT_EQ(results[p], 4096) << p;
    int id;
    std::memcpy(&id, bufs.page(p), sizeof(id));
    EXPECT_EQ(id, p);
    EXPECT_EQ(bufs.page(p)[100], 'a' + p % 26);
  }
  if (s.hasRing()) {
    EXPECT_EQ(s.stats().requests, static_cast<uint64_t>(pages));
    EXPECT_GT(s.stats().maxInFlight, 1u);   // several reads were queued before one submission
    EXPECT_LE(s.stats().maxInFlight, 16u);  // never more than the ring holds
    EXPECT_LT(s.stats().submits, static_cast<uint64_t>(pages));
  }
}

// The reads of one round go to the device before the round ends (the first ones at
// once, then in batches once several are in flight), so they overlap the CPU work of
// the tasks still to run; syncs wait for the round and go in together (one group).
TEST(Scheduler, ReadsGoInBeforeTheRoundEndsAndSyncsWithIt) {
  vmsunit::ScratchDir dir;
  std::string path = dir.file("pages");
  const int pages = 32;
  int fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, pages * 4096), 0);
  Scheduler reads(64);
  vmsunit::AlignedPages bufs(pages);
  for (int p = 0; p < pages; p++) {
    reads.spawn([&, p] { EXPECT_EQ(Scheduler::current()->pread(fd, bufs.page(p), 4096, p * 4096), 4096); });
  }
  reads.run();
  Scheduler syncs(64);
  for (int i = 0; i < 8; i++) syncs.spawn([&] { EXPECT_EQ(Scheduler::current()->fdatasync(fd), 0); });
  syncs.run();
  ::close(fd);
  if (!reads.hasRing()) GTEST_SKIP() << "no io_uring ring here";
  EXPECT_EQ(reads.stats().maxInFlight, static_cast<uint64_t>(pages)) << "all were queued in one round";
  EXPECT_GT(reads.stats().submits, 1u) << "the reads waited for the end of the round";
  EXPECT_LT(reads.stats().submits, static_cast<uint64_t>(pages)) << "every read was a submission of its own";
  EXPECT_EQ(syncs.stats().requests, 8u);
  EXPECT_EQ(syncs.stats().submits, 1u) << "the syncs of one round did not go in together";
}

TEST(Scheduler, AFailedReadReturnsMinusErrno) {
  Scheduler s;
  ssize_t r = 0;
  vmsunit::AlignedPages buf;
  s.spawn([&] { r = Scheduler::current()->pread(-1, buf.data(), 4096, 0); });
  s.run();
  EXPECT_EQ(r, -EBADF);
}

TEST(Scheduler, DataSyncsGoThroughTheRing) {
  vmsunit::ScratchDir dir;
  std::string path = dir.file("synced");
  int fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "abc", 3, 0), 3);
  Scheduler s;
  int good = -1, bad = 0;
  s.spawn([&] { good = Scheduler::current()->fdatasync(fd); });
  s.spawn([&] { bad = Scheduler::current()->fdatasync(-1); });
  s.run();
  ::close(fd);
  EXPECT_EQ(good, 0);
  EXPECT_EQ(bad, -EBADF);
  if (s.hasRing()) {
    EXPECT_EQ(s.stats().requests, 2u);
  }
}

TEST(Scheduler, AnEscapedExceptionReachesRunAfterEveryTaskFinished) {
  Scheduler s;
  bool otherFinished = false;
  s.spawn([] { throw std::runtime_error("task failed"); });
  s.spawn([&] {
    Scheduler::current()->yield();
    otherFinished = true;
  });
  EXPECT_THROW(s.run(), std::runtime_error);
  EXPECT_TRUE(otherFinished);
}

TEST(Scheduler, ATaskSuspendedInACatchHandlerKeepsItsException) {
  Scheduler s;
  std::vector<std::string> seen;
  for (int t = 0; t < 2; t++) {
    s.spawn([&, t] {
      try {
        throw std::runtime_error("task " + std::to_string(t));
      } catch (const std::runtime_error&) {
        Scheduler::current()->yield();  // the other task throws and catches meanwhile
        try {
          throw;  // rethrows this task's exception, not the other's
        } catch (const std::runtime_error& again) {
          seen.push_back(again.what());
        }
      }
    });
  }
  s.run();
  std::vector<std::string> expected{"task 0", "task 1"};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(std::uncaught_exceptions(), 0);
}

TEST(Scheduler, RunEachCoversEveryIndexOnceNestedToo) {
  std::vector<int> hits(1000, 0);
  runEach(hits.size(), 64, [&](size_t i) {
    hits[i]++;
    ASSERT_NE(Scheduler::current(), nullptr);
    if (i % 100 == 0) {
      std::vector<int> inner(5, 0);
      runEach(inner.size(), 8, [&](size_t j) { inner[j]++; });  // on the same scheduler
      for (int v : inner) EXPECT_EQ(v, 1);
    }
    if (i % 7 == 0) Scheduler::current()->yield();
  });
  for (int v : hits) EXPECT_EQ(v, 1);
  runEach(0, 64, [&](size_t) { FAIL(); });
}

TEST(Scheduler, RunEachInsideATaskOverlapsItsWorkAndRethrowsTheFirstError) {
  Scheduler s;
  std::vector<std::string> events;
  std::vector<int> done(6, 0);
  bool threw = false;
  s.spawn([&] {
    // Index i yields i times. One after the other, index 1 would end before index 5
    // starts; interleaved, 5 starts while 1 is still yielding.
    runEach(done.size(), 6, [&](size_t i) {
      events.push_back("start " + std::to_string(i));
      for (size_t k = 0; k < i; k++) Scheduler::current()->yield();
      events.push_back("end " + std::to_string(i));
      done[i] = 1;
    });
    for (int v : done) EXPECT_EQ(v, 1);
    try {
      runEach(8, 4, [&](size_t i) {
        Scheduler::current()->yield();
        if (i == 3) throw std::runtime_error("index 3");
      });
    } catch (const std::runtime_error& e) {
      threw = std::string(e.what()) == "index 3";
    }
  });
  s.run();
  auto at = [&](const std::string& e) { return std::find(events.begin(), events.end(), e) - events.begin(); };
  EXPECT_EQ(events.size(), 12u);
  EXPECT_LT(at("start 5"), at("end 1"));
  EXPECT_TRUE(threw);
  EXPECT_GT(s.stats().tasks, 1u);  // helpers were spawned beside the caller
}

TEST(Scheduler, ACooperativeLockHeldAcrossASuspensionDoesNotBlockTheThread) {
  Scheduler s;
  std::mutex m;
  int inside = 0;
  int maxInside = 0;
  for (int t = 0; t < 8; t++) {
    s.spawn([&] {
      for (int i = 0; i < 3; i++) {
        std::unique_lock g(m, std::defer_lock);
        vmstore::internal::task::acquire(g);
        maxInside = std::max(maxInside, ++inside);
        Scheduler::current()->yield();  // suspended while holding it
        inside--;
      }
    });
  }
  s.run();  // a plain lock() here would deadlock the thread
  EXPECT_EQ(maxInside, 1);
}

// waitChange: a task waiting for a word another thread changes is not resumed to look,
// and a thread whose tasks all wait so sleeps instead of spinning through them; the
// tasks go on once the word changes and its waiters are woken.
TEST(Scheduler, TasksWaitingForAWordSleepUntilAnotherThreadChangesIt) {
  Scheduler s;
  std::atomic<uint32_t> word{0};
  std::atomic<int> waiting{0};
  int woke = 0;
  for (int t = 0; t < 8; t++) {
    s.spawn([&] {
      waiting++;
      while (word.load() == 0) Scheduler::current()->waitChange(word, 0);
      woke++;
    });
  }
  std::thread changer([&] {
    while (waiting.load() < 8) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    word.store(1);
    word.notify_all();
  });
  s.run();
  changer.join();
  EXPECT_EQ(woke, 8);
  // Each task resumed once to start and once when woken (a spin through waiting() would
  // have resumed them thousands of times in 50 ms).
  EXPECT_LE(s.stats().switches, 8u * 2 + 8u) << "tasks were resumed to look at the word";
}

TEST(Scheduler, WaitChangeReturnsAtOnceWhenTheWordAlreadyChanged) {
  Scheduler s;
  std::atomic<uint32_t> word{7};
  bool done = false;
  s.spawn([&] {
    Scheduler::current()->waitChange(word, 6);
    done = true;
  });
  s.run();
  EXPECT_TRUE(done);
  EXPECT_EQ(s.stats().switches, 1u);
}

TEST(Scheduler, TasksWaitingForSeveralWordsAllGoOn) {
  // Tasks on two words, changed one after the other by another thread: the thread
  // cannot sleep on both, so it looks between yields; every task goes on.
  Scheduler s;
  std::atomic<uint32_t> a{0}, b{0};
  std::atomic<int> waiting{0};
  int woke = 0;
  for (int t = 0; t < 6; t++) {
    std::atomic<uint32_t>* w = t % 2 == 0 ? &a : &b;
    s.spawn([&, w] {
      waiting++;
      while (w->load() == 0) Scheduler::current()->waitChange(*w, 0);
      woke++;
    });
  }
  std::thread changer([&] {
    while (waiting.load() < 6) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    a.store(1);
    a.notify_all();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    b.store(1);
    b.notify_all();
  });
  s.run();
  changer.join();
  EXPECT_EQ(woke, 6);
}

TEST(Scheduler, BufferManagerMissesReadThroughTheRing) {
  vmsunit::BufferEnv env(256);
  env.file.setTaskReads(true);
  auto& bm = *env.bm;
  std::vector<uint64_t> pids;
  for (int i = 0; i < 40; i++) {
    vmstore::internal::Page* p = bm.allocPage(vmstore::internal::PageKind::kValue);
    pids.push_back(p->header.pid);
    std::memset(reinterpret_cast<char*>(p) + 64, 'A' + i % 26, 64);
    bm.unfixX(p->header.pid);
  }
  ASSERT_TRUE(bm.flushAll().ok());
  ASSERT_TRUE(vmsunit::evictAll(bm, pids));
  Scheduler s;
  std::vector<char> seen(pids.size(), 0);
  for (size_t i = 0; i < pids.size(); i++) {
    s.spawn([&, i] {
      vmstore::internal::Page* p = bm.fixS(pids[i]);
      seen[i] = reinterpret_cast<char*>(p)[64];
      bm.unfixS(pids[i]);
    });
  }
  s.run();
  for (size_t i = 0; i < pids.size(); i++) EXPECT_EQ(seen[i], 'A' + static_cast<int>(i % 26)) << i;
  if (s.hasRing()) {
    EXPECT_GE(s.stats().requests, pids.size());
  }
}

}  // namespace
