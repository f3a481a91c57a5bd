#include "sim/simulator.hpp"

#include <algorithm>
#include <chrono>
#include <queue>
#include <stdexcept>
#include <utility>
#include <vector>

#include "policy/registry.hpp"

namespace vmstore::bench::sim {

namespace {

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

SimResult simulate(const Trace& trace, const std::string& policy, uint64_t poolPages, size_t batch,
                   uint64_t countFrom) {
  if (poolPages == 0) throw std::invalid_argument("simulate: a pool of 0 pages");
  if (batch == 0) batch = 1;
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<internal::Policy> p = internal::makePolicy(policy, poolPages, trace.maxPid + 1);
  std::vector<uint8_t> resident(trace.maxPid + 1, 0);
  std::vector<uint64_t> victims(batch);
  uint64_t count = 0;
  SimResult r;
  SimResult warm;  // the references before countFrom
  for (uint64_t i = 0; i < trace.refs.size(); i++) {
    const internal::TraceRef& ref = trace.refs[i];
    SimResult& into = i < countFrom ? warm : r;
    if (resident[ref.pid]) {
      p->hit(ref.pid);
      into.hits++;
      continue;
    }
    into.misses++;
    if (count >= poolPages) {
      size_t n = p->victims(batch, victims.data());
      if (n == 0) throw std::logic_error("policy " + policy + " offered no victim with a full pool");
      for (size_t i = 0; i < n; i++) {
        resident[victims[i]] = 0;
        p->evicted(victims[i]);
      }
      count -= n;
      into.evictions += n;
    }
    p->admit(ref.pid);
    resident[ref.pid] = 1;
    count++;
  }
  r.seconds = secondsSince(start);
  return r;
}

SimResult simulateOpt(const Trace& trace, uint64_t poolPages, uint64_t countFrom) {
  if (poolPages == 0) throw std::invalid_argument("simulateOpt: a pool of 0 pages");
  auto start = std::chrono::steady_clock::now();
  const uint64_t n = trace.refs.size();
  constexpr uint64_t kNever = ~0ull;
  // next[i]: the position of the next reference to refs[i].pid (kNever: none).
  std::vector<uint64_t> next(n);
  std::vector<uint64_t> lastSeen(trace.maxPid + 1, kNever);
  for (uint64_t i = n; i-- > 0;) {
    next[i] = lastSeen[trace.refs[i].pid];
    lastSeen[trace.refs[i].pid] = i;
  }
  // Resident pages by their next use, farthest on top; stale heap entries (a page
  // referenced since, or evicted) are skipped by comparing with nextUse.
  std::vector<uint64_t> nextUse(trace.maxPid + 1, 0);
  std::vector<uint8_t> resident(trace.maxPid + 1, 0);
  std::priority_queue<std::pair<uint64_t, uint64_t>> heap;
  uint64_t count = 0;
  SimResult r;
  SimResult warm;  // the references before countFrom
  for (uint64_t i = 0; i < n; i++) {
    uint64_t pid = trace.refs[i].pid;
    SimResult& into = i < countFrom ? warm : r;
    if (resident[pid]) {
      into.hits++;
    } else {
      into.misses++;
      if (count >= poolPages) {
        for (;;) {
          auto [use, victim] = heap.top();
          heap.pop();
          if (resident[victim] && nextUse[victim] == use) {
            resident[victim] = 0;
            count--;
            into.evictions++;
            break;
          }
        }
      }
      resident[pid] = 1;
      count++;
    }
    nextUse[pid] = next[i];
    heap.emplace(next[i], pid);
    // Keep the heap from growing without bound on long traces.
    if (heap.size() > 4 * poolPages + 1024) {
      std::priority_queue<std::pair<uint64_t, uint64_t>> fresh;
      while (!heap.empty()) {
        auto e = heap.top();
        heap.pop();
        if (resident[e.second] && nextUse[e.second] == e.first) fresh.push(e);
      }
      heap.swap(fresh);
    }
  }
  r.seconds = secondsSince(start);
  return r;
}

SimResult simulateA0(const Trace& trace, uint64_t poolPages, uint64_t countFrom) {
  if (poolPages == 0) throw std::invalid_argument("simulateA0: a pool of 0 pages");
  auto start = std::chrono::steady_clock::now();
  const uint64_t n = trace.refs.size();
  std::vector<uint64_t> counts(trace.maxPid + 1, 0);
  for (uint64_t i = countFrom; i < n; i++) counts[trace.refs[i].pid]++;
  // The poolPages most referenced pages (ties by lower id, so the result is stable).
  std::vector<uint32_t> order;
  for (uint64_t pid = 0; pid <= trace.maxPid; pid++) {
    if (counts[pid] > 0) order.push_back(static_cast<uint32_t>(pid));
  }
  const size_t keep = std::min<uint64_t>(poolPages, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                    [&](uint32_t a, uint32_t b) { return counts[a] != counts[b] ? counts[a] > counts[b] : a < b; });
  std::vector<uint8_t> kept(trace.maxPid + 1, 0);
  for (size_t i = 0; i < keep; i++) kept[order[i]] = 1;
  std::vector<uint8_t> seen(trace.maxPid + 1, 0);
  SimResult r;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t pid = trace.refs[i].pid;
    bool hit = kept[pid] && seen[pid];
    seen[pid] = 1;
    if (i < countFrom) continue;
    if (hit) {
      r.hits++;
    } else {
      r.misses++;
    }
  }
  r.seconds = secondsSince(start);
  return r;
}

double engineHitRate(const Trace& trace, uint64_t countFrom) {
  uint64_t refs = 0, misses = 0;
  for (uint64_t i = countFrom; i < trace.refs.size(); i++) {
    refs++;
    misses += trace.refs[i].miss;
  }
  return refs == 0 ? 0 : 1.0 - static_cast<double>(misses) / static_cast<double>(refs);
}

Trace readTraceFile(const std::string& path) {
  Trace t;
  Status s = internal::readTrace(path, &t);
  if (!s.ok()) throw std::runtime_error(s.toString());
  return t;
}

}  // namespace vmstore::bench::sim
