// End-to-end tests of values larger than a page (issue 8): variable-size pages through
// the public API. A model test with values from 0 bytes to 64 MiB across reopens and
// eviction; a churn of mixed sizes whose file stays under 1.5x the live data; resident
// memory within the pool while large values are read in turn; readers checking whole
// values while writers replace and delete them; a crash right after acknowledged large
// writes (logged, and too large for the log).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "os/memory.hpp"
#include "test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::Database;
using vmstore::Tree;

// A value of n bytes that names itself: every 8-byte word is a hash of (seed, index),
// so a torn, stale or misplaced value is detected anywhere in it.
std::string makeValue(uint64_t seed, size_t n) {
  std::string v(n, '\0');
  size_t words = n / 8;
  auto* w = reinterpret_cast<uint64_t*>(v.data());
  for (size_t i = 0; i < words; i++) {
    uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xBF58476D1CE4E5B9ull);
    std::memcpy(w + i, &x, 8);
  }
  for (size_t i = words * 8; i < n; i++) v[i] = static_cast<char>(seed + i);
  return v;
}

// Whether v is makeValue(seed, v.size()), checked in place (no allocation).
bool isValue(std::string_view v, uint64_t seed) {
  size_t words = v.size() / 8;
  for (size_t i = 0; i < words; i++) {
    uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xBF58476D1CE4E5B9ull);
    if (std::memcmp(v.data() + i * 8, &x, 8) != 0) return false;
  }
  for (size_t i = words * 8; i < v.size(); i++) {
    if (v[i] != static_cast<char>(seed + i)) return false;
  }
  return true;
}

// AddressSanitizer keeps freed memory in quarantine and never gives back the shadow of
// pool pages once touched: a process's RSS says nothing about the pool there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssMeaningful = false;
#else
constexpr bool kRssMeaningful = true;
#endif

uint64_t fileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  return f ? static_cast<uint64_t>(f.tellg()) : 0;
}

