// vmstore::TaskPool: task mode, for applications with many independent operations.
//
// A TaskPool runs work on its worker threads, each running up to `inflight` pieces of
// work at once as tasks (stackful fibers). Every vmstore call made inside a task (get,
// put, delete, write, iterators, getMany...) that misses on a page suspends only that
// task while the read is in flight, and the worker thread goes on with its other tasks;
// the reads of all of them are submitted together through the thread's io_uring ring
// (config io=uring, the default; with io=sync a miss blocks the thread as usual). So a
// few threads keep many reads in flight when data exceeds the buffer pool.
//
// Contract
// - create(): threads 1 .. 1024, inflight 1 .. 4096 (InvalidArgument otherwise).
// - submit(fn): fn runs once as a task on some worker thread; any thread may submit,
//   tasks too. A task must not block its thread for long on anything but vmstore (a
//   sleep or a lock held by another task of the same thread stalls or deadlocks it);
//   vmstore's own waits inside a task suspend the task instead.
// - wait(): returns once every task submitted before the call has finished: OK, or
//   InvalidArgument naming the exception the first failed task let escape (the other
//   tasks still ran). Called from inside one of this pool's tasks it returns
//   InvalidArgument at once (a task cannot wait for itself); inside a task of anything
//   else (another pool, getMany) it suspends that task while it waits.
// - The destructor waits for every submitted task, then stops the workers.
// - Tasks run on the pool's threads: thread-local state of the submitter is not theirs.
#pragma once

#include <functional>
#include <memory>

#include "vmstore/status.hpp"

namespace vmstore {

namespace internal::task {
class WorkerPool;
}

class TaskPool {
 public:
  static Status create(unsigned threads, unsigned inflight, std::unique_ptr<TaskPool>* out);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  void submit(std::function<void()> fn);
  Status wait();

 private:
  explicit TaskPool(std::unique_ptr<internal::task::WorkerPool> pool);
  std::unique_ptr<internal::task::WorkerPool> pool_;
};

}  // namespace vmstore
