// Optimistic zero-copy reads (Tree::readOptimistic, vms_read_optimistic): the value in
// place for every size, resident or read in; writers never wait for a reader, and a run
// that a write overtook runs again and then sees the new value; readers racing writers
// that replace and delete end every call on a whole, current value; an exception of the
// last run propagates; bad input; the C form.
#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../e2e/test_util.hpp"
#include "tagged_values.hpp"
#include "vmstore.h"

namespace {

using namespace vmstest;
using vmstore::ValueView;
using namespace std::chrono_literals;

class ReadOptimisticTest : public OneTreeTest {};

TEST_F(ReadOptimisticTest, EverySizeIsReadInPlace) {
  const size_t sizes[] = {0, 10, 1500, 3000, 4056, 4057, 100000, 5 << 20};
  for (size_t n : sizes) VMS_ASSERT_OK(t_->put("k" + std::to_string(n), patternedValue('a', n)));
  for (size_t n : sizes) {
    const std::string k = "k" + std::to_string(n);
    bool same = false;
    const char* at = nullptr;
    VMS_ASSERT_OK(t_->readOptimistic(k, [&](std::string_view v) {
      same = v == patternedValue('a', n);
      at = v.data();
    }));
    EXPECT_TRUE(same) << n;
    if (n == 0) continue;
    ValueView view;  // the same bytes a view holds: in place, not a copy
    VMS_ASSERT_OK(t_->getView(k, &view));
    EXPECT_EQ(static_cast<const void*>(at), static_cast<const void*>(view.data())) << n;
  }
  int runs = 0;
  EXPECT_TRUE(t_->readOptimistic("absent", [&](std::string_view) { runs++; }).isNotFound());
  EXPECT_EQ(runs, 0);
}

// A pool of 16 MiB and 40 MiB of values: most are on storage when read, and are read in
// (held shared for that one run).
class ReadOptimisticSmallPoolTest : public OneTreeTest {
  std::string config() const override { return "pool_size=16M"; }
};

TEST_F(ReadOptimisticSmallPoolTest, ValuesOnStorageAreReadIn) {
  const int keys = 40;
  for (int i = 0; i < keys; i++) VMS_ASSERT_OK(t_->put("k" + std::to_string(i), patternedValue('a' + i % 26, 1 << 20)));
  for (int i = 0; i < 400; i++) VMS_ASSERT_OK(t_->put("s" + std::to_string(i), patternedValue('s', 300)));
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < keys; i++) {
      bool same = false;
      VMS_ASSERT_OK(t_->readOptimistic("k" + std::to_string(i),
                                       [&](std::string_view v) { same = v == patternedValue('a' + i % 26, 1 << 20); }));
      EXPECT_TRUE(same) << i;
    }
  }
  EXPECT_GT(db_->stats().evictions, 0u) << "the values were meant not to fit in the pool";
}

// The difference from a view: nothing is held while fn runs, so a put of the same key
// goes on meanwhile, and the run it overtook runs again and sees the new value.
TEST_F(ReadOptimisticTest, AWriterNeverWaitsAndTheOvertakenRunIsRepeated) {
  for (size_t n : {size_t{20}, size_t{3000}, size_t{300000}}) {
    const std::string k = "w" + std::to_string(n);
    VMS_ASSERT_OK(t_->put(k, patternedValue('o', n)));
    std::atomic<bool> written{false};
    std::thread writer;
    int runs = 0;
    bool lastSawNew = false;
    VMS_ASSERT_OK(t_->readOptimistic(k, [&](std::string_view v) {
      if (++runs == 1) {
        writer = std::thread([&] {
          EXPECT_TRUE(t_->put(k, patternedValue('n', n)).ok());
          written = true;
        });
        for (int i = 0; i < 2000 && !written.load(); i++) std::this_thread::sleep_for(1ms);
        EXPECT_TRUE(written.load()) << n << ": the put waited for an optimistic reader";
      }
      lastSawNew = v == patternedValue('n', n);
    }));
    writer.join();
    EXPECT_GE(runs, 2) << n << ": the run that the put overtook was not repeated";
    EXPECT_TRUE(lastSawNew) << n << ": the last run did not see the value the put stored";
  }
}

// durability=async: the writer does not wait for a log flush per put, so its writes come
// as fast as the readers let it (under sync a sanitizer build took minutes).
class ReadOptimisticRaceTest : public OneTreeTest {
  std::string config() const override { return "pool_size=64M,durability=async"; }
};

