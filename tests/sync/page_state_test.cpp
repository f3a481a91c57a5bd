// Unit tests of sync/page_state.hpp: the 64-bit page state word (lock state, parked bit,
// version), its lock transitions, optimistic validation and waiting (spin, then futex).
#include "sync/page_state.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "unit_util.hpp"

namespace {

using vmstore::internal::PageState;
using namespace std::chrono_literals;

constexpr auto kDeadline = 10s;  // only so that a broken wake-up fails instead of hanging

// A page state that is unlocked at version `version` (>= 1: the first unlock makes 1).
std::shared_ptr<PageState> unlockedAt(uint64_t version) {
  auto ps = std::make_shared<PageState>();
  ps->initEvicted();
  for (uint64_t v = 1; v < version; v++) {
    EXPECT_TRUE(ps->tryLockX(ps->load()));
    ps->unlockXEvicted();
  }
  EXPECT_TRUE(ps->tryLockX(ps->load()));
  ps->unlockX();  // one more version
  EXPECT_EQ(ps->load(), PageState::make(PageState::kUnlocked, version));
  return ps;
}

// Polls pred until it holds or the deadline passes; true if it held.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = kDeadline) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Runs fn on a thread. join() waits a bounded time; a thread that did not finish by
// then is reported and detached (it only holds shared_ptrs, never the test's stack).
class Waiter {
 public:
  template <class Fn>
  explicit Waiter(Fn fn) : done_(std::make_shared<std::atomic<bool>>(false)) {
    auto done = done_;
    thread_ = std::thread([fn = std::move(fn), done]() mutable {
      fn();
      done->store(true);
    });
  }
  ~Waiter() {
    if (thread_.joinable()) thread_.detach();
  }
  bool done() const { return done_->load(); }
  // True when the thread finished within the deadline.
  bool join() {
    if (!eventually([&] { return done(); })) {
      thread_.detach();
      return false;
    }
    thread_.join();
    return true;
  }

 private:
  std::shared_ptr<std::atomic<bool>> done_;
  std::thread thread_;
};

TEST(PageState, Encoding) {
  EXPECT_EQ(PageState::kMaxShared, 252u);
  EXPECT_EQ(PageState::kLocked, 253u);
  EXPECT_EQ(PageState::kMarked, 254u);
  EXPECT_EQ(PageState::kEvicted, 255u);

  for (uint64_t s : {PageState::kUnlocked, uint64_t{1}, uint64_t{100}, PageState::kMaxShared,
                     PageState::kLocked, PageState::kMarked, PageState::kEvicted}) {
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{12345}, PageState::kVersionMask}) {
      uint64_t w = PageState::make(s, v);
      EXPECT_EQ(PageState::stateOf(w), s);
      EXPECT_EQ(PageState::versionOf(w), v);
      EXPECT_FALSE(PageState::isParked(w));
      // The parked bit is neither state nor version.
      uint64_t p = w | PageState::kParkedBit;
      EXPECT_TRUE(PageState::isParked(p));
      EXPECT_EQ(PageState::stateOf(p), s);
      EXPECT_EQ(PageState::versionOf(p), v);
    }
  }
  // The version is 55 bits: make() drops what does not fit, never touching parked/state.
  EXPECT_EQ(PageState::kParkedBit, 1ull << 55);
  EXPECT_EQ(PageState::kVersionMask, (1ull << 55) - 1);
  uint64_t w = PageState::make(PageState::kUnlocked, ~0ull);
  EXPECT_EQ(PageState::stateOf(w), PageState::kUnlocked);
  EXPECT_FALSE(PageState::isParked(w));
  EXPECT_EQ(PageState::versionOf(w), PageState::kVersionMask);
  // nextVersion wraps within the version bits.
  EXPECT_EQ(PageState::nextVersion(PageState::make(PageState::kLocked, 7)), 8u);
  EXPECT_EQ(PageState::nextVersion(PageState::make(PageState::kLocked, PageState::kVersionMask)), 0u);
  EXPECT_EQ(PageState::nextVersion(PageState::make(PageState::kLocked, 7) | PageState::kParkedBit), 8u);
}

TEST(PageState, InitEvicted) {
  PageState ps;
  ps.initEvicted();
  EXPECT_EQ(ps.load(), PageState::make(PageState::kEvicted, 0));
}

