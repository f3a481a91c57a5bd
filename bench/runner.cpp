// The runner of `vmstore bench`: see runner.hpp for the contract.
#include "runner.hpp"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench_dir.hpp"
#include "os/memory.hpp"
#include "os/thread_name.hpp"
#include "task/cooperative.hpp"
#include "thread_cpu.hpp"
#include "vmstore/tasks.hpp"

namespace vmstore::bench {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Writes everything to several streams (stdout and the --csv file).
class TeeBuf : public std::streambuf {
 public:
  explicit TeeBuf(std::vector<std::ostream*> outs) : outs_(std::move(outs)) {}

 protected:
  int overflow(int c) override {
    if (c == EOF) return 0;
    char ch = static_cast<char>(c);
    for (std::ostream* o : outs_) o->write(&ch, 1);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::ostream* o : outs_) o->write(s, n);
    return n;
  }
  int sync() override {
    for (std::ostream* o : outs_) o->flush();
    return 0;
  }

 private:
  std::vector<std::ostream*> outs_;
};

// The --csv file, opened before anything slow happens so that a bad path fails at once.
std::unique_ptr<std::ofstream> openCsv(const std::string& path) {
  if (path.empty()) return nullptr;
  auto f = std::make_unique<std::ofstream>(path, std::ios::trunc);
  if (!*f) {
    throw std::invalid_argument("--csv=" + path + ": cannot write (" + std::strerror(errno) +
                                ")");
  }
  return f;
}

// The loading progress line: redrawn in place on a terminal, else one line per 10%.
class LoadProgress {
 public:
  LoadProgress(std::ostream* log, bool tty) : log_(log), tty_(tty) {}
  ~LoadProgress() { stop(); }
  void start() {
    if (log_ == nullptr) return;
    start_ = Clock::now();
    thread_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!stopped_) {
        cv_.wait_for(lock, std::chrono::milliseconds(tty_ ? 200 : 100));
        if (!stopped_) draw(false);
      }
    });
  }
  void update(uint64_t done, uint64_t total) {
    done_.store(done, std::memory_order_relaxed);
    total_.store(total, std::memory_order_relaxed);
  }
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    thread_.join();
    draw(true);
  }

 private:
  void draw(bool final) {
    const uint64_t total = total_.load(std::memory_order_relaxed);
    const uint64_t done = final ? total : done_.load(std::memory_order_relaxed);
    if (total == 0) return;
    const int pct = static_cast<int>(100.0 * static_cast<double>(done) / total);
    if (!tty_ && !final && pct < nextDecile_ * 10) return;
    while (nextDecile_ * 10 <= pct) ++nextDecile_;
    const double secs = secondsSince(start_);
    std::ostringstream line;
    line << "loading: " << pct << "% (" << done << " / " << total << ", "
         << static_cast<uint64_t>(secs > 0 ? done / secs : 0) << "/s, " << fixed(secs, 1)
         << " s)";
    if (tty_) {
      *log_ << '\r' << line.str() << "\x1b[K" << (final ? "\n" : "") << std::flush;
    } else {
      *log_ << line.str() << '\n' << std::flush;
    }
  }

  std::ostream* log_;
  bool tty_;
  Clock::time_point start_;
  std::atomic<uint64_t> done_{0}, total_{0};
  int nextDecile_ = 1;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

// The first error any worker thread threw.
class FirstError {
 public:
  void set(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = std::move(e);
  }
  std::exception_ptr get() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  std::mutex mu_;
  std::exception_ptr error_;
};

constexpr double kMiB = 1024.0 * 1024.0;

