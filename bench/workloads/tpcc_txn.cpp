// The five TPC-C transactions (2.4 - 2.8) and the standard mix, without think or keying
// time. Every transaction takes its workload locks (tpcc.hpp) in ascending order, then
// runs between session.begin() and its commit (or abort()), then releases them. Commit
// releases them early: once the writes are committed (session.commitNoWait()) and
// before waiting for them to be durable (session.waitDurable()).
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "tpcc.hpp"

namespace vmstore::bench::tpcc {

void Worker::commitAndRelease(LockSet& locks) {
  // Safe to release before the commit is durable: a transaction that sees these writes
  // commits later in the engine's log, so it cannot be durable without them.
  s_.commitNoWait();
  locks.release();
  s_.waitDurable();
}
namespace {

constexpr uint32_t kMaxOrderLines = 15;

bool hasPrefix(std::string_view key, std::string_view prefix) {
  return key.size() >= prefix.size() && key.compare(0, prefix.size(), prefix) == 0;
}

[[noreturn]] void missingRow(int table) {
  throw std::runtime_error(std::string("tpcc: missing ") + kTableNames[table] + " row");
}

template <class Row>
void getRow(Session& s, int table, const Key& key, std::string* buf, Row* row) {
  if (!s.get(table, key, buf)) missingRow(table);
  rowOrThrow(*buf, row, kTableNames[table]);
}

// Updates a row in one read-modify-write (Session::update, as the original updates rows
// in place): change(row) runs on the row as stored and what it leaves is written back;
// *row holds that afterwards. change may run more than once (each time on the row as
// stored), so it assigns what it hands out rather than adding to it.
template <class Row, class Fn>
void updateRow(Session& s, int table, const Key& key, Row* row, Fn&& change) {
  bool found = s.update(table, key, [&](std::string& value) {
    rowOrThrow(value, row, kTableNames[table]);
    change(*row);
    std::memcpy(value.data(), row, sizeof(Row));
    return true;
  });
  if (!found) missingRow(table);
}

}  // namespace

Worker::Worker(Session& session, Shared& shared, unsigned tid, uint64_t seed)
    : s_(session),
      sh_(shared),
      w_(tid % shared.warehouses + 1),
      rng_(seed),
      historyOrigin_(shared.workers.fetch_add(1) + 1) {
  ids_.reserve(400);
}

uint64_t Worker::now() const { return static_cast<uint64_t>(std::time(nullptr)); }

uint32_t Worker::otherWarehouse() {
  if (sh_.warehouses <= 1) return w_;
  for (;;) {
    uint32_t w = rng_.uniformU(1, sh_.warehouses);
    if (w != w_) return w;
  }
}

void Worker::runOne() {
  // The standard mix (5.2.3): 45% NewOrder, 43% Payment, 4% each of the others.
  int64_t r = rng_.uniform(1, 100);
  if (r <= 45) {
    newOrder();
  } else if (r <= 88) {
    payment();
  } else if (r <= 92) {
    orderStatus();
  } else if (r <= 96) {
    delivery();
  } else {
    stockLevel();
  }
}

uint32_t Worker::customerByName(uint32_t w, uint32_t d, const char* last) {
  Key prefix = customerNamePrefix(w, d, last);
  std::string_view p = prefix.view();
  ids_.clear();
  s_.scan(kCustomerName, p, [&](std::string_view key, std::string_view) {
    if (!hasPrefix(key, p)) return false;
    ids_.push_back(readU32(key, kCustomerNameIdAt));
    return true;
  });
  if (ids_.empty()) return 0;
  // Ordered by C_FIRST; the one at position ceil(n / 2) (2.5.2.2).
  return ids_[(ids_.size() - 1) / 2];
}

// ---- New-Order (2.4) ----------------------------------------------------------------
bool Worker::newOrder() {
  const uint32_t w = w_;
  const uint32_t d = rng_.uniformU(1, kDistrictsPerWarehouse);
  const uint32_t c = rng_.nurand(1023, 1, kCustomersPerDistrict, sh_.c.cId);
  const uint32_t olCnt = rng_.uniformU(5, kMaxOrderLines);
  const bool rollback = rng_.uniform(1, 100) == 1;
  uint32_t itemId[kMaxOrderLines], supplyW[kMaxOrderLines], quantity[kMaxOrderLines];
  bool allLocal = true;
  for (uint32_t i = 0; i < olCnt; ++i) {
    itemId[i] = rng_.nurand(8191, 1, kItems, sh_.c.olIId);
    if (rollback && i == olCnt - 1) itemId[i] = kItems + 1;  // an unused item number
    supplyW[i] = w;
    if (sh_.warehouses > 1 && rng_.uniform(1, 100) == 1) {
      supplyW[i] = otherWarehouse();
      allLocal = false;
    }
    quantity[i] = rng_.uniformU(1, 10);
  }

  LockSet locks(*sh_.locks);
  locks.add(LockTable::districtLock(w, d));
  if (!s_.atomicUpdate()) {  // stock rows are written only by update()
    for (uint32_t i = 0; i < olCnt; ++i) locks.add(LockTable::stockLock(supplyW[i]));
  }
  locks.acquire();
  s_.begin();

  // Items first: an unused item number rolls the transaction back before anything has
  // been written.
  ItemRow item;
  int64_t price[kMaxOrderLines];
  readMany(kItem, olCnt, [&](uint32_t i) { return itemKey(itemId[i]); });
  for (uint32_t i = 0; i < olCnt; ++i) {
    if (!found_[i]) {
      s_.abort();
      ++rolledBack_;
      return false;
    }
    rowOrThrow(values_[i], &item, "item");
    price[i] = item.i_price;
  }

  WarehouseRow wr;
  getRow(s_, kWarehouse, warehouseKey(w), &v_, &wr);
  DistrictRow dr;
  uint32_t o = 0;
  updateRow(s_, kDistrict, districtKey(w, d), &dr, [&](DistrictRow& r) {
    o = r.d_next_o_id;
    r.d_next_o_id = o + 1;
  });
  CustomerRow cr;
  getRow(s_, kCustomer, customerKey(w, d, c), &v_, &cr);

  const uint64_t entry = now();
  OrderRow orow{};
  orow.o_id = o;
  orow.o_d_id = d;
  orow.o_w_id = w;
  orow.o_c_id = c;
  orow.o_entry_d = entry;
  orow.o_carrier_id = 0;
  orow.o_ol_cnt = static_cast<uint8_t>(olCnt);
  orow.o_all_local = allLocal ? 1 : 0;
  s_.put(kOrder, orderKey(w, d, o), bytesOf(orow));
  s_.put(kOrderCustomer, orderCustomerKey(w, d, c, o),
         {reinterpret_cast<const char*>(&o), sizeof o});
  NewOrderRow no{o, d, w};
  s_.put(kNewOrder, newOrderKey(w, d, o), bytesOf(no));

  int64_t total = 0;
  StockRow sr;
  OrderLineRow ol;
  for (uint32_t i = 0; i < olCnt; ++i) {
    const int32_t q = static_cast<int32_t>(quantity[i]);
    updateRow(s_, kStock, stockKey(supplyW[i], itemId[i]), &sr, [&](StockRow& r) {
      if (r.s_quantity >= q + 10) {
        r.s_quantity -= q;
      } else {
        r.s_quantity = r.s_quantity - q + 91;
      }
      r.s_ytd += quantity[i];
      r.s_order_cnt += 1;
      if (supplyW[i] != w) r.s_remote_cnt += 1;
    });

    std::memset(&ol, 0, sizeof ol);
    ol.ol_o_id = o;
    ol.ol_d_id = d;
    ol.ol_w_id = w;
    ol.ol_number = static_cast<uint8_t>(i + 1);
    ol.ol_i_id = itemId[i];
    ol.ol_supply_w_id = supplyW[i];
    ol.ol_delivery_d = 0;
    ol.ol_quantity = static_cast<uint8_t>(quantity[i]);
    ol.ol_amount = price[i] * quantity[i];
    std::memcpy(ol.ol_dist_info, sr.s_dist[d - 1], sizeof ol.ol_dist_info);
    s_.put(kOrderLine, orderLineKey(w, d, o, i + 1), bytesOf(ol));
    total += ol.ol_amount;
  }
  // total * (1 - C_DISCOUNT) * (1 + W_TAX + D_TAX), the figure returned to the terminal.
  lastTotal_ = static_cast<double>(total) * (1.0 - cr.c_discount / 10000.0) *
               (1.0 + (wr.w_tax + dr.d_tax) / 10000.0) / 100.0;
  commitAndRelease(locks);
  return true;
}

// ---- Payment (2.5) ------------------------------------------------------------------
void Worker::payment() {
  const uint32_t w = w_;
  const uint32_t d = rng_.uniformU(1, kDistrictsPerWarehouse);
  uint32_t cw = w, cd = d;
  if (sh_.warehouses > 1 && rng_.uniform(1, 100) > 85) {
    cw = otherWarehouse();
    cd = rng_.uniformU(1, kDistrictsPerWarehouse);
  }
  const bool byName = rng_.uniform(1, 100) <= 60;
  char last[16];
  uint32_t c = 0;
  if (byName) {
    lastName(rng_.nurand(255, 0, 999, sh_.c.cLastRun), last);
  } else {
    c = rng_.nurand(1023, 1, kCustomersPerDistrict, sh_.c.cId);
  }
  const int64_t amount = rng_.uniform(100, 500000);  // 1.00 .. 5,000.00

  LockSet locks(*sh_.locks);
  if (!s_.atomicUpdate()) locks.add(LockTable::warehouseLock(w));  // W_YTD: update() only
  locks.add(LockTable::districtLock(w, d));
  locks.add(LockTable::districtLock(cw, cd));
  locks.acquire();
  s_.begin();

  WarehouseRow wr;
  updateRow(s_, kWarehouse, warehouseKey(w), &wr, [&](WarehouseRow& r) { r.w_ytd += amount; });
  DistrictRow dr;
  updateRow(s_, kDistrict, districtKey(w, d), &dr, [&](DistrictRow& r) { r.d_ytd += amount; });

  if (byName) {
    c = customerByName(cw, cd, last);
    if (c == 0) throw std::runtime_error("tpcc: payment found no customer by last name");
  }
  CustomerRow cr;
  updateRow(s_, kCustomer, customerKey(cw, cd, c), &cr, [&](CustomerRow& r) {
    r.c_balance -= amount;
    r.c_ytd_payment += amount;
    r.c_payment_cnt += 1;
    if (std::memcmp(r.c_credit, "BC", 2) == 0) {
      // C_DATA = "C_ID C_D_ID C_W_ID D_ID W_ID H_AMOUNT | " + old C_DATA, at most 500.
      char head[96];
      int n = std::snprintf(head, sizeof head, "%u %u %u %u %u %lld.%02lld | ", c, cd, cw, d, w,
                            static_cast<long long>(amount / 100),
                            static_cast<long long>(amount % 100));
      size_t h = static_cast<size_t>(std::max(0, std::min<int>(n, sizeof head - 1)));
      size_t keep = std::min<size_t>(r.c_data_len, sizeof r.c_data - h);
      std::memmove(r.c_data + h, r.c_data, keep);
      std::memcpy(r.c_data, head, h);
      r.c_data_len = static_cast<uint16_t>(h + keep);
    }
  });

  HistoryRow hr{};
  hr.h_c_id = c;
  hr.h_c_d_id = cd;
  hr.h_c_w_id = cw;
  hr.h_d_id = d;
  hr.h_w_id = w;
  hr.h_date = now();
  hr.h_amount = amount;
  // H_DATA = W_NAME + 4 spaces + D_NAME.
  std::memset(hr.h_data, 0, sizeof hr.h_data);
  auto wn = field(wr.w_name, sizeof wr.w_name);
  auto dn = field(dr.d_name, sizeof dr.d_name);
  std::memcpy(hr.h_data, wn.data(), wn.size());
  std::memcpy(hr.h_data + wn.size(), "    ", 4);
  std::memcpy(hr.h_data + wn.size() + 4, dn.data(), dn.size());
  s_.put(kHistory, historyKey(historyOrigin_, ++historySeq_), bytesOf(hr));
  commitAndRelease(locks);
}

// ---- Order-Status (2.6) -------------------------------------------------------------
void Worker::orderStatus() {
  const uint32_t w = w_;
  const uint32_t d = rng_.uniformU(1, kDistrictsPerWarehouse);
  const bool byName = rng_.uniform(1, 100) <= 60;
  char last[16];
  uint32_t c = 0;
  if (byName) {
    lastName(rng_.nurand(255, 0, 999, sh_.c.cLastRun), last);
  } else {
    c = rng_.nurand(1023, 1, kCustomersPerDistrict, sh_.c.cId);
  }

  LockSet locks(*sh_.locks);
  locks.add(LockTable::districtLock(w, d));
  locks.acquire();
  s_.begin();

  if (byName) {
    c = customerByName(w, d, last);
    if (c == 0) throw std::runtime_error("tpcc: order-status found no customer by last name");
  }
  CustomerRow cr;
  getRow(s_, kCustomer, customerKey(w, d, c), &v_, &cr);

  // The customer's most recent order: the last order_customer entry under (w, d, c).
  Key from = orderCustomerKey(w, d, c, UINT32_MAX);
  std::string_view prefix = from.view().substr(0, 9);
  uint32_t o = 0;
  s_.scanReverse(kOrderCustomer, from, [&](std::string_view key, std::string_view) {
    if (hasPrefix(key, prefix)) o = readU32(key, 9);
    return false;
  });
  if (o != 0) {
    OrderRow orow;
    getRow(s_, kOrder, orderKey(w, d, o), &v_, &orow);
    Key start = orderLineKey(w, d, o, 0);
    std::string_view lp = start.view().substr(0, 9);
    OrderLineRow ol;
    int64_t sum = 0;
    s_.scan(kOrderLine, start, [&](std::string_view key, std::string_view value) {
      if (!hasPrefix(key, lp)) return false;
      rowOrThrow(value, &ol, "order_line");
      sum += ol.ol_amount + ol.ol_i_id + ol.ol_supply_w_id + ol.ol_quantity +
             static_cast<int64_t>(ol.ol_delivery_d);
      return true;
    });
    lastTotal_ = static_cast<double>(sum + orow.o_carrier_id + cr.c_balance);
  }
  commitAndRelease(locks);
}

// ---- Delivery (2.7), all ten districts in one transaction -----------------------------
void Worker::delivery() {
  const uint32_t w = w_;
  const uint32_t carrier = rng_.uniformU(1, 10);
  const uint64_t date = now();
  // Where one durability wait can cover several commits, one database transaction per
  // district (2.7.4.1 allows up to 10), each under its district's lock alone, so that a
  // delivery does not stop its warehouse's other transactions for its whole length;
  // elsewhere one transaction under all ten locks (ten would cost ten waits).
  if (s_.sharesDurableWait()) {
    for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      LockSet locks(*sh_.locks);
      locks.add(LockTable::districtLock(w, d));
      locks.acquire();
      s_.begin();
      deliverDistrict(w, d, carrier, date);
      s_.commitNoWait();
    }
    s_.waitDurable();
    return;
  }
  LockSet locks(*sh_.locks);
  for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) locks.add(LockTable::districtLock(w, d));
  locks.acquire();
  s_.begin();
  for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) deliverDistrict(w, d, carrier, date);
  commitAndRelease(locks);
}