TEST_F(ReadOptimisticRaceTest, ReadersRacingWritersEndOnWholeCurrentValues) {
  const int keys = 6;
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<uint64_t> calls{0}, runs{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; r++) {
    threads.emplace_back([&, r] {
      Rng rng(70 + r);
      while (!stop.load()) {
        // Each run starts over: only what the last run found counts.
        bool whole = false;
        Status s = t_->readOptimistic("k" + std::to_string(rng.uniform(0, keys - 1)), [&](std::string_view v) {
          runs++;
          whole = isValueOfTag(v);  // untrusted: a torn run may see any length or bytes
        });
        if (s.isNotFound()) continue;
        if (!s.ok() || !whole) bad++;
        calls++;
      }
    });
  }
  std::thread writer([&] { replaceAndDelete(t_, keys, scaled(3000, 600), 80, &bad); });
  writer.join();
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(calls.load(), 0u);
  std::printf("[ optimistic ] %llu calls, %llu runs of fn\n", static_cast<unsigned long long>(calls.load()),
              static_cast<unsigned long long>(runs.load()));
  expectCheckOk(db_.get());
}

TEST_F(ReadOptimisticTest, AnExceptionOfTheLastRunPropagates) {
  VMS_ASSERT_OK(t_->put("k", "value"));
  EXPECT_THROW((void)t_->readOptimistic("k", [](std::string_view) { throw std::runtime_error("from fn"); }),
               std::runtime_error);
  // Nothing is left held: the key can be written and read again.
  VMS_ASSERT_OK(t_->put("k", "other"));
  std::string got;
  VMS_ASSERT_OK(t_->get("k", &got));
  EXPECT_EQ(got, "other");
}

TEST_F(ReadOptimisticTest, BadInputIsRefused) {
  int runs = 0;
  auto fn = [&](std::string_view) { runs++; };
  EXPECT_EQ(t_->readOptimistic("", fn).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(t_->readOptimistic(std::string(vmstore::kMaxKeySize + 1, 'k'), fn).code(), Status::Code::kTooBig);
  EXPECT_EQ(t_->readOptimistic("k", nullptr, nullptr).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(runs, 0);
}

// ---- C API ------------------------------------------------------------------------

int sumBytes(void* ctx, const void* value, size_t vlen) {
  auto* sum = static_cast<uint64_t*>(ctx);
  *sum = 0;  // every run starts over
  for (size_t i = 0; i < vlen; i++) *sum += static_cast<const unsigned char*>(value)[i];
  return vlen == 7 ? 42 : 0;  // a nonzero return of the last run is handed back
}

TEST(ReadOptimisticC, ReadsAndBadInput) {
  CDb c;
  std::string big = patternedValue('c', 70000);
  ASSERT_EQ(vms_put(c.t, "big", 3, big.data(), big.size()), VMS_OK);
  ASSERT_EQ(vms_put(c.t, "seven", 5, "1234567", 7), VMS_OK);
  uint64_t sum = 0;
  EXPECT_EQ(vms_read_optimistic(c.t, "seven", 5, sumBytes, &sum), 42);
  EXPECT_EQ(sum, uint64_t{'1' + '2' + '3' + '4' + '5' + '6' + '7'});
  EXPECT_EQ(vms_read_optimistic(c.t, "big", 3, sumBytes, &sum), VMS_OK);
  uint64_t want = 0;
  for (unsigned char ch : big) want += ch;
  EXPECT_EQ(sum, want);
  EXPECT_EQ(vms_read_optimistic(c.t, "nope", 4, sumBytes, &sum), VMS_NOTFOUND);
  EXPECT_EQ(vms_read_optimistic(c.t, "k", 1, nullptr, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_read_optimistic(nullptr, "k", 1, sumBytes, &sum), VMS_EINVAL);
  EXPECT_EQ(vms_read_optimistic(c.t, nullptr, 1, sumBytes, &sum), VMS_EINVAL);
  EXPECT_EQ(vms_read_optimistic(c.t, "", 0, sumBytes, &sum), VMS_EINVAL);
  std::string longKey(VMS_MAX_KEY_SIZE + 1, 'k');
  EXPECT_EQ(vms_read_optimistic(c.t, longKey.data(), longKey.size(), sumBytes, &sum), VMS_ETOOBIG);
}

}  // namespace
