#include "task/worker_pool.hpp"

#include <algorithm>
#include <utility>

#include "os/thread_name.hpp"
#include "task/scheduler.hpp"

namespace vmstore::internal::task {

namespace {
thread_local const WorkerPool* tlsPool = nullptr;  // the pool whose worker this thread is
}  // namespace

bool WorkerPool::insideOwnTask() const { return tlsPool == this && Scheduler::current() != nullptr; }

WorkerPool::WorkerPool(unsigned threads, unsigned inflight) : inflight_(std::max(1u, inflight)) {
  try {
    for (unsigned i = 0; i < threads; i++) {
      threads_.emplace_back([this] { workerLoop(); });
      nameThread(threads_.back(), "vms-task");
    }
  } catch (...) {
    {
      std::lock_guard g(mutex_);
      stop_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_) t.join();
    throw;
  }
}

WorkerPool::~WorkerPool() {
  wait();
  {
    std::lock_guard g(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::submit(std::function<void()> fn) {
  {
    std::lock_guard g(mutex_);
    queue_.push_back(std::move(fn));
    pending_++;
  }
  work_.notify_one();
}

void WorkerPool::wait() {
  if (Scheduler* s = Scheduler::current()) {
    for (;;) {
      {
        std::lock_guard g(mutex_);
        if (pending_ == 0) return;
      }
      s->waiting();
    }
  }
  std::unique_lock g(mutex_);
  idle_.wait(g, [&] { return pending_ == 0; });
}

std::exception_ptr WorkerPool::takeFailure() {
  std::lock_guard g(mutex_);
  return std::exchange(failure_, nullptr);
}

bool WorkerPool::take(std::function<void()>* fn) {
  std::lock_guard g(mutex_);  // held briefly, never across a suspension
  if (queue_.empty()) return false;
  *fn = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void WorkerPool::runner(unsigned* busy) {
  // One of the thread's `inflight` tasks, for the pool's life: takes work while there is
  // some; with none, polls again after the thread's other tasks ran while any of them is
  // busy (suspended in work, so this thread must stay free), else blocks the thread until
  // work arrives (nothing of this thread is in flight then).
  Scheduler* s = Scheduler::current();
  std::function<void()> fn;
  for (;;) {
    if (!take(&fn)) {
      if (*busy > 0) {
        s->waiting();
        continue;
      }
      std::unique_lock g(mutex_);
      work_.wait(g, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing is left
      continue;
    }
    ++*busy;
    try {
      fn();
    } catch (...) {
      std::lock_guard g(mutex_);
      if (!failure_) failure_ = std::current_exception();
    }
    --*busy;
    fn = nullptr;
    bool idle;
    {
      std::lock_guard g(mutex_);
      idle = --pending_ == 0;
    }
    if (idle) idle_.notify_all();
  }
}

void WorkerPool::workerLoop() {
  tlsPool = this;
  Scheduler scheduler;
  unsigned busy = 0;  // this thread's tasks running a piece of work
  for (unsigned i = 0; i < inflight_; i++) scheduler.spawn([this, &busy] { runner(&busy); });
  scheduler.run();  // until the pool stops
}

}  // namespace vmstore::internal::task
