// Unit tests of buffer/guards.hpp: optimistic guards and their validation, upgrades,
// child guards (parent validation, ids out of range), exclusive and shared guards.
#include "buffer/guards.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <vector>

#include "unit_util.hpp"

namespace {

using vmstore::internal::BufferManager;
using vmstore::internal::Counter;
using vmstore::internal::GuardO;
using vmstore::internal::GuardS;
using vmstore::internal::GuardX;
using vmstore::internal::Page;
using vmstore::internal::PageKind;
using vmstore::internal::PageState;
using vmstore::internal::Restart;
using vmstore::internal::StorageError;
using Code = vmstore::Status::Code;
using vmsunit::BufferEnv;

// What a guard operation ended with.
enum class Outcome { kOk, kRestart, kCorruption, kOtherError };

Outcome outcomeOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Restart&) {
    return Outcome::kRestart;
  } catch (const StorageError& e) {
    return e.status().code() == Code::kCorruption ? Outcome::kCorruption : Outcome::kOtherError;
  }
  return Outcome::kOk;
}

const char* name(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kRestart: return "Restart";
    case Outcome::kCorruption: return "StorageError(Corruption)";
    default: return "other StorageError";
  }
}

#define EXPECT_OUTCOME(expected, ...)                                          \
  do {                                                                         \
    Outcome got_ = outcomeOf([&] { __VA_ARGS__; });                            \
    EXPECT_EQ(got_, expected) << #__VA_ARGS__ << " ended with " << name(got_); \
  } while (0)

std::vector<uint64_t> allocPages(BufferManager& bm, size_t n) {
  std::vector<uint64_t> pids;
  for (size_t i = 0; i < n; i++) {
    Page* p = bm.allocPage(PageKind::kValue);
    p->payload[0] = static_cast<unsigned char>(i + 1);
    pids.push_back(p->header.pid);
    bm.unfixX(p->header.pid);
  }
  return pids;
}

uint64_t stateOf(BufferManager& bm, uint64_t pid) { return PageState::stateOf(bm.state(pid).load()); }

TEST(Guards, OptimisticValidatePassesWhenUntouched) {
  BufferEnv env;
  BufferManager& bm = *env.bm;
  auto pids = allocPages(bm, 2);
  GuardO<Page> o(bm, pids[0]);
  EXPECT_TRUE(o.held());
  EXPECT_EQ(o.pid(), pids[0]);
  EXPECT_EQ(o.get(), bm.pageAt(pids[0]));
  EXPECT_EQ(o->payload[0], 1);
  EXPECT_OUTCOME(Outcome::kOk, o.validate());
  // Shared locks, marks, and other pages changing keep it valid.
  { GuardS<Page> s(bm, pids[0]); EXPECT_OUTCOME(Outcome::kOk, o.validate()); }
  EXPECT_OUTCOME(Outcome::kOk, o.validate());
  ASSERT_TRUE(bm.state(pids[0]).tryMark(bm.state(pids[0]).load()));
  EXPECT_OUTCOME(Outcome::kOk, o.validate());
  { GuardX<Page> x(bm, pids[1]); x->payload[0] = 9; }
  EXPECT_OUTCOME(Outcome::kOk, o.validate());
  EXPECT_OUTCOME(Outcome::kOk, o.release());
  EXPECT_FALSE(o.held());
  EXPECT_OUTCOME(Outcome::kOk, o.validate());  // a released guard has nothing to validate
}

TEST(Guards, OptimisticValidateRestartsAfterWriter) {
  BufferEnv env;
  BufferManager& bm = *env.bm;
  auto pids = allocPages(bm, 1);
  GuardO<Page> o(bm, pids[0]);
  uint64_t restarts = bm.counters().sum(Counter::kRestarts);
  {
    GuardX<Page> x(bm, pids[0]);
    x->payload[0] = 42;
    EXPECT_OUTCOME(Outcome::kRestart, o.validate());  // while locked
  }
  EXPECT_OUTCOME(Outcome::kRestart, o.validate());  // after release: a new version
  EXPECT_GT(bm.counters().sum(Counter::kRestarts), restarts) << "restarts are counted";
  GuardO<Page> again(bm, pids[0]);
  EXPECT_EQ(again->payload[0], 42);
  EXPECT_OUTCOME(Outcome::kOk, again.validate());
}

TEST(Guards, OptimisticValidateRestartsAfterEviction) {
  BufferEnv env;
  BufferManager& bm = *env.bm;
  auto pids = allocPages(bm, 1);
  GuardO<Page> o(bm, pids[0]);
  ASSERT_TRUE(vmsunit::evictAll(bm, pids));
  EXPECT_OUTCOME(Outcome::kRestart, o.validate());
  // A new optimistic guard reads it back in.
  GuardO<Page> again(bm, pids[0]);
  EXPECT_EQ(again->payload[0], 1);
  EXPECT_OUTCOME(Outcome::kOk, again.validate());
}

