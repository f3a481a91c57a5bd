// Zero-copy scans (Tree::scan, vms_scan): every entry from the start key on, in order,
// across leaves and with values of every size (stored in the leaf or in pages of their
// own), the values' bytes in place; stopping early; an exception from the function
// propagates with nothing held; reads inside the function; writers of the same tree in
// other threads while scans run (no deadlock, each value whole); bad input, C and C++.
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../e2e/test_util.hpp"
#include "vmstore.h"

namespace {

using namespace vmstest;
using vmstore::Status;
using vmstore::Tree;
using namespace std::chrono_literals;

std::string keyOf(unsigned i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "key%07u", i);
  return buf;
}

// Every 97th value is larger than a page (a page of its own); the rest fit the leaf.
std::string valueOf(unsigned i, unsigned round = 0) {
  size_t n = i % 97 == 0 ? 9000 + i % 5000 : 10 + i % 300;
  std::string v(n, static_cast<char>('a' + (i + round) % 26));
  std::memcpy(v.data(), &i, sizeof i);
  return v;
}

class ScanTest : public OneTreeTest {
 protected:
  void fill(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
      VMS_ASSERT_OK(t_->put(keyOf(i), valueOf(i)));
      model_[keyOf(i)] = valueOf(i);
    }
  }
  std::map<std::string, std::string> model_;
};

TEST_F(ScanTest, VisitsEveryEntryFromTheStartInOrderAcrossLeaves) {
  fill(6000);
  for (std::string start : {std::string(), keyOf(0), keyOf(2500), keyOf(2500) + "x", std::string("key"), keyOf(5999)}) {
    auto want = model_.lower_bound(start);
    size_t seen = 0;
    VMS_ASSERT_OK(t_->scan(start, [&](std::string_view key, std::string_view value) {
      EXPECT_NE(want, model_.end());
      if (want == model_.end()) return false;
      EXPECT_EQ(key, want->first);
      EXPECT_TRUE(value == want->second) << key;
      ++want;
      ++seen;
      return true;
    }));
    EXPECT_EQ(want, model_.end()) << "start " << start;
    EXPECT_EQ(seen, static_cast<size_t>(std::distance(model_.lower_bound(start), model_.end())));
  }
  size_t none = 0;
  VMS_ASSERT_OK(t_->scan("zzz", [&](std::string_view, std::string_view) { return ++none, true; }));
  EXPECT_EQ(none, 0u);
}

TEST_F(ScanTest, AnEmptyTreeVisitsNothing) {
  size_t seen = 0;
  VMS_ASSERT_OK(t_->scan("", [&](std::string_view, std::string_view) { return ++seen, true; }));
  EXPECT_EQ(seen, 0u);
}

TEST_F(ScanTest, StopsWhenTheFunctionSaysSo) {
  fill(500);
  std::vector<std::string> keys;
  VMS_ASSERT_OK(t_->scan(keyOf(100), [&](std::string_view key, std::string_view) {
    keys.emplace_back(key);
    return keys.size() < 3;
  }));
  EXPECT_EQ(keys, (std::vector<std::string>{keyOf(100), keyOf(101), keyOf(102)}));
}

TEST_F(ScanTest, ValuesAreTheBytesInPlace) {
  const std::string big(200000, 'b');
  VMS_ASSERT_OK(t_->put("big", big));
  VMS_ASSERT_OK(t_->put("small", "s"));
  vmstore::ValueView view;
  VMS_ASSERT_OK(t_->getView("big", &view));
  const char* inPool = view.view().data();
  view.release();
  const char* scanned = nullptr;
  VMS_ASSERT_OK(t_->scan("big", [&](std::string_view key, std::string_view value) {
    if (key == "big") {
      scanned = value.data();
      EXPECT_TRUE(value == big);
    }
    return true;
  }));
  EXPECT_EQ(scanned, inPool);  // not a copy
}

TEST_F(ScanTest, AnExceptionPropagatesWithNothingHeld) {
  fill(300);
  EXPECT_THROW(
      {
        Status st = t_->scan(keyOf(5), [&](std::string_view key, std::string_view) -> bool {
          if (key == keyOf(8)) throw std::runtime_error("stop here");
          return true;
        });
        (void)st;
      },
      std::runtime_error);
  // A write to the leaf the scan held goes through (it would wait forever otherwise);
  // so does a bad_alloc-typed exception, which the library would not mistake for its own.
  auto writer = std::async(std::launch::async, [&] { return t_->put(keyOf(8), "after"); });
  ASSERT_EQ(writer.wait_for(10s), std::future_status::ready) << "the leaf is still held";
  VMS_ASSERT_OK(writer.get());
  EXPECT_THROW(
      { (void)t_->scan("", [](std::string_view, std::string_view) -> bool { throw std::bad_alloc(); }); },
      std::bad_alloc);
  VMS_ASSERT_OK(t_->put(keyOf(0), "after"));
}

