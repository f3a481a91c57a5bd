// BufferManager: the vmcache buffer pool (paper 000 §3). Knows pages, not keys.
//
// Contract
// - Page p always lives at pageAt(p) (one virtual memory area over all of storage);
//   its state word is state(p). Only ids below pageCount() exist; using another is
//   Corruption (a damaged page pointed there).
// - fixX/fixS wait for the lock (spin, then park) and read the page in on a miss,
//   verifying its checksum and id; a bad page is Corruption, an I/O failure IOError,
//   both thrown as StorageError with the page left evicted.
// - Optimistic access and parent validation live in guards.hpp on top of
//   optimisticBegin()/readInLocked().
// - The pool size is a hard budget: a frame is reserved (evicting a batch first if the
//   pool is full) before any page becomes resident, so residentPages() <= poolPages()
//   (+ readReserve() while write-back fails, see below).
// - The page provider (startProvider(), issue 7 item 5): a background thread that keeps
//   providerGoal() frames free once the pool fills, evicting (and writing back dirty
//   pages) in batches of up to kProviderBatch victims and providerBatchFrames() frames
//   (a miss that evicts inline takes kEvictBatch), so that a miss rarely evicts inline.
//   The goal is providerTarget(), or as many frames as the provider's last batch freed
//   if that is more (large values: one span is one victim of many frames), up to a 16th
//   of the pool, so that the next batch starts while the last one's frames are still
//   free. A miss that finds fewer free frames than the goal wakes it; only a miss that
//   finds none evicts itself. Without it (or before it is started) a miss that finds the
//   pool nearly full evicts a batch itself.
// - Replacement policy (issue 10): by default the clock below, run over the page-state
//   mark, which costs a hit nothing (an access only clears a mark, in the slow path).
//   setPolicy(p) (before use) replaces it with any Policy (src/policy/policy.hpp): the
//   buffer manager then calls p->hit on every hit (optimistic ones included), p->admit
//   when a page becomes resident (read in, read ahead, allocated), p->removed when a
//   resident page leaves other than by eviction (a freed variable-size page), and
//   evicts the candidates p->victims offers, answering each with p->evicted or p->kept
//   (locked, in use, or touched between choice and lock). The resident set remains the
//   record of what is in memory (flush, checks); resident_set=hash|bitmap picks its
//   structure (resident_pages.hpp). Time spent choosing victims is counted.
// - setAccessListener(l) (before use): every access is also reported to l (page-reference
//   traces, access_listener.hpp). Hits call a hook only when a policy or a listener
//   needs them: one predictable branch on the hit path otherwise.
// - Eviction (evictBatch) follows the paper's five steps: clock over the resident set
//   marks pages and collects marked ones (dirty ones shared-locked), writes the dirty
//   ones, locks them all exclusively (skipping any touched meanwhile), releases them
//   from the page table with one batched call, then removes them from the resident set
//   and unlocks them as evicted with a new version. One thread evicts at a time.
// - If writing the dirty pages of an eviction batch fails (a full disk, an I/O error),
//   the batch evicts only its clean pages, so reads go on; the error reaches a caller
//   only when no page at all could be evicted. While write-back fails (writeBackFailing),
//   a read that finds no evictable page may use a small reserve beyond the budget
//   (readReserve(): 1/16 of the pool, at least 16 pages) rather than fail; writes may not.
//   Meanwhile an eviction tries one dirty page (to notice a device with room again) and
//   otherwise clean ones: under a policy that offers none, a few in resident-set order.
//   The page provider, after a round that freed nothing, waits for a miss to wake it
//   (or 10 ms) rather than hold the eviction mutex in a loop.
// - Read-ahead (issue 7 item 4): readAhead(pids) reads in, together, those of pids that
//   are evicted and not locked (others are skipped), and returns once they are resident
//   or their read failed (a failed read-ahead leaves the page evicted and reports
//   nothing: the access that needs the page reads it again and gets the error). The
//   reads are in flight together (task::runEach, through the thread's io_uring ring);
//   inside a task it suspends the task. The caller holds no page lock, or pids could
//   include a page it holds. readAheadPages() is the most a scan asks for at once
//   (0, the default: scans read no page ahead; the database sets config read_ahead).
// - Variable-size pages (paper 000 §3.5): allocSpan(kind, n) hands out a page of n
//   contiguous ids (a free run of that length, best fit, or new ids past the end),
//   exclusively locked, resident, zeroed and dirty; its head's header says n
//   (page.hpp) and its head's state word is its only one. It is read in with one read
//   (fixS(pid, n): the caller knows n, from the reference it followed; a large one in
//   pieces with several in flight, and fixS(pid, n, arrival) tells arrival, in order, as
//   its bytes come in, so that the caller can copy them on while the rest is read: they
//   are not checked yet, and if the whole then fails its checksum fixS throws), written as one
//   transfer, evicted whole (n frames of the pool budget at once), and freed whole
//   (freeSpan(pid, n): without tiers its frames stay in memory as n freed pages, which
//   a later span over the same ids takes without faulting memory in; with tiers they
//   are released at once). Its ids after the
//   head (tails) are marked as such while it lives: reading one in on its own (a stale
//   reference) fails with Corruption before touching memory, which the guards turn into
//   a restart. A span may take at most half of the pool (maxSpanPages(); larger:
//   NoMemory). A span is not copied aside for a checkpoint: changed, it is written
//   first; freed, see below.
// - allocPage() hands out a free page (or grows the file), exclusively locked, zeroed
//   and dirty. freePage() takes an exclusively locked page and makes it free for reuse.
//   freePageById() frees an unlocked page without reading it from storage. A page (or
//   span) of the pending checkpoint snapshot not yet written is not freed at once: it
//   stays as it is (nobody refers to it any more) until flushEpoch() of its epoch has
//   written it, and is then freed (deferredFrees() lists such pages). So freeing never
//   writes, and a change that frees pages cannot fail half way on a failed write.
//   appendFreePages(n) grows the file by n free pages.
// - Pages are read from and written to a PageStore (page_store.hpp): the data file in
//   place by default, the page journal in a database.
// - Memory tiers (issue 11; paper 003, setTiers() before use): the pool is split into
//   tiers, fastest first, each a NUMA node and a budget of frames that is a hard limit
//   (TierMap). A page read in or allocated takes frames in tier 0 (the area's placement
//   prefers tier 0's node): when tier 0 is full, demote(0) moves a round of its cold
//   pages (clock: marked, i.e. not used since the hand last passed) to tier 1, first
//   making room there the same way; pages leave memory (evictBatch) only from the last
//   tier. A page the hand finds used in a lower tier is noted hot; after a demotion
//   frees room in tier t, up to half of it takes hot pages of tier t + 1 (promote).
//   A move changes the page table only (Migrator: move_pages in batches, or mbind page
//   by page), never the page's address, and holds the page shared: optimistic readers
//   and shared holders go on (an access during the kernel's copy waits in the page
//   fault, and the content is the same after), writers wait for the batch, eviction
//   skips the page. A page whose move fails stays in its tier (still counted there) and
//   is retried first next time; the others move. Each page is in exactly one tier
//   (tierOf) and each tier within its budget (checkTiers). Only with the built-in clock.
// - Checkpoint epochs (copy-on-write snapshots). Every dirty page carries the checkpoint
//   interval (epoch) it was changed in (PageHeader::dirty: 0 clean, else a tag for the
//   epoch's parity), and is sealed with that epoch when written. setEpoch(e + 1), the
//   checkpoint's cut, makes every page still dirty in e part of checkpoint e's snapshot;
//   then markDirty(), called whenever a page is taken exclusively to change it, finds a
//   page of the snapshot not yet written and keeps its image first: a copy aside
//   (SnapshotCopies; at most copyCap() pages of memory beyond the pool), or, past that
//   cap, a write of the page before it changes. flushEpoch(e) writes every page and
//   copy of epoch e. So writers never wait for a checkpoint, and the checkpoint still
//   writes exactly the state at its cut. Only two epochs are ever dirty at once: the
//   caller finishes flushEpoch(e) before the next cut. setEpoch runs while no page is
//   being changed (the database's writer gate, exclusive).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "buffer/counters.hpp"
#include "buffer/dirty_lists.hpp"
#include "buffer/errors.hpp"
#include "buffer/free_space.hpp"
#include "buffer/page.hpp"
#include "buffer/page_store.hpp"
#include "buffer/access_listener.hpp"
#include "buffer/resident_pages.hpp"
#include "buffer/snapshot_copies.hpp"
#include "os/data_file.hpp"
#include "os/vm_area.hpp"
#include "policy/policy.hpp"
#include "sync/page_state.hpp"
#include "tier/migrator.hpp"
#include "tier/tier_map.hpp"
#include "vmstore/stats.hpp"

