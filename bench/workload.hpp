// Workloads and micro-benchmarks of `vmstore bench`, and the registries that find them
// by name.
//
// Contract
// - A Workload runs on any Engine: load() fills fresh tables, run() is the measured
//   phase of one worker thread, check() (for --check) verifies consistency afterwards.
//   The runner (bench/runner.hpp) owns timing, the per-second CSV rows and the JSON line.
// - A MicroBenchmark measures one mechanism directly (no Engine); it prints its own CSV
//   rows and returns the fields of its JSON line.
// - Engines, workloads and micro-benchmarks register themselves with a static Registrar
//   in their own .cpp file, so adding one touches no other file. (The bench code is
//   linked as object files, so no registrar is dropped by the linker.)
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "engine.hpp"

namespace vmstore::bench {

struct RunOptions {
  std::string workload;
  std::string engine = "vmstore";
  unsigned threads = 2;
  uint64_t data = 0;        // 0: the workload's default (tuples, warehouses, ...)
  uint64_t pool = 0;        // 0: the runner's default
  double seconds = 10;
  unsigned warmup = 0;      // whole seconds run before the measured phase (rows printed, not counted)
  std::string dir;          // empty: a fresh temporary directory, removed afterwards
  std::string csv;          // also write the CSV rows here
  bool check = false;       // run the workload's consistency checks after the run
  std::string distribution = "zipfian";  // ycsb: zipfian (0.99) or uniform
  Durability durability = Durability::kNone;  // the engine's logging and syncing (engine.hpp)
  // Task mode (vmstore only): 0 runs one blocking worker per thread; N > 0 runs N workers
  // per thread as tasks of a vmstore::TaskPool, each suspending on a page miss.
  unsigned inflight = 0;
  bool syncIo = false;  // vmstore config io=sync instead of io=uring
  std::string vmstoreConfig;  // vmstore: extra config keys (--vmstore-config)
  std::optional<bool> transactions;  // vmstore: EngineConfig::transactions (--transactions)
  unsigned batch = 0;   // lookup: keys per Session::getMany call (0: one get per lookup)
  uint64_t scanLength = 0;  // scan: entries per scan (0: the workload's default)
  // tpcc: each transaction on a uniformly random warehouse (as the original vmcache code
  // runs it) instead of the worker's home warehouse.
  bool tpccRandomWarehouse = false;
  // tpcc: take the workload's lock table (tpcc.hpp); false (--tpcc-locks=off): no
  // transaction locks, only each operation's own atomicity, as the original vmcache code
  // runs TPC-C. For comparing with it; the consistency conditions may then fail.
  bool tpccLocks = true;
  // tpcc: new-order's item reads and stock-level's stock reads, which are independent of
  // each other, as one Session::getMany; false (--tpcc-get-many=off): one get each, as
  // the original vmcache code reads them.
  bool tpccGetMany = true;
  // tpcc: the seed of the workload's random choices (its NURand constants, the rows each
  // worker picks), so that a run can be repeated; 0 (no --tpcc-seed): a random one, which
  // the JSON line reports as tpcc_seed either way.
  uint64_t tpccSeed = 0;
  // Workers of the measured phase (their tid is 0 .. workers()-1).
  unsigned workers() const { return threads * (inflight > 0 ? inflight : 1); }
};

// What one worker has done so far; the runner reads it every second.
struct alignas(64) ThreadCounter {
  std::atomic<uint64_t> tx{0};
  // Transactions given up on a TransactionConflict (engine.hpp), not counted in tx.
  std::atomic<uint64_t> conflicts{0};
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::vector<std::string> tables() const = 0;
  virtual uint64_t defaultData() const = 0;
  // Loads the initial data; progress(done, total) may be called from any thread.
  virtual void load(Engine& engine, const RunOptions& opts,
                    const std::function<void(uint64_t, uint64_t)>& progress) = 0;
  // The measured phase of worker tid (0 .. opts.workers()-1): transactions until stop is set,
  // each counted in counter.tx.
  virtual void run(Session& session, unsigned tid, const RunOptions& opts,
                   const std::atomic<bool>& stop, ThreadCounter& counter) = 0;
  // Problems found (empty: consistent). Called after run() when opts.check is set.
  virtual std::vector<std::string> check(Engine& engine, const RunOptions& opts) {
    (void)engine;
    (void)opts;
    return {};
  }
  // Fields of its own for the JSON line, each as ,"name":value (empty: none). After load.
  virtual std::string jsonFields() const { return {}; }
};

// Fields of a micro-benchmark's JSON line, in order (values already JSON-encoded).
using JsonFields = std::vector<std::pair<std::string, std::string>>;

class MicroBenchmark {
 public:
  virtual ~MicroBenchmark() = default;
  // Writes CSV rows (with a header) to out; returns the JSON fields beyond the workload's
  // name, the first of them "threads": how many threads it ran at most (1 for a
  // benchmark of one thread, whatever --threads said).
  virtual JsonFields run(const RunOptions& opts, std::ostream& out) = 0;
};

template <class T>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<T>()>;
  static Registry& instance() {
    static Registry r;
    return r;
  }
  void add(std::string name, Factory f) { factories_[std::move(name)] = std::move(f); }
  std::unique_ptr<T> make(std::string_view name) const {
    auto it = factories_.find(std::string(name));
    return it == factories_.end() ? nullptr : it->second();
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (auto& [n, f] : factories_) out.push_back(n);
    return out;
  }

 private:
  std::map<std::string, Factory> factories_;
};

template <class T>
struct Registrar {
  Registrar(std::string name, typename Registry<T>::Factory f) {
    Registry<T>::instance().add(std::move(name), std::move(f));
  }
};

using EngineRegistry = Registry<Engine>;
using WorkloadRegistry = Registry<Workload>;
using MicroRegistry = Registry<MicroBenchmark>;

}  // namespace vmstore::bench
