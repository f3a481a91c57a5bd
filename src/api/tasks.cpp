#include "vmstore/tasks.hpp"

#include <exception>
#include <new>
#include <string>
#include <system_error>

#include "task/worker_pool.hpp"

namespace vmstore {

TaskPool::TaskPool(std::unique_ptr<internal::task::WorkerPool> pool) : pool_(std::move(pool)) {}
TaskPool::~TaskPool() = default;

Status TaskPool::create(unsigned threads, unsigned inflight, std::unique_ptr<TaskPool>* out) {
  if (out == nullptr) return Status::InvalidArgument("TaskPool::create: out is null");
  if (threads < 1 || threads > 1024) {
    return Status::InvalidArgument("task pool threads=" + std::to_string(threads) + " is not from 1 to 1024");
  }
  if (inflight < 1 || inflight > 4096) {
    return Status::InvalidArgument("task pool inflight=" + std::to_string(inflight) + " is not from 1 to 4096");
  }
  try {
    out->reset(new TaskPool(std::make_unique<internal::task::WorkerPool>(threads, inflight)));
  } catch (const std::system_error& e) {
    return Status::NoMemory(std::string("cannot start the task pool's threads: ") + e.what());
  } catch (const std::bad_alloc&) {
    return Status::NoMemory("out of memory creating a task pool");
  }
  return Status::OK();
}

void TaskPool::submit(std::function<void()> fn) { pool_->submit(std::move(fn)); }

Status TaskPool::wait() {
  if (pool_->insideOwnTask()) {
    return Status::InvalidArgument("TaskPool::wait called from inside one of its tasks (it would wait for itself)");
  }
  pool_->wait();
  std::exception_ptr failure = pool_->takeFailure();
  if (!failure) return Status::OK();
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("a task failed: ") + e.what());
  } catch (...) {
    return Status::InvalidArgument("a task failed with an exception that is not a std::exception");
  }
}

}  // namespace vmstore
