// vmstore demo: loads about ten times more data than the buffer pool holds, reads every
// key back in random order, reopens and samples again, and shows that the pool stayed
// within its memory budget the whole time.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>

#include "cli.hpp"

namespace vmstore::cli {

namespace {

constexpr uint64_t kDefaultDemoPool = 64ull << 20;
constexpr uint64_t kReopenSample = 100000;
constexpr uint64_t kStatsEvery = 16384;  // rows between two budget samples
constexpr int kMaxReported = 5;          // wrong values printed in detail

// Tracks the largest resident page count seen, to show the budget held.
struct BudgetWatch {
  uint64_t max_resident = 0;
  uint64_t pool_pages = 0;
  void sample(const Database& db) {
    Stats st = db.stats();
    max_resident = std::max(max_resident, st.resident_pages);
    pool_pages = st.pool_pages;
  }
  bool held() const { return max_resident <= pool_pages; }
};

// Looks up key i and compares its value with makeValue(i). True when right.
bool verify(const Tree& tree, uint64_t i, int* reported) {
  char key[kKeySize];
  char expected[kValueSize];
  std::byte buf[kValueSize + 8];
  encodeKey(i, key);
  size_t vlen = 0;
  Status s = tree.get(std::string_view(key, kKeySize), std::span<std::byte>(buf), &vlen);
  bool good = s.ok() && vlen == kValueSize;
  if (good) {
    makeValue(i, expected);
    good = std::memcmp(buf, expected, kValueSize) == 0;
  }
  if (!good && (*reported)++ < kMaxReported) {
    std::fflush(stdout);
    std::fprintf(stderr, "\nvmstore demo: WRONG: key %llu: %s\n",
                 static_cast<unsigned long long>(i),
                 !s.ok()               ? s.toString().c_str()
                 : vlen != kValueSize ? ("value length " + std::to_string(vlen)).c_str()
                                      : "value bytes differ");
  }
  return good;
}

void row(const char* name, const std::string& value) {
  std::printf("  %-16s%s\n", name, value.c_str());
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string rate(uint64_t n, double secs) {
  return withCommas(static_cast<uint64_t>(secs > 0 ? static_cast<double>(n) / secs : 0));
}

}  // namespace

int cmdDemo(int argc, char** argv) {
  Args args(argc, argv, 2, {{"dir", true}, {"pool", true}, {"data", true}});
  args.requirePositionals(0, 0);
  const std::string dir = args.str("dir", "vmstore-demo");
  if (dir.empty()) throw UsageError("--dir must not be empty");
  const uint64_t pool = args.size("pool", kDefaultDemoPool, 1ull << 20);
  const uint64_t rows = args.count("data", 10 * pool / (kKeySize + kValueSize), 1);
  const uint64_t data_bytes = rows * (kKeySize + kValueSize);

  prepareFreshDirectory(dir);
  std::printf("vmstore demo: %s rows (8-byte keys, 120-byte values: %s) through a %s pool "
              "in %s\n",
              withCommas(rows).c_str(), humanBytes(data_bytes).c_str(),
              humanBytes(pool).c_str(), dir.c_str());
  std::fflush(stdout);

  BudgetWatch budget;
  char key[kKeySize];
  char value[kValueSize];

  // 1. Load, in key order.
  auto db = openDatabase(dir, pool, /*create=*/true);
  Tree* tree = openTree(*db, "", /*create=*/true);
  Progress load(stdout, "loading", rows);
  for (uint64_t i = 0; i < rows; ++i) {
    encodeKey(i, key);
    makeValue(i, value);
    Status s = tree->put(std::string_view(key, kKeySize), std::string_view(value, kValueSize));
    if (!s.ok()) {
      std::printf("\n");
      check(s, "put of key " + std::to_string(i));
    }
    if (i % kStatsEvery == 0) {
      load.update(i);
      budget.sample(*db);
    }
  }
  load.finish();
  const double load_secs = load.elapsedSeconds();
  budget.sample(*db);

  // 2. Read every key back, in random order.
  int reported = 0;
  uint64_t wrong = 0;
  Permutation perm(rows, 0x5EED);
  Progress read(stdout, "reading", rows);
  for (uint64_t j = 0; j < rows; ++j) {
    if (!verify(*tree, perm(j), &reported)) ++wrong;
    if (j % kStatsEvery == 0) {
      read.update(j);
      budget.sample(*db);
    }
  }
  read.finish();
  const double read_secs = read.elapsedSeconds();
  budget.sample(*db);
  const Stats first = db->stats();

  // 3. Close, reopen, sample.
  std::printf("closing and reopening...\n");
  std::fflush(stdout);
  double t0 = nowSeconds();
  closeDatabase(db);
  const double close_secs = nowSeconds() - t0;
  db = openDatabase(dir, pool, /*create=*/false);
  tree = openTree(*db, "", /*create=*/false);
  const uint64_t sample = std::min(rows, kReopenSample);
  uint64_t wrong_after = 0;
  FastRandom rng(0xC0FFEE);
  for (uint64_t j = 0; j < sample; ++j) {
    if (!verify(*tree, rng.below(rows), &reported)) ++wrong_after;
  }
  encodeKey(rows, key);  // one past the last key: must be absent
  std::string ignored;
  Status absent = tree->get(std::string_view(key, kKeySize), &ignored);
  if (!absent.isNotFound()) {
    ++wrong_after;
    std::fprintf(stderr, "vmstore demo: WRONG: key %llu was never stored but get gave %s\n",
                 static_cast<unsigned long long>(rows),
                 absent.ok() ? "a value" : absent.toString().c_str());
  }
  budget.sample(*db);
  const Stats second = db->stats();
  closeDatabase(db);

  // 4. Summary.
  const bool ok = wrong == 0 && wrong_after == 0 && budget.held();
  std::printf("\nsummary\n");
  row("rows:", withCommas(rows) + " (" + humanBytes(data_bytes) + " of keys and values, " +
                   fixed(static_cast<double>(data_bytes) / static_cast<double>(pool), 1) +
                   "x the pool)");
  row("load rate:", rate(rows, load_secs) + " rows/s (" + fixed(load_secs, 2) + " s)");
  row("read rate:", rate(rows, read_secs) + " lookups/s (" + fixed(read_secs, 2) +
                        " s, random order, " + withCommas(wrong) + " wrong)");
  row("after reopen:", withCommas(sample) + " random lookups, " + withCommas(wrong_after) +
                           " wrong (close took " + fixed(close_secs, 2) + " s)");
  row("pages missed:", withCommas(first.misses) + " (hits " + withCommas(first.hits) + ")");
  row("pages evicted:", withCommas(first.evictions));
  row("pages written:", withCommas(first.pages_written) + " before close");
  row("resident pages:",
      withCommas(first.resident_pages) + " of " + withCommas(first.pool_pages) +
          " pool pages; at most " + withCommas(budget.max_resident) + " seen: " +
          (budget.held() ? "budget held" : "BUDGET EXCEEDED"));
  row("file size:", humanBytes(second.file_bytes) + " (" + withCommas(second.file_bytes) +
                        " bytes, " + withCommas(second.page_count) + " pages)");
  row("result:", ok ? "OK, every value read back was right" : "FAILED");
  if (ok) {
    std::printf("\nThe database is left in %s: try 'vmstore stats %s' or 'vmstore check %s'.\n",
                dir.c_str(), dir.c_str(), dir.c_str());
  }
  return ok ? kExitOk : kExitFailure;
}

}  // namespace vmstore::cli
