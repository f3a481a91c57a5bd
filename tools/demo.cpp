// vmstore demo: loads about ten times more data than the buffer pool holds, reads every
// key back in random order, reopens and samples again, and shows that the pool stayed
// within its memory budget the whole time.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"

namespace vmstore::cli {

namespace {

constexpr uint64_t kDefaultDemoPool = 16ull << 20;  // about half a minute on 2 cores
constexpr uint64_t kReopenSample = 100000;
constexpr uint64_t kStatsEvery = 16384;  // rows between two budget samples
constexpr int kMaxReported = 5;          // wrong values printed in detail
// Readers at once: with a pool ten times smaller than the data nearly every lookup reads
// a page from storage, so several threads keep several reads in flight.
constexpr uint64_t kDefaultReaders = 16;

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
bool verify(const Tree& tree, uint64_t i, std::atomic<int>* reported) {
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
  if (!good && reported->fetch_add(1) < kMaxReported) {
    std::fflush(stdout);
    std::fprintf(stderr, "\nvmstore demo: WRONG: key %llu: %s\n",
                 static_cast<unsigned long long>(i),
                 !s.ok()               ? s.toString().c_str()
                 : vlen != kValueSize ? ("value length " + std::to_string(vlen)).c_str()
                                      : "value bytes differ");
  }
  return good;
}

// One reader's progress, alone on its cache line.
struct alignas(64) ReaderCounter {
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> wrong{0};
  double finished_at = 0;  // read after join
};

// Looks up key_of(j) for every j in [0, count), split into `threads` contiguous ranges of
// j, and verifies each value. Shows progress and samples the pool budget meanwhile.
// Returns the number of wrong answers; *seconds gets the time until the last reader ended.
uint64_t readAll(const Database& db, const Tree& tree, uint64_t count, uint64_t threads,
                 const std::function<uint64_t(uint64_t)>& key_of, const char* label,
                 BudgetWatch* budget, std::atomic<int>* reported, double* seconds) {
  threads = std::max<uint64_t>(1, std::min(threads, count));
  std::vector<ReaderCounter> counters(threads);
  std::vector<std::thread> readers;
  Progress progress(stdout, label, count);
  const double start = nowSeconds();
  for (uint64_t t = 0; t < threads; ++t) {
    readers.emplace_back([&, t] {
      ReaderCounter& c = counters[t];
      const uint64_t end = count * (t + 1) / threads;
      uint64_t done = 0;
      uint64_t wrong = 0;
      for (uint64_t j = count * t / threads; j < end; ++j) {
        if (!verify(tree, key_of(j), reported)) ++wrong;
        if ((++done & 255) == 0) {
          c.done.store(done, std::memory_order_relaxed);
          c.wrong.store(wrong, std::memory_order_relaxed);
        }
      }
      c.done.store(done, std::memory_order_relaxed);
      c.wrong.store(wrong, std::memory_order_relaxed);
      c.finished_at = nowSeconds();
    });
  }
  for (;;) {
    uint64_t done = 0;
    for (const ReaderCounter& c : counters) done += c.done.load(std::memory_order_relaxed);
    budget->sample(db);
    if (done >= count) break;
    progress.update(done);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::thread& r : readers) r.join();
  uint64_t wrong = 0;
  double last = start;
  for (const ReaderCounter& c : counters) {
    wrong += c.wrong.load(std::memory_order_relaxed);
    last = std::max(last, c.finished_at);
  }
  *seconds = last - start;
  progress.finish(*seconds);
  return wrong;
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
  Args args(argc, argv, 2, {{"dir", true}, {"pool", true}, {"data", true}, {"threads", true}});
  args.requirePositionals(0, 0);
  const std::string dir = args.str("dir", "vmstore-demo");
  if (dir.empty()) throw UsageError("--dir must not be empty");
  const uint64_t pool = args.size("pool", kDefaultDemoPool, 1ull << 20);
  const uint64_t rows = args.count("data", 10 * pool / (kKeySize + kValueSize), 1);
  const uint64_t data_bytes = rows * (kKeySize + kValueSize);
  const uint64_t readers = args.count("threads", kDefaultReaders, 1);
  if (readers > 1024) throw UsageError("--threads: at most 1024");

  prepareFreshDirectory(dir);
  std::printf("vmstore demo: %s rows (8-byte keys, 120-byte values: %s) through a %s pool "
              "in %s\n",
              withCommas(rows).c_str(), humanBytes(data_bytes).c_str(),
              humanBytes(pool).c_str(), dir.c_str());
  std::fflush(stdout);

  BudgetWatch budget;
  char key[kKeySize];
  char value[kValueSize];

  // 1. Load, in key order, by one thread: a bulk load, durable when it closes (no log).
  auto db = openDatabase(dir, pool, /*create=*/true, kExitFailure, Durability::kNone);
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

  // 2. Read every key back, in random order (a random permutation of all keys, split
  // among the readers).
  std::atomic<int> reported{0};
  const Permutation perm(rows, 0x5EED);
  double read_secs = 0;
  const uint64_t wrong = readAll(*db, *tree, rows, readers, [&](uint64_t j) { return perm(j); },
                                 "reading", &budget, &reported, &read_secs);
  const Stats first = db->stats();

  // 3. Close, reopen, check a random sample.
  std::printf("closing and reopening...\n");
  std::fflush(stdout);
  double t0 = nowSeconds();
  closeDatabase(db);
  const double close_secs = nowSeconds() - t0;
  db = openDatabase(dir, pool, /*create=*/false);
  tree = openTree(*db, "", /*create=*/false);
  const uint64_t sample = std::min(rows, kReopenSample);
  double sample_secs = 0;
  uint64_t wrong_after = readAll(
      *db, *tree, sample, readers,
      [&](uint64_t j) { return FastRandom(0xC0FFEE + j).below(rows); },
      "sampling", &budget, &reported, &sample_secs);
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
                        " s, random order, " + std::to_string(readers) + " threads, " +
                        withCommas(wrong) + " wrong)");
  row("after reopen:", withCommas(sample) + " random lookups (" + rate(sample, sample_secs) +
                           "/s), " + withCommas(wrong_after) + " wrong; close took " +
                           fixed(close_secs, 2) + " s");
  row("pages missed:", withCommas(first.misses) + " during load and read (hits " +
                           withCommas(first.hits) + ")");
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
