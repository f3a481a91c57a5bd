// The measurements of `vmstore bench values` (issue 8: values as users have them), one
// engine at a time, in the calling process. The command (tools/bench_values.cpp) runs
// each in a child process of its own (out of memory: inside a memory cgroup) and puts the
// engines side by side.
//
// Contract
// - runThroughput(spec): a fresh database of spec.engine in spec.dir (missing or empty;
//   left behind for the caller to remove) with one table. Load: keys 0..n-1, n =
//   max(1, dataBytes / valueBytes), every value valueBytes long, spec.threads threads
//   each putting its own key range, then Engine::checkpoint() (timed on its own, as a
//   user checkpoints after a bulk load). Gets: every thread reads uniformly random keys for
//   spec.seconds. Puts: every thread overwrites uniformly random keys with new values
//   for spec.seconds, or until kPutRewrites x the data (at most kPutBytesMax) has been
//   written (so an engine that appends does not fill the disk), whichever comes first. Every operation
//   completes: a phase lasts until its last operation returns, and has at least one per
//   thread. Every value read is checked (length, its key and version stamped at both
//   ends, one word of its middle); a wrong answer throws std::runtime_error, as do
//   engine errors. Bad specs throw std::invalid_argument.
// - Values: the same pseudo-random bytes for every key and version, except the first 16
//   bytes (key, version) and the last 8 (a hash of both), so a put costs no more than
//   handing the engine a buffer, as an application that has its value in memory does.
// - runChurn(spec): the space test of issue 8 item 7 on any engine: a fixed multiset of
//   value sizes, log-uniform in [minValue, maxValue], about liveBytes in all, dealt anew
//   to the same keys (random order) in each of spec.rounds rounds, each round ending with
//   Engine::checkpoint(); then Engine::compact() and a checkpoint. Sizes on storage are
//   the allocated bytes of every file in spec.dir (diskBytes). The first round only
//   fills; `worst` is the largest size after rounds 2..rounds.
// - runZeroCopy(spec): vmstore only (its API, not the Engine adapter): ns per operation,
//   one thread, on a resident value of spec.valueBytes and on 8-byte values in the same
//   tree (median of kZeroCopyRounds rounds): Tree::getView + reading 8 bytes + release;
//   Tree::get of an 8-byte value (a pointer lookup's worth of work); getView of an 8-byte
//   value; Tree::get (a copy) of the large value.
// - toJson: one flat JSON object per result (the child's last line of stdout).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine.hpp"

namespace vmstore::bench::values {

inline constexpr uint64_t kMinValueBytes = 64;
inline constexpr uint64_t kPutRewrites = 4;
inline constexpr uint64_t kPutBytesMax = 2ull << 30;
inline constexpr int kZeroCopyRounds = 5;

struct ThroughputSpec {
  std::string engine;
  uint64_t valueBytes = 0;
  uint64_t dataBytes = 0;
  uint64_t poolBytes = 0;
  unsigned threads = 1;
  double seconds = 5;
  std::string dir;
};

struct Phase {
  uint64_t ops = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  double opsPerSec() const { return seconds > 0 ? ops / seconds : 0; }
  double mbPerSec() const { return seconds > 0 ? bytes / seconds / (1024.0 * 1024.0) : 0; }
};

struct ThroughputResult {
  uint64_t keys = 0;
  Phase load, get, put;
  double checkpointSeconds = 0;  // Engine::checkpoint() after the load
  double closeSeconds = 0;
  EngineStats stats;  // at the end, before close
};

ThroughputResult runThroughput(const ThroughputSpec& spec);
std::string toJson(const ThroughputSpec& spec, const ThroughputResult& r);

struct ChurnSpec {
  std::string engine;
  uint64_t liveBytes = 256ull << 20;
  uint64_t minValue = 8ull << 10;
  uint64_t maxValue = 2ull << 20;
  unsigned rounds = 10;
  uint64_t poolBytes = 1ull << 30;
  uint64_t seed = 8;
  std::string dir;
};

struct ChurnResult {
  uint64_t keys = 0;
  uint64_t liveBytes = 0;
  uint64_t writtenBytes = 0;
  std::vector<uint64_t> diskAfterRound;  // after each round's checkpoint
  uint64_t worst = 0;                    // the largest of rounds 2.. (the first only fills)
  uint64_t diskAfterCompact = 0;
  uint64_t diskAfterClose = 0;
  std::map<std::string, uint64_t> files;  // each file's allocated bytes after close
  double seconds = 0;
};

// The sizes of the multiset (deterministic for a seed).
std::vector<uint64_t> churnSizes(const ChurnSpec& spec);
ChurnResult runChurn(const ChurnSpec& spec);
std::string toJson(const ChurnSpec& spec, const ChurnResult& r);

struct ZeroCopySpec {
  uint64_t valueBytes = 64ull << 20;
  uint64_t poolBytes = 1ull << 30;
  double seconds = 0.2;  // per round and operation
  std::string dir;
};

struct ZeroCopyResult {
  double viewLargeNs = 0;  // getView + read 8 bytes + release, the large value
  double getSmallNs = 0;   // get of an 8-byte value (a copy)
  double viewSmallNs = 0;  // getView + read 8 bytes + release, an 8-byte value
  double getLargeNs = 0;   // get (a copy) of the large value
  double optLargeNs = 0;   // readOptimistic reading 8 bytes, the large value
  double optSmallNs = 0;   // readOptimistic reading 8 bytes, an 8-byte value
};

ZeroCopyResult runZeroCopy(const ZeroCopySpec& spec);
std::string toJson(const ZeroCopySpec& spec, const ZeroCopyResult& r);

// Allocated bytes (st_blocks x 512) of every file below dir, by path below dir; and their
// sum.
std::map<std::string, uint64_t> fileBytes(const std::string& dir);
uint64_t diskBytes(const std::string& dir);

}  // namespace vmstore::bench::values
