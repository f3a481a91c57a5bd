// The replacement policies vmstore has, by name (issue 10).
//
// Contract
// - makePolicy(name, poolPages, maxPages) returns a new policy (policy.hpp) for a pool of
//   poolPages pages over ids below maxPages; throws std::invalid_argument naming the
//   known policies when `name` is not one of them.
// - policyNames(): every name makePolicy accepts, in the order of docs/POLICIES.md.
//   "clock" is also a Policy object here (for the simulator and the tests); the buffer
//   manager runs its own clock over page-state marks instead, which behaves the same
//   (BufferManager contract) without a hook on the hit path.
// - policySummary(name): one line on what the policy does (for `vmstore sim --help` and
//   error messages); empty for an unknown name.
// - For the test suite only (tests/test_main.cpp, VMSTORE_TEST_POLICY): after
//   setDefaultPolicyOverride(name), every database opened without a policy runs
//   policy `name` instead ("clock": the buffer manager's built-in clock), and every bare
//   buffer manager of the tests (tests/unit_util.hpp) the Policy object `name` (even
//   ClockPolicy, through the generic hooks), so the suite can run under any policy.
//   defaultPolicyOverride() is "" when none is set. Set it before opening databases.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace vmstore::internal {

std::unique_ptr<Policy> makePolicy(const std::string& name, uint64_t poolPages, uint64_t maxPages);
std::vector<std::string> policyNames();
std::string policySummary(const std::string& name);
void setDefaultPolicyOverride(const std::string& name);
const std::string& defaultPolicyOverride();

}  // namespace vmstore::internal