TEST(PageState, LockXAndUnlockXIncrementsVersion) {
  PageState ps;
  ps.initEvicted();
  uint64_t w = ps.load();
  ASSERT_TRUE(ps.tryLockX(w));  // evicted -> locked (read-in)
  EXPECT_EQ(PageState::stateOf(ps.load()), PageState::kLocked);
  EXPECT_EQ(PageState::versionOf(ps.load()), 0u) << "locking keeps the version";
  EXPECT_FALSE(ps.tryLockX(ps.load())) << "locked is not lockable";
  EXPECT_FALSE(ps.tryLockS(ps.load()));
  ps.unlockX();
  EXPECT_EQ(ps.load(), PageState::make(PageState::kUnlocked, 1));

  // From unlocked, repeatedly: every exclusive unlock is a new version.
  for (uint64_t v = 1; v < 20; v++) {
    uint64_t before = ps.load();
    ASSERT_TRUE(ps.tryLockX(before));
    EXPECT_EQ(ps.load(), PageState::make(PageState::kLocked, v));
    ps.unlockX();
    EXPECT_EQ(ps.load(), PageState::make(PageState::kUnlocked, v + 1));
  }
  // A stale observed word fails (the CAS compares the whole word).
  uint64_t stale = PageState::make(PageState::kUnlocked, 3);
  EXPECT_FALSE(ps.tryLockX(stale));
  EXPECT_EQ(ps.load(), PageState::make(PageState::kUnlocked, 20));
}

TEST(PageState, LockXFromMarked) {
  auto ps = unlockedAt(4);
  uint64_t w = ps->load();
  ASSERT_TRUE(ps->tryMark(w));
  w = ps->load();
  ASSERT_EQ(PageState::stateOf(w), PageState::kMarked);
  ASSERT_TRUE(ps->tryLockX(w));
  EXPECT_EQ(ps->load(), PageState::make(PageState::kLocked, PageState::versionOf(w)));
  ps->unlockX();
}

TEST(PageState, UnlockXEvicted) {
  auto ps = unlockedAt(9);
  uint64_t v = PageState::versionOf(ps->load());
  ASSERT_TRUE(ps->tryLockX(ps->load()));
  ps->unlockXEvicted();
  EXPECT_EQ(ps->load(), PageState::make(PageState::kEvicted, v + 1));
  // Evicted is neither shared-lockable nor markable, but exclusively lockable.
  uint64_t w = ps->load();
  EXPECT_FALSE(ps->tryLockS(w));
  EXPECT_FALSE(ps->tryMark(w));
  ps->tryUnmark(w);
  EXPECT_EQ(ps->load(), w);
  EXPECT_TRUE(ps->tryLockX(w));
  EXPECT_EQ(ps->load(), PageState::make(PageState::kLocked, v + 1));
  ps->unlockX();
  EXPECT_EQ(ps->load(), PageState::make(PageState::kUnlocked, v + 2));
}

TEST(PageState, SharedCountingUpToMax) {
  auto ps = unlockedAt(5);
  const uint64_t v = PageState::versionOf(ps->load());
  for (uint64_t n = 1; n <= PageState::kMaxShared; n++) {
    ASSERT_TRUE(ps->tryLockS(ps->load())) << "holder " << n;
    ASSERT_EQ(ps->load(), PageState::make(n, v));
  }
  // Beyond the maximum: refused, nothing changes.
  uint64_t full = ps->load();
  EXPECT_FALSE(ps->tryLockS(full));
  EXPECT_FALSE(ps->tryLockX(full));
  EXPECT_FALSE(ps->tryMark(full));
  EXPECT_FALSE(ps->tryUpgradeSToX());
  EXPECT_EQ(ps->load(), full);
  for (uint64_t n = PageState::kMaxShared; n > 0; n--) {
    ps->unlockS();
    ASSERT_EQ(ps->load(), PageState::make(n - 1, v)) << "shared unlock keeps the version";
  }
  EXPECT_EQ(ps->load(), PageState::make(PageState::kUnlocked, v));
}

TEST(PageState, SharedFromMarkedAndNotFromLockedOrEvicted) {
  auto ps = unlockedAt(2);
  uint64_t w = ps->load();
  ASSERT_TRUE(ps->tryMark(w));
  w = ps->load();
  ASSERT_TRUE(ps->tryLockS(w));  // marked -> one holder (an access clears the mark)
  EXPECT_EQ(ps->load(), PageState::make(1, PageState::versionOf(w)));
  ps->unlockS();
  EXPECT_EQ(ps->load(), PageState::make(PageState::kUnlocked, PageState::versionOf(w)));

  ASSERT_TRUE(ps->tryLockX(ps->load()));
  EXPECT_FALSE(ps->tryLockS(ps->load()));
  ps->unlockX();
}

