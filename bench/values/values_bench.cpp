// The measurements of `vmstore bench values`: see values_bench.hpp for the contract.
#include "values/values_bench.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "vmstore/vmstore.hpp"
#include "workloads/records.hpp"

namespace vmstore::bench::values {

namespace {

using Clock = std::chrono::steady_clock;
using records::encodeKey;
using records::kKeySize;
using records::Random;
using records::splitmix64;

constexpr int kTable = 0;

double secondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

uint64_t load64(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

uint64_t endStamp(uint64_t key, uint64_t version) {
  uint64_t state = key * 0xD1B54A32D192ED03ull + version;
  return splitmix64(state);
}

// One thread's value bytes: the same pseudo-random bytes for every value, stamped per
// put with the key and version (first 16 bytes) and a hash of both (last 8 bytes). A
// value of n bytes is the first n bytes of the buffer.
class ValueBuffer {
 public:
  explicit ValueBuffer(uint64_t capacity) : bytes_(capacity, '\0') {
    uint64_t state = 0x5EEDBA5Eull;
    for (size_t off = 0; off < bytes_.size(); off += 8) {
      const uint64_t w = splitmix64(state);
      std::memcpy(&bytes_[off], &w, std::min<size_t>(8, bytes_.size() - off));
    }
  }

  std::string_view stamp(uint64_t key, uint64_t version, uint64_t size) {
    std::memcpy(&bytes_[restoreAt_], &restoreWord_, 8);  // the last stamp's bytes back
    restoreAt_ = size - 8;
    restoreWord_ = load64(&bytes_[restoreAt_]);
    const uint64_t end = endStamp(key, version);
    std::memcpy(&bytes_[0], &key, 8);
    std::memcpy(&bytes_[8], &version, 8);
    std::memcpy(&bytes_[restoreAt_], &end, 8);
    return std::string_view(bytes_.data(), size);
  }

  // Empty when `value` is a value of `key` of `size` bytes, else what is wrong.
  std::string check(uint64_t key, std::string_view value, uint64_t size, Random& rng) const {
    if (value.size() != size) {
      return "a value of " + std::to_string(value.size()) + " bytes, expected " + std::to_string(size);
    }
    if (load64(value.data()) != key) return "the value of key " + std::to_string(load64(value.data()));
    if (load64(value.data() + size - 8) != endStamp(key, load64(value.data() + 8))) {
      return "its last bytes do not belong to its first (a torn or mixed value)";
    }
    const uint64_t off = 16 + 8 * rng.below((size - 24) / 8);  // clear of both stamps
    if (std::memcmp(value.data() + off, bytes_.data() + off, 8) != 0) {
      return "wrong bytes at offset " + std::to_string(off);
    }
    return "";
  }

 private:
  std::string bytes_;
  uint64_t restoreAt_ = 0;
  uint64_t restoreWord_ = 0;  // the bytes at restoreAt_ before the last stamp
};

std::string keyOf(uint64_t i) {
  std::string k(kKeySize, '\0');
  encodeKey(i, k.data());
  return k;
}

[[noreturn]] void wrongAnswer(const std::string& engine, uint64_t key, const std::string& what) {
  throw std::runtime_error("values on " + engine + ": key " + std::to_string(key) + ": " + what);
}

// Runs body(tid, session, stop) on `threads` threads, each with a session of its own made
// before the clock starts. With seconds > 0, stop is set that long after the start. Returns
// the seconds from the start until the last body returned; rethrows the first exception.
template <class Body>
double runThreads(Engine& engine, unsigned threads, double seconds, Body body) {
  std::atomic<bool> stop{false};
  std::atomic<bool> go{false};
  std::atomic<unsigned> ready{0};
  std::mutex mu;
  std::condition_variable cv;
  unsigned finished = 0;
  Clock::time_point last{};
  std::exception_ptr error;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::unique_ptr<Session> session;
      try {
        session = engine.session();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      try {
        if (session) body(t, *session, stop);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        stop.store(true);
      }
      session.reset();
      std::lock_guard<std::mutex> lock(mu);
      last = std::max(last, Clock::now());
      ++finished;
      cv.notify_all();
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const Clock::time_point start = Clock::now();
  go.store(true);
  {
    std::unique_lock<std::mutex> lock(mu);
    auto allDone = [&] { return finished == threads; };
    if (seconds > 0) {
      cv.wait_until(lock, start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)),
                    allDone);
    }
    stop.store(true);
    cv.wait(lock, allDone);
  }
  for (std::thread& w : workers) w.join();
  if (error) std::rethrow_exception(error);
  return secondsBetween(start, last);
}

void closeQuietly(Engine& engine) {
  try {
    engine.close();
  } catch (...) {
  }
}

std::unique_ptr<Engine> openEngine(const std::string& name, const std::string& dir, uint64_t pool, unsigned threads,
                                   uint64_t maxValueBytes) {
  std::unique_ptr<Engine> engine = makeEngine(name);
  EngineConfig config;
  config.dir = dir;
  config.poolBytes = pool;
  config.threads = threads;
  config.durability = Durability::kNone;
  config.maxValueBytes = maxValueBytes;
  engine->open(config, {"values"});
  return engine;
}

std::string num(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }  // engine names: no escapes

}  // namespace

ThroughputResult runThroughput(const ThroughputSpec& spec) {
  if (spec.valueBytes < kMinValueBytes || spec.valueBytes > kMaxValueSize) {
    throw std::invalid_argument("value size " + std::to_string(spec.valueBytes) + ": use " +
                                std::to_string(kMinValueBytes) + " bytes to 1 GiB");
  }
  if (spec.dataBytes == 0 || spec.threads == 0 || !(spec.seconds > 0)) {
    throw std::invalid_argument("values: data, threads and seconds must be more than 0");
  }
  const uint64_t size = spec.valueBytes;
  ThroughputResult r;
  r.keys = std::max<uint64_t>(1, spec.dataBytes / size);
  const uint64_t n = r.keys;
  const unsigned threads = static_cast<unsigned>(std::min<uint64_t>(spec.threads, n));
  std::unique_ptr<Engine> engine = openEngine(spec.engine, spec.dir, spec.poolBytes, threads, size);
  try {
    std::vector<std::unique_ptr<ValueBuffer>> buffers;
    for (unsigned t = 0; t < threads; ++t) buffers.push_back(std::make_unique<ValueBuffer>(size));

    // Load: each thread its own key range, ascending, version 0.
    r.load.seconds = runThreads(*engine, threads, 0, [&](unsigned t, Session& s, const std::atomic<bool>&) {
      for (uint64_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
        s.put(kTable, keyOf(i), buffers[t]->stamp(i, 0, size));
      }
    });
    r.load.ops = n;
    r.load.bytes = n * size;
    // What a user does after a bulk load: the engine's checkpoint, so the reads that follow
    // find a clean cache (not timed as part of the load; reported on its own).
    const Clock::time_point checkpointStart = Clock::now();
    engine->checkpoint();
    r.checkpointSeconds = secondsBetween(checkpointStart, Clock::now());

    // Gets of random keys.
    std::vector<Phase> gets(threads);
    r.get.seconds = runThreads(*engine, threads, spec.seconds, [&](unsigned t, Session& s, const std::atomic<bool>& stop) {
      Random rng(0x6E7000ull + t);
      std::string value;
      do {
        const uint64_t i = rng.below(n);
        if (!s.get(kTable, keyOf(i), &value)) wrongAnswer(spec.engine, i, "not found");
        std::string problem = buffers[t]->check(i, value, size, rng);
        if (!problem.empty()) wrongAnswer(spec.engine, i, problem);
        gets[t].ops++;
      } while (!stop.load(std::memory_order_relaxed));
    });

    // Overwrites of random keys, at most kPutRewrites x the data.
    std::atomic<uint64_t> written{0};
    const uint64_t cap = std::min(kPutRewrites * n * size, kPutBytesMax);
    std::vector<Phase> puts(threads);
    r.put.seconds = runThreads(*engine, threads, spec.seconds, [&](unsigned t, Session& s, const std::atomic<bool>& stop) {
      Random rng(0x907000ull + t);
      uint64_t version = (uint64_t{t} + 1) << 40;
      do {
        const uint64_t i = rng.below(n);
        s.put(kTable, keyOf(i), buffers[t]->stamp(i, ++version, size));
        puts[t].ops++;
      } while (!stop.load(std::memory_order_relaxed) && written.fetch_add(size) + size < cap);
    });
    for (unsigned t = 0; t < threads; ++t) {
      r.get.ops += gets[t].ops;
      r.put.ops += puts[t].ops;
    }
    r.get.bytes = r.get.ops * size;
    r.put.bytes = r.put.ops * size;
    r.stats = engine->stats();
  } catch (...) {
    closeQuietly(*engine);
    throw;
  }
  const Clock::time_point closeStart = Clock::now();
  engine->close();
  r.closeSeconds = secondsBetween(closeStart, Clock::now());
  return r;
}

std::string toJson(const ThroughputSpec& spec, const ThroughputResult& r) {
  std::ostringstream j;
  j << "{\"engine\":" << quoted(spec.engine) << ",\"value_size\":" << spec.valueBytes << ",\"keys\":" << r.keys
    << ",\"data\":" << r.keys * spec.valueBytes << ",\"pool\":" << spec.poolBytes << ",\"threads\":" << spec.threads
    << ",\"load_s\":" << num(r.load.seconds, 3) << ",\"load_mb_s\":" << num(r.load.mbPerSec(), 1)
    << ",\"checkpoint_s\":" << num(r.checkpointSeconds, 3)
    << ",\"get_ops\":" << r.get.ops << ",\"get_s\":" << num(r.get.seconds, 3)
    << ",\"get_ops_s\":" << num(r.get.opsPerSec(), 1) << ",\"get_mb_s\":" << num(r.get.mbPerSec(), 1)
    << ",\"put_ops\":" << r.put.ops << ",\"put_s\":" << num(r.put.seconds, 3)
    << ",\"put_ops_s\":" << num(r.put.opsPerSec(), 1) << ",\"put_mb_s\":" << num(r.put.mbPerSec(), 1)
    << ",\"close_s\":" << num(r.closeSeconds, 3) << ",\"page_misses\":" << r.stats.pageMisses
    << ",\"evictions\":" << r.stats.evictions << ",\"bytes_read\":" << r.stats.bytesRead
    << ",\"bytes_written\":" << r.stats.bytesWritten << "}";
  return j.str();
}

std::vector<uint64_t> churnSizes(const ChurnSpec& spec) {
  Random rng(spec.seed);
  const double lo = std::log2(static_cast<double>(spec.minValue));
  const double hi = std::log2(static_cast<double>(spec.maxValue));
  std::vector<uint64_t> sizes;
  uint64_t sum = 0;
  while (sum < spec.liveBytes) {
    const double bits = lo + (hi - lo) * rng.unit();
    const uint64_t s = std::clamp<uint64_t>(static_cast<uint64_t>(std::llround(std::exp2(bits))), spec.minValue,
                                            spec.maxValue);
    sizes.push_back(s);
    sum += s;
  }
  return sizes;
}

ChurnResult runChurn(const ChurnSpec& spec) {
  if (spec.minValue < kMinValueBytes || spec.minValue > spec.maxValue || spec.maxValue > kMaxValueSize) {
    throw std::invalid_argument("churn: value sizes must satisfy " + std::to_string(kMinValueBytes) +
                                " <= min <= max <= 1 GiB");
  }
  if (spec.rounds == 0 || spec.liveBytes == 0) throw std::invalid_argument("churn: rounds and live bytes must be more than 0");
  std::vector<uint64_t> sizes = churnSizes(spec);
  ChurnResult r;
  r.keys = sizes.size();
  for (uint64_t s : sizes) r.liveBytes += s;
  const Clock::time_point start = Clock::now();
  std::unique_ptr<Engine> engine = openEngine(spec.engine, spec.dir, spec.poolBytes, 1, spec.maxValue);
  try {
    std::unique_ptr<Session> session = engine->session();
    ValueBuffer buffer(spec.maxValue);
    Random rng(spec.seed ^ 0xC4D2ull);
    for (unsigned round = 0; round < spec.rounds; ++round) {
      for (size_t i = sizes.size() - 1; i > 0; --i) std::swap(sizes[i], sizes[rng.below(i + 1)]);
      for (uint64_t k = 0; k < sizes.size(); ++k) {
        session->put(kTable, keyOf(k), buffer.stamp(k, round, sizes[k]));
        r.writtenBytes += sizes[k];
      }
      engine->checkpoint();
      r.diskAfterRound.push_back(diskBytes(spec.dir));
      if (round > 0) r.worst = std::max(r.worst, r.diskAfterRound.back());
    }
    std::string value;
    for (uint64_t k = 0; k < sizes.size(); ++k) {
      if (!session->get(kTable, keyOf(k), &value)) wrongAnswer(spec.engine, k, "not found after the churn");
      std::string problem = buffer.check(k, value, sizes[k], rng);
      if (!problem.empty()) wrongAnswer(spec.engine, k, problem);
    }
    session.reset();
    engine->compact();
    engine->checkpoint();
    r.diskAfterCompact = diskBytes(spec.dir);
  } catch (...) {
    closeQuietly(*engine);
    throw;
  }
  engine->close();
  r.diskAfterClose = diskBytes(spec.dir);
  r.files = fileBytes(spec.dir);
  r.seconds = secondsBetween(start, Clock::now());
  return r;
}

std::string toJson(const ChurnSpec& spec, const ChurnResult& r) {
  std::ostringstream j;
  const double live = static_cast<double>(std::max<uint64_t>(1, r.liveBytes));
  j << "{\"engine\":" << quoted(spec.engine) << ",\"keys\":" << r.keys << ",\"live_bytes\":" << r.liveBytes
    << ",\"min_value\":" << spec.minValue << ",\"max_value\":" << spec.maxValue << ",\"rounds\":" << spec.rounds
    << ",\"pool\":" << spec.poolBytes << ",\"written_bytes\":" << r.writtenBytes << ",\"disk_after_rounds\":["
    ;
  for (size_t i = 0; i < r.diskAfterRound.size(); ++i) j << (i ? "," : "") << r.diskAfterRound[i];
  const uint64_t final = r.diskAfterRound.empty() ? 0 : r.diskAfterRound.back();
  j << "],\"disk_final\":" << final << ",\"ratio_final\":" << num(final / live, 3)
    << ",\"disk_worst\":" << r.worst << ",\"ratio_worst\":" << num(r.worst / live, 3)
    << ",\"disk_compacted\":" << r.diskAfterCompact << ",\"ratio_compacted\":" << num(r.diskAfterCompact / live, 3)
    << ",\"disk_closed\":" << r.diskAfterClose << ",\"ratio_closed\":" << num(r.diskAfterClose / live, 3)
    << ",\"seconds\":" << num(r.seconds, 3) << ",\"files\":{";
  bool first = true;
  for (const auto& [name, bytes] : r.files) {
    j << (first ? "" : ",") << quoted(name) << ":" << bytes;
    first = false;
  }
  j << "}}";
  return j.str();
}

namespace {

// ns per call of op, the median of kZeroCopyRounds rounds of `seconds` each (op is called
// in chunks of `chunk` between looks at the clock).
template <class Op>
double medianNs(double seconds, uint64_t chunk, Op&& op) {
  std::vector<double> ns;
  for (int round = 0; round < kZeroCopyRounds; ++round) {
    uint64_t calls = 0;
    const Clock::time_point start = Clock::now();
    double elapsed = 0;
    do {
      for (uint64_t i = 0; i < chunk; ++i) op();
      calls += chunk;
      elapsed = secondsBetween(start, Clock::now());
    } while (elapsed < seconds);
    ns.push_back(elapsed * 1e9 / static_cast<double>(calls));
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

void checkOk(const Status& s, const char* what) {
  if (!s.ok()) throw std::runtime_error(std::string("zero-copy: ") + what + ": " + s.toString());
}

}  // namespace

ZeroCopyResult runZeroCopy(const ZeroCopySpec& spec) {
  if (spec.valueBytes < kMinValueBytes || spec.valueBytes > kMaxValueSize ||
      2 * (spec.valueBytes + 4096) > spec.poolBytes) {
    throw std::invalid_argument("zero-copy: the value must be 64 bytes to 1 GiB and at most half the pool");
  }
  Options options;
  options.pool_size = spec.poolBytes;
  options.durability = Durability::kNone;
  std::unique_ptr<Database> db;
  checkOk(Database::open(spec.dir, options, &db), "open");
  Tree* tree = nullptr;
  checkOk(db->openTree("values", true, &tree), "openTree");
  // 1,000 8-byte values under even keys, the large value under an odd key among them.
  constexpr uint64_t kSmall = 1000;
  for (uint64_t i = 0; i < kSmall; ++i) {
    checkOk(tree->put(keyOf(2 * i), std::string_view(reinterpret_cast<const char*>(&i), 8)), "put");
  }
  const std::string large = keyOf(kSmall + 1);
  const std::string small = keyOf(kSmall);
  {
    ValueBuffer buffer(spec.valueBytes);
    checkOk(tree->put(large, buffer.stamp(kSmall + 1, 0, spec.valueBytes)), "put");
  }
  ZeroCopyResult r;
  volatile uint64_t sink = 0;
  ValueView view;
  auto viewOf = [&](const std::string& key) {
    checkOk(tree->getView(key, &view), "getView");
    sink = sink + load64(reinterpret_cast<const char*>(view.data()));
    view.release();
  };
  auto optimisticOf = [&](const std::string& key) {
    uint64_t first = 0;
    checkOk(tree->readOptimistic(key,
                                 [&](std::string_view v) {
                                   first = v.size() >= 8 ? load64(v.data()) : 0;
                                 }),
            "readOptimistic");
    sink = sink + first;
  };
  std::string copy;
  auto getOf = [&](const std::string& key) {
    checkOk(tree->get(key, &copy), "get");
    sink = sink + static_cast<unsigned char>(copy[0]);
  };
  viewOf(large);  // resident already (just written); this warms the path
  r.viewLargeNs = medianNs(spec.seconds, 1024, [&] { viewOf(large); });
  r.getSmallNs = medianNs(spec.seconds, 1024, [&] { getOf(small); });
  r.viewSmallNs = medianNs(spec.seconds, 1024, [&] { viewOf(small); });
  r.optLargeNs = medianNs(spec.seconds, 1024, [&] { optimisticOf(large); });
  r.optSmallNs = medianNs(spec.seconds, 1024, [&] { optimisticOf(small); });
  r.getLargeNs = medianNs(spec.seconds, 1, [&] { getOf(large); });
  if (copy.size() != spec.valueBytes || load64(copy.data()) != kSmall + 1) {
    throw std::runtime_error("zero-copy: the large value read back wrong");
  }
  checkOk(db->close(), "close");
  return r;
}

std::string toJson(const ZeroCopySpec& spec, const ZeroCopyResult& r) {
  std::ostringstream j;
  j << "{\"engine\":\"vmstore\",\"value_size\":" << spec.valueBytes << ",\"pool\":" << spec.poolBytes
    << ",\"view_large_ns\":" << num(r.viewLargeNs, 1) << ",\"get_small_ns\":" << num(r.getSmallNs, 1)
    << ",\"view_small_ns\":" << num(r.viewSmallNs, 1) << ",\"get_large_ns\":" << num(r.getLargeNs, 0)
    << ",\"optimistic_large_ns\":" << num(r.optLargeNs, 1) << ",\"optimistic_small_ns\":" << num(r.optSmallNs, 1)
    << ",\"optimistic_large_over_get_small\":" << num(r.optLargeNs / std::max(r.getSmallNs, 1e-9), 3)
    << ",\"view_large_over_get_small\":" << num(r.viewLargeNs / std::max(r.getSmallNs, 1e-9), 3) << "}";
  return j.str();
}

std::map<std::string, uint64_t> fileBytes(const std::string& dir) {
  std::map<std::string, uint64_t> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      files[std::filesystem::relative(it->path(), dir, ec).string()] = static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  return files;
}

uint64_t diskBytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& [name, bytes] : fileBytes(dir)) total += bytes;
  return total;
}

}  // namespace vmstore::bench::values
