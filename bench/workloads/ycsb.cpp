// The YCSB core workloads `ycsb-a` .. `ycsb-f` (Cooper et al., SoCC 2010; the
// proportions of YCSB's workloads/workload[a-f] files) over the record shape of
// `lookup` (8-byte keys, 120-byte values), --data records (default 1,000,000):
//
//   A  update heavy    50% read, 50% update                 request: zipfian
//   B  read mostly     95% read,  5% update                 request: zipfian
//   C  read only       100% read                            request: zipfian
//   D  read latest     95% read,  5% insert                 request: latest
//   E  short ranges    95% scan (1..100 entries, uniform), 5% insert   zipfian
//   F  read-modify-write  50% read, 50% read-modify-write   request: zipfian
//
// The zipfian request distribution is YCSB's scrambled zipfian (constant 0.99): a
// zipfian draw over 10^10 items (YCSB's precomputed zeta) hashed with 64-bit FNV-1a onto
// the records, so the popular keys are spread over the key space. `latest` (D) is YCSB's
// skewed-latest: a zipfian rank over the records, newest first. --distribution=uniform
// makes every choice uniform instead. One operation is one transaction; updates, inserts
// and read-modify-writes run inside begin()/commit(), reads and scans outside.
//
// Inserts (D, E) draw new keys beyond the loaded range per thread: worker t of T inserts
// keys N+t, N+t+T, N+t+2T, ... so threads never collide. A worker's "latest" records are
// its own inserts, then the loaded keys from N-1 down. Every read checks the value's
// length and key tag (a wrong answer stops the run); --check scans the whole table.
#include <cmath>
#include <memory>
#include <mutex>
#include <string>

#include "records.hpp"
#include "workload.hpp"

namespace vmstore::bench {

namespace {

using namespace records;

constexpr int kTable = 0;  // RecordsWorkload's one table
constexpr double kZipfianConstant = 0.99;
constexpr unsigned kMaxScanLength = 100;

// zeta(n, theta) = sum_{i=1..n} 1 / i^theta, continued from zeta(from) = initial.
double zeta(uint64_t from, uint64_t n, double theta, double initial) {
  double sum = initial;
  for (uint64_t i = from; i < n; ++i) sum += 1.0 / std::pow(static_cast<double>(i + 1), theta);
  return sum;
}

// YCSB's ZipfianGenerator (Gray et al., "Quickly generating billion-record synthetic
// databases"): ranks 0..items-1, rank 0 the most popular. The item count may grow
// (zeta is then extended incrementally, as YCSB does).
class Zipfian {
 public:
  Zipfian(uint64_t items, double theta, double zetan)
      : items_(items), theta_(theta), zetan_(zetan) {
    alpha_ = 1.0 / (1.0 - theta_);
    zeta2_ = zeta(0, 2, theta_, 0);
    half_pow_theta_ = 1.0 + std::pow(0.5, theta_);
    updateEta();
  }
  void grow(uint64_t items) {
    if (items <= items_) return;
    zetan_ = zeta(items_, items, theta_, zetan_);
    items_ = items;
    updateEta();
  }
  uint64_t next(Random& rng) const {
    const double u = rng.unit();
    const double uz = u * zetan_;
    if (uz < 1.0) return 0;
    if (uz < half_pow_theta_) return 1;
    const uint64_t r = static_cast<uint64_t>(static_cast<double>(items_) *
                                             std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return r < items_ ? r : items_ - 1;
  }
  uint64_t items() const { return items_; }

 private:
  void updateEta() {
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(items_), 1.0 - theta_)) /
           (1.0 - zeta2_ / zetan_);
  }
  uint64_t items_;
  double theta_, zetan_, alpha_, zeta2_, half_pow_theta_, eta_ = 0;
};

// YCSB's FNV-1a over the 8 bytes of a long, made non-negative as Math.abs does.
uint64_t fnv64(uint64_t v) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (int i = 0; i < 8; ++i) {
    h ^= v & 0xff;
    v >>= 8;
    h *= 1099511628211ull;
  }
  const int64_t s = static_cast<int64_t>(h);
  return static_cast<uint64_t>(s < 0 ? -s : s);
}

// YCSB's ScrambledZipfianGenerator over [0, n).
class ScrambledZipfian {
 public:
  explicit ScrambledZipfian(uint64_t n)
      : n_(n), zipf_(kItemCount, kZipfianConstant, kZetan) {}
  uint64_t next(Random& rng) const { return fnv64(zipf_.next(rng)) % n_; }

 private:
  static constexpr uint64_t kItemCount = 10'000'000'000ull;
  static constexpr double kZetan = 26.46902820178302;  // zeta(10^10, 0.99), from YCSB
  uint64_t n_;
  Zipfian zipf_;
};

struct Mix {
  double read, update, insert, scan, rmw;  // proportions, summing to 1
  bool latest;                             // D: the request distribution is `latest`
};

class YcsbWorkload : public RecordsWorkload {
 public:
  // Values are updated: check() only checks their tags.
  YcsbWorkload(std::string name, Mix mix)
      : RecordsWorkload(/*exactValues=*/false), name_(std::move(name)), mix_(mix) {}
  std::vector<std::string> tables() const override { return {"usertable"}; }
  uint64_t defaultData() const override { return 1'000'000; }


