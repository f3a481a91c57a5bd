#include "policy/registry.hpp"

#include <stdexcept>

#include "policy/clock.hpp"

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