RunResult runMicro(const RunOptions& opts, const RunnerIo& io) {
  auto micro = MicroRegistry::instance().make(opts.workload);
  auto csv = openCsv(opts.csv);
  std::vector<std::ostream*> outs;
  if (io.out != nullptr) outs.push_back(io.out);
  if (csv) outs.push_back(csv.get());
  TeeBuf tee(outs);
  std::ostream rows(&tee);
  if (io.log != nullptr) *io.log << "vmstore bench " << opts.workload << "\n" << std::flush;
  const auto start = Clock::now();
  JsonFields fields = micro->run(opts, rows);
  rows.flush();
  RunResult result;
  result.measuredSeconds = secondsSince(start);
  if (fields.empty() || fields.front().first != "threads") {
    throw std::logic_error("micro-benchmark " + opts.workload + " did not say how many threads it ran");
  }
  std::string json = "{\"workload\":" + jsonString(opts.workload);
  for (const auto& [name, value] : fields) json += "," + jsonString(name) + ":" + value;
  json += ",\"seconds\":" + fixed(result.measuredSeconds, 3) + "}";
  result.json = json;
  if (csv && !csv->flush()) throw std::runtime_error("cannot write " + opts.csv);
  if (io.out != nullptr) *io.out << json << '\n' << std::flush;
  return result;
}

}  // namespace

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

uint64_t tlbShootdowns() { return internal::tlbShootdowns().value_or(0); }

