// `vmstore bench batch-write`: what a write costs alone and inside batches of scattered
// keys (Database::write), in memory, one thread. A tree of --data keys (default
// 10,000,000; 8-byte keys, 100-byte values) is loaded in ascending batches; then, for
// --seconds each (default 3 s), three configurations:
//   single   one put at a time (Tree::put), a random present key, a same-size value
//            (written in place)
//   update   batches of --batch puts (default 64) of random present keys in no order,
//            same-size values (in place): a batch finds its leaves side by side first
//            (BTree::locateLeaves, docs/DESIGN.md "Batches locate their leaves side by
//            side")
//   sorted   the same with each batch's keys in ascending order (found side by side
//            once two writes missed their leaf)
//   insert   batches of --batch puts of random new keys (between the loaded ones)
//   delete   batches of --batch deletes of random loaded keys (last, as it empties the
//            tree: a key deleted already is deleted again, which finds its leaf all the
//            same)
// Every 1,000th batch of puts reads one of its keys back (a wrong value stops the run).
//
// Database: --dir (missing or empty; default a fresh temporary directory, removed
// afterwards), --pool (default 4 GiB: the data stays in memory), --durability (default
// none), --vmstore-config.
//
// CSV: one row per configuration, config,batch,puts_per_s (deletes per second for
// delete). JSON: single_puts_per_s, update_puts_per_s, sorted_puts_per_s,
// insert_puts_per_s, delete_per_s, batch.
#include <algorithm>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../bench_dir.hpp"
#include "../engine.hpp"
#include "../workloads/records.hpp"
#include "micro_util.hpp"
#include "vmstore/database.hpp"

namespace vmstore::bench::micro {
namespace {

constexpr uint64_t kDefaultKeys = 10'000'000;
constexpr unsigned kDefaultBatch = 64;
constexpr uint64_t kDefaultPool = 4ull << 30;
constexpr size_t kValueBytes = 100;

void check(const Status& s, const char* what) { checkStatus(s, "batch-write", what); }

// Key i as the records' 8 big-endian bytes: the tree's order is i's order. Loaded keys
// are even.
std::string keyOf(uint64_t i) {
  std::string k(records::kKeySize, '\0');
  records::encodeKey(i, k.data());
  return k;
}

class BatchWrite : public MicroBenchmark {
 public:
  JsonFields run(const RunOptions& opts, std::ostream& out) override {
    const double seconds = secondsPerConfig(opts, 3.0);
    const uint64_t keys = std::max<uint64_t>(1, opts.data != 0 ? opts.data : kDefaultKeys);
    const unsigned batchSize = opts.batch != 0 ? opts.batch : kDefaultBatch;
    std::string config = "durability=" + std::string(durabilityName(opts.durability)) +
                         ",pool_size=" + std::to_string(poolBytes(opts, kDefaultPool));
    if (!opts.vmstoreConfig.empty()) config += "," + opts.vmstoreConfig;
    const BenchDir bench(opts.dir, false);
    std::unique_ptr<Database> db;
    check(Database::open(bench.path(), config + ",create=true", &db), "open");
    Tree* tree = nullptr;
    check(db->openTree("", true, &tree), "openTree");
    const std::string value(kValueBytes, 'v');
    WriteBatch batch;
    for (uint64_t i = 0; i < keys; i++) {
      check(batch.put(tree, keyOf(2 * i), value), "load");
      if (i % 1000 == 999 || i + 1 == keys) {
        check(db->write(batch), "load");
        batch.clear();
      }
    }
    std::mt19937_64 rng(42);
    std::string stamp(kValueBytes, '\0');
    std::string got;
    // Runs `seconds` of calls, each of `per` puts of keys drawn by `next`; returns puts/s.
    std::vector<uint64_t> drawn;
    auto measure = [&](unsigned per, bool batched, bool del, bool sorted, auto&& next) {
      uint64_t puts = 0;
      uint64_t calls = 0;
      const double t0 = nowSeconds();
      double elapsed = 0;
      do {
        for (int chunk = 0; chunk < 64; chunk++, calls++) {
          std::string last;
          batch.clear();
          drawn.clear();
          for (unsigned j = 0; j < per; j++) drawn.push_back(next());
          if (sorted) std::sort(drawn.begin(), drawn.end());
          for (const uint64_t k : drawn) {
            last = keyOf(k);
            std::memcpy(stamp.data(), last.data(), last.size());  // each value names its key
            const Status s = del       ? batch.del(tree, last)
                             : batched ? batch.put(tree, last, stamp)
                                       : tree->put(last, stamp);
            check(s, "put");
          }
          if (batched) check(db->write(batch), "write");
          puts += per;
          if (!del && calls % 1000 == 0) {
            check(tree->get(last, &got), "get");
            if (got != stamp) throw std::runtime_error("batch-write: a key read back a wrong value");
          }
        }
        elapsed = nowSeconds() - t0;
      } while (elapsed < seconds);
      return static_cast<double>(puts) / elapsed;
    };
    const double single = measure(1, false, false, false, [&] { return 2 * (rng() % keys); });
    const double update = measure(batchSize, true, false, false, [&] { return 2 * (rng() % keys); });
    const double sorted = measure(batchSize, true, false, true, [&] { return 2 * (rng() % keys); });
    const double insert = measure(batchSize, true, false, false, [&] { return 2 * (rng() % keys) + 1; });
    const double erase = measure(batchSize, true, true, false, [&] { return 2 * (rng() % keys); });
    check(db->close(), "close");
    out << "config,batch,puts_per_s\n";
    out << "single,1," << fmtNumber(single, 0) << '\n';
    out << "update," << batchSize << ',' << fmtNumber(update, 0) << '\n';
    out << "sorted," << batchSize << ',' << fmtNumber(sorted, 0) << '\n';
    out << "insert," << batchSize << ',' << fmtNumber(insert, 0) << '\n';
    out << "delete," << batchSize << ',' << fmtNumber(erase, 0) << '\n';
    JsonFields f;
    f.emplace_back("threads", "1");
    f.emplace_back("batch", std::to_string(batchSize));
    f.emplace_back("single_puts_per_s", jsonNumber(single, 0));
    f.emplace_back("update_puts_per_s", jsonNumber(update, 0));
    f.emplace_back("sorted_puts_per_s", jsonNumber(sorted, 0));
    f.emplace_back("insert_puts_per_s", jsonNumber(insert, 0));
    f.emplace_back("delete_per_s", jsonNumber(erase, 0));
    return f;
  }
};

Registrar<MicroBenchmark> registrar("batch-write", [] { return std::make_unique<BatchWrite>(); });

}  // namespace
}  // namespace vmstore::bench::micro
