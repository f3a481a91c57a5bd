// Writing a value in place (issue 8 item 4): Tree::putReserve / vms_put_reserve hand the
// fill function the value's final bytes (a view taken afterwards points at the very
// same memory), a fill that fails or throws changes nothing and leaves the database
// whole, reserved writes survive a crash (logged, and too large for the log), bad input.
#include <cstring>
#include <stdexcept>
#include <string>

#include "../e2e/test_util.hpp"
#include "vmstore.h"

namespace {

using namespace vmstest;
using vmstore::Tree;

std::string pattern(size_t n, char seed) {
  std::string v(n, '\0');
  for (size_t i = 0; i < n; i++) v[i] = static_cast<char>(seed + i * 7);
  return v;
}

Status fillWith(std::span<std::byte> space, const std::string& v, const std::byte** where = nullptr) {
  if (space.size() != v.size()) return Status::InvalidArgument("wrong size");
  for (std::byte b : space) {
    if (b != std::byte{0}) return Status::InvalidArgument("space not zeroed");
  }
  std::memcpy(space.data(), v.data(), v.size());
  if (where != nullptr) *where = space.data();
  return Status::OK();
}

TEST(PutReserve, FillsTheValueInItsFinalPlace) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=64M");
  ASSERT_TRUE(db);
  Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  for (size_t n : {size_t{0}, size_t{10}, size_t{3000}, size_t{100000}, size_t{3} << 20}) {
    std::string k = "k" + std::to_string(n);
    std::string v = pattern(n, 'a');
    const std::byte* where = nullptr;
    VMS_ASSERT_OK(t->putReserve(k, n, [&](std::span<std::byte> s) { return fillWith(s, v, &where); }));
    std::string got;
    VMS_ASSERT_OK(t->get(k, &got));
    EXPECT_TRUE(got == v) << n;
    if (n > 2000) {  // a page of its own: filled where it lives
      vmstore::ValueView view;
      VMS_ASSERT_OK(t->getView(k, &view));
      EXPECT_EQ(view.data(), where) << n << ": the value was copied after fill";
    }
  }
  // Replacing through putReserve frees the old value (the check finds no leak).
  VMS_ASSERT_OK(t->putReserve("k100000", 50000, [&](std::span<std::byte> s) { return fillWith(s, pattern(50000, 'b')); }));
  // Once more: the new value takes the memory of the 100,000-byte one freed just now
  // (its frames stay in the pool), which must reach fill zeroed all the same.
  VMS_ASSERT_OK(t->putReserve("k100000", 50000, [&](std::span<std::byte> s) { return fillWith(s, pattern(50000, 'b')); }));
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
  db = openDb(dir, "pool_size=64M");
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string got;
  VMS_ASSERT_OK(t->get("k100000", &got));
  EXPECT_TRUE(got == pattern(50000, 'b'));
  VMS_ASSERT_OK(t->get("k3145728", &got));
  EXPECT_TRUE(got == pattern(3 << 20, 'a'));
  VMS_ASSERT_OK(db->close());
}