TEST_F(ScanTest, ReadsInsideTheFunctionAreFine) {
  fill(400);
  Tree* other = nullptr;
  VMS_ASSERT_OK(db_->openTree("other", true, &other));
  VMS_ASSERT_OK(other->put("x", "y"));
  size_t seen = 0;
  VMS_ASSERT_OK(t_->scan(keyOf(10), [&](std::string_view key, std::string_view value) {
    std::string again;
    EXPECT_TRUE(t_->get(key, &again).ok());
    EXPECT_TRUE(again == value);
    std::string y;
    EXPECT_TRUE(other->get("x", &y).ok());
    return ++seen < 50;
  }));
  EXPECT_EQ(seen, 50u);
}

// Writers of the same tree in other threads while scans run: nothing deadlocks, keys come
// in ascending order, and every value is one of its key's whole values.
TEST_F(ScanTest, WritersOfTheSameTreeWhileScansRun) {
  const unsigned n = 3000;
  fill(n);
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (unsigned w = 0; w < 2; w++) {
    writers.emplace_back([&, w] {
      for (unsigned round = 1; !stop.load(); round++) {
        for (unsigned i = w; i < n && !stop.load(); i += 7) {
          Status st = (i + round) % 5 == 0 ? t_->del(keyOf(i)) : t_->put(keyOf(i), valueOf(i, round));
          EXPECT_TRUE(st.ok() || st.isNotFound()) << st.toString();
        }
      }
    });
  }
  auto deadline = std::chrono::steady_clock::now() + 2s;
  unsigned scans = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string last;
    VMS_ASSERT_OK(t_->scan("", [&](std::string_view key, std::string_view value) {
      EXPECT_LT(last, key);
      last = key;
      unsigned i = 0;
      EXPECT_GE(value.size(), sizeof i);
      std::memcpy(&i, value.data(), sizeof i);
      EXPECT_EQ(key, keyOf(i));
      bool whole = false;
      for (unsigned round = 0; round < 26 && !whole; round++) whole = value == valueOf(i, round);
      EXPECT_TRUE(whole) << key;
      return true;
    }));
    scans++;
  }
  stop = true;
  for (auto& w : writers) w.join();
  EXPECT_GT(scans, 0u);
}

TEST_F(ScanTest, BadInputIsRefused) {
  EXPECT_EQ(t_->scan("", nullptr, nullptr).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(t_->scan(std::string(vmstore::kMaxKeySize + 1, 'k'), [](std::string_view, std::string_view) { return true; })
                .code(),
            Status::Code::kTooBig);
}

// ---- C API ------------------------------------------------------------------------

struct Collected {
  std::vector<std::string> keys;
  size_t valueBytes = 0;
  size_t stopAfter = ~size_t{0};
};

int collect(void* ctx, const void* key, size_t klen, const void* value, size_t vlen) {
  auto* c = static_cast<Collected*>(ctx);
  (void)value;
  c->keys.emplace_back(static_cast<const char*>(key), klen);
  c->valueBytes += vlen;
  return c->keys.size() >= c->stopAfter ? 7 : 0;  // a nonzero return stops and is handed back
}

TEST(ScanC, ScansStopsAndRefusesBadInput) {
  CDb c;
  vms_tree* t = c.t;
  std::string big(50000, 'v');
  ASSERT_EQ(vms_put(t, "a", 1, "1", 1), VMS_OK);
  ASSERT_EQ(vms_put(t, "b", 1, big.data(), big.size()), VMS_OK);
  ASSERT_EQ(vms_put(t, "c", 1, "333", 3), VMS_OK);

  Collected all;
  EXPECT_EQ(vms_scan(t, nullptr, 0, collect, &all), VMS_OK);
  EXPECT_EQ(all.keys, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(all.valueBytes, 1 + big.size() + 3);

  Collected fromB;
  EXPECT_EQ(vms_scan(t, "b", 1, collect, &fromB), VMS_OK);
  EXPECT_EQ(fromB.keys, (std::vector<std::string>{"b", "c"}));

  Collected two;
  two.stopAfter = 2;
  EXPECT_EQ(vms_scan(t, "", 0, collect, &two), 7);
  EXPECT_EQ(two.keys.size(), 2u);

  EXPECT_EQ(vms_scan(nullptr, nullptr, 0, collect, &all), VMS_EINVAL);
  EXPECT_EQ(vms_scan(t, nullptr, 0, nullptr, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_scan(t, nullptr, 3, collect, &all), VMS_EINVAL);
  std::string longKey(VMS_MAX_KEY_SIZE + 1, 'k');
  EXPECT_EQ(vms_scan(t, longKey.data(), longKey.size(), collect, &all), VMS_ETOOBIG);
}

}  // namespace
