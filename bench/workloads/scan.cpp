// The `scan` workload: long range scans over the record shape of `lookup` (8-byte keys,
// 120-byte values), --data records (default 10,000,000) loaded as `lookup` loads them.
// Each operation scans --scan-length entries (default 10,000) ascending from a uniformly
// random key (fewer at the end of the table); every entry is checked (its key follows
// the one before, its value carries its key's tag). One transaction is one entry read,
// so tx/s is entries per second. It shows what read-ahead (config read_ahead) gives a
// scan out of memory: compare --vmstore-config=read_ahead=0.
#include <memory>
#include <string>

#include "records.hpp"
#include "workload.hpp"

namespace vmstore::bench {

namespace {

using namespace records;

constexpr int kTable = 0;  // RecordsWorkload's one table
constexpr unsigned kDefaultScanLength = 10'000;

class ScanWorkload : public RecordsWorkload {
 public:
  ScanWorkload() : RecordsWorkload(/*exactValues=*/true) {}
  std::vector<std::string> tables() const override { return {"scan"}; }
  uint64_t defaultData() const override { return 10'000'000; }


  void run(Session& session, unsigned tid, const RunOptions& opts,
           const std::atomic<bool>& stop, ThreadCounter& counter) override {
    const uint64_t n = opts.data;
    const uint64_t length = opts.scanLength > 0 ? opts.scanLength : kDefaultScanLength;
    Random rng(0x5CA40000ull + tid);
    char key[kKeySize];
    uint64_t done = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const uint64_t first = rng.below(n);
      encodeKey(first, key);
      uint64_t expect = first;
      session.scan(kTable, std::string_view(key, kKeySize), [&](std::string_view k, std::string_view v) {
        if (decodeKey(k) != expect || k.size() != kKeySize) wrongAnswer("scan", expect, "missing or out of order");
        if (!valueMatchesKey(expect, v)) wrongAnswer("scan", expect, "wrong value");
        ++expect;
        if (++done % 1024 == 0) counter.tx.store(done, std::memory_order_relaxed);
        return expect - first < length;
      });
      if (expect - first < length && expect != n) wrongAnswer("scan", expect, "scan ended early");
      counter.tx.store(done, std::memory_order_relaxed);
    }
  }
};

const Registrar<Workload> kRegister("scan", [] { return std::make_unique<ScanWorkload>(); });

}  // namespace

}  // namespace vmstore::bench