TEST(Guards, GuardXMarksDirtyAndUnlocks) {
  BufferEnv env;
  BufferManager& bm = *env.bm;
  auto pids = allocPages(bm, 1);
  UNIT_ASSERT_OK(bm.flushAll());
  ASSERT_FALSE(BufferManager::isDirty(bm.pageAt(pids[0])));
  uint64_t v = PageState::versionOf(bm.state(pids[0]).load());
  {
    GuardX<Page> x(bm, pids[0]);
    EXPECT_EQ(stateOf(bm, pids[0]), PageState::kLocked);
    EXPECT_TRUE(BufferManager::isDirty(bm.pageAt(pids[0]))) << "GuardX implies markDirty";
  }
  EXPECT_EQ(stateOf(bm, pids[0]), PageState::kUnlocked);
  EXPECT_EQ(PageState::versionOf(bm.state(pids[0]).load()), v + 1);
  {
    GuardS<Page> s(bm, pids[0]);
    EXPECT_EQ(stateOf(bm, pids[0]), 1u);
    GuardS<Page> s2(bm, pids[0]);
    EXPECT_EQ(stateOf(bm, pids[0]), 2u);
  }
  EXPECT_EQ(stateOf(bm, pids[0]), PageState::kUnlocked);
  // Move assignment releases what the target held.
  GuardX<Page> a(bm, pids[0]);
  GuardX<Page> b;
  b = std::move(a);
  EXPECT_FALSE(a.held());
  EXPECT_TRUE(b.held());
  EXPECT_EQ(stateOf(bm, pids[0]), PageState::kLocked);
  b.release();
  EXPECT_EQ(stateOf(bm, pids[0]), PageState::kUnlocked);
}

TEST(Guards, UpgradeSucceedsWhenUnchanged) {
  BufferEnv env;
  BufferManager& bm = *env.bm;
  auto pids = allocPages(bm, 1);
  UNIT_ASSERT_OK(bm.flushAll());
  GuardO<Page> o(bm, pids[0]);
  uint64_t v = PageState::versionOf(o.version());
  {
    GuardX<Page> x(std::move(o));
    EXPECT_TRUE(x.held());
    EXPECT_FALSE(o.held()) << "the optimistic guard is consumed";
    EXPECT_EQ(stateOf(bm, pids[0]), PageState::kLocked);
    EXPECT_EQ(PageState::versionOf(bm.state(pids[0]).load()), v);
    EXPECT_TRUE(BufferManager::isDirty(bm.pageAt(pids[0])));
    x->payload[1] = 5;
  }
  EXPECT_EQ(bm.state(pids[0]).load(), PageState::make(PageState::kUnlocked, v + 1));
  // A mark set after the optimistic read began does not prevent the upgrade.
  GuardO<Page> o2(bm, pids[0]);
  ASSERT_TRUE(bm.state(pids[0]).tryMark(bm.state(pids[0]).load()));
  EXPECT_OUTCOME(Outcome::kOk, GuardX<Page> x(std::move(o2)));
  EXPECT_EQ(stateOf(bm, pids[0]), PageState::kUnlocked);
}

TEST(Guards, UpgradeRestartsWhenChanged) {
  BufferEnv env;
  BufferManager& bm = *env.bm;
  auto pids = allocPages(bm, 1);
  GuardO<Page> o(bm, pids[0]);
  { GuardX<Page> x(bm, pids[0]); x->payload[0] = 3; }
  EXPECT_OUTCOME(Outcome::kRestart, GuardX<Page> x(std::move(o)));
  EXPECT_FALSE(o.held());
  EXPECT_EQ(stateOf(bm, pids[0]), PageState::kUnlocked) << "a failed upgrade leaves no lock";
  // Never waits: a page shared-locked by somebody else restarts at once.
  GuardO<Page> o2(bm, pids[0]);
  {
    GuardS<Page> s(bm, pids[0]);
    EXPECT_OUTCOME(Outcome::kRestart, GuardX<Page> x(std::move(o2)));
    EXPECT_EQ(stateOf(bm, pids[0]), 1u);
  }
  // Nor does it take a page locked exclusively by somebody else.
  GuardO<Page> o3(bm, pids[0]);
  {
    GuardX<Page> other(bm, pids[0]);
    EXPECT_OUTCOME(Outcome::kRestart, GuardX<Page> x(std::move(o3)));
    EXPECT_EQ(stateOf(bm, pids[0]), PageState::kLocked);
  }
  EXPECT_EQ(stateOf(bm, pids[0]), PageState::kUnlocked);
  // An evicted page restarts too (the read would have seen zeros).
  GuardO<Page> o4(bm, pids[0]);
  ASSERT_TRUE(vmsunit::evictAll(bm, pids));
  EXPECT_OUTCOME(Outcome::kRestart, GuardX<Page> x(std::move(o4)));
  EXPECT_EQ(stateOf(bm, pids[0]), PageState::kEvicted);
}