TEST(LargeValues, ModelFromZeroBytesTo64MiBAcrossReopenAndEviction) {
  const size_t maxLen = scaled<size_t>(64 << 20, 8 << 20);
  // A value may take half the pool: just over twice the largest.
  const std::string config = scaled<std::string>("pool_size=136M", "pool_size=20M");
  const size_t sizes[] = {0, 1, 100, 1536, 4000, 4056, 4057, 9000, 65536, 300000, 1 << 20, 4 << 20, maxLen};
  std::string dir = freshDir();
  auto db = openDb(dir, config);
  ASSERT_TRUE(db);
  Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  Rng rng(8);
  std::map<std::string, std::pair<uint64_t, size_t>> model;  // key -> (seed, length)
  uint64_t nextSeed = 1;
  auto check = [&](const std::string& k) {
    std::string got;
    auto it = model.find(k);
    Status s = t->get(k, &got);
    if (it == model.end()) {
      EXPECT_TRUE(s.isNotFound()) << k;
      return;
    }
    VMS_ASSERT_OK(s);
    ASSERT_EQ(got.size(), it->second.second) << k;
    EXPECT_TRUE(got == makeValue(it->second.first, it->second.second)) << k << " of " << got.size();
  };
  size_t largest = 0;
  uint64_t evictions = 0;
  // Three of the largest from the start: the live data outgrows the pool.
  for (int i = 0; i < 3; i++) {
    std::string k = "ballast" + std::to_string(i);
    VMS_ASSERT_OK(t->put(k, makeValue(nextSeed, maxLen)));
    model[k] = {nextSeed++, maxLen};
  }
  for (int op = 0; op < scaled(160, 80); op++) {
    std::string k = "key" + std::to_string(rng.uniform(0, 11));
    uint64_t r = rng.uniform(0, 99);
    if (r < 55) {
      // The largest size a few times only: each is a 64 MiB copy, write and read.
      size_t n = sizes[rng.uniform(0, std::size(sizes) - 1)];
      if (n == maxLen && largest++ >= 4) n = 1 << 20;
      uint64_t seed = nextSeed++;
      VMS_ASSERT_OK(t->put(k, makeValue(seed, n)));
      model[k] = {seed, n};
    } else if (r < 70) {
      Status s = t->del(k);
      EXPECT_EQ(s.isNotFound(), model.erase(k) == 0) << s.toString();
    } else {
      check(k);
    }
    if (op % 40 == 39) {
      evictions += db->stats().evictions;
      VMS_ASSERT_OK(db->close());
      db = openDb(dir, config);
      ASSERT_TRUE(db);
      VMS_ASSERT_OK(db->openTree("", false, &t));
    }
  }
  // Every key, point reads and a scan, then the structure check.
  for (int i = 0; i < 12; i++) check("key" + std::to_string(i));
  for (int i = 0; i < 3; i++) check("ballast" + std::to_string(i));
  KV all = scanForward(t);
  ASSERT_EQ(all.size(), model.size());
  for (auto& [k, v] : all) EXPECT_TRUE(v == makeValue(model[k].first, model[k].second)) << k;
  evictions += db->stats().evictions;
  EXPECT_GT(evictions, 0u) << "the values outgrew the pool";
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

// Gets of values read from storage (several pieces of os/chunked_read.hpp, copied on as
// they arrive): whole into a string of any prior size, or the start into a buffer too
// small, nothing past its end, and the length of the whole.
TEST(LargeValues, GetsOfValuesReadFromStorageCopyThemWholeOrTheirStart) {
  const std::string config = "pool_size=32M,durability=none";
  const size_t big = (5 << 20) + 123;
  const size_t mid = 3 << 20;
  std::string dir = freshDir();
  auto db = openDb(dir, config);
  ASSERT_TRUE(db);
  Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  VMS_ASSERT_OK(t->put("big", makeValue(11, big)));
  VMS_ASSERT_OK(t->put("mid", makeValue(12, mid)));
  auto reopen = [&] {
    VMS_ASSERT_OK(db->close());
    db = openDb(dir, config);
    ASSERT_TRUE(db);
    VMS_ASSERT_OK(db->openTree("", false, &t));
  };
  reopen();
  std::string got(7 << 20, 'x');  // longer than the value: replaced, not overlaid
  VMS_ASSERT_OK(t->get("big", &got));
  ASSERT_EQ(got.size(), big);
  EXPECT_TRUE(isValue(got, 11));
  std::string small;
  VMS_ASSERT_OK(t->get("mid", &small));
  ASSERT_EQ(small.size(), mid);
  EXPECT_TRUE(isValue(small, 12));

  reopen();
  const size_t cap = (1 << 20) + 5;
  std::vector<std::byte> buf(cap + 64, std::byte{0x5A});
  size_t vlen = 0;
  VMS_ASSERT_OK(t->get("big", std::span<std::byte>(buf.data(), cap), &vlen));
  EXPECT_EQ(vlen, big);
  const std::string want = makeValue(11, big);
  EXPECT_EQ(std::memcmp(buf.data(), want.data(), cap), 0) << "the value's first cap bytes";
  bool untouched = true;
  for (size_t i = cap; i < buf.size(); i++) untouched &= buf[i] == std::byte{0x5A};
  EXPECT_TRUE(untouched) << "nothing past the buffer";
  // Read in by the get above: now resident, the same answer.
  std::fill(buf.begin(), buf.end(), std::byte{0x5A});
  VMS_ASSERT_OK(t->get("big", std::span<std::byte>(buf.data(), cap), &vlen));
  EXPECT_EQ(vlen, big);
  EXPECT_EQ(std::memcmp(buf.data(), want.data(), cap), 0);
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

TEST(LargeValues, ChurnOfMixedSizesKeepsTheFileUnderOneAndAHalfTimesTheLiveData) {
  std::string dir = freshDir();
  const std::string config = "pool_size=64M";
  auto db = openDb(dir, config);
  ASSERT_TRUE(db);
  Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  Rng rng(9);
  // 60 values (fewer, each a larger share of the data, strand more: 30 reach 1.5-1.8x).
  const int keys = 60;
  // One multiset of sizes, several pages to 2 MiB log-uniform, dealt to the keys anew
  // each round: the live data stays the same while every value moves (runs of every
  // length are freed and wanted).
  std::vector<size_t> sizes;
  uint64_t live = 0;
  for (int i = 0; i < keys; i++) {
    sizes.push_back(static_cast<size_t>(std::exp2(static_cast<double>(rng.uniform(13 * 8, 21 * 8)) / 8.0)));
    live += sizes.back();
  }
  std::vector<size_t> len(keys, 0);
  double worst = 0;
  for (int round = 0; round < 10; round++) {
    for (int i = keys - 1; i > 0; i--) std::swap(sizes[i], sizes[rng.uniform(0, i)]);
    for (int i = 0; i < keys; i++) {
      VMS_ASSERT_OK(t->put("k" + std::to_string(i), makeValue(round * 1000 + i, sizes[i])));
      len[i] = sizes[i];
    }
    VMS_ASSERT_OK(db->sync());
    double ratio = static_cast<double>(fileBytes(dir + "/data.vms")) / static_cast<double>(live);
    if (round > 0) worst = std::max(worst, ratio);  // the first round only fills
    std::fprintf(stderr, "[ churn ] round %d: live %llu bytes, file %.2fx\n", round,
                 static_cast<unsigned long long>(live), ratio);
  }
  EXPECT_LT(worst, 1.5) << "the file outgrew the live data";
  for (int i = 0; i < keys; i++) {
    std::string got;
    VMS_ASSERT_OK(t->get("k" + std::to_string(i), &got));
    EXPECT_TRUE(got == makeValue(9 * 1000 + i, len[i]));
  }
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

TEST(LargeValues, ResidentMemoryStaysWithinThePool) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=64M,durability=none");
  ASSERT_TRUE(db);
  Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  const int n = scaled(40, 20);  // 8 MiB each: 5x (2.5x) the pool
  const size_t len = 8 << 20;
  for (int i = 0; i < n; i++) VMS_ASSERT_OK(t->put("v" + std::to_string(i), makeValue(i, len)));
  std::string got;
  got.reserve(len);
  const uint64_t base = residentBytes();
  uint64_t peak = base;
  Rng rng(10);
  for (int r = 0; r < 3 * n; r++) {
    int i = static_cast<int>(rng.uniform(0, n - 1));
    VMS_ASSERT_OK(t->get("v" + std::to_string(i), &got));  // into got's reserved buffer
    ASSERT_EQ(got.size(), len);
    ASSERT_TRUE(isValue(got, i)) << i;
    peak = std::max(peak, residentBytes());
  }
  vmstore::Stats s = db->stats();
  EXPECT_LE(s.resident_pages, s.pool_pages);
  // What the pool held when measuring began is in base already; growth beyond one pool
  // (plus the test's own value buffer) would mean frames outside the budget.
  std::fprintf(stderr, "[ rss ] base %llu MiB, peak %llu MiB, pool 64 MiB\n",
               static_cast<unsigned long long>(base >> 20), static_cast<unsigned long long>(peak >> 20));
  if (kRssMeaningful) {
    EXPECT_LE(peak, base + (64ull << 20) + (16ull << 20));
  }
  EXPECT_GT(s.evictions, 0u);
  VMS_ASSERT_OK(db->close());
}

TEST(LargeValues, ReadersSeeWholeValuesWhileWritersReplaceAndDelete) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=32M,durability=none");
  ASSERT_TRUE(db);
  Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  const int keys = 8;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::atomic<int> bad{0};
  // A value's seed is its length's tag: a reader recomputes it from what it got.
  auto sizeOf = [](uint64_t seed) { return static_cast<size_t>(5000 + (seed * 7919) % (3 << 20)); };
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; w++) {
    threads.emplace_back([&, w] {
      Rng rng(100 + w);
      for (int i = 0; i < scaled(300, 60); i++) {
        std::string k = "k" + std::to_string(rng.uniform(0, keys - 1));
        if (rng.chance(0.2)) {
          (void)t->del(k);
        } else {
          uint64_t seed = rng.uniform(1, 1u << 30);
          std::string v = makeValue(seed, sizeOf(seed));
          std::memcpy(v.data(), &seed, 8);  // the first word says which value it is
          if (!t->put(k, v).ok()) bad++;
        }
      }
    });
  }
  for (int r = 0; r < 2; r++) {
    threads.emplace_back([&, r] {
      Rng rng(200 + r);
      std::string got;
      while (!stop.load()) {
        Status s = t->get("k" + std::to_string(rng.uniform(0, keys - 1)), &got);
        if (s.isNotFound()) continue;
        if (!s.ok() || got.size() < 8) {
          bad++;
          continue;
        }
        uint64_t seed;
        std::memcpy(&seed, got.data(), 8);
        std::string want = makeValue(seed, sizeOf(seed));
        std::memcpy(want.data(), &seed, 8);
        if (got != want) bad++;
        reads++;
      }
    });
  }
  for (int w = 0; w < 2; w++) threads[w].join();
  stop = true;
  for (size_t i = 2; i < threads.size(); i++) threads[i].join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0u);
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

