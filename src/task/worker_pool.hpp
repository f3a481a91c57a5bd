// WorkerPool: task mode's worker threads. Each runs a Scheduler (task/scheduler.hpp) with
// `inflight` tasks for the pool's life, taking work from one shared queue, so that a
// worker whose task misses on a page goes on with the next piece of work while the read
// is in flight. A thread with no work in any of its tasks sleeps until work arrives.
//
// Contract
// - submit(fn) queues fn; some worker runs it as a task (in submission order of taking,
//   not of finishing). Any thread may submit, a task too.
// - wait() returns once every fn submitted before it has finished. Not from inside one
//   of this pool's tasks (it would wait for itself: insideOwnTask() tells, the caller
//   checks); inside another scheduler's task it lets that thread's tasks run meanwhile.
// - An exception escaping fn is kept (the first one) and returned by takeFailure(); the
//   worker goes on.
// - The destructor waits for all work, then stops and joins the workers.
// - The constructor throws std::system_error when a thread cannot be started.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vmstore::internal::task {

class WorkerPool {
 public:
  WorkerPool(unsigned threads, unsigned inflight);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void submit(std::function<void()> fn);
  void wait();
  bool insideOwnTask() const;
  std::exception_ptr takeFailure();

 private:
  void workerLoop();
  void runner(unsigned* busy);  // one of a thread's tasks: takes work until the pool stops
  bool take(std::function<void()>* fn);

  const unsigned inflight_;
  std::mutex mutex_;
  std::condition_variable work_;  // queue_ non-empty or stop_
  std::condition_variable idle_;  // pending_ == 0
  std::deque<std::function<void()>> queue_;
  size_t pending_ = 0;  // submitted, not yet finished
  bool stop_ = false;
  std::exception_ptr failure_;
  std::vector<std::thread> threads_;
};

}  // namespace vmstore::internal::task
