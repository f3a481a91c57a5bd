// Zero-copy reads (issue 8 item 3) and range reads (item 4), C and C++: views of values
// of every size point into the pool (the same address on every view, the bytes intact),
// a writer of the viewed key waits for the release and the view keeps the old bytes
// meanwhile, readers holding views while writers replace and delete lose nothing and
// see no torn value, close waits for views, the callback form, byte ranges, bad input.
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../e2e/test_util.hpp"
#include "tagged_values.hpp"
#include "vmstore.h"

namespace {

using namespace vmstest;
using vmstore::Tree;
using vmstore::ValueView;
using namespace std::chrono_literals;

class ValueViewTest : public OneTreeTest {};

TEST_F(ValueViewTest, ViewsOfEverySizeAreTheBytesInPlace) {
  const size_t sizes[] = {0, 10, 1500, 3000, 4056, 4057, 100000, 5 << 20};
  for (size_t n : sizes) VMS_ASSERT_OK(t_->put("k" + std::to_string(n), patternedValue('a', n)));
  for (size_t n : sizes) {
    std::string k = "k" + std::to_string(n);
    ValueView a;
    VMS_ASSERT_OK(t_->getView(k, &a));
    ASSERT_TRUE(a.held());
    ASSERT_EQ(a.size(), n);
    EXPECT_TRUE(a.view() == patternedValue('a', n)) << n;
    ValueView b;  // a second view at once (both shared): the same bytes, not a copy
    VMS_ASSERT_OK(t_->getView(k, &b));
    EXPECT_EQ(a.data(), b.data()) << n;
    b.release();
    EXPECT_FALSE(b.held());
  }
  ValueView none;
  EXPECT_TRUE(t_->getView("absent", &none).isNotFound());
  EXPECT_FALSE(none.held());
  // Moving hands the hold over; assigning over a held view releases it.
  ValueView v;
  VMS_ASSERT_OK(t_->getView("k100000", &v));
  ValueView w = std::move(v);
  EXPECT_FALSE(v.held());
  EXPECT_TRUE(w.held());
  VMS_ASSERT_OK(t_->getView("k10", &w));
  EXPECT_EQ(w.size(), 10u);
}

TEST_F(ValueViewTest, AWriterOfTheViewedKeyWaitsAndTheViewKeepsTheOldBytes) {
  for (size_t n : {size_t{20}, size_t{3000}, size_t{300000}}) {
    std::string k = "w" + std::to_string(n);
    VMS_ASSERT_OK(t_->put(k, patternedValue('o', n)));
    ValueView view;
    VMS_ASSERT_OK(t_->getView(k, &view));
    std::atomic<int> phase{0};
    std::thread writer([&] {
      phase = 1;
      EXPECT_TRUE(t_->put(k, patternedValue('n', n)).ok());
      phase = 2;
    });
    while (phase.load() == 0) std::this_thread::yield();
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(phase.load(), 1) << n << ": the put went on while the value was held";
    EXPECT_TRUE(view.view() == patternedValue('o', n)) << n;
    view.release();
    writer.join();
    std::string got;
    VMS_ASSERT_OK(t_->get(k, &got));
    EXPECT_TRUE(got == patternedValue('n', n)) << n;
  }
}

TEST_F(ValueViewTest, ReadersHoldingViewsWhileWritersReplaceAndDelete) {
  const int keys = 6;
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<uint64_t> views{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; r++) {
    threads.emplace_back([&, r] {
      Rng rng(50 + r);
      while (!stop.load()) {
        ValueView v;
        Status s = t_->getView("k" + std::to_string(rng.uniform(0, keys - 1)), &v);
        if (s.isNotFound()) continue;
        if (!s.ok()) {
          bad++;
          continue;
        }
        if (rng.chance(0.3)) std::this_thread::sleep_for(100us);  // hold it a while
        if (!isValueOfTag(v.view())) bad++;
        views++;
      }
    });
  }
  std::thread writer([&] { replaceAndDelete(t_, keys, scaled(1000, 300), 60, &bad); });
  writer.join();
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(views.load(), 0u);
  expectCheckOk(db_.get());
}

TEST_F(ValueViewTest, ReadCallbackAndByteRanges) {
  std::string big = patternedValue('r', 200000);
  VMS_ASSERT_OK(t_->put("big", big));
  VMS_ASSERT_OK(t_->put("small", "hello"));
  size_t seen = 0;
  VMS_ASSERT_OK(t_->read("big", [&](std::string_view v) { seen = v == big ? v.size() : 1; }));
  EXPECT_EQ(seen, big.size());
  EXPECT_TRUE(t_->read("absent", [&](std::string_view) { seen = 0; }).isNotFound());
  EXPECT_EQ(seen, big.size());
  EXPECT_EQ(t_->read("big", nullptr).code(), Status::Code::kInvalidArgument);

  std::vector<std::byte> buf(1000);
  size_t copied = 0, vlen = 0;
  VMS_ASSERT_OK(t_->getRange("big", 150000, buf, &copied, &vlen));
  EXPECT_EQ(copied, 1000u);
  EXPECT_EQ(vlen, big.size());
  EXPECT_EQ(std::memcmp(buf.data(), big.data() + 150000, 1000), 0);
  VMS_ASSERT_OK(t_->getRange("big", big.size() - 10, buf, &copied, &vlen));
  EXPECT_EQ(copied, 10u);
  VMS_ASSERT_OK(t_->getRange("big", big.size() + 5, buf, &copied, &vlen));
  EXPECT_EQ(copied, 0u);
  VMS_ASSERT_OK(t_->getRange("small", 1, std::span<std::byte>(buf).first(3), &copied, &vlen));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(buf.data()), copied), "ell");
  EXPECT_TRUE(t_->getRange("absent", 0, buf, &copied, &vlen).isNotFound());
  EXPECT_EQ(t_->getRange("big", 0, buf, nullptr, &vlen).code(), Status::Code::kInvalidArgument);
}

