// BufferManager over memory tiers (issue 11; paper 003): reserving frames in the fastest
// tier, demoting cold pages one tier down and promoting hot ones one tier up, in batches
// through the Migrator, and checking that every page is in exactly one tier within its
// budget. The contract is in buffer_manager.hpp ("Memory tiers").
#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <thread>

#include "buffer/buffer_manager.hpp"
#include "os/numa.hpp"
#include "task/cooperative.hpp"

namespace vmstore::internal {

void BufferManager::setTiers(const std::vector<TierSpec>& tiers, MigrateMode mode, size_t batch) {
  if (policy_) throw std::invalid_argument("memory tiers work with the clock policy only");
  uint64_t sum = 0;
  for (const TierSpec& t : tiers) sum += t.pages;
  if (sum != poolPages_) throw std::invalid_argument("the tiers' budgets must add up to the pool");
  tiers_ = std::make_unique<TierMap>(tiers, maxPages_);
  // New frames come from the fastest tier's node (one policy for the whole area).
  numa::preferNode(pages_.base(), maxPages_ * kPageSize, tiers[0].node);
  migrator_ = std::make_unique<Migrator>(pages_, mode, batch, tiers[0].node);
}

uint64_t BufferManager::migrationRound(unsigned from) const {
  // A move_pages batch at least, the eviction batch at least, a quarter of the tier at most.
  uint64_t round = std::max<uint64_t>(migrator_->batch(), kEvictBatch);
  return std::max<uint64_t>(1, std::min<uint64_t>(round, tiers_->budget(from) / 4));
}

void BufferManager::reserveTopFrames(uint64_t n) {
  for (uint64_t attempt = 0;; attempt++) {
    if (tiers_->tryReserve(0, n)) return;
    {
      auto g = task::lock(evictMutex_);
      if (tiers_->free(0) < n) {
        uint64_t moved = tiers_->count() > 1 ? demote(0) : 0;
        if (moved == 0) {
          // Nothing could move down (the tier below is full of pages in use, or every
          // move failed): the fastest tier's coldest pages leave memory instead.
          try {
            evictBatch(false, 0);
          } catch (const StorageError&) {
            if (attempt > 100 && writeBackFailing()) throw;  // no read reserve beyond a tier's budget
          }
        }
      }
    }
    if (attempt > 100000) {
      throw StorageError(Status::NoMemory("memory tier 0 (" + std::to_string(tiers_->budget(0)) +
                                          " pages) is full and none of its pages can move down or be evicted"));
    }
    if (attempt > 16) std::this_thread::yield();
  }
}

void BufferManager::noteHot(unsigned tier, uint64_t pid) {
  std::vector<uint64_t>& hot = hot_[tier];
  if (hot.size() < migrationRound(tier)) hot.push_back(pid);
}

void BufferManager::makeRoomIn(unsigned t, uint64_t frames) {
  for (int round = 0; round < 4 && tiers_->free(t) < frames; round++) {
    uint64_t before = tiers_->free(t);
    if (t == tiers_->last()) {
      try {
        evictBatch(false, static_cast<int>(t));
      } catch (const StorageError&) {
        return;  // nothing evictable now: the caller moves fewer pages
      }
    } else {
      demote(t);
    }
    if (tiers_->free(t) <= before) return;
  }
}

// Shared-locks pid for a move out of tier `from` when it is resident there and not locked
// exclusively; adds it to runs/pids. Reserves its frames in tier `to` first.
bool BufferManager::takeForMove(uint64_t pid, unsigned from, unsigned to, std::vector<PageRun>& runs,
                                std::vector<uint64_t>& pids) {
  PageState& ps = state(pid);
  uint64_t w = ps.load();
  uint64_t s = PageState::stateOf(w);
  if (s == PageState::kEvicted || s == PageState::kLocked || tiers_->tierOf(pid) != from) return false;
  if (!ps.tryLockS(w)) return false;
  // Locked: it cannot be evicted or freed meanwhile; check again that it is still here.
  if (tiers_->tierOf(pid) != from || std::find(pids.begin(), pids.end(), pid) != pids.end()) {
    ps.unlockS();
    return false;
  }
  uint64_t frames = spanOf(pageAt(pid)->header);
  if (!tiers_->tryReserve(to, frames)) {
    ps.unlockS();
    return false;
  }
  runs.push_back({pid, frames});
  pids.push_back(pid);
  return true;
}

uint64_t BufferManager::moveTaken(std::vector<PageRun>& runs, std::vector<uint64_t>& pids, unsigned from,
                                  unsigned to, bool remark) {
  std::vector<bool> moved;
  migrator_->migrate(runs, tiers_->node(to), &moved);
  uint64_t frames = 0;
  for (size_t i = 0; i < runs.size(); i++) {
    const uint64_t pid = pids[i];
    if (moved[i]) {
      tiers_->setTier(pid, to);
      tiers_->release(from, runs[i].pages);
      frames += runs[i].pages;
    } else {
      tiers_->release(to, runs[i].pages);
      // Stays where it is; a demotion is tried again first next time.
      if (to > from && retry_[from].size() < 4096) retry_[from].push_back(pid);
    }
    PageState& ps = state(pid);
    ps.unlockS();
    if (remark) {
      uint64_t w = ps.load();
      ps.tryMark(w);  // still cold: the next tier's clock sees it as not used since
    }
  }
  (to > from ? demoted_ : promoted_).fetch_add(frames, std::memory_order_relaxed);
  return frames;
}

uint64_t BufferManager::demote(unsigned t) {
  const unsigned to = t + 1;
  const uint64_t round = migrationRound(t);
  if (tiers_->free(to) < round) makeRoomIn(to, round);
  uint64_t room = std::min(round, tiers_->free(to));
  if (room == 0) return 0;
  std::vector<PageRun> runs;
  std::vector<uint64_t> pids;
  uint64_t frames = 0;
  // Pages whose move failed last time first, then the clock over tier t: a marked page
  // (not used since the hand last passed) moves down; an unmarked one is marked.
  std::vector<uint64_t> retry;
  retry.swap(retry_[t]);
  for (uint64_t pid : retry) {
    if (frames >= room) break;
    if (takeForMove(pid, t, to, runs, pids)) frames += runs.back().pages;
  }
  // The hand also runs the clock of tier t + 1 as it passes its pages: one used since the
  // hand last passed (unmarked) is noted hot, to move up into the room made here.
  uint64_t scanned = 0;
  while (frames < room && scanned < resident_.capacity()) {
    resident_.advanceClock(256, [&](uint64_t pid) {
      if (frames >= room) return;
      const unsigned pt = tiers_->tierOf(pid);
      if (pt != t && pt != to) return;
      PageState& ps = state(pid);
      uint64_t w = ps.load();
      uint64_t s = PageState::stateOf(w);
      if (pt == to) {
        if (s == PageState::kUnlocked) {
          noteHot(to, pid);
          ps.tryMark(w);
        }
        return;
      }
      if (s == PageState::kMarked) {
        if (takeForMove(pid, t, to, runs, pids)) frames += runs.back().pages;
      } else if (s == PageState::kUnlocked) {
        if (t > 0) noteHot(t, pid);
        ps.tryMark(w);
      }
    });
    scanned += 256;
  }
  uint64_t moved = moveTaken(runs, pids, t, to, true);
  // Room was made in tier t: pages found hot in the tier below may move up into half of it.
  if (moved > 0) promote(to);
  return moved;
}

void BufferManager::promote(unsigned t) {
  if (t == 0 || hot_[t].empty()) return;
  const unsigned to = t - 1;
  uint64_t allowance = tiers_->free(to) / 2;
  std::vector<PageRun> runs;
  std::vector<uint64_t> pids;
  std::vector<uint64_t> hot;
  hot.swap(hot_[t]);
  for (uint64_t pid : hot) {
    if (allowance == 0) break;
    if (!takeForMove(pid, t, to, runs, pids)) continue;
    if (runs.back().pages > allowance) {
      tiers_->release(to, runs.back().pages);
      state(pid).unlockS();
      runs.pop_back();
      pids.pop_back();
      continue;
    }
    allowance -= runs.back().pages;
  }
  moveTaken(runs, pids, t, to, false);
}

void BufferManager::checkTiers(std::vector<std::string>* problems) {
  if (!tiers_) return;
  auto evicting = task::lock(evictMutex_);  // no eviction or move half done (see the header)
  uint64_t counted[kMaxTiers] = {};
  std::vector<void*> addrs;
  std::vector<unsigned> tierOfAddr;
  std::vector<uint64_t> pidOfAddr;
  resident_.forEach([&](uint64_t pid) {
    unsigned t = tiers_->tierOf(pid);
    if (t >= tiers_->count()) {
      problems->push_back("resident page " + std::to_string(pid) + " is in no tier (" + std::to_string(t) + ")");
      return;
    }
    uint64_t frames = spanOf(pageAt(pid)->header);
    counted[t] += frames;
    for (uint64_t f = 0; f < frames; f++) {
      addrs.push_back(pages_.pageAddress(pid + f));
      tierOfAddr.push_back(t);
      pidOfAddr.push_back(pid);
    }
  });
  for (unsigned t = 0; t < tiers_->count(); t++) {
    // Frames are reserved before a page is read in: the count may be ahead of the pages.
    if (counted[t] > tiers_->used(t)) {
      problems->push_back("memory tier " + std::to_string(t) + " holds " + std::to_string(counted[t]) +
                          " frames but counts " + std::to_string(tiers_->used(t)));
    }
    if (tiers_->used(t) > tiers_->budget(t)) {
      problems->push_back("memory tier " + std::to_string(t) + " counts " + std::to_string(tiers_->used(t)) +
                          " frames, over its budget of " + std::to_string(tiers_->budget(t)));
    }
  }
  // Where the frames really are (when the tiers' nodes differ).
  bool oneNode = true;
  for (unsigned t = 1; t < tiers_->count(); t++) oneNode = oneNode && tiers_->node(t) == tiers_->node(0);
  if (oneNode || addrs.empty()) return;
  std::vector<int> where(addrs.size());
  if (numa::nodesOf(addrs, where) != 0) return;
  size_t reported = 0;
  for (size_t i = 0; i < addrs.size() && reported < 10; i++) {
    if (where[i] < 0 || where[i] == tiers_->node(tierOfAddr[i])) continue;
    problems->push_back("page " + std::to_string(pidOfAddr[i]) + " of memory tier " + std::to_string(tierOfAddr[i]) +
                        " is on node " + std::to_string(where[i]) + ", not node " +
                        std::to_string(tiers_->node(tierOfAddr[i])));
    reported++;
  }
}

}  // namespace vmstore::internal
