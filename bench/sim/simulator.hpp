// The replacement-policy simulator of `vmstore sim` and `vmstore bench policies`: replays a
// recorded page-reference string (src/trace) through any policy of the registry
// (src/policy/registry.hpp) and through Belady's OPT.
//
// Contract
// - simulate(trace, policy, poolPages, batch) drives the policy exactly by its contract
//   (policy.hpp), in one thread: a reference to a resident page is a hit (policy.hit),
//   any other a miss that, when poolPages pages are resident, first asks victims(batch)
//   and evicts them all (evicted), then admits the page. batch 1 is the textbook cache;
//   kEngineBatch models the engine, which evicts 64 pages at a time. Every page counts
//   as one page (a variable-size page is its head, as in the engine's policies).
// - simulateOpt(trace, poolPages): Belady's MIN: on a miss with a full pool, evict the
//   resident page whose next reference is farthest (never referenced again first).
//   Exact; O(references x log pool). No policy can have fewer misses on the same trace
//   with the same pool and batch 1.
// - simulateA0(trace, poolPages): the independent-reference model's optimal online
//   policy (Aho, Denning and Ullman's A0, 1971): it knows every page's reference count
//   over the counted references and keeps the poolPages most referenced pages. A
//   reference is a hit when its page is one of them and has been referenced before
//   (the first reference of any page is a miss). It bounds what a policy without
//   knowledge of the future can reach when references are drawn independently (YCSB's
//   Zipfian requests); OPT's edge over it is its knowledge of the order.
// - All three start from an empty pool; hit rates are hits / references. With countFrom > 0
//   the references before that position warm the pool up but are not counted (the load
//   phase of a benchmark, when only its measured phase should be compared).
// - readTraceFile throws std::runtime_error with the reader's message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/trace_reader.hpp"

namespace vmstore::bench::sim {

using internal::Trace;

inline constexpr size_t kEngineBatch = 64;

struct SimResult {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  double seconds = 0;
  double hitRate() const { return hits + misses == 0 ? 0 : static_cast<double>(hits) / static_cast<double>(hits + misses); }
};

SimResult simulate(const Trace& trace, const std::string& policy, uint64_t poolPages, size_t batch = 1,
                   uint64_t countFrom = 0);
SimResult simulateOpt(const Trace& trace, uint64_t poolPages, uint64_t countFrom = 0);
SimResult simulateA0(const Trace& trace, uint64_t poolPages, uint64_t countFrom = 0);
// The engine's own hit rate over references countFrom.. (from the trace's miss marks).
double engineHitRate(const Trace& trace, uint64_t countFrom = 0);
Trace readTraceFile(const std::string& path);

}  // namespace vmstore::bench::sim
