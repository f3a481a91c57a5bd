// `vmstore bench open-latency`: what opening a small database costs, as a command-line
// tool or a short-lived process pays it on every run. A database of --data keys
// (default 1,000, 100-byte values) is made and closed once; then, for --seconds
// (default 2 s), it is opened, one key read and one written, and closed, again and
// again. Each open, put and close is timed, and the process's resident memory is read
// right after each open (its growth over the memory before the open).
//
// Database: --dir (missing or empty; default a fresh temporary directory, removed
// afterwards), --pool (default vmstore's own, 1 GiB), --durability (default none, as
// for every benchmark; the library's and the CLI's default is sync), --vmstore-config.
//
// CSV: one row, opens,open_p50_ms,open_p99_ms,put_p50_ms,close_p50_ms,close_p99_ms,
// rss_open_max_mib. JSON: the same fields.
#include <algorithm>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../bench_dir.hpp"
#include "../engine.hpp"
#include "micro_util.hpp"
#include "vmstore/database.hpp"

namespace vmstore::bench::micro {
namespace {

constexpr uint64_t kDefaultKeys = 1000;

void check(const Status& s, const char* what) { checkStatus(s, "open-latency", what); }

std::string keyOf(uint64_t i) { return "key" + std::to_string(i); }

class OpenLatency : public MicroBenchmark {
 public:
  JsonFields run(const RunOptions& opts, std::ostream& out) override {
    const double seconds = secondsPerConfig(opts, 2.0);
    const uint64_t keys = std::max<uint64_t>(1, opts.data != 0 ? opts.data : kDefaultKeys);
    std::string config = "durability=" + std::string(durabilityName(opts.durability));
    if (const uint64_t pool = poolBytes(opts, 0); pool != 0) config += ",pool_size=" + std::to_string(pool);
    if (!opts.vmstoreConfig.empty()) config += "," + opts.vmstoreConfig;
    const BenchDir bench(opts.dir, false);
    const std::string& dir = bench.path();
    JsonFields f;
    f.emplace_back("threads", "1");
    const std::string value(100, 'v');
    {
      std::unique_ptr<Database> db;
      check(Database::open(dir, config + ",create=true", &db), "create");
      Tree* tree = nullptr;
      check(db->openTree("", true, &tree), "openTree");
      for (uint64_t i = 0; i < keys; i++) check(tree->put(keyOf(i), value), "load");
      check(db->close(), "close after the load");
    }
    std::vector<double> openMs, putMs, closeMs;
    uint64_t rssMax = 0;
    std::string got;
    const double t0 = nowSeconds();
    for (uint64_t round = 0; nowSeconds() - t0 < seconds; round++) {
      const uint64_t rss0 = internal::residentBytes();
      double s = nowSeconds();
      std::unique_ptr<Database> db;
      check(Database::open(dir, config, &db), "open");
      openMs.push_back((nowSeconds() - s) * 1e3);
      const uint64_t rss1 = internal::residentBytes();
      rssMax = std::max(rssMax, rss1 - std::min(rss1, rss0));
      Tree* tree = nullptr;
      check(db->openTree("", false, &tree), "openTree");
      const std::string key = keyOf(round % keys);
      check(tree->get(key, &got), "get");
      if (got != value) throw std::runtime_error("open-latency: wrong value under " + key);
      s = nowSeconds();
      check(tree->put(key, value), "put");
      putMs.push_back((nowSeconds() - s) * 1e3);
      s = nowSeconds();
      check(db->close(), "close");
      closeMs.push_back((nowSeconds() - s) * 1e3);
    }
    const double rssMiB = static_cast<double>(rssMax) / (1 << 20);
    out << "opens,open_p50_ms,open_p99_ms,put_p50_ms,close_p50_ms,close_p99_ms,rss_open_max_mib\n";
    out << openMs.size() << ',' << fmtNumber(percentile(openMs, 0.5), 3) << ','
        << fmtNumber(percentile(openMs, 0.99), 3) << ',' << fmtNumber(percentile(putMs, 0.5), 3) << ','
        << fmtNumber(percentile(closeMs, 0.5), 3) << ',' << fmtNumber(percentile(closeMs, 0.99), 3) << ','
        << fmtNumber(rssMiB, 1) << '\n';
    f.emplace_back("opens", std::to_string(openMs.size()));
    f.emplace_back("open_p50_ms", jsonNumber(percentile(openMs, 0.5), 3));
    f.emplace_back("open_p99_ms", jsonNumber(percentile(openMs, 0.99), 3));
    f.emplace_back("put_p50_ms", jsonNumber(percentile(putMs, 0.5), 3));
    f.emplace_back("close_p50_ms", jsonNumber(percentile(closeMs, 0.5), 3));
    f.emplace_back("close_p99_ms", jsonNumber(percentile(closeMs, 0.99), 3));
    f.emplace_back("rss_open_max_mib", jsonNumber(rssMiB, 1));
    return f;
  }
};

Registrar<MicroBenchmark> registrar("open-latency", [] { return std::make_unique<OpenLatency>(); });

}  // namespace
}  // namespace vmstore::bench::micro
