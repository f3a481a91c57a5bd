#include "task/scheduler.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cxxabi.h>
#include <deque>
#include <exception>
#include <utility>
#include <vector>

#include <boost/context/fiber.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>

#ifdef VMSTORE_HAVE_LIBURING
#include <liburing.h>
#endif

#if defined(__SANITIZE_THREAD__)
#define VMSTORE_TSAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VMSTORE_TSAN_FIBERS 1
#endif
#endif
#ifdef VMSTORE_TSAN_FIBERS
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
}
#endif

#if defined(BOOST_USE_UCONTEXT)
// The ucontext variant of boost.context's fibers (used under AddressSanitizer, whose
// stack-switch annotations only it has) is header-only except for this one function,
// which a library built for fcontext (Debian's) does not contain: the activation record
// of the context running on this thread, the thread's own context to begin with.
namespace boost::context::detail {
fiber_activation_record*& fiber_activation_record::current() noexcept {
  thread_local fiber_activation_record threadContext;
  thread_local fiber_activation_record* running = &threadContext;
  return running;
}
}  // namespace boost::context::detail
#endif

namespace vmstore::internal::task {

namespace ctx = boost::context;

namespace {

thread_local Scheduler* tlsCurrent = nullptr;

// Bumped in the child of every fork(): rings made before it belong to the parent.
std::atomic<unsigned> forkGeneration{0};
const bool atforkInstalled = [] {
  pthread_atfork(nullptr, nullptr, [] { forkGeneration.fetch_add(1, std::memory_order_relaxed); });
  return true;
}();

// The Itanium C++ ABI's per-thread exception state (libsupc++/libc++abi layout): the
// stack of exceptions being handled and the count of those in flight. Each task keeps
// its own, so a task suspended inside a catch handler does not see another's.
struct EhGlobals {
  void* caught = nullptr;
  unsigned int uncaught = 0;
};
EhGlobals* threadEh() { return reinterpret_cast<EhGlobals*>(abi::__cxa_get_globals()); }

}  // namespace

struct Scheduler::Impl {
  struct Task {
    ctx::fiber fiber;
    std::function<void()> fn;
    ssize_t ioResult = 0;
    EhGlobals eh;
#ifdef VMSTORE_TSAN_FIBERS
    void* tsan = nullptr;
#endif
  };

  Impl(unsigned entries, size_t stackBytes) : stacks(stackBytes) {
    (void)atforkInstalled;
#ifdef VMSTORE_HAVE_LIBURING
    if (io_uring_queue_init(entries, &ring, 0) == 0) {
      ringOk = true;
      ringEntries = entries;
    }
#else
    (void)entries;
#endif
  }
  ~Impl() {
#ifdef VMSTORE_HAVE_LIBURING
    if (ringOk && ringUsable()) io_uring_queue_exit(&ring);
#endif
  }
  bool ringUsable() const { return ringOk && forkGeneration.load(std::memory_order_relaxed) == ringGeneration; }

  // Switch into t until it suspends or ends.
  void resume(Task* t) {
    running = t;
    waited = false;
    const void* outerTask = std::exchange(detail::tRunningTask, t);
    EhGlobals* eh = threadEh();
    EhGlobals mine = *eh;
    *eh = t->eh;
#ifdef VMSTORE_TSAN_FIBERS
    __tsan_switch_to_fiber(t->tsan, 0);
#endif
    t->fiber = std::move(t->fiber).resume();
    t->eh = *eh;
    *eh = mine;
    detail::tRunningTask = outerTask;
    running = nullptr;
    if (!waited) onlyWaiting = false;  // it got somewhere: ran, finished, or queued a read
    stats.switches++;
    if (!t->fiber) finish(t);
  }

  // From inside the running task: queues one request prepared by prep(sqe) and
  // suspends the task until its completion (in running->ioResult). False without a
  // usable ring (nothing queued). A read may be submitted at once (see there).
  enum class Kind { kRead, kSync };
  static constexpr unsigned kEarlyRatio = 4;
  template <class Prep>
  bool queue(Kind kind, Prep&& prep);