TEST(Guards, ChildWithInvalidParentRestarts) {
  BufferEnv env;
  BufferManager& bm = *env.bm;
  auto pids = allocPages(bm, 3);
  const uint64_t parent = pids[0], child = pids[1], evictedChild = pids[2];
  {
    GuardO<Page> p(bm, parent);
    GuardO<Page> c(bm, child, p);  // valid parent: fine
    EXPECT_EQ(c->payload[0], 2);
    EXPECT_OUTCOME(Outcome::kOk, c.validate());
  }
  GuardO<Page> p(bm, parent);
  { GuardX<Page> x(bm, parent); x->payload[0] = 100; }
  EXPECT_OUTCOME(Outcome::kRestart, GuardO<Page> c(bm, child, p));
  // Ids out of range under a stale parent are a stale read, not damage.
  EXPECT_OUTCOME(Outcome::kRestart, GuardO<Page> c(bm, bm.pageCount(), p));
  EXPECT_OUTCOME(Outcome::kRestart, GuardO<Page> c(bm, 0, p));
  EXPECT_OUTCOME(Outcome::kRestart, GuardO<Page> c(bm, ~0ull >> 8, p));
  // An evicted child is not read in for a stale parent.
  ASSERT_TRUE(vmsunit::evictAll(bm, {evictedChild}));
  GuardO<Page> p2(bm, parent);
  { GuardX<Page> x(bm, parent); x->payload[0] = 101; }
  uint64_t misses = bm.counters().sum(Counter::kMisses);
  EXPECT_OUTCOME(Outcome::kRestart, GuardO<Page> c(bm, evictedChild, p2));
  EXPECT_EQ(bm.counters().sum(Counter::kMisses), misses) << "read in for an invalid parent";
  EXPECT_EQ(stateOf(bm, evictedChild), PageState::kEvicted);
}

TEST(Guards, ChildOutOfRangeWithValidParentIsCorruption) {
  BufferEnv env;
  BufferManager& bm = *env.bm;
  auto pids = allocPages(bm, 2);
  GuardO<Page> p(bm, pids[0]);
  EXPECT_OUTCOME(Outcome::kCorruption, GuardO<Page> c(bm, bm.pageCount(), p));
  EXPECT_OUTCOME(Outcome::kCorruption, GuardO<Page> c(bm, bm.pageCount() + 12345, p));
  EXPECT_OUTCOME(Outcome::kCorruption, GuardO<Page> c(bm, 0, p));  // page 0: the superblock
  EXPECT_OUTCOME(Outcome::kCorruption, GuardO<Page> c(bm, ~0ull >> 8, p));
  EXPECT_OUTCOME(Outcome::kOk, p.validate());  // the parent itself is untouched
  // Roots are checked too.
  EXPECT_OUTCOME(Outcome::kCorruption, GuardO<Page> r(bm, 0));
  EXPECT_OUTCOME(Outcome::kCorruption, GuardO<Page> r(bm, bm.pageCount()));
}

TEST(Guards, DamagedChildWithValidParentIsCorruption) {
  BufferEnv env;
  BufferManager& bm = *env.bm;
  auto pids = allocPages(bm, 2);
  UNIT_ASSERT_OK(bm.flushAll());
  int fd = ::open(env.dataPath().c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char byte = 0x5a;
  ASSERT_EQ(pwrite(fd, &byte, 1, static_cast<off_t>(pids[1] * 4096 + 2000)), 1);
  ASSERT_EQ(fdatasync(fd), 0);
  ::close(fd);
  ASSERT_TRUE(vmsunit::evictAll(bm, {pids[1]}));
  // The parent must stay resident while the child is read in (else the read is rightly a
  // Restart): used a few times, it is no policy's first victim (VMSTORE_TEST_POLICY).
  for (int i = 0; i < 5; i++) {
    bm.fixS(pids[0]);
    bm.unfixS(pids[0]);
  }
  GuardO<Page> p(bm, pids[0]);
  EXPECT_OUTCOME(Outcome::kCorruption, GuardO<Page> c(bm, pids[1], p));
  EXPECT_EQ(stateOf(bm, pids[1]), PageState::kEvicted);
  // With a stale parent the same read is a Restart instead.
  GuardO<Page> p2(bm, pids[0]);
  { GuardX<Page> x(bm, pids[0]); }
  EXPECT_OUTCOME(Outcome::kRestart, GuardO<Page> c(bm, pids[1], p2));
}

TEST(Guards, MoveOfOptimisticGuard) {
  BufferEnv env;
  BufferManager& bm = *env.bm;
  auto pids = allocPages(bm, 2);
  GuardO<Page> a(bm, pids[0]);
  GuardO<Page> b(std::move(a));
  EXPECT_FALSE(a.held());
  EXPECT_TRUE(b.held());
  EXPECT_EQ(b.pid(), pids[0]);
  { GuardX<Page> x(bm, pids[0]); }
  EXPECT_OUTCOME(Outcome::kOk, a.validate());
  EXPECT_OUTCOME(Outcome::kRestart, b.validate());
  b = GuardO<Page>(bm, pids[1]);
  EXPECT_OUTCOME(Outcome::kOk, b.validate());
}

}  // namespace