TEST(PageState, UpgradeOnlyWithExactlyOneHolder) {
  auto ps = unlockedAt(3);
  const uint64_t v = PageState::versionOf(ps->load());
  EXPECT_FALSE(ps->tryUpgradeSToX()) << "no holder";
  EXPECT_EQ(ps->load(), PageState::make(PageState::kUnlocked, v));

  ASSERT_TRUE(ps->tryLockS(ps->load()));
  ASSERT_TRUE(ps->tryLockS(ps->load()));
  EXPECT_FALSE(ps->tryUpgradeSToX()) << "two holders";
  EXPECT_EQ(ps->load(), PageState::make(2, v));
  ps->unlockS();
  ASSERT_TRUE(ps->tryUpgradeSToX()) << "exactly one holder";
  EXPECT_EQ(ps->load(), PageState::make(PageState::kLocked, v)) << "upgrade keeps the version";
  EXPECT_FALSE(ps->tryUpgradeSToX()) << "already locked";
  ps->unlockX();
  EXPECT_EQ(ps->load(), PageState::make(PageState::kUnlocked, v + 1));

  // Marked and evicted pages are not upgradable either.
  ASSERT_TRUE(ps->tryMark(ps->load()));
  EXPECT_FALSE(ps->tryUpgradeSToX());
  ASSERT_TRUE(ps->tryLockX(ps->load()));
  ps->unlockXEvicted();
  EXPECT_FALSE(ps->tryUpgradeSToX());
}

TEST(PageState, MarkAndUnmarkKeepVersion) {
  auto ps = unlockedAt(11);
  uint64_t w = ps->load();
  const uint64_t v = PageState::versionOf(w);
  ASSERT_TRUE(ps->tryMark(w));
  EXPECT_EQ(ps->load(), PageState::make(PageState::kMarked, v));
  EXPECT_FALSE(ps->tryMark(ps->load())) << "already marked";
  EXPECT_FALSE(ps->tryMark(w)) << "stale observed word";
  ps->tryUnmark(ps->load());
  EXPECT_EQ(ps->load(), PageState::make(PageState::kUnlocked, v));
  // tryUnmark of a non-marked page changes nothing.
  ps->tryUnmark(ps->load());
  EXPECT_EQ(ps->load(), PageState::make(PageState::kUnlocked, v));
  // A page that is in use is not marked.
  ASSERT_TRUE(ps->tryLockS(ps->load()));
  EXPECT_FALSE(ps->tryMark(ps->load()));
  EXPECT_EQ(ps->load(), PageState::make(1, v));
  ps->unlockS();
  ASSERT_TRUE(ps->tryLockX(ps->load()));
  EXPECT_FALSE(ps->tryMark(ps->load()));
  ps->unlockX();
  // tryUnmark with a stale observed word (the page was touched) does nothing.
  w = ps->load();
  ASSERT_TRUE(ps->tryMark(w));
  uint64_t marked = ps->load();
  ASSERT_TRUE(ps->tryLockS(marked));
  ps->tryUnmark(marked);
  EXPECT_EQ(ps->load(), PageState::make(1, PageState::versionOf(w)));
  ps->unlockS();
}