namespace vmstore::internal {

class BufferManager {
 public:
  static constexpr uint64_t kEvictBatch = 64;     // victims of one inline eviction
  static constexpr uint64_t kProviderBatch = 256;  // victims of one of the provider's
  static constexpr uint64_t kMinPoolPages = 256;

  // file: the data file (it need not be open yet). pageCount: pages it holds (ids
  // 0..pageCount-1). Throws std::system_error when the address space cannot be reserved.
  BufferManager(DataFile* file, uint64_t poolPages, uint64_t maxPages, uint64_t pageCount,
                ResidentSetKind residentKind = ResidentSetKind::kHash);
  ~BufferManager();
  BufferManager(const BufferManager&) = delete;
  BufferManager& operator=(const BufferManager&) = delete;

  Page* pageAt(uint64_t pid) const { return reinterpret_cast<Page*>(pages_.pageAddress(pid)); }
  PageState& state(uint64_t pid) const { return states_[pid]; }
  // Requests the lines a visit of pid reads first (its state word and the page's first
  // two lines), for a caller that visits it after other work (BasicBTree's interleaved
  // lookups). Reads and changes nothing; an id past the end is ignored.
  void prefetch(uint64_t pid) const {
    if (pid >= pageCount()) return;
    __builtin_prefetch(&states_[pid]);
    const char* page = reinterpret_cast<const char*>(pageAt(pid));
    __builtin_prefetch(page);
    __builtin_prefetch(page + 64);
  }
  uint64_t pageCount() const { return pageCount_.load(std::memory_order_acquire); }
  // Page 0 is the superblock, never a node: a reference to it is damage too.
  void checkExists(uint64_t pid) const {
    if (pid == 0 || pid >= pageCount()) throwNoSuchPage(pid);
  }