  void run(Session& session, unsigned tid, const RunOptions& opts,
           const std::atomic<bool>& stop, ThreadCounter& counter) override {
    const uint64_t n = opts.data;
    const bool uniform = opts.distribution == "uniform";
    Random rng(0x5CB5'0000ull + tid * 7919 + std::hash<std::string>()(name_));
    ScrambledZipfian scrambled(n);
    std::unique_ptr<Zipfian> latest;
    if (mix_.latest && !uniform) latest = std::make_unique<Zipfian>(n, kZipfianConstant, zetaOf(n));
    uint64_t inserted = 0;  // this worker's inserts so far
    const unsigned stride = opts.workers();

    auto insertedKey = [&](uint64_t k) { return n + k * stride + tid; };
    // A key of the request distribution.
    auto chooseKey = [&]() -> uint64_t {
      if (mix_.latest) {
        const uint64_t visible = n + inserted;
        const uint64_t rank = uniform ? rng.below(visible) : latest->next(rng);
        return rank < inserted ? insertedKey(inserted - 1 - rank) : n - 1 - (rank - inserted);
      }
      return uniform ? rng.below(n) : scrambled.next(rng);
    };

    const double pRead = mix_.read;
    const double pUpdate = pRead + mix_.update;
    const double pInsert = pUpdate + mix_.insert;
    const double pScan = pInsert + mix_.scan;
    char key[kKeySize];
    char value[kValueSize];
    std::string got;
    got.reserve(kValueSize);
    uint64_t done = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const double op = rng.unit();
      if (op < pRead) {
        const uint64_t i = chooseKey();
        encodeKey(i, key);
        if (!session.get(kTable, std::string_view(key, kKeySize), &got)) {
          wrongAnswer(name_, i, "not found");
        }
        if (!valueMatchesKey(i, got)) wrongAnswer(name_, i, "wrong value");
      } else if (op < pUpdate) {
        const uint64_t i = chooseKey();
        encodeKey(i, key);
        makeValue(i, rng.next(), value);
        session.begin();
        session.put(kTable, std::string_view(key, kKeySize), std::string_view(value, kValueSize));
        session.commit();
      } else if (op < pInsert) {
        const uint64_t i = insertedKey(inserted);
        encodeKey(i, key);
        makeValue(i, 0, value);
        session.begin();
        session.put(kTable, std::string_view(key, kKeySize), std::string_view(value, kValueSize));
        session.commit();
        ++inserted;
        if (latest) latest->grow(n + inserted);
      } else if (op < pScan) {
        const uint64_t i = chooseKey();
        const uint64_t length = 1 + rng.below(kMaxScanLength);
        encodeKey(i, key);
        uint64_t seen = 0;
        bool wrong = false;
        session.scan(kTable, std::string_view(key, kKeySize),
                     [&](std::string_view k, std::string_view v) {
                       if (!valueMatchesKey(decodeKey(k), v)) wrong = true;
                       return ++seen < length && !wrong;
                     });
        if (wrong) wrongAnswer(name_, i, "a scan from it returned a wrong value");
        if (seen == 0) wrongAnswer(name_, i, "a scan from it returned nothing");
      } else {
        // Read-modify-write: read the record, change it, write it back, in one transaction.
        const uint64_t i = chooseKey();
        encodeKey(i, key);
        session.begin();
        if (!session.get(kTable, std::string_view(key, kKeySize), &got)) {
          session.abort();
          wrongAnswer(name_, i, "not found");
        }
        if (!valueMatchesKey(i, got)) {
          session.abort();
          wrongAnswer(name_, i, "wrong value");
        }
        makeValue(i, rng.next(), value);  // the modification: a new version
        session.put(kTable, std::string_view(key, kKeySize), std::string_view(value, kValueSize));
        session.commit();
      }
      counter.tx.store(++done, std::memory_order_relaxed);
    }
  }

 private:
  // zeta(n, 0.99) for `latest`, computed once per workload (all workers share it).
  double zetaOf(uint64_t n) {
    std::call_once(zetaOnce_, [&] { zetaN_ = zeta(0, n, kZipfianConstant, 0); });
    return zetaN_;
  }

  std::string name_;
  Mix mix_;
  std::once_flag zetaOnce_;
  double zetaN_ = 0;
};

//                                              read  update insert scan  rmw   latest
const Registrar<Workload> kA("ycsb-a", [] { return std::make_unique<YcsbWorkload>("ycsb-a", Mix{0.50, 0.50, 0.00, 0.00, 0.00, false}); });
const Registrar<Workload> kB("ycsb-b", [] { return std::make_unique<YcsbWorkload>("ycsb-b", Mix{0.95, 0.05, 0.00, 0.00, 0.00, false}); });
const Registrar<Workload> kC("ycsb-c", [] { return std::make_unique<YcsbWorkload>("ycsb-c", Mix{1.00, 0.00, 0.00, 0.00, 0.00, false}); });
const Registrar<Workload> kD("ycsb-d", [] { return std::make_unique<YcsbWorkload>("ycsb-d", Mix{0.95, 0.00, 0.05, 0.00, 0.00, true}); });
const Registrar<Workload> kE("ycsb-e", [] { return std::make_unique<YcsbWorkload>("ycsb-e", Mix{0.00, 0.00, 0.05, 0.95, 0.00, false}); });
const Registrar<Workload> kF("ycsb-f", [] { return std::make_unique<YcsbWorkload>("ycsb-f", Mix{0.50, 0.00, 0.00, 0.00, 0.50, false}); });

}  // namespace

}  // namespace vmstore::bench
