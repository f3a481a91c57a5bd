// The two ways an operation inside the engine stops early.
// - Restart: an optimistic read failed validation (or a lock could not be upgraded);
//   the operation retries from the start. It never escapes the B+tree's retry loops.
// - StorageError: a real error (I/O, corruption, no space, no memory) carried as a
//   Status up to the API, which returns it. Guards release their locks on the way.
#pragma once

#include <exception>
#include <utility>

#include "vmstore/status.hpp"

namespace vmstore::internal {

// sharedPid: the upgrade failed only because readers hold that page shared (a value
// view, a value being read): the retry should wait for them first (writers would starve
// behind overlapping holders otherwise).
struct Restart {
  uint64_t sharedPid = ~0ull;
};

class StorageError : public std::exception {
 public:
  explicit StorageError(Status s) : status_(std::move(s)) {}
  const Status& status() const { return status_; }
  const char* what() const noexcept override { return status_.message().c_str(); }

 private:
  Status status_;
};

}  // namespace vmstore::internal
