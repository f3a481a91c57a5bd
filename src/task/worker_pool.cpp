#include "task/worker_pool.hpp"

#include <algorithm>
#include <utility>

#include "task/scheduler.hpp"

namespace vmstore::internal::task {

namespace {
thread_local const WorkerPool* tlsPool = nullptr;  // the pool whose worker this thread is
}  // namespace

bool WorkerPool::insideOwnTask() const { return tlsPool == this && Scheduler::current() != nullptr; }

WorkerPool::WorkerPool(unsigned threads, unsigned inflight) : inflight_(std::max(1u, inflight)) {
  try {
    for (unsigned i = 0; i < threads; i++) threads_.emplace_back([this] { workerLoop(); });
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

void WorkerPool::runner(unsigned* active) {
  Scheduler* s = Scheduler::current();
  std::function<void()> fn;
  while (take(&fn)) {
    // More work waiting and room for another task: start one, so the worker keeps
    // `inflight` tasks busy however the work arrived.
    if (*active < inflight_) {
      bool more;
      {
        std::lock_guard g(mutex_);
        more = !queue_.empty();
      }
      if (more) {
        ++*active;
        s->spawn([this, active] { runner(active); });
      }
    }
    try {
      fn();
    } catch (...) {
      std::lock_guard g(mutex_);
      if (!failure_) failure_ = std::current_exception();
    }
    fn = nullptr;
    bool idle;
    {
      std::lock_guard g(mutex_);
      idle = --pending_ == 0;
    }
    if (idle) idle_.notify_all();
  }
  --*active;
}

void WorkerPool::workerLoop() {
  tlsPool = this;
  Scheduler scheduler;
  for (;;) {
    {
      std::unique_lock g(mutex_);
      work_.wait(g, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing is left
    }
    unsigned active = 1;
    scheduler.spawn([this, &active] { runner(&active); });
    scheduler.run();  // until the queue is empty and every task has finished
  }
}

}  // namespace vmstore::internal::task
