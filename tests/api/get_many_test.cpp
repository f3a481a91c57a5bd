// Tree::getMany in memory, where the keys descend the tree together (BTree::
// lookupResident): the same answers as get() for every kind of key and value, in both
// output forms, in any order and in ascending order; and readers racing a writer that
// splits, merges, replaces and deletes end on whole, current values. (tasks_test.cpp
// covers getMany out of memory, where keys whose pages are not resident take the usual
// path, and the C form.)
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../e2e/test_util.hpp"
#include "tagged_values.hpp"

namespace {

using namespace vmstest;
using vmstore::Status;

class GetManyInMemoryTest : public OneTreeTest {};

// Key i's value: none for every fifth, a page of its own for every seventh, several
// pages for every eleventh, else 0-299 bytes in the leaf.
std::string valueOf(uint64_t i) {
  if (i % 11 == 0) return patternedValue(static_cast<char>('a' + i % 26), 20000 + i);
  if (i % 7 == 0) return patternedValue(static_cast<char>('a' + i % 26), 3500);
  return patternedValue(static_cast<char>('a' + i % 26), i % 300);
}
bool stored(uint64_t i) { return i % 5 != 0; }

TEST_F(GetManyInMemoryTest, AnswersAreThoseOfGet) {
  const uint64_t n = 4000;
  for (uint64_t i = 0; i < n; i++) {
    if (stored(i)) VMS_ASSERT_OK(t_->put(numKey("k", i), valueOf(i)));
  }
  {
    vmstore::TreeShape shape;
    VMS_ASSERT_OK(t_->shape(&shape));
    ASSERT_GE(shape.height, 2u) << "the keys were meant to need inner nodes";
  }
  // Random keys (repeats too), keys past the end, and bad keys among them.
  Rng rng(5);
  std::vector<std::string> owned;
  for (int j = 0; j < 3000; j++) owned.push_back(numKey("k", rng.uniform(0, n + 100)));
  owned[17] = "";
  owned[1234] = std::string(vmstore::kMaxKeySize + 1, 'x');
  owned[2000] = "a key below every other";
  owned[2001] = "zz above every other";
  // The same keys again in ascending order (repeats next to each other), where each key
  // is searched for first where the key before it was found.
  std::vector<std::string> ascending(owned.begin(), owned.begin() + 1500);
  std::sort(ascending.begin(), ascending.end());
  owned.insert(owned.end(), ascending.begin(), ascending.end());
  std::vector<std::string_view> keys(owned.begin(), owned.end());

  std::vector<std::string> values;
  std::vector<Status> statuses;
  VMS_ASSERT_OK(t_->getMany(keys, &values, &statuses));
  // Into buffers of 0 to 399 bytes.
  std::vector<std::vector<std::byte>> space(keys.size());
  std::vector<std::span<std::byte>> bufs;
  for (auto& s : space) {
    s.resize(rng.uniform(0, 399));
    bufs.emplace_back(s);
  }
  std::vector<size_t> vlens(keys.size(), 12345);
  std::vector<Status> bufStatuses(keys.size());
  VMS_ASSERT_OK(t_->getMany(keys, bufs, vlens, bufStatuses));

  int found = 0;
  for (size_t j = 0; j < keys.size(); j++) {
    std::string expected;
    Status s = t_->get(keys[j], &expected);
    ASSERT_EQ(statuses[j].code(), s.code()) << j << " " << keys[j];
    ASSERT_EQ(bufStatuses[j].code(), s.code()) << j << " " << keys[j];
    if (!s.ok()) {
      EXPECT_TRUE(values[j].empty()) << j;
      EXPECT_EQ(vlens[j], 0u) << j;
      continue;
    }
    found++;
    ASSERT_EQ(values[j], expected) << j << " " << keys[j];
    ASSERT_EQ(vlens[j], expected.size()) << j;
    const size_t copied = std::min(expected.size(), space[j].size());
    ASSERT_EQ(std::string_view(reinterpret_cast<const char*>(space[j].data()), copied), expected.substr(0, copied)) << j;
  }
  EXPECT_GT(found, 2000);
  EXPECT_EQ(statuses[17].code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(statuses[1234].code(), Status::Code::kTooBig);
  EXPECT_TRUE(statuses[2000].isNotFound());
  EXPECT_TRUE(statuses[2001].isNotFound());
}

// durability=async, so that the writer's puts come as fast as the readers let them.
class GetManyRaceTest : public OneTreeTest {
  std::string config() const override { return "pool_size=64M,durability=async"; }
};

// The writer replaces values (mostly small ones, in the leaves), deletes keys and puts
// them back, so leaves split and merge under the readers; every value a reader gets must
// be one the writer stored under that key, whole.
TEST_F(GetManyRaceTest, ReadersRacingAWriterGetWholeValues) {
  const int keys = 3000;
  auto key = [](int i) { return "k" + std::to_string(i); };
  // Half of the reads and writes go to 64 hot keys, so that reads often overlap writes.
  auto pick = [&](Rng& rng) { return static_cast<int>(rng.uniform(0, rng.chance(0.5) ? 63 : keys - 1)); };
  // Key i's values have tags whose low 12 bits are i, so that a value of another key
  // shows too; small: 40 bytes (in the leaf), else any size of valueOfTag.
  auto tagFor = [](int i, Rng& rng, bool small) {
    for (;;) {
      const uint32_t tag = static_cast<uint32_t>(rng.uniform(1, 1u << 19)) << 12 | static_cast<uint32_t>(i);
      if (!small || sizeOfTag(tag) == 40) return tag;
    }
  };
  {
    Rng rng(1);
    // Odd keys are never deleted: a reader that misses one took a wrong path.
    for (int i = 0; i < keys; i++) {
      if (i % 2 == 1 || i % 4 == 0) VMS_ASSERT_OK(t_->put(key(i), valueOfTag(tagFor(i, rng, true))));
    }
  }
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<uint64_t> got{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; r++) {
    readers.emplace_back([&, r] {
      Rng rng(10 + r);
      std::vector<int> ids(32);
      std::vector<std::string> owned(32);
      std::vector<std::string_view> batch(32);
      std::vector<std::string> values;
      std::vector<Status> statuses;
      // Every other batch into buffers large enough for any value.
      std::vector<std::vector<std::byte>> space(batch.size(), std::vector<std::byte>(256 << 10));
      std::vector<std::span<std::byte>> bufs(space.begin(), space.end());
      std::vector<size_t> vlens(batch.size());
      for (bool intoBuffers = false; !stop.load(); intoBuffers = !intoBuffers) {
        for (size_t j = 0; j < owned.size(); j++) ids[j] = pick(rng);
        // Every other batch in ascending key order (as a sorted batch: each key is
        // searched for first where the one before it was).
        if (intoBuffers) std::sort(ids.begin(), ids.end(), [&](int a, int b) { return key(a) < key(b); });
        for (size_t j = 0; j < owned.size(); j++) {
          owned[j] = key(ids[j]);
          batch[j] = owned[j];
        }
        if (intoBuffers) {
          statuses.resize(batch.size());
          if (!t_->getMany(batch, bufs, vlens, statuses).ok()) bad++;
        } else if (!t_->getMany(batch, &values, &statuses).ok()) {
          bad++;
        }
        for (size_t j = 0; j < batch.size(); j++) {
          const std::string_view v =
              intoBuffers ? std::string_view(reinterpret_cast<const char*>(space[j].data()), vlens[j]) : values[j];
          if (statuses[j].isNotFound()) {
            if (!v.empty() || ids[j] % 2 == 1) bad++;  // nothing left over from a torn copy
            continue;
          }
          uint32_t tag = 0;
          if (v.size() >= 4) std::memcpy(&tag, v.data(), 4);
          if (!statuses[j].ok() || !isValueOfTag(v) || (tag & 4095) != static_cast<uint32_t>(ids[j])) bad++;
          got++;
        }
      }
    });
  }
  std::thread writer([&] {
    Rng rng(20);
    for (int op = 0; op < scaled(150000, 10000); op++) {
      const int i = pick(rng);
      if (i % 2 == 0 && rng.chance(0.3)) {
        (void)t_->del(key(i));
        continue;
      }
      // One value in ten of any size (on a page of its own or several).
      if (!t_->put(key(i), valueOfTag(tagFor(i, rng, !rng.chance(0.1)))).ok()) bad++;
    }
  });
  writer.join();
  stop = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(got.load(), 0u);
  std::printf("[ getMany  ] %llu values read while the writer ran\n", static_cast<unsigned long long>(got.load()));
  expectCheckOk(db_.get());
}

}  // namespace