  // From inside the running task: it waits for something another task or thread must
  // do; it runs again after the other ready tasks.
  void wait() {
    waited = true;
    ready.push_back(running);
    suspend();
  }

  // From inside the running task: back to the scheduler loop.
  void suspend() {
#ifdef VMSTORE_TSAN_FIBERS
    __tsan_switch_to_fiber(schedulerTsan, 0);
#endif
    back = std::move(back).resume();
  }

  void finish(Task* t) {
#ifdef VMSTORE_TSAN_FIBERS
    __tsan_destroy_fiber(t->tsan);
#endif
    live--;
    stats.tasks++;
    t->fn = nullptr;
    spare.emplace_back(t);
  }

  Task* newTask() {
    if (!spare.empty()) {
      Task* t = spare.back().release();
      spare.pop_back();
      *t = Task{};
      return t;
    }
    return new Task;
  }

  void submitAndReap(bool wait) {
#ifdef VMSTORE_HAVE_LIBURING
    if (!ringUsable()) return;
    if (unsubmitted > 0) {
      int r = wait ? io_uring_submit_and_wait(&ring, 1) : io_uring_submit(&ring);
      if (r >= 0) {
        stats.submits++;
        unsubmitted = io_uring_sq_ready(&ring);  // normally 0: all were taken
        if (wait && r > 0) wait = false;          // submit_and_wait already waited
      }
    }
    io_uring_cqe* cqe;
    if (wait && inFlight > 0) {
      while (io_uring_wait_cqe(&ring, &cqe) == -EINTR) {
      }
    }
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      Task* t = static_cast<Task*>(io_uring_cqe_get_data(cqe));
      t->ioResult = cqe->res;
      ready.push_back(t);
      seen++;
    }
    io_uring_cq_advance(&ring, seen);
    inFlight -= seen;
#else
    (void)wait;
#endif
  }

  // Tasks in waitChange: resumed once their word no longer holds old.
  struct Parked {
    Task* task;
    const std::atomic<uint32_t>* word;
    uint32_t old;
    bool changed() const { return word->load(std::memory_order_acquire) != old; }
  };

  // Makes the parked tasks whose word changed ready again.
  void wakeParked() {
    size_t kept = 0;
    for (const Parked& p : parked) {
      if (p.changed()) {
        ready.push_back(p.task);
      } else {
        parked[kept++] = p;
      }
    }
    parked.resize(kept);
  }

  // Nothing is ready or in flight, and tasks are parked: sleeps until the word they all
  // wait on changes, or (several words) lets other threads run once.
  void sleepOnParked() {
    const std::atomic<uint32_t>* word = parked.front().word;
    const uint32_t old = parked.front().old;
    for (const Parked& p : parked) {
      if (p.word != word || p.old != old) {
        sched_yield();
        return;
      }
    }
    word->wait(old, std::memory_order_acquire);
  }

  ctx::pooled_fixedsize_stack stacks;
  std::deque<Task*> ready;
  std::vector<Parked> parked;
  std::vector<std::unique_ptr<Task>> spare;
  Task* running = nullptr;
  ctx::fiber back;  // the scheduler loop, while a task runs
  size_t live = 0;
  std::exception_ptr escaped;
  bool onlyWaiting = true;  // every task resumed this round only waited
  bool waited = false;      // the running task suspended in waiting()
  SchedulerStats stats;
#ifdef VMSTORE_TSAN_FIBERS
  void* schedulerTsan = nullptr;
#endif
#ifdef VMSTORE_HAVE_LIBURING
  io_uring ring;
#endif
  bool ringOk = false;
  unsigned ringGeneration = forkGeneration.load(std::memory_order_relaxed);
  unsigned ringEntries = 0;
  unsigned inFlight = 0;
  unsigned unsubmitted = 0;
};