TEST(PageState, StillValidSemantics) {
  using P = PageState;
  const uint64_t begin = P::make(P::kUnlocked, 42);
  // Shared count changes and marks keep an optimistic read valid.
  EXPECT_TRUE(P::stillValid(begin, begin));
  EXPECT_TRUE(P::stillValid(begin, P::make(1, 42)));
  EXPECT_TRUE(P::stillValid(begin, P::make(P::kMaxShared, 42)));
  EXPECT_TRUE(P::stillValid(begin, P::make(P::kMarked, 42)));
  EXPECT_TRUE(P::stillValid(begin, P::make(P::kUnlocked, 42) | P::kParkedBit));
  EXPECT_TRUE(P::stillValid(P::make(3, 42), P::make(P::kUnlocked, 42)));
  // Exclusive lock, a new version, or eviction invalidate it.
  EXPECT_FALSE(P::stillValid(begin, P::make(P::kLocked, 42)));
  EXPECT_FALSE(P::stillValid(begin, P::make(P::kUnlocked, 43)));
  EXPECT_FALSE(P::stillValid(begin, P::make(P::kEvicted, 42)));
  EXPECT_FALSE(P::stillValid(begin, P::make(P::kEvicted, 43)));
  EXPECT_FALSE(P::stillValid(begin, P::make(P::kMarked, 43)));

  // The same through real transitions.
  auto ps = unlockedAt(42);
  uint64_t b = ps->load();
  ASSERT_TRUE(ps->tryLockS(ps->load()));
  EXPECT_TRUE(P::stillValid(b, ps->load()));
  ps->unlockS();
  EXPECT_TRUE(P::stillValid(b, ps->load()));
  ASSERT_TRUE(ps->tryMark(ps->load()));
  EXPECT_TRUE(P::stillValid(b, ps->load()));
  ps->tryUnmark(ps->load());
  EXPECT_TRUE(P::stillValid(b, ps->load()));
  ASSERT_TRUE(ps->tryLockX(ps->load()));
  EXPECT_FALSE(P::stillValid(b, ps->load())) << "locked exclusively";
  ps->unlockX();
  EXPECT_FALSE(P::stillValid(b, ps->load())) << "unlocked with a new version";
  b = ps->load();
  ASSERT_TRUE(ps->tryLockX(ps->load()));
  ps->unlockXEvicted();
  EXPECT_FALSE(P::stillValid(b, ps->load())) << "evicted";
  // Shared -> exclusive upgrade and back invalidates too.
  ASSERT_TRUE(ps->tryLockX(ps->load()));
  ps->unlockX();
  b = ps->load();
  ASSERT_TRUE(ps->tryLockS(ps->load()));
  ASSERT_TRUE(ps->tryUpgradeSToX());
  EXPECT_FALSE(P::stillValid(b, ps->load()));
  ps->unlockX();
  EXPECT_FALSE(P::stillValid(b, ps->load()));
}

TEST(PageState, WaitChangeReturnsAtOnceWhenChanged) {
  auto ps = unlockedAt(1);
  uint64_t old = ps->load();
  ASSERT_TRUE(ps->tryLockX(old));
  Waiter w([ps, old] { ps->waitChange(old); });  // the word differs already
  EXPECT_TRUE(w.join());
  EXPECT_FALSE(PageState::isParked(ps->load()));
  ps->unlockX();
}

TEST(PageState, WaitChangeParksAndUnlockXWakes) {
  auto ps = unlockedAt(1);
  ASSERT_TRUE(ps->tryLockX(ps->load()));
  const uint64_t lockedVersion = PageState::versionOf(ps->load());
  auto observedUnlocked = std::make_shared<std::atomic<bool>>(false);
  Waiter w([ps, observedUnlocked] {
    for (;;) {
      uint64_t now = ps->load();
      if (PageState::stateOf(now) == PageState::kUnlocked) break;
      ps->waitChange(now);
    }
    observedUnlocked->store(true);
  });
  // With the word unchanged the waiter ends up parked, announcing it in the word.
  ASSERT_TRUE(eventually([&] { return PageState::isParked(ps->load()); }))
      << "the waiter never set the parked bit";
  uint64_t parked = ps->load();
  EXPECT_EQ(PageState::stateOf(parked), PageState::kLocked);
  EXPECT_EQ(PageState::versionOf(parked), lockedVersion) << "parking keeps the version";
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(w.done()) << "the waiter returned while the page was still locked";
  ps->unlockX();
  EXPECT_EQ(ps->load(), PageState::make(PageState::kUnlocked, lockedVersion + 1))
      << "unlockX clears the parked bit";
  ASSERT_TRUE(w.join()) << "unlockX did not wake the parked waiter";
  EXPECT_TRUE(observedUnlocked->load());
}