TEST(PutReserve, AFillThatFailsOrThrowsChangesNothing) {
  std::string dir = freshDir();
  auto db = openDb(dir, "pool_size=64M");
  ASSERT_TRUE(db);
  Tree* t;
  VMS_ASSERT_OK(db->openTree("", true, &t));
  VMS_ASSERT_OK(t->put("k", "old"));
  const uint64_t freeBefore = db->stats().free_pages;
  for (size_t n : {size_t{20}, size_t{200000}}) {
    Status s = t->putReserve("k", n, [](std::span<std::byte>) { return Status::NoSpace("mine"); });
    EXPECT_EQ(s.code(), Status::Code::kNoSpace);
    EXPECT_EQ(s.message(), "mine");
    EXPECT_THROW(t->putReserve("k", n, [](std::span<std::byte>) -> Status { throw std::runtime_error("boom"); }),
                 std::runtime_error);
    std::string got;
    VMS_ASSERT_OK(t->get("k", &got));
    EXPECT_EQ(got, "old");
  }
  EXPECT_GE(db->stats().free_pages, freeBefore) << "the pages of the abandoned values were freed";
  VMS_ASSERT_OK(db->sync());  // no log reservation was left open
  VMS_ASSERT_OK(t->put("k", "new"));
  expectCheckOk(db.get());
  // Bad input: refused before fill runs.
  bool called = false;
  auto fill = [&](std::span<std::byte>) {
    called = true;
    return Status::OK();
  };
  EXPECT_EQ(t->putReserve("", 10, fill).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(t->putReserve("k", vmstore::kMaxValueSize + 1, fill).code(), Status::Code::kTooBig);
  EXPECT_EQ(t->putReserve("k", 10, nullptr).code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(called);
  VMS_ASSERT_OK(db->close());
}

TEST(PutReserve, ReservedWritesSurviveACrash) {
  std::string dir = freshDir();
  const std::string config = "pool_size=64M,durability=sync,log_size=16M";
  {
    FaultScope faults;
    auto db = openDb(dir, config);
    ASSERT_TRUE(db);
    Tree* t;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    VMS_ASSERT_OK(t->putReserve("logged", 300000, [&](std::span<std::byte> s) { return fillWith(s, pattern(300000, 'l')); }));
    VMS_ASSERT_OK(t->putReserve("unlogged", 2 << 20, [&](std::span<std::byte> s) { return fillWith(s, pattern(2 << 20, 'u')); }));
    faults.io().powerCut(1, false);  // a crash: nothing more reaches the files
    db->close();
  }
  auto db = openDb(dir, config);
  ASSERT_TRUE(db);
  Tree* t;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string got;
  VMS_ASSERT_OK(t->get("logged", &got));
  EXPECT_TRUE(got == pattern(300000, 'l'));
  VMS_ASSERT_OK(t->get("unlogged", &got));
  EXPECT_TRUE(got == pattern(2 << 20, 'u'));
  expectCheckOk(db.get());
  VMS_ASSERT_OK(db->close());
}

int fillC(void* ctx, void* space, size_t vlen) {
  const auto* v = static_cast<const std::string*>(ctx);
  if (vlen != v->size()) return 77;
  std::memcpy(space, v->data(), vlen);
  return 0;
}
int refuseC(void*, void*, size_t) { return 5; }

TEST(PutReserveC, FillReturnCodesAndBadInput) {
  std::string dir = freshDir();
  vms_db* db = nullptr;
  ASSERT_EQ(vms_open(dir.c_str(), "pool_size=16M", &db), VMS_OK);
  vms_tree* t = nullptr;
  ASSERT_EQ(vms_tree_open(db, "", 1, &t), VMS_OK);
  std::string v = pattern(70000, 'c');
  ASSERT_EQ(vms_put_reserve(t, "k", 1, v.size(), fillC, &v), VMS_OK) << vms_last_error();
  std::string buf(v.size(), '\0');
  size_t vlen = 0;
  ASSERT_EQ(vms_get(t, "k", 1, buf.data(), buf.size(), &vlen), VMS_OK);
  EXPECT_TRUE(buf == v);
  EXPECT_EQ(vms_put_reserve(t, "k", 1, 10, refuseC, nullptr), 5) << "fill's code is returned as is";
  ASSERT_EQ(vms_get(t, "k", 1, buf.data(), buf.size(), &vlen), VMS_OK);
  EXPECT_EQ(vlen, v.size());
  EXPECT_EQ(vms_put_reserve(nullptr, "k", 1, 10, fillC, &v), VMS_EINVAL);
  EXPECT_EQ(vms_put_reserve(t, nullptr, 1, 10, fillC, &v), VMS_EINVAL);
  EXPECT_EQ(vms_put_reserve(t, "k", 1, 10, nullptr, nullptr), VMS_EINVAL);
  EXPECT_EQ(vms_put_reserve(t, "", 0, 10, fillC, &v), VMS_EINVAL);
  EXPECT_EQ(vms_put_reserve(t, "k", 1, VMS_MAX_VALUE_SIZE + 1, refuseC, nullptr), VMS_ETOOBIG);
  EXPECT_EQ(vms_close(db), VMS_OK);
}

}  // namespace