// The oldest undelivered order of district (w, d), if any (2.7.4.2: none is skipped).
void Worker::deliverDistrict(uint32_t w, uint32_t d, uint32_t carrier, uint64_t date) {
  Key start = newOrderKey(w, d, 0);
  std::string_view prefix = start.view().substr(0, 5);
  uint32_t o = 0;
  s_.scan(kNewOrder, start, [&](std::string_view key, std::string_view) {
    if (hasPrefix(key, prefix)) o = readU32(key, 5);
    return false;
  });
  if (o == 0) return;
  s_.del(kNewOrder, newOrderKey(w, d, o));

  OrderRow orow;
  updateRow(s_, kOrder, orderKey(w, d, o), &orow, [&](OrderRow& r) { r.o_carrier_id = carrier; });

  // The order's lines 1 .. O_OL_CNT (new-order writes them all under the district lock).
  int64_t sum = 0;
  OrderLineRow ol;
  for (uint32_t n = 1; n <= orow.o_ol_cnt; ++n) {
    int64_t amount = 0;
    updateRow(s_, kOrderLine, orderLineKey(w, d, o, n), &ol, [&](OrderLineRow& r) {
      r.ol_delivery_d = date;
      amount = r.ol_amount;
    });
    sum += amount;
  }

  CustomerRow cr;
  updateRow(s_, kCustomer, customerKey(w, d, orow.o_c_id), &cr, [&](CustomerRow& r) {
    r.c_balance += sum;
    r.c_delivery_cnt += 1;
  });
}