  Page* fixX(uint64_t pid);
  void unfixX(uint64_t pid) { state(pid).unlockX(); }
  // pages > 1: the variable-size page of that many ids with its head at pid.
  Page* fixS(uint64_t pid, uint64_t pages = 1, const SpanArrival* arrival = nullptr);
  void unfixS(uint64_t pid) { state(pid).unlockS(); }

  // The state word to validate an optimistic read of pid against. Clears a mark; on a
  // miss reads the page in first; waits while it is locked exclusively.
  uint64_t optimisticBegin(uint64_t pid) {
    Page* page;
    uint64_t w;
    return tryOptimisticBegin(pid, &page, &w) ? w : optimisticBeginSlow(pid);
  }
  // optimisticBegin's hit path alone: true (and *version, *page) when pid is resident and
  // not locked exclusively; false, having done nothing, when it would wait or read.
  bool tryOptimisticBegin(uint64_t pid, Page** page, uint64_t* version) {
    uint64_t w = state(pid).load();
    if (PageState::stateOf(w) > PageState::kMaxShared) [[unlikely]] return false;
    counters_.add(Counter::kHits);
    if (hitHook_) [[unlikely]] noteHit(pid);
    *page = pageAt(pid);
    *version = w;
    return true;
  }
  // The access protocol the guards use (guards.hpp), shared with HashBufferManager
  // (bench/hashbm/): the page is found once, at optimisticBegin, and validated /
  // upgraded by that address.
  uint64_t optimisticBegin(uint64_t pid, Page** page) {
    *page = pageAt(pid);
    return optimisticBegin(pid);
  }
  bool optimisticValid(uint64_t pid, const Page*, uint64_t begin) const {
    return PageState::stillValid(begin, state(pid).load());
  }
  // Optimistic -> exclusive without waiting: false if the page changed since `begin`.
  bool tryUpgradeX(uint64_t pid, Page*, uint64_t begin) {
    PageState& ps = state(pid);
    uint64_t s = PageState::stateOf(begin);
    if ((s == PageState::kUnlocked || s == PageState::kMarked) && ps.tryLockX(begin)) return true;
    // The mark may have been set since: same version, still fine to take.
    uint64_t now = ps.load();
    return PageState::stateOf(now) == PageState::kMarked &&
           PageState::versionOf(now) == PageState::versionOf(begin) && ps.tryLockX(now);
  }
  // Optimistic -> shared without waiting: false if the page changed since `begin`, is
  // locked exclusively now, or somebody waits for it (a writer waiting for its shared
  // holders to leave goes first). unfixS releases it.
  bool tryShareAt(uint64_t pid, uint64_t begin) {
    PageState& ps = state(pid);
    for (;;) {
      uint64_t w = ps.load();
      if (PageState::versionOf(w) != PageState::versionOf(begin) || PageState::isParked(w)) return false;
      uint64_t s = PageState::stateOf(w);
      if (s == PageState::kLocked || s == PageState::kEvicted || s == PageState::kMaxShared) return false;
      if (ps.tryLockS(w)) return true;
    }
  }
  // fixS's hit path alone, for a pid read optimistically (the caller validates where it
  // came from afterwards, and unfixes on failure): true, pid held shared, when pid
  // exists, is resident and can be shared at once; false, having done nothing, when it
  // would wait, unmark or read (then the caller takes the careful path).
  bool tryFixSResident(uint64_t pid) {
    if (pid >= pageCount()) return false;
    PageState& ps = state(pid);
    uint64_t w = ps.load();
    if (PageState::stateOf(w) >= PageState::kMaxShared || PageState::isParked(w)) return false;
    if (!ps.tryLockS(w)) return false;
    counters_.add(Counter::kHits);
    if (hitHook_) [[unlikely]] noteHit(pid);
    return true;
  }
  // True when pid is held shared, unchanged since `begin` (an upgrade failed for that).
  bool heldShared(uint64_t pid, uint64_t begin) const {
    uint64_t w = state(pid).load();
    uint64_t s = PageState::stateOf(w);
    return s >= 1 && s <= PageState::kMaxShared && PageState::versionOf(w) == PageState::versionOf(begin);
  }
  // Waits until pid is no longer held shared, keeping new shared holders that use
  // tryShareAt out meanwhile (the parked bit). For a writer whose upgrade failed on them.
  void waitForShared(uint64_t pid) {
    PageState& ps = state(pid);
    for (;;) {
      uint64_t w = ps.load();
      uint64_t s = PageState::stateOf(w);
      if (s == 0 || s > PageState::kMaxShared) return;
      if (!PageState::isParked(w)) {
        ps.markWaiting(w);
        continue;
      }
      ps.waitChange(w);
    }
  }
  // True when reaching pid would read it from storage (so its parent is checked first).
  bool mayNeedRead(uint64_t pid) const { return PageState::stateOf(state(pid).load()) == PageState::kEvicted; }
  void unfixX(uint64_t pid, Page*) { unfixX(pid); }
  void unfixS(uint64_t pid, Page*) { unfixS(pid); }