TEST(PageState, ParkedBitSurvivesLockTransitions) {
  auto ps = unlockedAt(1);
  ASSERT_TRUE(ps->tryLockS(ps->load()));
  ASSERT_TRUE(ps->tryLockS(ps->load()));
  const uint64_t v = PageState::versionOf(ps->load());
  // A writer waits for both readers to leave.
  auto gotX = std::make_shared<std::atomic<bool>>(false);
  Waiter w([ps, gotX] {
    for (;;) {
      uint64_t now = ps->load();
      if (PageState::stateOf(now) == PageState::kUnlocked && ps->tryLockX(now)) break;
      if (PageState::stateOf(now) != PageState::kUnlocked) ps->waitChange(now);
    }
    gotX->store(true);
  });
  ASSERT_TRUE(eventually([&] { return PageState::isParked(ps->load()); }));
  EXPECT_EQ(ps->load(), PageState::make(2, v) | PageState::kParkedBit);
  // Another reader joins and leaves; not the last one: the bit stays, nobody is woken.
  ASSERT_TRUE(ps->tryLockS(ps->load()));
  EXPECT_EQ(ps->load(), PageState::make(3, v) | PageState::kParkedBit);
  ps->unlockS();
  EXPECT_EQ(ps->load(), PageState::make(2, v) | PageState::kParkedBit);
  ps->unlockS();
  EXPECT_EQ(ps->load(), PageState::make(1, v) | PageState::kParkedBit)
      << "a shared unlock that is not the last keeps the parked bit";
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(gotX->load()) << "the writer got the lock while a reader held it";
  // The last reader leaves: it must clear the bit and wake the writer.
  ps->unlockS();
  ASSERT_TRUE(w.join()) << "the last unlockS did not wake the parked writer";
  EXPECT_TRUE(gotX->load());
  uint64_t now = ps->load();
  EXPECT_EQ(PageState::stateOf(now), PageState::kLocked);
  EXPECT_EQ(PageState::versionOf(now), v);
  ps->unlockX();
  EXPECT_EQ(ps->load(), PageState::make(PageState::kUnlocked, v + 1));
}

TEST(PageState, ManyParkedWaitersAllWokenByOneUnlock) {
  auto ps = unlockedAt(1);
  ASSERT_TRUE(ps->tryLockX(ps->load()));
  const uint64_t v0 = PageState::versionOf(ps->load());
  std::vector<std::unique_ptr<Waiter>> waiters;
  for (int i = 0; i < 4; i++) {
    waiters.push_back(std::make_unique<Waiter>([ps, v0] {
      for (;;) {
        uint64_t now = ps->load();
        if (PageState::versionOf(now) != v0) break;
        ps->waitChange(now);
      }
    }));
  }
  ASSERT_TRUE(eventually([&] { return PageState::isParked(ps->load()); }));
  std::this_thread::sleep_for(50ms);  // let the others park too (not needed for correctness)
  ps->unlockX();
  for (auto& w : waiters) EXPECT_TRUE(w->join()) << "a waiter was not woken";
}

TEST(PageState, EvictionWakesWaiters) {
  auto ps = unlockedAt(1);
  ASSERT_TRUE(ps->tryLockX(ps->load()));
  Waiter w([ps] {
    for (;;) {
      uint64_t now = ps->load();
      if (PageState::stateOf(now) != PageState::kLocked) break;
      ps->waitChange(now);
    }
  });
  ASSERT_TRUE(eventually([&] { return PageState::isParked(ps->load()); }));
  ps->unlockXEvicted();
  EXPECT_FALSE(PageState::isParked(ps->load()));
  EXPECT_TRUE(w.join()) << "unlockXEvicted did not wake the parked waiter";
}

// Mutual exclusion under contention: threads take the exclusive lock the way the buffer
// manager does (try, else wait for a change) and increment a plain counter.
TEST(PageState, ExclusiveLockIsMutuallyExclusive) {
  auto ps = unlockedAt(1);
  const int threads = 4;
  const int iterations = vmsunit::scaled(20000, 3000);
  auto counter = std::make_shared<uint64_t>(0);
  auto inside = std::make_shared<std::atomic<int>>(0);
  auto overlap = std::make_shared<std::atomic<int>>(0);
  std::vector<std::unique_ptr<Waiter>> workers;
  for (int t = 0; t < threads; t++) {
    workers.push_back(std::make_unique<Waiter>([=] {
      for (int i = 0; i < iterations; i++) {
        for (;;) {
          uint64_t w = ps->load();
          uint64_t s = PageState::stateOf(w);
          if ((s == PageState::kUnlocked || s == PageState::kMarked) && ps->tryLockX(w)) break;
          if (s == PageState::kLocked) ps->waitChange(w);
        }
        if (inside->fetch_add(1) != 0) overlap->fetch_add(1);
        ++*counter;
        if (i % 64 == 0) std::this_thread::yield();  // hold the lock a while: more parking
        inside->fetch_sub(1);
        ps->unlockX();
      }
    }));
  }
  for (auto& w : workers) ASSERT_TRUE(w->join());
  EXPECT_EQ(overlap->load(), 0);
  EXPECT_EQ(*counter, static_cast<uint64_t>(threads) * iterations);
  EXPECT_EQ(ps->load(), PageState::make(PageState::kUnlocked, 1 + *counter));
}

}  // namespace
