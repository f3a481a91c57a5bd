// mix64: the one 64-bit bit mixer of the code base (splitmix64's finalizer, Steele,
// Lea and Flood, OOPSLA 2014).
//
// Contract
// - A bijection on 64-bit values in which every input bit changes about half of the
//   output bits, low ones included: for spreading page ids over a hash table, keys over
//   a set of locks, or deriving reproducible pseudo-random choices from a seed. Not a
//   cryptographic hash. The same output in every run and build.
#pragma once

#include <cstdint>

namespace vmstore::internal {

inline uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace vmstore::internal