  // Reads in the evicted, unlocked pages of pids together (see the contract); returns
  // how many were read. Ids that do not exist are skipped.
  uint64_t readAhead(std::span<const uint64_t> pids);
  unsigned readAheadPages() const { return readAheadPages_; }
  // Before use from many threads.
  void setReadAheadPages(unsigned pages) { readAheadPages_ = pages; }
  // Huge pages while the data fits (Options::huge_pages): if the file's pages fit in the
  // pool (and there are no tiers), page ids below the pool's size (rounded down to 2 MiB)
  // take transparent huge pages when they fault in. So memory stays within the pool:
  // only ids that exist are touched, and those below the pool's size are at most the
  // pool. When the file grows beyond the pool, growBy() turns it off for good: new
  // faults take 4 KiB pages, and eviction splits the huge pages it releases from.
  void useHugePagesWhileInMemory();
  bool hugePagesInMemory() const { return hugeEnd_.load(std::memory_order_relaxed) != 0; }

  // pid is exclusively locked by the caller and evicted: make it resident from storage.
  // On failure the page is unlocked as evicted and StorageError is thrown.
  void readInLocked(uint64_t pid, uint64_t pages = 1, const SpanArrival* arrival = nullptr);

  Page* allocPage(PageKind kind);
  // A variable-size page of `pages` ids (see the contract); pages == 1 is allocPage.
  // Bytes [keepFrom, keepTo) of the span (offsets from its start) are the caller's to
  // write at once: where a frame is reused they keep old bytes instead of being zeroed
  // first (a value's bytes; everything else is zero).
  Page* allocSpan(PageKind kind, uint64_t pages, size_t keepFrom = 0, size_t keepTo = 0);
  // Frees the variable-size page at pid (unlocked by the caller; waits for holders),
  // without reading it from storage.
  void freeSpan(uint64_t pid, uint64_t pages);
  uint64_t maxSpanPages() const { return std::min<uint64_t>(poolPages_ / 2, kMaxSpanPages); }
  bool isTail(uint64_t pid) const {
    return (tails_[pid / 64].load(std::memory_order_acquire) >> (pid % 64)) & 1;
  }
  void freePage(uint64_t pid);
  void freePageById(uint64_t pid);
  void appendFreePages(uint64_t n);
  // Only before any page is used: the file turned out to hold pageCount pages.
  void setPageCount(uint64_t pageCount);
  // The caller holds pid exclusively and is about to change it (guards.hpp does this).
  // Throws StorageError if the page belongs to a checkpoint snapshot that could be
  // neither copied nor written.
  void markDirty(uint64_t pid, Page* p) {
    uint8_t tag = dirtyTag_.load(std::memory_order_relaxed);
    uint8_t was = __atomic_load_n(&p->header.dirty, __ATOMIC_RELAXED);
    if (was == tag) [[likely]] return;
    if (was != 0) keepSnapshotImage(pid, p, was);
    __atomic_store_n(&p->header.dirty, tag, __ATOMIC_RELAXED);
    dirtyLists_.note(tag, pid);
  }
  static bool isDirty(const Page* p) { return __atomic_load_n(&p->header.dirty, __ATOMIC_RELAXED) != 0; }
  // For buffer managers without epochs (bench/hashbm): dirty, epoch 0.
  static void setDirty(Page* p) { __atomic_store_n(&p->header.dirty, tagOf(0), __ATOMIC_RELAXED); }

