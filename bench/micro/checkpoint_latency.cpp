// `vmstore bench checkpoint-latency`: how long a checkpoint (Database::sync) takes while
// many threads write. A checkpoint's cut takes the database's writer gate exclusively
// and waits for the writes in flight; the gate lets shared holders in again after 2 ms
// of waiting (sync/writer_gate.hpp), so a constant stream of writers could stretch the
// cut. This measures it: for each thread count of the ladder up to --threads, that
// many threads put small values under random keys of a small key space (so the pages a
// checkpoint writes stay few and the cut's wait shows), while the main thread runs one
// checkpoint after another for --seconds (default 2 s per count).
//
// Database: --dir (missing or empty; default a fresh temporary directory, removed
// afterwards), the durability of --durability (default none: only the checkpoints
// write), pool --pool (default 256 MiB), --data keys (default 10,000).
//
// CSV: threads,checkpoints,p50_ms,p99_ms,max_ms,cut_wait_avg_ms,puts_per_s (the cut's
// wait: Stats::checkpoint_cut_wait_us over checkpoint_cuts). JSON: the largest thread
// count's p99_ms, max_ms, cut_wait_avg_ms and puts per second, and the longest cut
// wait of the whole run (cut_wait_max_ms).

#include <algorithm>
#include <atomic>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../bench_dir.hpp"
#include "../engine.hpp"
#include "micro_util.hpp"
#include "vmstore/database.hpp"

namespace vmstore::bench::micro {
namespace {


constexpr uint64_t kDefaultPool = 256ull << 20;
constexpr uint64_t kDefaultKeys = 10000;

void check(const Status& s, const char* what) { checkStatus(s, "checkpoint-latency", what); }

struct Result {
  std::vector<double> syncMs;  // each checkpoint's time
  uint64_t puts = 0;
  double seconds = 0;
  uint64_t cuts = 0;         // of them, cuts (a checkpoint with nothing changed makes none)
  uint64_t cutWaitUs = 0;    // the cuts' waits for the writer gate
};

Result runConfig(Database& db, Tree* tree, unsigned threads, uint64_t keys, double seconds) {
  std::atomic<bool> stop{false};
  std::vector<uint64_t> puts(threads, 0);
  std::vector<std::thread> writers;
  std::vector<std::string> errors(threads);
  for (unsigned t = 0; t < threads; t++) {
    writers.emplace_back([&, t] {
      uint64_t x = 0x9e3779b97f4a7c15ull * (t + 1);
      std::string value(64, static_cast<char>('a' + t % 26));
      while (!stop.load(std::memory_order_relaxed)) {
        x = xorshift64(x);
        Status s = tree->put("k" + std::to_string(fastRange(x, keys)), value);
        if (!s.ok()) {
          errors[t] = s.toString();
          return;
        }
        puts[t]++;
      }
    });
  }
  Result r;
  const Stats before = db.stats();
  const double t0 = nowSeconds();
  while (nowSeconds() - t0 < seconds) {
    const double s0 = nowSeconds();
    Status s = db.sync();
    r.syncMs.push_back((nowSeconds() - s0) * 1e3);
    if (!s.ok()) {
      stop = true;
      for (auto& w : writers) w.join();
      check(s, "sync");
    }
  }
  r.seconds = nowSeconds() - t0;
  const Stats after = db.stats();
  r.cuts = after.checkpoint_cuts - before.checkpoint_cuts;
  r.cutWaitUs = after.checkpoint_cut_wait_us - before.checkpoint_cut_wait_us;
  stop = true;
  for (auto& w : writers) w.join();
  for (unsigned t = 0; t < threads; t++) {
    if (!errors[t].empty()) throw std::runtime_error("checkpoint-latency: put: " + errors[t]);
    r.puts += puts[t];
  }
  return r;
}

double cutWaitAvgMs(const Result& r) { return r.cuts == 0 ? 0 : static_cast<double>(r.cutWaitUs) / r.cuts / 1e3; }

class CheckpointLatency : public MicroBenchmark {
 public:
  JsonFields run(const RunOptions& opts, std::ostream& out) override {
    const double seconds = secondsPerConfig(opts, 2.0);
    const unsigned threadsMax = std::max(1u, opts.threads);
    const uint64_t keys = opts.data != 0 ? opts.data : kDefaultKeys;
    const uint64_t pool = poolBytes(opts, kDefaultPool);
    const BenchDir dir(opts.dir, false);
    JsonFields f;
    f.emplace_back("threads", std::to_string(threadsMax));
    {
      std::unique_ptr<Database> db;
      check(Database::open(dir.path(),
                           "pool_size=" + std::to_string(pool) + ",durability=" + durabilityName(opts.durability),
                           &db),
            "open");
      Tree* tree = nullptr;
      check(db->openTree("", true, &tree), "openTree");
      out << "threads,checkpoints,p50_ms,p99_ms,max_ms,cut_wait_avg_ms,puts_per_s\n";
      Result last;
      for (unsigned t : threadLadder(threadsMax)) {
        last = runConfig(*db, tree, t, keys, seconds);
        out << t << ',' << last.syncMs.size() << ',' << fmtNumber(percentile(last.syncMs, 0.5), 3) << ','
            << fmtNumber(percentile(last.syncMs, 0.99), 3) << ','
            << fmtNumber(*std::max_element(last.syncMs.begin(), last.syncMs.end()), 3) << ','
            << fmtNumber(cutWaitAvgMs(last), 3) << ','
            << fmtNumber(static_cast<double>(last.puts) / last.seconds, 0) << '\n';
        out.flush();
      }
      const double cutWaitMaxMs = db->stats().checkpoint_cut_wait_max_us / 1e3;
      check(db->close(), "close");
      f.emplace_back("checkpoints", std::to_string(last.syncMs.size()));
      f.emplace_back("p99_ms", jsonNumber(percentile(last.syncMs, 0.99), 3));
      f.emplace_back("max_ms", jsonNumber(*std::max_element(last.syncMs.begin(), last.syncMs.end()), 3));
      f.emplace_back("cut_wait_avg_ms", jsonNumber(cutWaitAvgMs(last), 3));
      f.emplace_back("cut_wait_max_ms", jsonNumber(cutWaitMaxMs, 3));
      f.emplace_back("puts_per_s", jsonNumber(static_cast<double>(last.puts) / last.seconds, 0));
    }
    return f;
  }
};

Registrar<MicroBenchmark> registrar("checkpoint-latency", [] { return std::make_unique<CheckpointLatency>(); });

}  // namespace
}  // namespace vmstore::bench::micro