// ---- Stock-Level (2.8) ----------------------------------------------------------------
void Worker::stockLevel() {
  const uint32_t w = w_;
  const uint32_t d = rng_.uniformU(1, kDistrictsPerWarehouse);
  const int32_t threshold = static_cast<int32_t>(rng_.uniform(10, 20));

  LockSet locks(*sh_.locks);
  locks.add(LockTable::districtLock(w, d));
  locks.acquire();
  s_.begin();

  DistrictRow dr;
  getRow(s_, kDistrict, districtKey(w, d), &v_, &dr);
  const uint32_t next = dr.d_next_o_id;
  const uint32_t first = next > 20 ? next - 20 : 1;
  // Items of the order lines of the district's last 20 orders.
  Key start = orderLineKey(w, d, first, 0);
  Key end = orderLineKey(w, d, next, 0);
  std::string_view endView = end.view();
  ids_.clear();
  s_.scan(kOrderLine, start, [&](std::string_view key, std::string_view value) {
    if (key >= endView) return false;
    OrderLineRow ol;
    rowOrThrow(value, &ol, "order_line");
    ids_.push_back(ol.ol_i_id);
    return true;
  });
  std::sort(ids_.begin(), ids_.end());
  ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
  uint32_t low = 0;
  StockRow sr;
  readMany(kStock, ids_.size(), [&](size_t j) { return stockKey(w, ids_[j]); });
  for (size_t j = 0; j < ids_.size(); j++) {
    if (!found_[j]) continue;
    rowOrThrow(values_[j], &sr, "stock");
    if (sr.s_quantity < threshold) ++low;
  }
  lowStock_ = low;
  commitAndRelease(locks);
}

}  // namespace vmstore::bench::tpcc
