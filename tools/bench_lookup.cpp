// vmstore bench lookup: the random point-lookup benchmark of the vmcache paper
// (Leis et al., SIGMOD 2023). Loads N tuples of 8-byte big-endian keys and 120-byte
// values, then T threads look up uniformly random keys for S seconds. stdout gets one
// CSV row per second and a JSON summary as its last line; progress goes to stderr.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"

namespace vmstore::cli {

namespace {

constexpr uint64_t kDefaultRows = 10'000'000;
constexpr uint64_t kDefaultPool = 4ull << 30;
constexpr uint64_t kDefaultSeconds = 10;
constexpr uint64_t kDefaultThreads = 2;
constexpr uint64_t kVerifyEvery = 1024;  // lookups between two full value comparisons

// One worker's progress, alone on its cache line; read by the reporting thread.
struct alignas(64) WorkerCounter {
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> wrong{0};
  double finished_at = 0;  // nowSeconds() when a load worker ended; read after join
};

// The first error any worker saw, for the final message.
class FirstError {
 public:
  void set(std::string message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (message_.empty()) message_ = std::move(message);
  }
  std::string get() {
    std::lock_guard<std::mutex> lock(mu_);
    return message_;
  }

 private:
  std::mutex mu_;
  std::string message_;
};

// Sum of the "TLB:" row of /proc/interrupts (TLB shootdowns on all CPUs); 0 if unreadable.
uint64_t tlbShootdowns() {
  std::ifstream in("/proc/interrupts");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string first;
    if (!(fields >> first) || first != "TLB:") continue;
    uint64_t sum = 0;
    std::string tok;
    while (fields >> tok && !tok.empty() &&
           std::all_of(tok.begin(), tok.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      sum += std::strtoull(tok.c_str(), nullptr, 10);
    }
    return sum;
  }
  return 0;
}

// Removes the temporary database directory the benchmark made, however it ends.
struct TempDir {
  std::string path;
  ~TempDir() {
    if (path.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// On Ctrl-C or SIGTERM, removes the temporary database (it can be gigabytes) with
// async-signal-safe calls only, then exits 130.
constexpr int kMaxCleanupPaths = 16;
char g_cleanup_paths[kMaxCleanupPaths][4096];
int g_cleanup_count = 0;  // files first, the directory last

extern "C" void removeTempDirAndExit(int) {
  for (int i = 0; i < g_cleanup_count; ++i) {
    if (i + 1 < g_cleanup_count) {
      unlink(g_cleanup_paths[i]);
    } else {
      rmdir(g_cleanup_paths[i]);
    }
  }
  _exit(130);
}

void removeOnSignal(const std::string& dir) {
  std::vector<std::string> paths;
  for (const std::string& name : databaseFileNames()) paths.push_back(dir + "/" + name);
  paths.push_back(dir);
  if (paths.size() > kMaxCleanupPaths) return;
  for (const std::string& p : paths) {
    if (p.size() >= sizeof g_cleanup_paths[0]) return;
  }
  for (const std::string& p : paths) {
    std::memcpy(g_cleanup_paths[g_cleanup_count++], p.c_str(), p.size() + 1);
  }
  struct sigaction sa {};
  sa.sa_handler = removeTempDirAndExit;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void loadRange(Tree* tree, uint64_t begin, uint64_t end, WorkerCounter* counter,
               FirstError* error) {
  char key[kKeySize];
  char value[kValueSize];
  for (uint64_t i = begin; i < end; ++i) {
    encodeKey(i, key);
    makeValue(i, value);
    Status s = tree->put(std::string_view(key, kKeySize), std::string_view(value, kValueSize));
    if (!s.ok()) {
      error->set("put of key " + std::to_string(i) + ": " + s.toString());
      counter->wrong.fetch_add(1, std::memory_order_relaxed);
      counter->finished_at = nowSeconds();
      return;
    }
    if ((i & 255) == 0) counter->done.store(i + 1 - begin, std::memory_order_relaxed);
  }
  counter->done.store(end - begin, std::memory_order_relaxed);
  counter->finished_at = nowSeconds();
}

void lookupLoop(const Tree* tree, uint64_t rows, uint64_t seed, const std::atomic<bool>* stop,
                WorkerCounter* counter, FirstError* error) {
  FastRandom rng(seed);
  char key[kKeySize];
  char expected[kValueSize];
  std::byte value[kValueSize + 8];
  const std::span<std::byte> buf(value);
  uint64_t done = 0;
  uint64_t wrong = 0;
  while (!stop->load(std::memory_order_relaxed)) {
    for (int batch = 0; batch < 64; ++batch) {
      const uint64_t i = rng.below(rows);
      encodeKey(i, key);
      size_t vlen = 0;
      Status s = tree->get(std::string_view(key, kKeySize), buf, &vlen);
      if (!s.ok() || vlen != kValueSize) [[unlikely]] {
        if (wrong++ == 0) {
          error->set("lookup of key " + std::to_string(i) + ": " +
                     (s.ok() ? "value length " + std::to_string(vlen) : s.toString()));
        }
      } else if (done % kVerifyEvery == 0) {
        makeValue(i, expected);
        if (std::memcmp(value, expected, kValueSize) != 0 && wrong++ == 0) {
          error->set("lookup of key " + std::to_string(i) + ": wrong value bytes");
        }
      }
      ++done;
    }
    counter->done.store(done, std::memory_order_relaxed);
    counter->wrong.store(wrong, std::memory_order_relaxed);
  }
  counter->done.store(done, std::memory_order_relaxed);
  counter->wrong.store(wrong, std::memory_order_relaxed);
}

uint64_t sumDone(const std::vector<WorkerCounter>& counters) {
  uint64_t n = 0;
  for (const WorkerCounter& c : counters) n += c.done.load(std::memory_order_relaxed);
  return n;
}

uint64_t sumWrong(const std::vector<WorkerCounter>& counters) {
  uint64_t n = 0;
  for (const WorkerCounter& c : counters) n += c.wrong.load(std::memory_order_relaxed);
  return n;
}

// Writes a CSV line to stdout and, when open, to the --csv file.
void emit(FILE* csv, const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
  if (csv != nullptr) std::fputs(line.c_str(), csv);
}

double mib(uint64_t pages) {
  return static_cast<double>(pages * kPageSize) / (1024.0 * 1024.0);
}

}  // namespace

int cmdBench(int argc, char** argv) {
  if (argc < 3 || argv[2][0] == '-') throw UsageError("missing benchmark name (available: lookup)");
  if (std::strcmp(argv[2], "lookup") != 0) {
    throw UsageError(std::string("unknown benchmark '") + argv[2] + "' (available: lookup)");
  }
  Args args(argc, argv, 3,
            {{"threads", true},
             {"data", true},
             {"pool", true},
             {"seconds", true},
             {"dir", true},
             {"csv", true}});
  args.requirePositionals(0, 0);
  const uint64_t threads = args.count("threads", kDefaultThreads, 1);
  if (threads > 4096) throw UsageError("--threads: at most 4096");
  const uint64_t rows = args.count("data", kDefaultRows, 1);
  const uint64_t pool = args.size("pool", kDefaultPool, 1ull << 20);
  const uint64_t seconds = args.count("seconds", kDefaultSeconds, 1);
  const std::string csv_path = args.str("csv", "");
  if (args.has("csv") && csv_path.empty()) throw UsageError("--csv needs a file name");

  TempDir temp;
  std::string dir = args.str("dir", "");
  if (args.has("dir") && dir.empty()) throw UsageError("--dir must not be empty");
  if (dir.empty()) {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string tmpl = (base / "vmstore-bench-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      throw Failure(kExitFailure, "cannot create a temporary directory in " + base.string());
    }
    dir = temp.path = tmpl;
    removeOnSignal(dir);
  } else {
    prepareFreshDirectory(dir);
  }

  std::unique_ptr<FILE, int (*)(FILE*)> csv(nullptr, &std::fclose);
  if (!csv_path.empty()) {
    csv.reset(std::fopen(csv_path.c_str(), "w"));
    if (!csv) throw Failure(kExitFailure, "cannot write " + csv_path + ": " + std::strerror(errno));
  }

  std::fprintf(stderr,
               "vmstore bench lookup: %s rows (8-byte keys, 120-byte values), threads %llu, "
               "pool %s, %llu s, in %s\n",
               withCommas(rows).c_str(), static_cast<unsigned long long>(threads),
               humanBytes(pool).c_str(), static_cast<unsigned long long>(seconds), dir.c_str());

  auto db = openDatabase(dir, pool, /*create=*/true);
  Tree* tree = openTree(*db, "", /*create=*/true);
  FirstError error;

  // Load: every thread (at least one per core) inserts its own range of keys in order.
  const uint64_t load_threads = std::min<uint64_t>(
      rows, std::max<uint64_t>(threads, std::max(1u, std::thread::hardware_concurrency())));
  double load_secs = 0;
  {
    std::vector<WorkerCounter> counters(load_threads);
    std::vector<std::thread> workers;
    Progress progress(stderr, "loading", rows);
    const double load_start = nowSeconds();
    for (uint64_t t = 0; t < load_threads; ++t) {
      workers.emplace_back(loadRange, tree, rows * t / load_threads,
                           rows * (t + 1) / load_threads, &counters[t], &error);
    }
    bool running = true;
    while (running) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      uint64_t done = sumDone(counters);
      running = done < rows && sumWrong(counters) == 0;
      progress.update(done);
    }
    for (std::thread& w : workers) w.join();
    if (sumWrong(counters) != 0) throw Failure(kExitFailure, "load failed: " + error.get());
    double last = 0;
    for (const WorkerCounter& c : counters) last = std::max(last, c.finished_at);
    load_secs = last - load_start;
    progress.finish(load_secs);
  }

  // Lookups: T threads for S seconds; this thread reports once per second.
  std::vector<WorkerCounter> counters(threads);
  std::vector<std::thread> workers;
  std::atomic<bool> stop{false};
  emit(csv.get(),
       "second,tx,read_mb_s,written_mb_s,misses,evictions,tlb_shootdowns,engine,workload,"
       "threads\n");
  Stats prev = db->stats();
  uint64_t prev_tlb = tlbShootdowns();
  uint64_t prev_done = 0;
  uint64_t total_tx = 0;
  const auto start = std::chrono::steady_clock::now();
  auto prev_time = start;
  for (uint64_t t = 0; t < threads; ++t) {
    workers.emplace_back(lookupLoop, tree, rows, 0xB0BA0000ull + t, &stop, &counters[t],
                         &error);
  }
  for (uint64_t sec = 1; sec <= seconds; ++sec) {
    std::this_thread::sleep_until(start + std::chrono::seconds(sec));
    const auto now = std::chrono::steady_clock::now();
    const uint64_t done = sumDone(counters);
    const Stats st = db->stats();
    const uint64_t tlb = tlbShootdowns();
    const double dt = std::chrono::duration<double>(now - prev_time).count();
    const uint64_t tx = done - prev_done;
    total_tx += tx;
    char line[256];
    std::snprintf(line, sizeof line, "%llu,%llu,%.1f,%.1f,%llu,%llu,%llu,vmstore,lookup,%llu\n",
                  static_cast<unsigned long long>(sec), static_cast<unsigned long long>(tx),
                  mib(st.misses - prev.misses) / dt, mib(st.pages_written - prev.pages_written) / dt,
                  static_cast<unsigned long long>(st.misses - prev.misses),
                  static_cast<unsigned long long>(st.evictions - prev.evictions),
                  static_cast<unsigned long long>(tlb >= prev_tlb ? tlb - prev_tlb : 0),
                  static_cast<unsigned long long>(threads));
    emit(csv.get(), line);
    prev = st;
    prev_tlb = tlb;
    prev_done = done;
    prev_time = now;
  }
  stop.store(true);
  for (std::thread& w : workers) w.join();
  const uint64_t wrong = sumWrong(counters);

  if (csv && std::fclose(csv.release()) != 0) {
    throw Failure(kExitFailure, "cannot write " + csv_path);
  }
  std::printf("{\"engine\":\"vmstore\",\"workload\":\"lookup\",\"threads\":%llu,\"data\":%llu,"
              "\"pool\":%llu,\"tx_per_s\":%.1f,\"load_s\":%.3f}\n",
              static_cast<unsigned long long>(threads), static_cast<unsigned long long>(rows),
              static_cast<unsigned long long>(pool),
              static_cast<double>(total_tx) / static_cast<double>(seconds), load_secs);
  std::fflush(stdout);

  // Closing writes every dirty page (the whole data set after the load); not measured.
  const Stats before_close = db->stats();
  std::fprintf(stderr, "closing (writes back the dirty ones of %s resident pages)...\n",
               withCommas(before_close.resident_pages).c_str());
  const double close_start = nowSeconds();
  closeDatabase(db);
  std::fprintf(stderr, "closed in %.1f s\n", nowSeconds() - close_start);
  if (wrong != 0) {
    throw Failure(kExitFailure, withCommas(wrong) + " lookups gave a wrong answer; first: " +
                                    error.get());
  }
  return kExitOk;
}

}  // namespace vmstore::cli