  // Pages changed from now on belong to `epoch` (see the contract above).
  void setEpoch(uint32_t epoch);
  uint32_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  // Writes every dirty page of `epoch` (resident or copied aside), then frees the pages
  // whose free waited for that. Returns the first error.
  Status flushEpoch(uint32_t epoch);
  // Writes every dirty resident page and every copy, then frees every page whose free
  // waited. Returns the first error.
  Status flushAll();
  // Ids of the pages freed but waiting for their snapshot's write (every page of a span).
  std::vector<uint64_t> deferredFrees() const;
  uint64_t copyCap() const { return std::max<uint64_t>(64, poolPages_ / 8); }
  uint64_t snapshotCopies() const { return copies_.size(); }
  // Starts the page provider thread (see the contract); stopProvider() (and the
  // destructor) stops it. Call after setStore(), before use from many threads.
  void startProvider();
  void stopProvider();
  uint64_t providerTarget() const {
    return std::min<uint64_t>(poolPages_ / 16, std::max<uint64_t>(2 * kEvictBatch, poolPages_ / 128));
  }
  uint64_t providerGoal() const { return providerGoal_.load(std::memory_order_relaxed); }
  // Frames one of the provider's batches takes at most (its victims may be spans): a
  // 16th of the pool, at most 16 MiB, at least an inline batch's kEvictBatch.
  uint64_t providerBatchFrames() const {
    return std::max<uint64_t>(kEvictBatch, std::min<uint64_t>(4096, poolPages_ / 16));
  }
  // Where pages go from now on (nullptr: the data file in place). Set before use.
  void setStore(PageStore* store) { store_ = store ? store : &fileStore_; }

  // The replacement policy (see the contract); nullptr: the built-in clock. Before use.
  void setPolicy(std::unique_ptr<Policy> policy);
  const char* policyName() const { return policy_ ? policy_->name() : "clock"; }
  Policy* policy() const { return policy_.get(); }
  // Every access reported to `listener` too (nullptr: none). Before use.
  void setAccessListener(AccessListener* listener);
  ResidentSetKind residentSetKind() const { return resident_.kind(); }
  uint64_t residentSetBytes() const { return resident_.memoryBytes(); }

  // Memory tiers (see the contract): budgets adding up to the pool, clock only. Before
  // use. Throws std::invalid_argument otherwise.
  void setTiers(const std::vector<TierSpec>& tiers, MigrateMode mode, size_t batch);
  const TierMap* tiers() const { return tiers_.get(); }
  Migrator* migrator() const { return migrator_.get(); }
  uint64_t demotedPages() const { return demoted_.load(std::memory_order_relaxed); }
  uint64_t promotedPages() const { return promoted_.load(std::memory_order_relaxed); }
  // Appends what breaks "each resident page in exactly one tier, each tier within its
  // budget, each page's frames on its tier's node" (nothing without tiers). Holds
  // evictMutex_ meanwhile: an eviction gives its pages' frames back before it drops them
  // from the resident set, and a move changes two tiers' counts.
  void checkTiers(std::vector<std::string>* problems);