Scheduler::Scheduler(unsigned ringEntries, size_t stackBytes)
    : impl_(std::make_unique<Impl>(ringEntries, stackBytes)) {}

Scheduler::~Scheduler() {
  for (Impl::Task* t : impl_->ready) delete t;  // never run (run() was not called)
}

Scheduler* Scheduler::current() {
  Scheduler* s = tlsCurrent;
  return s != nullptr && s->impl_->running != nullptr ? s : nullptr;
}

bool Scheduler::hasRing() const { return impl_->ringUsable(); }
const SchedulerStats& Scheduler::stats() const { return impl_->stats; }

void Scheduler::spawn(std::function<void()> fn) {
  Impl* impl = impl_.get();
  Impl::Task* t = impl->newTask();
  t->fn = std::move(fn);
#ifdef VMSTORE_TSAN_FIBERS
  t->tsan = __tsan_create_fiber(0);
#endif
  t->fiber = ctx::fiber(std::allocator_arg, impl->stacks, [impl, t](ctx::fiber&& scheduler) {
    impl->back = std::move(scheduler);
    try {
      t->fn();
    } catch (const ctx::detail::forced_unwind&) {
      throw;  // boost.context unwinding a fiber destroyed before it finished
    } catch (...) {
      if (!impl->escaped) impl->escaped = std::current_exception();
    }
#ifdef VMSTORE_TSAN_FIBERS
    __tsan_switch_to_fiber(impl->schedulerTsan, 0);
#endif
    return std::move(impl->back);
  });
  impl->live++;
  impl->ready.push_back(t);
}

void Scheduler::run() {
  Impl* impl = impl_.get();
  Scheduler* outer = tlsCurrent;
  tlsCurrent = this;
#ifdef VMSTORE_TSAN_FIBERS
  impl->schedulerTsan = __tsan_get_current_fiber();
#endif
  while (impl->live > 0) {
    // One round: every task ready now runs once; then one submission for all the reads
    // they queued, and the completions so far.
    if (!impl->parked.empty()) impl->wakeParked();
    size_t round = impl->ready.size();
    impl->onlyWaiting = true;
    for (size_t i = 0; i < round && !impl->ready.empty(); i++) {
      Impl::Task* t = impl->ready.front();
      impl->ready.pop_front();
      impl->resume(t);
    }
    bool idle = impl->ready.empty() || (round > 0 && impl->onlyWaiting);
    if (idle && impl->inFlight == 0 && impl->unsubmitted == 0) {
      if (!impl->ready.empty()) {
        sched_yield();  // tasks wait for another thread: let it run
      } else if (!impl->parked.empty()) {
        impl->sleepOnParked();  // every task waits for a word another thread changes
      }
    }
    impl->submitAndReap(idle);
  }
  tlsCurrent = outer;
  if (impl->escaped) {
    std::exception_ptr e = std::exchange(impl->escaped, nullptr);
    std::rethrow_exception(e);
  }
}

void Scheduler::yield() {
  impl_->ready.push_back(impl_->running);
  impl_->suspend();
}

void Scheduler::waiting() { impl_->wait(); }

void Scheduler::waitChange(const std::atomic<uint32_t>& word, uint32_t old) {
  if (word.load(std::memory_order_acquire) != old) return;
  impl_->parked.push_back({impl_->running, &word, old});
  impl_->waited = true;
  impl_->suspend();
}

bool Scheduler::othersRunnable() const {
  const Impl* impl = impl_.get();
  if (!impl->ready.empty() || impl->inFlight > 0 || impl->unsubmitted > 0) return true;
  return std::any_of(impl->parked.begin(), impl->parked.end(), [](const Impl::Parked& p) { return p.changed(); });
}

