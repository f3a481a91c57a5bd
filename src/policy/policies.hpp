// The factories of the replacement policies beyond clock (clock.hpp), one .cpp each; the
// registry (registry.cpp) names them. Each file's opening comment says what the policy
// does, where it comes from, and what a hit costs; docs/POLICIES.md says the same for
// users. Arguments: the pool size in pages and the largest page id + 1 (policy.hpp).
#pragma once

#include <cstdint>
#include <memory>

#include "policy/policy.hpp"

namespace vmstore::internal {

std::unique_ptr<Policy> makeFifoPolicy(uint64_t poolPages, uint64_t maxPages);       // queue.cpp
std::unique_ptr<Policy> makeLruPolicy(uint64_t poolPages, uint64_t maxPages);        // queue.cpp
std::unique_ptr<Policy> makeLru2Policy(uint64_t poolPages, uint64_t maxPages);       // lru2.cpp
std::unique_ptr<Policy> makeTwoQPolicy(uint64_t poolPages, uint64_t maxPages);       // two_q.cpp
std::unique_ptr<Policy> makeSlruPolicy(uint64_t poolPages, uint64_t maxPages);       // slru.cpp
std::unique_ptr<Policy> makeArcPolicy(uint64_t poolPages, uint64_t maxPages);        // arc.cpp
std::unique_ptr<Policy> makeRandomPolicy(uint64_t poolPages, uint64_t maxPages);     // random.cpp
std::unique_ptr<Policy> makeGclockPolicy(uint64_t poolPages, uint64_t maxPages);     // gclock.cpp
std::unique_ptr<Policy> makeLfudaPolicy(uint64_t poolPages, uint64_t maxPages);      // lfuda.cpp
std::unique_ptr<Policy> makeLeanStorePolicy(uint64_t poolPages, uint64_t maxPages);  // leanstore.cpp
std::unique_ptr<Policy> makeS3FifoPolicy(uint64_t poolPages, uint64_t maxPages);     // s3fifo.cpp
std::unique_ptr<Policy> makeSievePolicy(uint64_t poolPages, uint64_t maxPages);      // sieve.cpp

}  // namespace vmstore::internal