  FreeSpace& freeSpace() { return freeSpace_; }
  Counters& counters() { return counters_; }
  void countRestart() { counters_.add(Counter::kRestarts); }
  uint64_t poolPages() const { return poolPages_; }
  // True after an eviction could not write its dirty pages, until a write succeeds.
  bool writeBackFailing() const { return writeBackFailing_.load(std::memory_order_relaxed); }
  uint64_t residentPages() const { return physUsed_.load(std::memory_order_relaxed); }
  bool batchedRelease() const { return pages_.batchedRelease(); }
  void fillStats(Stats* s) const;
  DataFile* file() const { return file_; }

  // Calls fn(pid) for every resident page (for checks and tests).
  template <class Fn>
  void forEachResident(Fn&& fn) const { resident_.forEach(fn); }

 private:
  [[noreturn]] void throwNoSuchPage(uint64_t pid) const;
  // A hit, for the policy and the listener (only called when hitHook_).
  void noteHit(uint64_t pid) noexcept {
    if (policy_) policy_->hit(pid);
    if (listener_) listener_->onAccess(pid, false);
  }
  // pid became resident (the resident set, the policy, the listener) / left it.
  void residentAdd(uint64_t pid);
  // A large variable-size page about to be filled (read in or allocated, its frames
  // reserved, none in memory): backed by huge pages where it can (VmArea::populateHuge).
  void backLarge(uint64_t pid, uint64_t pages);
  void residentDrop(uint64_t pid, uint64_t frames);
  // Step (1) of an eviction: candidates by clock (of one tier: tier >= 0) or by the policy.
  void clockCandidates(std::vector<uint64_t>& clean, std::vector<uint64_t>& dirty, int tier, uint64_t batch,
                       uint64_t frameCap);
  void policyCandidates(std::vector<uint64_t>& clean, std::vector<uint64_t>& dirty, std::vector<uint64_t>& unoffered,
                        uint64_t batch, uint64_t frameCap);
  uint64_t optimisticBeginSlow(uint64_t pid);
  void reserveFrame(bool forRead);  // a pool frame, and with tiers a frame of tier 0
  void reservePoolFrame(bool forRead);
  void reserveFrames(uint64_t n, bool forRead);  // all or none
  void checkSpan(uint64_t pages) const;          // NoMemory beyond maxSpanPages()
  void markTails(uint64_t pid, uint64_t pages, bool on);
  // Locks pid exclusively (waiting), which must be free (kind kFree or never used);
  // returns whether it was resident.
  bool lockFreePage(uint64_t pid);
  // freeSpan without tiers: the span's frames (still counted in the pool) become freed
  // pages of their own, resident and unlocked. The head is held exclusively.
  void keepFreedFrames(uint64_t pid, uint64_t pages);
  uint64_t readReserve() const { return std::max<uint64_t>(16, poolPages_ / 16); }
  void releaseFrame(uint64_t pid, uint64_t pages = 1);  // a failed read-in: give the frames back
  // Caller holds evictMutex_. tier: of that tier only (-1: with tiers, the last).
  // Returns the frames it freed (0: nothing could be evicted).
  uint64_t evictBatch(bool byProvider = false, int tier = -1);
  // Memory tiers (tiering.cpp); all but reserveTopFrames with evictMutex_ held.
  void reserveTopFrames(uint64_t n);
  uint64_t migrationRound(unsigned from) const;
  uint64_t demote(unsigned t);  // frames moved from t to t + 1
  void promote(unsigned t);     // hot pages of t to t - 1
  void makeRoomIn(unsigned t, uint64_t frames);
  void noteHot(unsigned tier, uint64_t pid);
  bool takeForMove(uint64_t pid, unsigned from, unsigned to, std::vector<PageRun>& runs, std::vector<uint64_t>& pids);
  uint64_t moveTaken(std::vector<PageRun>& runs, std::vector<uint64_t>& pids, unsigned from, unsigned to, bool remark);
  void providerLoop();
  void wakeProvider();
  uint64_t growByOne() { return growBy(1); }  // a new page id past the end (NoSpace at max_size)
  uint64_t growBy(uint64_t n);                 // n new contiguous ids past the end
  void initStatesUpTo(uint64_t pid);
  Status writePages(std::span<const uint64_t> pids);  // caller holds evictMutex_
  static uint8_t tagOf(uint32_t epoch) { return static_cast<uint8_t>(1 + (epoch & 1)); }
  uint32_t epochOfTag(uint8_t tag) const {
    uint32_t e = epoch_.load(std::memory_order_acquire);
    return tag == tagOf(e) ? e : e - 1;
  }
  void keepSnapshotImage(uint64_t pid, Page* p, uint8_t tag);
  // pid (exclusively locked, about to be freed) holds the snapshot's image not yet
  // written: unlocks it as it is and frees it after its epoch's flush. Else false.
  bool deferFreeOfSnapshot(uint64_t pid, Page* p, uint64_t pages);
  // Frees the deferred pages of epochs up to `epoch` (all: every one).
  void freeDeferred(uint32_t epoch, bool all);
  // Resident dirty pages (of tag's epoch; 0: all) and the copies aside, written.
  Status flushDirty(uint8_t tag);
  Status writeCopies(uint32_t epoch, bool all);

