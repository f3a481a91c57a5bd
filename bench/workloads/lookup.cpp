// The `lookup` workload: the vmcache paper's random point-lookup benchmark (Leis et al.,
// SIGMOD 2023, section 5). --data tuples (default 10,000,000) of 8-byte big-endian keys
// 0..N-1 and 120-byte values, loaded by the worker threads, each its own key range in
// ascending order; then every worker looks up uniformly random keys. Each lookup checks
// the value's length and its key tag; every 1024th compares all 120 bytes. A wrong
// answer stops the run with an error. --check scans the table: every key once, every
// value exact.
#include <cstring>
#include <memory>
#include <string>

#include "records.hpp"
#include "workload.hpp"

namespace vmstore::bench {

namespace {

using namespace records;

constexpr uint64_t kFullCheckEvery = 1024;
constexpr int kTable = 0;  // RecordsWorkload's one table

class LookupWorkload : public RecordsWorkload {
 public:
  LookupWorkload() : RecordsWorkload(/*exactValues=*/true) {}
  std::vector<std::string> tables() const override { return {"lookup"}; }
  uint64_t defaultData() const override { return 10'000'000; }


  void run(Session& session, unsigned tid, const RunOptions& opts,
           const std::atomic<bool>& stop, ThreadCounter& counter) override {
    const uint64_t n = opts.data;
    Random rng(0xB0BA0000ull + tid);
    char key[kKeySize];
    char expected[kValueSize];
    std::string value;
    value.reserve(kValueSize);
    uint64_t done = 0;
    if (opts.batch > 0) return runBatched(session, rng, opts, stop, counter);
    while (!stop.load(std::memory_order_relaxed)) {
      for (int batch = 0; batch < 64; ++batch) {
        const uint64_t i = rng.below(n);
        encodeKey(i, key);
        if (!session.get(kTable, std::string_view(key, kKeySize), &value)) {
          wrongAnswer("lookup", i, "not found");
        }
        if (!valueMatchesKey(i, value)) wrongAnswer("lookup", i, "wrong value");
        if (done % kFullCheckEvery == 0) {
          makeValue(i, 0, expected);
          if (std::memcmp(value.data(), expected, kValueSize) != 0) {
            wrongAnswer("lookup", i, "wrong value bytes");
          }
        }
        ++done;
      }
      counter.tx.store(done, std::memory_order_relaxed);
    }
  }

  // --batch=N: N random keys per Session::getMany call, every answer checked as above.
  void runBatched(Session& session, Random& rng, const RunOptions& opts, const std::atomic<bool>& stop,
                  ThreadCounter& counter) {
    const uint64_t n = opts.data;
    std::vector<uint64_t> ids(opts.batch);
    std::vector<std::string> keys(opts.batch, std::string(kKeySize, '\0'));
    std::vector<std::string_view> views(opts.batch);
    std::vector<std::string> values;
    std::vector<bool> found;
    char expected[kValueSize];
    uint64_t done = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      for (unsigned j = 0; j < opts.batch; j++) {
        ids[j] = rng.below(n);
        encodeKey(ids[j], keys[j].data());
        views[j] = keys[j];
      }
      session.getMany(kTable, views, &values, &found);
      for (unsigned j = 0; j < opts.batch; j++) {
        if (!found[j]) wrongAnswer("lookup", ids[j], "not found");
        if (!valueMatchesKey(ids[j], values[j])) wrongAnswer("lookup", ids[j], "wrong value");
        if (done % kFullCheckEvery == 0) {
          makeValue(ids[j], 0, expected);
          if (std::memcmp(values[j].data(), expected, kValueSize) != 0) wrongAnswer("lookup", ids[j], "wrong value bytes");
        }
        ++done;
      }
      counter.tx.store(done, std::memory_order_relaxed);
    }
  }
};

const Registrar<Workload> kRegister("lookup", [] { return std::make_unique<LookupWorkload>(); });

}  // namespace

}  // namespace vmstore::bench