TEST(LargeValues, AcknowledgedLargeWritesSurviveACrash) {
  std::string dir = freshDir();
  const std::string config = "pool_size=64M,durability=sync,log_size=64M";
  {
    FaultScope faults;
    auto db = openDb(dir, config);
    ASSERT_TRUE(db);
    Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    VMS_ASSERT_OK(t->put("logged", makeValue(1, 1 << 20)));     // 1 MiB: through the log
    VMS_ASSERT_OK(t->put("unlogged", makeValue(2, 6 << 20)));   // over log_size / 16
    VMS_ASSERT_OK(t->put("replaced", makeValue(3, 200000)));
    VMS_ASSERT_OK(t->put("replaced", makeValue(4, 90000)));
    VMS_ASSERT_OK(t->put("deleted", makeValue(5, 50000)));
    VMS_ASSERT_OK(t->del("deleted"));
    faults.io().powerCut(1, false);  // a crash: nothing more reaches the files
    db->close();
  }
  auto db = openDb(dir, config);
  ASSERT_TRUE(db);
  Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string got;
  VMS_ASSERT_OK(t->get("logged", &got));
  EXPECT_TRUE(got == makeValue(1, 1 << 20));
  VMS_ASSERT_OK(t->get("unlogged", &got));
  EXPECT_TRUE(got == makeValue(2, 6 << 20));
  VMS_ASSERT_OK(t->get("replaced", &got));
  EXPECT_TRUE(got == makeValue(4, 90000));
  EXPECT_TRUE(t->get("deleted", &got).isNotFound());
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

TEST(LargeValues, LargeValuesAreFilledOnHugePagesWhereTheKernelHasThem) {
  const bool on = vmstore::internal::transparentHugePagesOn();
  // Only once the pool has been full (buffer_manager.cpp, backLarge): 32 MiB of 16 KiB values
  // through a 20 MiB pool first, and read again after the reopen. Each open's first
  // populate is always tried (huge_backoff.hpp).
  const std::string config = "pool_size=20M,durability=none";
  const size_t big = 9 << 20;  // at least three whole aligned 2 MiB stretches
  const int fill = 2048;
  std::string dir = freshDir();
  auto db = openDb(dir, config);
  ASSERT_TRUE(db);
  Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  for (int i = 0; i < fill; i++) VMS_ASSERT_OK(t->put("f" + std::to_string(i), makeValue(i, 16 << 10)));
  EXPECT_EQ(db->stats().huge_page_bytes, 0u) << "small values are never on huge pages";
  VMS_ASSERT_OK(t->put("k", makeValue(5, big)));
  VMS_ASSERT_OK(t->put("small", makeValue(6, 100 << 10)));
  const uint64_t written = db->stats().huge_page_bytes;
  if (on) {
    EXPECT_GE(written, 6u << 20) << "the new value's page was not filled on huge pages";
  } else {
    EXPECT_EQ(written, 0u);
  }
  VMS_ASSERT_OK(db->close());
  db = openDb(dir, config);
  ASSERT_TRUE(db);
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string got;
  for (int i = 0; i < fill; i++) {
    VMS_ASSERT_OK(t->get("f" + std::to_string(i), &got));
    ASSERT_TRUE(got.size() == (16 << 10) && isValue(got, i)) << i;
  }
  EXPECT_EQ(db->stats().huge_page_bytes, 0u);
  VMS_ASSERT_OK(t->get("k", &got));
  EXPECT_TRUE(got.size() == big && isValue(got, 5));
  VMS_ASSERT_OK(t->get("small", &got));
  EXPECT_TRUE(got.size() == (100 << 10) && isValue(got, 6));
  if (on) {
    EXPECT_GE(db->stats().huge_page_bytes, 6u << 20) << "the value read in was not on huge pages";
  }
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

}  // namespace
