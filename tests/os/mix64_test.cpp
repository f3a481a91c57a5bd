// Unit tests of os/mix64.hpp: it is splitmix64's finalizer exactly (fault schedules
// derived from it must not change between builds), and it spreads sequential values
// over the low bits.
#include "os/mix64.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

using vmstore::internal::mix64;

TEST(Mix64, IsSplitmix64sFinalizer) {
  // splitmix64 seeded with 0: its first two outputs (the reference sequence).
  constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
  EXPECT_EQ(mix64(kGolden), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(mix64(2 * kGolden), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(mix64(0), 0u);
}

TEST(Mix64, SpreadsSequentialValuesOverTheLowBits) {
  std::set<uint64_t> buckets;
  for (uint64_t i = 0; i < 4096; i++) buckets.insert(mix64(i) & 1023);
  EXPECT_GT(buckets.size(), 1000u);
}

}  // namespace