  DataFile* file_;
  uint64_t poolPages_;
  uint64_t maxPages_;
  VmArea pages_;
  VmArea stateArea_;
  PageState* states_;
  VmArea tailArea_;                   // one bit per page: a tail of a live variable-size page
  std::atomic<uint64_t>* tails_;
  std::atomic<uint64_t> pageCount_;
  std::atomic<uint64_t> statesReady_{0};  // states below this are initialized
  std::mutex growMutex_;
  // What every miss writes, each on a cache line of its own, apart from what hits read.
  alignas(64) std::atomic<uint64_t> physUsed_{0};
  alignas(64) ResidentPages resident_;  // its clock hand is on a line of its own too
  std::unique_ptr<Policy> policy_;       // nullptr: the clock over page-state marks
  AccessListener* listener_ = nullptr;
  bool hitHook_ = false;                 // policy_ tracks hits, or listener_ is set
  alignas(64) std::mutex evictMutex_;
  std::atomic<bool> evicted_{false};  // the pool has been full: eviction frees frames
  FreeSpace freeSpace_;
  Counters counters_;
  FileStore fileStore_;
  PageStore* store_;
  std::atomic<bool> writeBackFailing_{false};
  std::atomic<uint32_t> epoch_{0};
  // The page provider: its thread sleeps on providerWake_ while enough frames are free.
  std::thread provider_;
  std::mutex providerMutex_;
  std::condition_variable providerWake_;
  bool providerStop_ = false;                 // under providerMutex_
  bool providerKicked_ = false;               // under providerMutex_: a miss woke it
  std::atomic<bool> providerOn_{false};       // the thread runs (read by every miss)
  std::atomic<uint64_t> providerGoal_{0};     // see providerGoal(); set by startProvider()
  uint64_t framesPerVictim_ = 1;              // of the last frame-limited batch; under evictMutex_
  alignas(64) std::atomic<bool> providerSleeping_{false};
  std::atomic<uint8_t> dirtyTag_{tagOf(0)};
  unsigned readAheadPages_ = 0;  // none until setReadAheadPages()
  std::atomic<uint64_t> hugeEnd_{0};  // pages [0, hugeEnd_) take huge pages; 0: none do
  SnapshotCopies copies_;
  struct DeferredFree {
    uint64_t pid;
    uint64_t pages;
    uint32_t epoch;
  };
  mutable std::mutex deferredMutex_;
  std::vector<DeferredFree> deferred_;  // under deferredMutex_
  DirtyLists dirtyLists_;  // what flushDirty looks at (every page markDirty dirtied)
  std::unique_ptr<TierMap> tiers_;  // nullptr: one tier, as the paper's vmcache
  std::unique_ptr<Migrator> migrator_;
  std::vector<uint64_t> retry_[kMaxTiers];  // under evictMutex_: failed demotions
  std::vector<uint64_t> hot_[kMaxTiers];    // under evictMutex_: pages found used in a lower tier
  std::atomic<uint64_t> demoted_{0};
  std::atomic<uint64_t> promoted_{0};
};

}  // namespace vmstore::internal