template <class Prep>
bool Scheduler::Impl::queue(Kind kind, Prep&& prep) {
#ifdef VMSTORE_HAVE_LIBURING
  if (!ringUsable()) return false;
  while (inFlight >= ringEntries) wait();  // room for one more
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  if (sqe == nullptr) {  // the submission queue is full of queued requests: submit them
    io_uring_submit(&ring);
    unsubmitted = io_uring_sq_ready(&ring);
    sqe = io_uring_get_sqe(&ring);
  }
  if (sqe == nullptr) return false;
  Task* t = running;
  prep(sqe);
  io_uring_sqe_set_data(sqe, t);
  unsubmitted++;
  inFlight++;
  stats.requests++;
  if (inFlight > stats.maxInFlight) stats.maxInFlight = inFlight;
  // A read goes to the device at once, not at the end of the round, while the device
  // holds fewer than kEarlyRatio times the reads queued here: the first reads of a
  // round (a getMany's misses) then overlap the CPU work of the tasks that queue the
  // rest, and once the device is busy reads go in batches of a kEarlyRatio-th of its
  // depth. A sync waits for the round: the syncs of one round are one group commit.
  if (kind == Kind::kRead && unsubmitted * kEarlyRatio > inFlight - unsubmitted && io_uring_submit(&ring) >= 0) {
    stats.submits++;
    unsubmitted = io_uring_sq_ready(&ring);
  }
  suspend();  // resumed by the loop once the completion is reaped
  return true;
#else
  (void)prep;
  return false;
#endif
}

ssize_t Scheduler::pread(int fd, void* buf, size_t n, uint64_t off) {
  Impl* impl = impl_.get();
#ifdef VMSTORE_HAVE_LIBURING
  if (impl->queue(Impl::Kind::kRead, [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf, static_cast<unsigned>(n), off); })) {
    return impl->running->ioResult;
  }
#endif
  ssize_t r = ::pread(fd, buf, n, static_cast<off_t>(off));
  return r < 0 ? -errno : r;
}

int Scheduler::fdatasync(int fd) {
  Impl* impl = impl_.get();
#ifdef VMSTORE_HAVE_LIBURING
  if (impl->queue(Impl::Kind::kSync, [&](io_uring_sqe* sqe) { io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC); })) {
    return static_cast<int>(impl->running->ioResult);
  }
#endif
  return ::fdatasync(fd) == 0 ? 0 : -errno;
}

void runEach(size_t n, size_t width, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  size_t next = 0;
  const size_t tasks = std::min(n, width);
  // Spawns up to `count` tasks running `body` on s; returns how many it could (a task's
  // stack or the scheduler's bookkeeping may fail to allocate: fewer tasks do the work).
  auto spawnUpTo = [](Scheduler& s, size_t count, const std::function<void()>& body) {
    size_t spawned = 0;
    try {
      for (; spawned < count; spawned++) s.spawn(body);
    } catch (const std::exception&) {
    }
    return spawned;
  };
  if (Scheduler* s = Scheduler::current()) {
    // Inside a task: the caller takes indexes beside up to tasks-1 helpers spawned on
    // its own scheduler, then waits for them; the first exception reaches the caller.
    size_t helpers = 0;
    std::exception_ptr first;
    auto work = [&] {
      try {
        while (next < n) fn(next++);
      } catch (const ctx::detail::forced_unwind&) {
        throw;  // boost.context unwinding a fiber destroyed before it finished
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    };
    helpers = spawnUpTo(*s, tasks - 1, [&] {
      work();
      helpers--;
    });
    work();
    while (helpers > 0) s->waiting();
    if (first) std::rethrow_exception(first);
    return;
  }
  thread_local std::unique_ptr<Scheduler> local;
  if (tasks > 1 && !local) {
    try {
      local = std::make_unique<Scheduler>();
    } catch (const std::exception&) {
    }
  }
  if (tasks <= 1 || !local || spawnUpTo(*local, tasks, [&] {
        while (next < n) fn(next++);
      }) == 0) {
    for (; next < n; next++) fn(next);  // no task could be set up: one after the other
    return;
  }
  local->run();
}

}  // namespace vmstore::internal::task
