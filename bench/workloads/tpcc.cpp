// The `tpcc` Workload: registration, load orchestration over threads, the measured loop
// and the lock table (see tpcc.hpp).
#include "tpcc.hpp"

#include <algorithm>
#include <exception>
#include <random>
#include <mutex>
#include <thread>

#include "task/cooperative.hpp"

namespace vmstore::bench::tpcc {

void LockSet::acquire() {
  if (!table_.enabled()) {
    n_ = 0;
    return;
  }
  std::sort(ids_, ids_ + n_);
  n_ = static_cast<size_t>(std::unique(ids_, ids_ + n_) - ids_);
  for (size_t i = 0; i < n_; ++i) {
    // In task mode (--inflight) a lock may be held by a suspended task of this thread:
    // wait for it as a task (the others of the thread run), never by blocking the thread.
    internal::task::lock(table_.at(ids_[i])).release();
  }
  held_ = true;
}

void LockSet::release() {
  if (!held_) return;
  for (size_t i = n_; i-- > 0;) table_.at(ids_[i]).unlock();
  held_ = false;
  n_ = 0;
}

TpccWorkload::TpccWorkload() : seed_(std::random_device{}()) {
  seed_ = (seed_ << 32) ^ std::random_device{}();
  if (seed_ == 0) seed_ = 1;  // 0 means "none given"
  Rng rng(seed_);
  shared_.c = NURandConstants::choose(rng);
}

std::string TpccWorkload::jsonFields() const { return ",\"tpcc_seed\":" + std::to_string(seed_); }

std::vector<std::string> TpccWorkload::tables() const {
  return std::vector<std::string>(std::begin(kTableNames), std::end(kTableNames));
}

uint32_t TpccWorkload::warehousesOf(const RunOptions& opts) const {
  uint64_t w = opts.data == 0 ? defaultData() : opts.data;
  if (w > 100000) throw std::invalid_argument("tpcc: --data (warehouses) is at most 100000");
  return static_cast<uint32_t>(w);
}

void TpccWorkload::prepare(const RunOptions& opts) {
  const uint32_t warehouses = warehousesOf(opts);
  std::call_once(prepared_, [&] {
    if (opts.tpccSeed != 0) {
      seed_ = opts.tpccSeed;
      Rng rng(seed_);
      shared_.c = NURandConstants::choose(rng);
    }
    shared_.warehouses = warehouses;
    shared_.locks = std::make_unique<LockTable>(warehouses);
  });
  if (shared_.warehouses != warehouses) {
    throw std::invalid_argument("tpcc: one workload instance serves one warehouse count");
  }
}

void TpccWorkload::load(Engine& engine, const RunOptions& opts,
                        const std::function<void(uint64_t, uint64_t)>& progress) {
  prepare(opts);
  const uint32_t W = shared_.warehouses;
  // Work units: 0 = the item table, 1..W = warehouse w; progress counts the item table
  // as one step and each district as one step.
  const uint64_t total = 1 + uint64_t(W) * kDistrictsPerWarehouse;
  std::atomic<uint64_t> done{0};
  std::atomic<uint32_t> nextUnit{0};
  const unsigned nthreads = std::max(1u, std::min<unsigned>(opts.threads, W + 1));
  std::vector<std::exception_ptr> errors(nthreads);
  std::atomic<bool> failed{false};
  auto step = [&] {
    uint64_t d = done.fetch_add(1) + 1;
    if (progress) progress(d, total);
  };
  auto body = [&](unsigned t) {
    try {
      auto session = engine.session();
      Rng rng(seed_ ^ (0x51ed270b27a3f4c5ULL * (t + 1)));
      for (;;) {
        if (failed.load()) return;
        uint32_t unit = nextUnit.fetch_add(1);
        if (unit > W) return;
        if (unit == 0) {
          loadItems(*session, rng);
          step();
        } else {
          loadWarehouse(*session, rng, shared_.c, unit, step);
        }
      }
    } catch (...) {
      errors[t] = std::current_exception();
      failed.store(true);
    }
  };
  if (progress) progress(0, total);
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < nthreads; ++t) threads.emplace_back(body, t);
  body(0);
  for (auto& th : threads) th.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

void TpccWorkload::run(Session& session, unsigned tid, const RunOptions& opts,
                       const std::atomic<bool>& stop, ThreadCounter& counter) {
  prepare(opts);
  shared_.locks->setEnabled(opts.tpccLocks);
  shared_.getMany = opts.tpccGetMany;
  Worker worker(session, shared_, tid, seed_ ^ (0x2545f4914f6cdd1dULL * (tid + 101)));
  while (!stop.load(std::memory_order_relaxed)) {
    if (opts.tpccRandomWarehouse) worker.moveToRandomWarehouse();
    try {
      worker.runOne();
    } catch (const TransactionConflict&) {  // given up by the engine (aborted): the next one
      counter.conflicts.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    counter.tx.fetch_add(1, std::memory_order_relaxed);
  }
}

std::vector<std::string> TpccWorkload::check(Engine& engine, const RunOptions& opts) {
  const uint32_t W = warehousesOf(opts);
  auto session = engine.session();
  return checkConsistency(*session, W);
}

namespace {
Registrar<Workload> registrar("tpcc", [] { return std::make_unique<TpccWorkload>(); });
}  // namespace

}  // namespace vmstore::bench::tpcc
