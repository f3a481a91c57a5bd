// The `tpcc` workload: full TPC-C (nine tables, the customer-by-last-name and
// order-by-customer indexes, the five transactions with the standard mix, NURand) as the
// vmcache paper ran it: no think or keying time, worker thread tid with home warehouse
// tid % W + 1, --data = W warehouses (default 4). --tpcc-warehouse=random instead runs
// each transaction on a uniformly random warehouse, as the original vmcache code does.
//
// Files: tpcc_schema.hpp (tables, keys, rows), tpcc_random.hpp (NURand, strings),
// tpcc_load.cpp (population), tpcc_txn.cpp (the five transactions), tpcc_check.cpp
// (consistency conditions), tpcc.cpp (the Workload and its registration).
//
// Concurrency. The engine adapters guarantee per-operation atomicity only (vmstore has no
// multi-key transactions yet; for the others begin()/commit() may add more). So that every
// engine runs the same way and the database stays consistent under concurrent workers,
// the workload itself serialises conflicting transactions with a lock table, the same for
// all engines: one mutex per warehouse row (W_YTD), one per warehouse's stock, one per
// district (the district row with D_NEXT_O_ID and D_YTD, and everything belonging to the
// district: its customers, orders, new-orders and order lines). The warehouse row and the
// stock rows are written only by Session::update; where that is atomic
// (Session::atomicUpdate: vmstore unless it buffers transactions) their locks are not
// taken, as the original code takes none. A transaction computes
// its lock set from its inputs, takes it in ascending lock order BEFORE session.begin()
// and releases it AFTER session.commitNoWait()/abort() and before session.waitDurable()
// (early lock release; two-phase, ordered: no deadlock, and no
// workload lock is ever requested inside an engine transaction, so single-writer engines
// cannot deadlock against it). Reads that need no lock: the item table (never written),
// W_TAX from the warehouse row (each get sees a whole row), and Stock-Level's reads of
// S_QUANTITY (read-only, a concurrent NewOrder may change them, as TPC-C allows for this
// transaction). Workers with distinct home warehouses (threads <= W) contend only on
// remote accesses (remote stock in NewOrder, remote customer in Payment).
// --tpcc-locks=off takes none of these locks, as the original vmcache code takes none:
// only each operation's own atomicity then, and the consistency conditions may fail.
//
// Row updates (district, stock, warehouse, customer, order, order line) are one
// Session::update each, a read-modify-write of the row, as the original vmcache code
// updates rows in place; engines without one do get() then put().
//
// Counting: every transaction, including the 1% of NewOrders rolled back on an unused
// item number (session.abort(), nothing written: the items are read first), adds one to
// ThreadCounter::tx.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "../workload.hpp"
#include "sync/spin_mutex.hpp"
#include "tpcc_random.hpp"
#include "tpcc_schema.hpp"

namespace vmstore::bench::tpcc {

// The workload's lock table (see above). Lock ids in ascending order are the
// acquisition order.
class LockTable {
 public:
  explicit LockTable(uint32_t warehouses)
      : slots_(static_cast<size_t>(warehouses) * kPerWarehouse) {}
  static uint32_t warehouseLock(uint32_t w) { return (w - 1) * kPerWarehouse; }
  static uint32_t stockLock(uint32_t w) { return (w - 1) * kPerWarehouse + 1; }
  static uint32_t districtLock(uint32_t w, uint32_t d) { return (w - 1) * kPerWarehouse + 1 + d; }
  internal::SpinMutex& at(uint32_t id) { return slots_[id].m; }
  // Off (--tpcc-locks=off): lock sets take nothing, as the original vmcache code.
  void setEnabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint32_t kPerWarehouse = 2 + kDistrictsPerWarehouse;
  struct alignas(64) Slot {
    internal::SpinMutex m;  // a short wait spins before it sleeps (a waker's futex call is slow here)
  };
  std::vector<Slot> slots_;
  std::atomic<bool> enabled_{true};  // each worker sets it as it starts, all the same
};

// A set of locks taken in ascending order and released on destruction.
class LockSet {
 public:
  explicit LockSet(LockTable& table) : table_(table) {}
  LockSet(const LockSet&) = delete;
  LockSet& operator=(const LockSet&) = delete;
  ~LockSet() { release(); }
  void add(uint32_t id) {
    if (n_ == kMax) throw std::logic_error("tpcc: lock set overflow");
    ids_[n_++] = id;
  }
  void acquire();   // sorts, removes duplicates, locks
  void release();

