#include "policy/registry.hpp"

#include <stdexcept>

#include "policy/clock.hpp"
#include "policy/policies.hpp"

namespace vmstore::internal {

namespace {

struct Entry {
  const char* name;
  const char* summary;
  std::unique_ptr<Policy> (*make)(uint64_t poolPages, uint64_t maxPages);
};

template <class P>
std::unique_ptr<Policy> make(uint64_t poolPages, uint64_t maxPages) {
  return std::make_unique<P>(poolPages, maxPages);
}

// One line per policy, in the order of docs/POLICIES.md.
const Entry kPolicies[] = {
    {"clock", "second chance: a hand clears reference bits and evicts the first page found without one", make<ClockPolicy>},
    {"fifo", "first in, first out; hits are ignored", makeFifoPolicy},
    {"lru", "exact least recently used; every hit moves the page under a lock", makeLruPolicy},
    {"lru2", "LRU-K with K=2: evict the oldest second-to-last reference; lock-free hits, ranked choice", makeLru2Policy},
    {"2q", "2Q: FIFO probation (A1in), ghost ids (A1out), LRU main (Am)", makeTwoQPolicy},
    {"slru", "segmented LRU: probationary and protected (80%) segments", makeSlruPolicy},
    {"arc", "ARC: recency (T1) and frequency (T2) lists with ghosts and an adaptive target", makeArcPolicy},
    {"random", "a uniformly random resident page; hits are ignored", makeRandomPolicy},
    {"gclock", "generalized clock: usage counts (fetch 25, hit +5, hand -1)", makeGclockPolicy},
    {"lfuda", "LFU with dynamic aging: count plus inflation, lock-free hits, ranked choice", makeLfudaPolicy},
    {"leanstore", "LeanStore: random pages cool in a FIFO stage; a hit rescues a cooling page", makeLeanStorePolicy},
    {"s3fifo", "S3-FIFO: small FIFO, main FIFO with reinsertion, ghost FIFO; lock-free hits", makeS3FifoPolicy},
    {"sieve", "SIEVE: one FIFO, visited bits, a hand that does not reset; lock-free hits", makeSievePolicy},
};

std::string& overrideName() {
  static std::string name;
  return name;
}

}  // namespace

void setDefaultPolicyOverride(const std::string& name) { overrideName() = name; }
const std::string& defaultPolicyOverride() { return overrideName(); }

std::unique_ptr<Policy> makePolicy(const std::string& name, uint64_t poolPages, uint64_t maxPages) {
  for (const Entry& e : kPolicies) {
    if (name == e.name) return e.make(poolPages, maxPages);
  }
  std::string known;
  for (const Entry& e : kPolicies) known += std::string(known.empty() ? "" : ", ") + e.name;
  throw std::invalid_argument("unknown replacement policy '" + name + "' (known: " + known + ")");
}

std::vector<std::string> policyNames() {
  std::vector<std::string> out;
  for (const Entry& e : kPolicies) out.push_back(e.name);
  return out;
}

std::string policySummary(const std::string& name) {
  for (const Entry& e : kPolicies) {
    if (name == e.name) return e.summary;
  }
  return {};
}

}  // namespace vmstore::internal