bool isWorkload(const std::string& name) {
  auto names = WorkloadRegistry::instance().names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool isMicroBenchmark(const std::string& name) {
  auto names = MicroRegistry::instance().names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

RunResult runBenchmark(const RunOptions& given, const RunnerIo& io) {
  if (given.threads < 1) throw std::invalid_argument("--threads must be at least 1");
  if (!(given.seconds > 0)) throw std::invalid_argument("--seconds must be more than 0");
  if (given.distribution != "zipfian" && given.distribution != "uniform") {
    throw std::invalid_argument("--distribution=" + given.distribution +
                                ": use zipfian or uniform");
  }
  if (isMicroBenchmark(given.workload) && !isWorkload(given.workload)) {
    return runMicro(given, io);
  }
  std::unique_ptr<Workload> workload = WorkloadRegistry::instance().make(given.workload);
  if (!workload) {
    throw std::invalid_argument(
        "unknown workload '" + given.workload + "' (workloads: " +
        joinNames(WorkloadRegistry::instance().names()) +
        "; micro-benchmarks: " + joinNames(MicroRegistry::instance().names()) + ")");
  }
  std::unique_ptr<Engine> engine = makeEngine(given.engine);  // invalid_argument if unknown
  if (!engine->supports(given.durability)) {
    std::string offered;
    for (Durability d : {Durability::kSync, Durability::kAsync, Durability::kNone}) {
      if (engine->supports(d)) offered += std::string(offered.empty() ? "" : ", ") + durabilityName(d);
    }
    throw std::invalid_argument("engine " + given.engine + " does not support --durability=" +
                                durabilityName(given.durability) + " (it supports: " + offered +
                                ")");
  }

  if (given.inflight > 0 && !engine->supportsTasks()) {
    throw std::invalid_argument("engine " + given.engine + " cannot run in task mode (--inflight)");
  }
  if (given.inflight > 4096) throw std::invalid_argument("--inflight: at most 4096");
  RunOptions opts = given;
  if (opts.data == 0) opts.data = workload->defaultData();
  if (opts.pool == 0) opts.pool = kDefaultPoolBytes;
  std::ostream* log = io.log;
  auto csv = openCsv(opts.csv);
  BenchDir dir(opts.dir, io.removeTempDirOnSignal && opts.dir.empty());

  if (log != nullptr) {
    *log << "vmstore bench " << opts.workload << ": engine " << opts.engine << ", durability "
         << durabilityName(opts.durability) << ", data "
         << opts.data << ", pool " << opts.pool / kMiB << " MiB, threads " << opts.threads
         << (opts.inflight > 0 ? ", tasks per thread " + std::to_string(opts.inflight) +
                                     (opts.syncIo ? " (io=sync)" : " (io=uring)")
                               : std::string(", blocking"))
         << (opts.batch > 0 ? ", " + std::to_string(opts.batch) + " keys per getMany" : std::string())
         << ", " << opts.seconds << " s, in " << dir.path() << "\n"
         << std::flush;
  }

  EngineConfig config;
  config.dir = dir.path();
  config.poolBytes = opts.pool;
  config.threads = opts.threads;
  config.durability = opts.durability;
  config.syncIo = opts.syncIo;
  config.vmstoreConfig = opts.vmstoreConfig;
  config.transactions = opts.transactions;
  engine->open(config, workload->tables());
  bool open = true;
  // Closes the engine on every path out (an error while it runs included).
  struct CloseGuard {
    Engine* engine;
    bool* open;
    ~CloseGuard() {
      if (*open) {
        try {
          engine->close();
        } catch (...) {
        }
      }
    }
  } closeGuard{engine.get(), &open};

  RunResult result;

  // ---- load
  {
    const bool tty = log == &std::cerr && isatty(STDERR_FILENO) != 0;
    LoadProgress progress(log, tty);
    progress.start();
    const auto start = Clock::now();
    workload->load(*engine, opts,
                   [&progress](uint64_t done, uint64_t total) { progress.update(done, total); });
    result.loadSeconds = secondsSince(start);
    progress.stop();
  }

  // ---- measured phase: workers start together; this thread reports every second.
  // A worker is a thread (blocking mode) or a task of a TaskPool (task mode: inflight
  // tasks on each of the threads; a task that waits lets the others of its thread run).
  const unsigned nworkers = opts.workers();
  std::vector<ThreadCounter> counters(nworkers);
  std::atomic<bool> stop{false};
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  FirstError error;
  std::vector<std::thread> workers;
  std::unique_ptr<vmstore::TaskPool> pool;
  // Stops and joins the workers on every path out of this function.
  struct JoinGuard {
    std::vector<std::thread>* workers;
    std::unique_ptr<vmstore::TaskPool>* pool;
    std::atomic<bool>* stop;
    std::atomic<bool>* go;
    ~JoinGuard() {
      stop->store(true);
      go->store(true);
      for (std::thread& w : *workers) {
        if (w.joinable()) w.join();
      }
      pool->reset();  // waits for its tasks
    }
  } joinGuard{&workers, &pool, &stop, &go};
  auto worker = [&](unsigned t) {
    try {
      std::unique_ptr<Session> session = engine->session();
      ready.fetch_add(1);
      while (!go.load()) internal::task::pause();
      workload->run(*session, t, opts, stop, counters[t]);
    } catch (...) {
      error.set(std::current_exception());
      ready.fetch_add(1);  // (harmless if already counted: only ">= workers" is tested)
      stop.store(true);
    }
  };
  if (opts.inflight > 0) {
    Status s = vmstore::TaskPool::create(opts.threads, opts.inflight, &pool);
    if (!s.ok()) throw std::runtime_error("cannot create the task pool: " + s.toString());
    for (unsigned t = 0; t < nworkers; ++t) pool->submit([&worker, t] { worker(t); });
  } else {
    workers.reserve(opts.threads);
    for (unsigned t = 0; t < opts.threads; ++t) {
      workers.emplace_back([&worker, t] { worker(t); });
      internal::nameThread(workers.back(), "bench-worker");
    }
  }
  while (ready.load() < nworkers) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  std::vector<std::ostream*> outs;
  if (io.out != nullptr) outs.push_back(io.out);
  if (csv) outs.push_back(csv.get());
  TeeBuf tee(outs);
  std::ostream rows(&tee);
  rows << kCsvHeader << '\n' << std::flush;

  auto sumTx = [&counters] {
    uint64_t n = 0;
    for (const ThreadCounter& c : counters) n += c.tx.load(std::memory_order_relaxed);
    return n;
  };
  EngineStats prev = engine->stats();
  const EngineStats atStart = prev;
  uint64_t prevTlb = tlbShootdowns();
  const uint64_t tlbAtStart = prevTlb;
  uint64_t prevTx = 0;
  const auto start = Clock::now();
  auto prevTime = start;
  go.store(true);
  const auto end = start + std::chrono::seconds(opts.warmup) +
                   std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.seconds));
  // --warmup: the measured phase starts after the warm-up's last row.
  uint64_t txAtMeasure = 0;
  auto measureStart = start;
  EngineStats atMeasure = atStart;
  CpuSample cpuAtMeasure = sampleCpu();
  std::optional<CpuSample> cpuAtEnd;  // taken before the workers stop (and their threads end)
  for (uint64_t sec = 1; !stop.load(); ++sec) {
    auto next = start + std::chrono::seconds(sec);
    if (next > end) next = end;
    while (Clock::now() < next && !stop.load()) {
      std::this_thread::sleep_until(std::min(next, Clock::now() + std::chrono::milliseconds(50)));
    }
    if (next == end) {
      cpuAtEnd = sampleCpu();
      stop.store(true);
    }
    const auto now = Clock::now();
    const uint64_t tx = sumTx();
    const EngineStats st = engine->stats();
    const uint64_t tlb = tlbShootdowns();
    const double dt = std::chrono::duration<double>(now - prevTime).count();
    rows << sec << ',' << tx - prevTx << ','
         << fixed((st.bytesRead - prev.bytesRead) / kMiB / dt, 1) << ','
         << fixed((st.bytesWritten - prev.bytesWritten) / kMiB / dt, 1) << ','
         << st.pageHits - prev.pageHits << ',' << st.pageMisses - prev.pageMisses << ','
         << st.evictions - prev.evictions << ',' << fixed((st.victimNanos - prev.victimNanos) / 1e6, 1) << ','
         << (tlb >= prevTlb ? tlb - prevTlb : 0) << ',' << opts.engine << ',' << opts.workload
         << ',' << opts.threads << ',' << durabilityName(opts.durability) << '\n'
         << std::flush;
    prev = st;
    prevTlb = tlb;
    prevTx = tx;
    prevTime = now;
    if (sec == opts.warmup) {
      txAtMeasure = tx;
      measureStart = now;
      atMeasure = st;
      cpuAtMeasure = sampleCpu();
    }
  }
  result.measuredSeconds = secondsSince(measureStart);
  const CpuUse cpu = cpuBetween(cpuAtMeasure, cpuAtEnd ? *cpuAtEnd : sampleCpu());
  for (std::thread& w : workers) w.join();
  if (pool) pool->wait();
  result.totalTx = sumTx() - txAtMeasure;
  for (const ThreadCounter& c : counters) result.conflicts += c.conflicts.load(std::memory_order_relaxed);
  result.txPerSec = result.totalTx / std::max(result.measuredSeconds, 1e-9);
  if (std::exception_ptr e = error.get()) std::rethrow_exception(e);

  // ---- check, close, report
  if (opts.check) {
    result.problems = workload->check(*engine, opts);
    result.ok = result.problems.empty();
    if (log != nullptr) {
      for (const std::string& p : result.problems) *log << "check: " << p << '\n';
      *log << "check: " << (result.ok ? "consistent" : "FAILED") << " ("
           << result.problems.size() << " problems)\n"
           << std::flush;
    }
  }
  result.stats = engine->stats();
  const auto closeStart = Clock::now();
  open = false;
  engine->close();
  const double closeSeconds = secondsSince(closeStart);

  // The log's figures are the measured phase's (the load's writes are not in them).
  auto since = [](uint64_t now, uint64_t then) { return now > then ? now - then : 0; };
  const uint64_t shootdowns = since(prevTlb, tlbAtStart);  // after loading
  const uint64_t evicted = since(prev.evictions, atStart.evictions);
  std::ostringstream json;
  json << "{\"engine\":" << jsonString(opts.engine) << ",\"workload\":"
       << jsonString(opts.workload) << ",\"threads\":" << opts.threads
       << ",\"inflight\":" << opts.inflight << ",\"io\":" << jsonString(opts.syncIo ? "sync" : "uring")
       << ",\"batch\":" << opts.batch
       << ",\"durability\":" << jsonString(durabilityName(opts.durability))
       << ",\"data\":" << opts.data << ",\"pool\":" << opts.pool
       << ",\"tx_per_s\":" << fixed(result.txPerSec, 1) << ",\"tx\":" << result.totalTx
       << ",\"tx_conflicts\":" << result.conflicts
       << ",\"load_s\":" << fixed(result.loadSeconds, 3)
       << ",\"seconds\":" << fixed(result.measuredSeconds, 3)
       << ",\"warmup_s\":" << opts.warmup
       << ",\"close_s\":" << fixed(closeSeconds, 3)
       << ",\"page_hits\":" << result.stats.pageHits
       << ",\"page_misses\":" << result.stats.pageMisses
       // The measured phase's: page accesses that hit, and time spent choosing victims.
       << ",\"hit_rate\":"
       << fixed(static_cast<double>(since(prev.pageHits, atMeasure.pageHits)) /
                    std::max<uint64_t>(1, since(prev.pageHits, atMeasure.pageHits) +
                                              since(prev.pageMisses, atMeasure.pageMisses)),
                6)
       << ",\"page_accesses\":"
       << since(prev.pageHits, atMeasure.pageHits) + since(prev.pageMisses, atMeasure.pageMisses)
       << ",\"victim_ms\":" << fixed(since(prev.victimNanos, atMeasure.victimNanos) / 1e6, 1)
       << ",\"data_bytes\":" << result.stats.dataBytes
       << ",\"policy_bytes\":" << result.stats.policyBytes
       << ",\"resident_set_bytes\":" << result.stats.residentSetBytes
       // Memory tiers (measured phase): time spent moving pages between tiers, pages moved.
       << ",\"migrate_ms\":" << fixed(since(prev.migrateNanos, atMeasure.migrateNanos) / 1e6, 1)
       << ",\"migrated_pages\":" << since(prev.migratedPages, atMeasure.migratedPages)
       << ",\"evictions\":" << result.stats.evictions
       << ",\"bytes_read\":" << result.stats.bytesRead
       << ",\"bytes_written\":" << result.stats.bytesWritten
       << ",\"log_bytes\":" << since(result.stats.logBytes, atStart.logBytes)
       << ",\"log_syncs\":" << since(result.stats.logSyncs, atStart.logSyncs)
       << ",\"checkpoints\":" << since(result.stats.checkpoints, atStart.checkpoints)
       << ",\"log_full_waits\":" << since(result.stats.logFullWaits, atStart.logFullWaits)
       // TLB shootdown interrupts (all CPUs, /proc/interrupts) after loading, and per page
       // evicted meanwhile: how well eviction batches its page-table changes (null when
       // nothing was evicted: the count then has nothing to do with eviction).
       << ",\"tlb_shootdowns\":" << shootdowns
       << ",\"tlb_shootdowns_per_eviction\":"
       << (evicted == 0 ? std::string("null") : fixed(static_cast<double>(shootdowns) / evicted, 6))
       // The measured phase's CPU per thread name and the machine's idle time.
       << cpuJson(cpu);
  if (opts.workload.rfind("ycsb", 0) == 0) {
    json << ",\"distribution\":" << jsonString(opts.distribution);
  }
  if (opts.workload == "tpcc") {
    json << ",\"tpcc_warehouse\":" << jsonString(opts.tpccRandomWarehouse ? "random" : "home")
         << ",\"tpcc_locks\":" << jsonString(opts.tpccLocks ? "on" : "off")
         << ",\"tpcc_get_many\":" << jsonString(opts.tpccGetMany ? "on" : "off");
  }
  json << workload->jsonFields();
  if (opts.transactions) json << ",\"transactions\":" << jsonString(*opts.transactions ? "on" : "off");
  if (opts.check) json << ",\"check\":" << (result.ok ? "\"ok\"" : "\"failed\"");
  json << "}";
  result.json = json.str();
  if (csv && !csv->flush()) throw std::runtime_error("cannot write " + opts.csv);
  if (io.out != nullptr) *io.out << result.json << '\n' << std::flush;
  return result;
}

}  // namespace vmstore::bench