TEST_F(ValueViewTest, BadInputIsRefused) {
  ValueView v;
  EXPECT_EQ(t_->getView("", &v).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(t_->getView(std::string(vmstore::kMaxKeySize + 1, 'k'), &v).code(), Status::Code::kTooBig);
  EXPECT_EQ(t_->getView("k", nullptr).code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(v.held());
}

// ---- C API ------------------------------------------------------------------------

int sumBytes(void* ctx, const void* value, size_t vlen) {
  auto* sum = static_cast<uint64_t*>(ctx);
  for (size_t i = 0; i < vlen; i++) *sum += static_cast<const unsigned char*>(value)[i];
  return vlen == 7 ? 42 : 0;  // a nonzero return is handed back
}

TEST(ValueViewC, ViewReadRangeAndBadInput) {
  CDb c;
  std::string big = patternedValue('c', 70000);
  ASSERT_EQ(vms_put(c.t, "big", 3, big.data(), big.size()), VMS_OK);
  ASSERT_EQ(vms_put(c.t, "seven", 5, "1234567", 7), VMS_OK);
  vms_view* view = nullptr;
  const void* value = nullptr;
  size_t vlen = 0;
  ASSERT_EQ(vms_get_view(c.t, "big", 3, &view, &value, &vlen), VMS_OK);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(vlen, big.size());
  EXPECT_EQ(std::memcmp(value, big.data(), vlen), 0);
  vms_view_release(view);
  vms_view_release(nullptr);  // harmless
  view = reinterpret_cast<vms_view*>(1);
  EXPECT_EQ(vms_get_view(c.t, "nope", 4, &view, &value, &vlen), VMS_NOTFOUND);
  EXPECT_EQ(view, nullptr);

  uint64_t sum = 0;
  EXPECT_EQ(vms_read(c.t, "seven", 5, sumBytes, &sum), 42);
  EXPECT_EQ(sum, uint64_t{'1' + '2' + '3' + '4' + '5' + '6' + '7'});
  sum = 0;
  EXPECT_EQ(vms_read(c.t, "big", 3, sumBytes, &sum), VMS_OK);
  uint64_t want = 0;
  for (unsigned char ch : big) want += ch;
  EXPECT_EQ(sum, want);
  EXPECT_EQ(vms_read(c.t, "nope", 4, sumBytes, &sum), VMS_NOTFOUND);

  char buf[16];
  size_t copied = 0;
  ASSERT_EQ(vms_get_range(c.t, "big", 3, 60000, buf, sizeof buf, &copied, &vlen), VMS_OK);
  EXPECT_EQ(copied, sizeof buf);
  EXPECT_EQ(std::memcmp(buf, big.data() + 60000, sizeof buf), 0);
  EXPECT_EQ(vms_get_range(c.t, "big", 3, 0, nullptr, 0, &copied, &vlen), VMS_OK);
  EXPECT_EQ(copied, 0u);
  EXPECT_EQ(vlen, big.size());

  EXPECT_EQ(vms_get_view(nullptr, "k", 1, &view, &value, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_get_view(c.t, nullptr, 1, &view, &value, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_get_view(c.t, "k", 1, nullptr, &value, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_get_view(c.t, "k", 1, &view, nullptr, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_get_view(c.t, "k", 1, &view, &value, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_get_view(c.t, "", 0, &view, &value, &vlen), VMS_EINVAL);
  std::string longKey(VMS_MAX_KEY_SIZE + 1, 'k');
  EXPECT_EQ(vms_get_view(c.t, longKey.data(), longKey.size(), &view, &value, &vlen), VMS_ETOOBIG);
  EXPECT_EQ(vms_read(c.t, "k", 1, nullptr, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_read(nullptr, "k", 1, sumBytes, &sum), VMS_EINVAL);
  EXPECT_EQ(vms_get_range(c.t, "big", 3, 0, nullptr, 5, &copied, &vlen), VMS_EINVAL);
  EXPECT_EQ(vms_get_range(c.t, "big", 3, 0, buf, 5, nullptr, &vlen), VMS_EINVAL);
}

TEST(ValueViewC, CloseWaitsForTheViewsOfItsDatabase) {
  CDb c;
  ASSERT_EQ(vms_put(c.t, "k", 1, "v", 1), VMS_OK);
  vms_view* view = nullptr;
  const void* value = nullptr;
  size_t vlen = 0;
  ASSERT_EQ(vms_get_view(c.t, "k", 1, &view, &value, &vlen), VMS_OK);
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    EXPECT_EQ(vms_close(c.db), VMS_OK);
    closed = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(closed.load()) << "close went on while a view was held";
  EXPECT_EQ(std::string(static_cast<const char*>(value), vlen), "v");
  vms_view_release(view);
  closer.join();
  EXPECT_TRUE(closed.load());
  c.db = nullptr;
}

}  // namespace
