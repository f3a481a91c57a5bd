// The record shape of the lookup and YCSB workloads (the vmcache paper's): 8-byte
// big-endian integer keys (byte order = numeric order) and 120-byte values whose first
// 8 bytes identify the key, so every read can be checked cheaply. Plus the random
// generators and the parallel ascending load they share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine.hpp"
#include "workload.hpp"

namespace vmstore::bench::records {

inline constexpr size_t kKeySize = 8;
inline constexpr size_t kValueSize = 120;

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Fast per-thread generator (xorshift64*), seeded through splitmix64.
class Random {
 public:
  explicit Random(uint64_t seed) {
    state_ = splitmix64(seed);
    if (state_ == 0) state_ = 1;
  }
  uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1Dull;
  }
  // Uniform in [0, n) (n > 0), by multiply-shift.
  uint64_t below(uint64_t n) {
    __extension__ typedef unsigned __int128 u128;
    return static_cast<uint64_t>((static_cast<u128>(next()) * n) >> 64);
  }
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// Key i as 8 big-endian bytes.
inline void encodeKey(uint64_t i, char out[kKeySize]) {
  for (size_t b = 0; b < kKeySize; ++b) out[b] = static_cast<char>(i >> (56 - 8 * b));
}

inline uint64_t decodeKey(std::string_view key) {
  uint64_t i = 0;
  for (size_t b = 0; b < kKeySize && b < key.size(); ++b) {
    i = (i << 8) | static_cast<unsigned char>(key[b]);
  }
  return i;
}

// The first 8 bytes of every value of key i.
inline uint64_t valueTag(uint64_t i) {
  uint64_t state = i ^ 0x7A3C5E1F00000000ull;
  return splitmix64(state);
}

// The value of key i in its `version` (0: as loaded): the tag of i, then 112 bytes
// that depend on i and version.
inline void makeValue(uint64_t i, uint64_t version, char out[kValueSize]) {
  const uint64_t tag = valueTag(i);
  std::memcpy(out, &tag, 8);
  uint64_t state = i * 0xD1B54A32D192ED03ull + version * 0x9E3779B97F4A7C15ull;
  for (size_t off = 8; off < kValueSize; off += 8) {
    const uint64_t w = splitmix64(state);
    std::memcpy(out + off, &w, 8);
  }
}

// The cheap check of every read: the value has the right length and carries i's tag.
inline bool valueMatchesKey(uint64_t i, std::string_view value) {
  if (value.size() != kValueSize) return false;
  uint64_t tag;
  std::memcpy(&tag, value.data(), 8);
  return tag == valueTag(i);
}

// Loads keys 0..n-1 (version-0 values) into `table`: `threads` threads, each with its
// own session, each inserting its own key range in ascending order, in transactions of
// a few hundred puts. progress(done, n) is called now and then from the loading threads.
void loadRecords(Engine& engine, int table, uint64_t n, unsigned threads,
                 const std::function<void(uint64_t, uint64_t)>& progress);

// Scans `table` and returns problems: keys 0..n-1 must all be present, each value must
// carry its key's tag, and with exactValues equal its version-0 value. Keys >= n (YCSB
// inserts) are only tag-checked.
std::vector<std::string> checkRecords(Engine& engine, int table, uint64_t n, bool exactValues);

// A workload over one table of these records (lookup, scan, the YCSB workloads): load()
// is loadRecords, check() is checkRecords (exact values unless the workload updates
// them).
class RecordsWorkload : public Workload {
 public:
  explicit RecordsWorkload(bool exactValues) : exactValues_(exactValues) {}
  void load(Engine& engine, const RunOptions& opts,
            const std::function<void(uint64_t, uint64_t)>& progress) override {
    loadRecords(engine, kRecordsTable, opts.data, opts.threads, progress);
  }
  std::vector<std::string> check(Engine& engine, const RunOptions& opts) override {
    return checkRecords(engine, kRecordsTable, opts.data, exactValues_);
  }

 protected:
  static constexpr int kRecordsTable = 0;

 private:
  bool exactValues_;
};

// Throws std::runtime_error naming the workload, the key and what was wrong.
[[noreturn]] void wrongAnswer(const std::string& workload, uint64_t key,
                              const std::string& what);

}  // namespace vmstore::bench::records