 private:
  static constexpr size_t kMax = 32;
  LockTable& table_;
  uint32_t ids_[kMax];
  size_t n_ = 0;
  bool held_ = false;
};

// Shared state of one workload instance.
struct Shared {
  uint32_t warehouses = 0;
  NURandConstants c;
  std::unique_ptr<LockTable> locks;
  bool getMany = true;  // RunOptions::tpccGetMany
  // Workers created so far: worker number n (from 1) adds history rows under origin n.
  std::atomic<uint32_t> workers{0};
};

// One worker thread's transactions (tpcc_txn.cpp).
class Worker {
 public:
  Worker(Session& session, Shared& shared, unsigned tid, uint64_t seed);
  // Runs one transaction drawn from the standard mix.
  void runOne();
  // The next transactions run on a uniformly random warehouse (--tpcc-warehouse=random).
  void moveToRandomWarehouse() { w_ = rng_.uniformU(1, sh_.warehouses); }
  // The five transactions on the worker's home warehouse with random inputs.
  // newOrder returns false when it rolled back (the 1% invalid item).
  bool newOrder();
  void payment();
  void orderStatus();
  void delivery();
  void deliverDistrict(uint32_t w, uint32_t d, uint32_t carrier, uint64_t date);  // one of delivery()'s ten
  void stockLevel();

  uint64_t rolledBack() const { return rolledBack_; }

 private:
  // Finds the customer of (w, d) by last name: the middle one of those ordered by
  // C_FIRST (2.5.2.2); 0 when there is none.
  uint32_t customerByName(uint32_t w, uint32_t d, const char* last);
  uint32_t otherWarehouse();
  // Commits the transaction, releasing its locks before waiting for durability (early
  // lock release, Session::commitNoWait).
  void commitAndRelease(LockSet& locks);
  uint64_t now() const;

  Session& s_;
  Shared& sh_;
  uint32_t w_;  // home warehouse
  Rng rng_;
  uint32_t historyOrigin_;  // unique per Worker instance, so history keys never collide
  uint64_t historySeq_ = 0;
  uint64_t rolledBack_ = 0;
  std::string v_;  // value buffer reused across gets
  // Independent reads of n rows of one table (new-order's items, stock-level's stock):
  // found_[i] and values_[i] for keyOf(i), i < n (the vectors may hold more). One
  // Session::getMany, or (--tpcc-get-many=off) one get per row, as the original vmcache
  // code reads them.
  template <class KeyOf>
  void readMany(int table, size_t n, KeyOf&& keyOf) {
    // keys_, values_ and found_ grow and never shrink: stock-level reads up to 200 rows,
    // new-order 15, and a string destroyed by a shrink would be allocated again by the
    // next stock-level (as 185 keys were zero-filled again by each resize upward).
    if (keys_.size() < n) keys_.resize(n);
    keyViews_.resize(n);
    Session::growTo(n, &values_, &found_);
    for (size_t i = 0; i < n; i++) keys_[i] = keyOf(i);
    if (!sh_.getMany) {
      for (size_t i = 0; i < n; i++) found_[i] = s_.get(table, keys_[i].view(), &values_[i]);
      return;
    }
    for (size_t i = 0; i < n; i++) keyViews_[i] = keys_[i].view();
    s_.getMany(table, keyViews_, &values_, &found_);
  }

  std::vector<uint32_t> ids_;
  std::vector<Key> keys_;  // readMany's, reused
  std::vector<std::string_view> keyViews_;
  std::vector<std::string> values_;
  std::vector<bool> found_;
  // Results a terminal would display, kept so that the work is not optimised away.
  double lastTotal_ = 0;
  uint32_t lowStock_ = 0;
};

// Population (tpcc_load.cpp).
void loadItems(Session& s, Rng& rng);
// Warehouse w with its stock, districts, customers, history, orders, order lines and new
// orders. after(districtsDone) is called after each district.
void loadWarehouse(Session& s, Rng& rng, const NURandConstants& c, uint32_t w,
                   const std::function<void()>& afterDistrict);

// Consistency conditions (tpcc_check.cpp): one line per violation.
std::vector<std::string> checkConsistency(Session& s, uint32_t warehouses);

class TpccWorkload : public Workload {
 public:
  TpccWorkload();
  std::vector<std::string> tables() const override;
  uint64_t defaultData() const override { return 4; }
  void load(Engine& engine, const RunOptions& opts,
            const std::function<void(uint64_t, uint64_t)>& progress) override;
  void run(Session& session, unsigned tid, const RunOptions& opts,
           const std::atomic<bool>& stop, ThreadCounter& counter) override;
  std::vector<std::string> check(Engine& engine, const RunOptions& opts) override;
  std::string jsonFields() const override;  // tpcc_seed

 private:
  uint32_t warehousesOf(const RunOptions& opts) const;
  // Once: the warehouse count and, with opts.tpccSeed, the seed and the constants drawn
  // from it. Every later call must give the same warehouse count.
  void prepare(const RunOptions& opts);

  std::once_flag prepared_;
  Shared shared_;
  uint64_t seed_;
};

}  // namespace vmstore::bench::tpcc
