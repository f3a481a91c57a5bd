// Scheduler: many tasks on one thread, each a stackful fiber (boost.context), with the
// page reads they miss on in flight together through the thread's own io_uring ring.
// This is how one worker thread keeps many misses in flight (issue 7; LeanStore, "What
// Modern NVMe Storage Can Do", VLDB 2023): a task that misses suspends, the thread runs
// the other tasks, and one io_uring_enter submits the reads queued meanwhile and reaps
// the completions (a read goes in at once while the device holds few: see pread()).
//
// Contract
// - A Scheduler belongs to the thread that calls run(). spawn() is called from that
//   thread, before run() or from inside one of its tasks; run() runs tasks until none
//   is left, then returns (rethrowing the first exception a task let escape, after all
//   tasks have finished). Tasks never migrate between threads.
// - current() is the scheduler whose task is running on the calling thread, or nullptr
//   outside tasks. The engine's blocking points ask it: inside a task they suspend the
//   task instead of blocking the thread.
// - runningTask() names the task running on the calling thread (an identity to compare,
//   never to dereference; a finished task's may name a later one), or nullptr outside
//   tasks: for state the layers above keep per caller, a task being a caller of its own.
// - pread() (inside a task): queues an io_uring read and suspends the task until it
//   completes; returns the bytes read or -errno, like the system call. Without
//   liburing (or when the ring could not be set up) it is a plain blocking pread. The
//   read is submitted at once while the ring has fewer than 4x the queued, unsubmitted
//   reads in flight on the device, else with the others at the end of the round.
//   fdatasync() is the same for a data sync of a file, always submitted at the end of
//   the round (the syncs of one round go in together).
// - yield() lets every other ready task run once before the caller goes on; waiting()
//   is the same for a task that waits for something another task or thread must do
//   (a page lock): when only waiting tasks are ready, the thread blocks for a read
//   completion instead of spinning (or, with none in flight, yields the CPU).
// - waitChange(word, old) (inside a task) suspends the task until word no longer holds
//   old, for a word another task or thread changes and then wakes its waiters
//   (std::atomic::notify_all). The task is not resumed to look: the loop loads the word
//   between rounds. When every task of the thread waits so and no request is in flight,
//   the thread sleeps on the word (std::atomic::wait) if they all wait on one word,
//   else it yields the CPU between looks. A spurious return is allowed: callers loop.
// - othersRunnable() (inside a task): whether the thread has other work if the caller
//   suspends now: another task ready, a request queued or in flight, or a waiting task
//   whose word has changed. false means the thread would sleep, so a wait that may be
//   stretched to gather more work (the log's group commit) should end at once.
// - Each task switch swaps the thread's C++ exception-handling state, so a task may
//   suspend inside a catch handler.
// - Stacks are stackBytes each (default kStackBytes), taken from a pool the scheduler
//   keeps.
// - After fork(), the child never uses a ring created before it (the ring's memory is
//   shared with the parent): its reads are plain blocking preads.
// - Not thread-safe: one thread per scheduler. Destroy it on its thread after run().
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace vmstore::internal::task {

namespace detail {
inline thread_local const void* tRunningTask = nullptr;  // Scheduler::runningTask()
}  // namespace detail

struct SchedulerStats {
  uint64_t tasks = 0;        // tasks run to completion
  uint64_t switches = 0;     // task resumptions
  uint64_t requests = 0;     // reads and syncs queued on the ring
  uint64_t submits = 0;      // io_uring_enter calls that submitted them
  uint64_t maxInFlight = 0;  // most requests in flight at once
};

class Scheduler {
 public:
  static constexpr size_t kStackBytes = 128 * 1024;

  // ringEntries: reads that may be in flight at once (more wait for room).
  explicit Scheduler(unsigned ringEntries = 128, size_t stackBytes = kStackBytes);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void spawn(std::function<void()> fn);
  void run();

  static Scheduler* current();
  static const void* runningTask() { return detail::tRunningTask; }
  void yield();
  void waiting();
  void waitChange(const std::atomic<uint32_t>& word, uint32_t old);
  bool othersRunnable() const;
  ssize_t pread(int fd, void* buf, size_t n, uint64_t off);
  // Inside a task: fdatasync(fd) through the ring, suspending the task; 0 or -errno.
  int fdatasync(int fd);
  bool hasRing() const;
  const SchedulerStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs fn for each index in [0, n) as up to `width` tasks on the calling thread and
// returns when all are done, so their misses are in flight together. Outside a task it
// runs them on a scheduler of its own (one per thread, kept); inside a task, on the
// caller's scheduler: the caller works through indexes beside width-1 tasks it spawns
// there, then waits (suspending) until they are done. An exception fn lets escape
// stops only the task it escaped from; the first one is rethrown once all are done.
// Where tasks cannot be set up (no memory for a stack), fewer tasks, or the caller
// alone, do the work: runEach itself throws only what fn throws.
void runEach(size_t n, size_t width, const std::function<void(size_t)>& fn);

}  // namespace vmstore::internal::task
