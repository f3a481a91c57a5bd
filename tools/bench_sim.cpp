// vmstore sim: replays a page-reference trace (recorded with config trace=FILE, e.g.
// `vmstore bench ycsb-c --trace=FILE`) through replacement policies, the frequency oracle A0 and Belady's OPT
// (bench/sim/simulator.hpp), for a range of pool sizes, and prints their hit rates beside
// the one the engine had while recording. Built with the benchmarks (it links bench/sim).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "policy/registry.hpp"
#include "sim/simulator.hpp"

namespace vmstore::cli {

namespace {

// "5%" of the distinct pages, "64M" bytes (4 KiB pages), or "1000" pages.
uint64_t poolPagesOf(const std::string& item, uint64_t distinct) {
  if (item.empty()) throw UsageError("--pool: empty size");
  char* end = nullptr;
  if (item.back() == '%') {
    double pct = std::strtod(item.c_str(), &end);
    if (end != item.c_str() + item.size() - 1 || !(pct > 0) || pct > 100) {
      throw UsageError("--pool=" + item + ": a percentage must be in (0, 100]");
    }
    return std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(distinct) * pct / 100));
  }
  uint64_t v = 0;
  if (!vmstore::parseSize(item, &v) || v == 0) throw UsageError("--pool=" + item + ": not a size, page count or percentage");
  bool bytes = item.back() < '0' || item.back() > '9';
  return bytes ? std::max<uint64_t>(1, v / 4096) : v;
}

std::string percent(double rate) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", rate * 100);
  return buf;
}

}  // namespace

int cmdSim(int argc, char** argv) {
  Args args(argc, argv, 2, {{"policy", true}, {"pool", true}, {"batch", true}, {"json", false}, {"list-policies", false}, {"skip", true}});
  if (args.has("list-policies")) {
    for (const std::string& p : internal::policyNames()) std::printf("%s\n", p.c_str());
    return kExitOk;
  }
  args.requirePositionals(1, 1);
  std::vector<std::string> policies = internal::policyNames();
  const std::string policyArg = args.str("policy", "all");
  if (policyArg != "all") {
    policies = splitList(policyArg);
    for (const std::string& p : policies) {
      if (internal::policySummary(p).empty()) throw UsageError("--policy: unknown policy " + p + " (see --list-policies)");
    }
  }
  const uint64_t batch = args.count("batch", 1, 1);
  if (batch > 4096) throw UsageError("--batch: at most 4096");
  bench::sim::Trace trace;
  try {
    trace = bench::sim::readTraceFile(args.positional(0));
  } catch (const std::runtime_error& e) {
    throw Failure(kExitFailure, e.what());
  }
  if (trace.refs.empty()) throw Failure(kExitFailure, args.positional(0) + " holds no references");
  // --skip=N or P%: references that warm the pool up but are not counted (a load phase).
  uint64_t skip = 0;
  if (args.has("skip")) {
    std::string text = args.str("skip", "");
    if (!text.empty() && text.back() == '%') {
      double pct = std::strtod(text.c_str(), nullptr);
      if (!(pct >= 0) || pct >= 100) throw UsageError("--skip=" + text + ": a percentage must be in [0, 100)");
      skip = static_cast<uint64_t>(static_cast<double>(trace.refs.size()) * pct / 100);
    } else {
      skip = args.count("skip", 0, 0);
      if (skip >= trace.refs.size()) throw UsageError("--skip: the trace has only " + std::to_string(trace.refs.size()) + " references");
    }
  }
  std::vector<uint64_t> pools;
  for (const std::string& item : splitList(args.str("pool", "5%,10%,25%,50%"))) {
    pools.push_back(poolPagesOf(item, trace.distinct));
  }
  const bool json = args.has("json");
  if (!json) {
    std::printf("trace %s: %s references to %s distinct pages; the engine's hit rate %s%%\n",
                args.positional(0).c_str(), withCommas(trace.refs.size()).c_str(), withCommas(trace.distinct).c_str(),
                percent(bench::sim::engineHitRate(trace, skip)).c_str());
    if (skip > 0) std::printf("(the first %s references warm the pool up and are not counted)\n", withCommas(skip).c_str());
    std::printf("hit rate, %% (victims per eviction: %llu)\n%10s", static_cast<unsigned long long>(batch), "pool");
    for (const std::string& p : policies) std::printf(" %9s", p.c_str());
    std::printf(" %9s %9s\n", "A0", "OPT");
  }
  for (uint64_t pool : pools) {
    std::vector<double> rates;
    for (const std::string& p : policies) rates.push_back(bench::sim::simulate(trace, p, pool, batch, skip).hitRate());
    double a0 = bench::sim::simulateA0(trace, pool, skip).hitRate();
    double opt = bench::sim::simulateOpt(trace, pool, skip).hitRate();
    if (json) {
      std::printf("{\"pool_pages\":%llu,\"batch\":%llu,\"references\":%zu,\"distinct\":%llu,\"skip\":%llu,\"engine_hit_rate\":%.6f",
                  static_cast<unsigned long long>(pool), static_cast<unsigned long long>(batch), trace.refs.size(),
                  static_cast<unsigned long long>(trace.distinct), static_cast<unsigned long long>(skip),
                  bench::sim::engineHitRate(trace, skip));
      for (size_t i = 0; i < policies.size(); i++) std::printf(",\"%s\":%.6f", policies[i].c_str(), rates[i]);
      std::printf(",\"a0\":%.6f,\"opt\":%.6f}\n", a0, opt);
    } else {
      std::printf("%10s", withCommas(pool).c_str());
      for (double r : rates) std::printf(" %9s", percent(r).c_str());
      std::printf(" %9s %9s\n", percent(a0).c_str(), percent(opt).c_str());
    }
  }
  return kExitOk;
}

}  // namespace vmstore::cli
