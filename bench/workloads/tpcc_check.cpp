// TPC-C consistency conditions (3.3.2) for --check, run on a quiescent database:
//   1  W_YTD = sum(D_YTD)                                          per warehouse
//   2  D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)                  per district
//   3  max(NO_O_ID) - min(NO_O_ID) + 1 = count(new_order)          per district
//   4  sum(O_OL_CNT) = count(order_line)                           per district
//   5  O_CARRIER_ID is null  <=>  a new_order row exists            per order
//   6  O_OL_CNT = count(order_line) of the order                   per order
//   7  OL_DELIVERY_D is null  <=>  O_CARRIER_ID is null             per order line
//   8  W_YTD = sum(H_AMOUNT) by H_W_ID                              per warehouse
//   9  D_YTD = sum(H_AMOUNT) by (H_W_ID, H_D_ID)                    per district
//   10 C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT)         per customer
//   12 C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT)         per customer
// (11, count(order) - count(new_order) = 2100, holds only before the first Delivery and
// is not checked.) Beyond the specification: every row is stored under the key its
// fields give; every order line and new order belongs to an existing order; the
// customer_name index has exactly one entry per customer, with matching C_LAST, C_FIRST
// and C_ID; the order_customer index has exactly one entry per order, with matching
// O_C_ID; every table has the expected number of rows for warehouse, district, customer,
// item and stock.
//
// Money is fixed point (cents), so all comparisons are exact. One line per violation; at
// most kMaxReported are listed, then a line counting the rest.
#include <cinttypes>
#include <cstdio>

#include "tpcc.hpp"

namespace vmstore::bench::tpcc {
namespace {

constexpr size_t kMaxReported = 200;
const std::string_view kFirstKey("\0", 1);  // <= every key of every table

std::string money(int64_t cents) {
  char buf[48];
  const char* sign = cents < 0 ? "-" : "";
  uint64_t a = cents < 0 ? uint64_t(-cents) : uint64_t(cents);
  std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%02" PRIu64, sign, a / 100, a % 100);
  return buf;
}

struct Problems {
  std::vector<std::string> lines;
  size_t more = 0;
  template <class... Args>
  void add(const char* fmt, Args... args) {
    if (lines.size() >= kMaxReported) {
      ++more;
      return;
    }
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt, args...);
    lines.emplace_back(buf);
  }
};

struct OrderInfo {
  bool exists = false;
  bool newOrder = false;
  uint32_t customer = 0;
  uint32_t carrier = 0;
  uint32_t olCnt = 0;
  uint32_t lines = 0;
  uint32_t indexEntries = 0;
};

struct DistrictInfo {
  bool exists = false;
  int64_t ytd = 0;
  uint32_t nextOId = 0;
  uint32_t maxOId = 0;
  uint32_t minNo = UINT32_MAX;
  uint32_t maxNo = 0;
  uint64_t noCount = 0;
  uint64_t olCntSum = 0;
  uint64_t olRows = 0;
  int64_t historySum = 0;
  std::vector<OrderInfo> orders;  // by O_ID
  // The order o, or null when no order can have that number (0, or not below
  // D_NEXT_O_ID), so that a damaged key does not make the check allocate for it.
  OrderInfo* order(uint32_t o) {
    if (o == 0 || o >= nextOId) return nullptr;
    if (o >= orders.size()) orders.resize(std::max<size_t>(o + 1, orders.size() * 2));
    return &orders[o];
  }
};

struct CustomerInfo {
  bool exists = false;
  int64_t delivered = 0;  // sum of OL_AMOUNT of delivered order lines
  int64_t history = 0;    // sum of H_AMOUNT
  uint32_t indexEntries = 0;
  char last[16];
  char first[16];
};

}  // namespace

std::vector<std::string> checkConsistency(Session& s, uint32_t W) {
  Problems p;
  const uint32_t D = kDistrictsPerWarehouse, C = kCustomersPerDistrict;
  auto validW = [&](uint32_t w) { return w >= 1 && w <= W; };
  auto validWD = [&](uint32_t w, uint32_t d) { return validW(w) && d >= 1 && d <= D; };
  auto validWDC = [&](uint32_t w, uint32_t d, uint32_t c) {
    return validWD(w, d) && c >= 1 && c <= C;
  };
  std::vector<int64_t> wYtd(W + 1, 0), wHistory(W + 1, 0);
  std::vector<bool> wExists(W + 1, false);
  std::vector<DistrictInfo> districts(size_t(W) * D);
  std::vector<CustomerInfo> customers(size_t(W) * D * C);
  auto dist = [&](uint32_t w, uint32_t d) -> DistrictInfo& {
    return districts[size_t(w - 1) * D + (d - 1)];
  };
  auto cust = [&](uint32_t w, uint32_t d, uint32_t c) -> CustomerInfo& {
    return customers[(size_t(w - 1) * D + (d - 1)) * C + (c - 1)];
  };

  // ---- warehouse, district ----
  s.scan(kWarehouse, kFirstKey, [&](std::string_view k, std::string_view v) {
    WarehouseRow r;
    uint32_t w = k.size() == 4 ? readU32(k, 0) : 0;
    if (!rowFrom(v, &r) || !validW(w) || r.w_id != w) {
      p.add("warehouse: malformed row or key (w %u)", w);
      return true;
    }
    wExists[w] = true;
    wYtd[w] = r.w_ytd;
    return true;
  });
  s.scan(kDistrict, kFirstKey, [&](std::string_view k, std::string_view v) {
    DistrictRow r;
    uint32_t w = k.size() == 5 ? readU32(k, 0) : 0, d = k.size() == 5 ? readU8(k, 4) : 0;
    if (!rowFrom(v, &r) || !validWD(w, d) || r.d_w_id != w || r.d_id != d) {
      p.add("district: malformed row or key (w %u d %u)", w, d);
      return true;
    }
    auto& di = dist(w, d);
    di.exists = true;
    di.ytd = r.d_ytd;
    di.nextOId = r.d_next_o_id;
    return true;
  });
  for (uint32_t w = 1; w <= W; ++w) {
    if (!wExists[w]) p.add("warehouse %u: missing", w);
    for (uint32_t d = 1; d <= D; ++d) {
      if (!dist(w, d).exists) p.add("district (%u, %u): missing", w, d);
    }
  }

  // ---- order, new_order, order_line ----
  s.scan(kOrder, kFirstKey, [&](std::string_view k, std::string_view v) {
    OrderRow r;
    if (k.size() != 9) return p.add("order: %zu-byte key", k.size()), true;
    uint32_t w = readU32(k, 0), d = readU8(k, 4), o = readU32(k, 5);
    if (k.size() != 9 || !rowFrom(v, &r) || !validWD(w, d) || r.o_w_id != w ||
        r.o_d_id != d || r.o_id != o || o == 0) {
      p.add("order: malformed row or key (w %u d %u o %u)", w, d, o);
      return true;
    }
    auto& di = dist(w, d);
    di.maxOId = std::max(di.maxOId, o);
    di.olCntSum += r.o_ol_cnt;
    auto* oi = di.order(o);
    if (oi == nullptr) {
      p.add("condition 2: order (%u, %u, %u) not below D_NEXT_O_ID %u", w, d, o, di.nextOId);
      return true;
    }
    oi->exists = true;
    oi->customer = r.o_c_id;
    oi->carrier = r.o_carrier_id;
    oi->olCnt = r.o_ol_cnt;
    if (!validWDC(w, d, r.o_c_id)) {
      p.add("order (%u, %u, %u): O_C_ID %u does not exist", w, d, o, r.o_c_id);
    }
    return true;
  });
  s.scan(kNewOrder, kFirstKey, [&](std::string_view k, std::string_view v) {
    NewOrderRow r;
    if (k.size() != 9) return p.add("new_order: %zu-byte key", k.size()), true;
    uint32_t w = readU32(k, 0), d = readU8(k, 4), o = readU32(k, 5);
    if (k.size() != 9 || !rowFrom(v, &r) || !validWD(w, d) || r.no_w_id != w ||
        r.no_d_id != d || r.no_o_id != o) {
      p.add("new_order: malformed row or key (w %u d %u o %u)", w, d, o);
      return true;
    }
    auto& di = dist(w, d);
    di.minNo = std::min(di.minNo, o);
    di.maxNo = std::max(di.maxNo, o);
    di.noCount++;
    auto* oi = di.order(o);
    if (oi == nullptr || !oi->exists) {
      p.add("new_order (%u, %u, %u): no such order", w, d, o);
      return true;
    } else if (oi->carrier != 0) {
      p.add("condition 5: order (%u, %u, %u) has a new_order row and O_CARRIER_ID %u", w,
            d, o, oi->carrier);
    }
    oi->newOrder = true;
    return true;
  });
  s.scan(kOrderLine, kFirstKey, [&](std::string_view k, std::string_view v) {
    OrderLineRow r;
    if (k.size() != 10) return p.add("order_line: %zu-byte key", k.size()), true;
    uint32_t w = readU32(k, 0), d = readU8(k, 4), o = readU32(k, 5), n = readU8(k, 9);
    if (k.size() != 10 || !rowFrom(v, &r) || !validWD(w, d) || r.ol_w_id != w ||
        r.ol_d_id != d || r.ol_o_id != o || r.ol_number != n) {
      p.add("order_line: malformed row or key (w %u d %u o %u n %u)", w, d, o, n);
      return true;
    }
    auto& di = dist(w, d);
    di.olRows++;
    auto* oi = di.order(o);
    if (oi == nullptr || !oi->exists) {
      p.add("order_line (%u, %u, %u, %u): no such order", w, d, o, n);
      return true;
    }
    oi->lines++;
    if (n < 1 || n > oi->olCnt) {
      p.add("order_line (%u, %u, %u, %u): number outside O_OL_CNT %u", w, d, o, n, oi->olCnt);
    }
    if ((r.ol_delivery_d == 0) != (oi->carrier == 0)) {
      p.add("condition 7: order_line (%u, %u, %u, %u): OL_DELIVERY_D %s but O_CARRIER_ID %u",
            w, d, o, n, r.ol_delivery_d == 0 ? "null" : "set", oi->carrier);
    }
    if (r.ol_delivery_d != 0 && validWDC(w, d, oi->customer)) {
      cust(w, d, oi->customer).delivered += r.ol_amount;
    }
    return true;
  });

  // ---- history ----
  s.scan(kHistory, kFirstKey, [&](std::string_view k, std::string_view v) {
    HistoryRow r;
    if (k.size() != 12 || !rowFrom(v, &r) || !validWD(r.h_w_id, r.h_d_id) ||
        !validWDC(r.h_c_w_id, r.h_c_d_id, r.h_c_id)) {
      p.add("history: malformed row or key (%zu-byte key)", k.size());
      return true;
    }
    wHistory[r.h_w_id] += r.h_amount;
    dist(r.h_w_id, r.h_d_id).historySum += r.h_amount;
    cust(r.h_c_w_id, r.h_c_d_id, r.h_c_id).history += r.h_amount;
    return true;
  });

  // ---- customer ----
  s.scan(kCustomer, kFirstKey, [&](std::string_view k, std::string_view v) {
    CustomerRow r;
    if (k.size() != 9) return p.add("customer: %zu-byte key", k.size()), true;
    uint32_t w = readU32(k, 0), d = readU8(k, 4), c = readU32(k, 5);
    if (k.size() != 9 || !rowFrom(v, &r) || !validWDC(w, d, c) || r.c_w_id != w ||
        r.c_d_id != d || r.c_id != c) {
      p.add("customer: malformed row or key (w %u d %u c %u)", w, d, c);
      return true;
    }
    auto& ci = cust(w, d, c);
    ci.exists = true;
    std::memcpy(ci.last, r.c_last, 16);
    std::memcpy(ci.first, r.c_first, 16);
    if (r.c_balance != ci.delivered - ci.history) {
      p.add("condition 10: customer (%u, %u, %u): C_BALANCE %s != delivered %s - paid %s", w,
            d, c, money(r.c_balance).c_str(), money(ci.delivered).c_str(),
            money(ci.history).c_str());
    }
    if (r.c_balance + r.c_ytd_payment != ci.delivered) {
      p.add("condition 12: customer (%u, %u, %u): C_BALANCE %s + C_YTD_PAYMENT %s != "
            "delivered %s",
            w, d, c, money(r.c_balance).c_str(), money(r.c_ytd_payment).c_str(),
            money(ci.delivered).c_str());
    }
    return true;
  });

  // ---- secondary indexes ----
  s.scan(kCustomerName, kFirstKey, [&](std::string_view k, std::string_view v) {
    if (k.size() != kCustomerNameIdAt + 4 || v.size() != 4) {
      p.add("customer_name: malformed entry (%zu-byte key)", k.size());
      return true;
    }
    uint32_t w = readU32(k, 0), d = readU8(k, 4), c = readU32(k, kCustomerNameIdAt);
    uint32_t value;
    std::memcpy(&value, v.data(), 4);
    if (!validWDC(w, d, c) || !cust(w, d, c).exists) {
      p.add("customer_name: entry (%u, %u, c %u) points to no customer", w, d, c);
      return true;
    }
    auto& ci = cust(w, d, c);
    ci.indexEntries++;
    Key expect = customerNameKey(w, d, ci.last, ci.first, c);
    if (expect.view() != k || value != c) {
      p.add("customer_name: entry for customer (%u, %u, %u) does not match its "
            "C_LAST/C_FIRST/C_ID",
            w, d, c);
    }
    return true;
  });
  s.scan(kOrderCustomer, kFirstKey, [&](std::string_view k, std::string_view v) {
    if (k.size() != 13 || v.size() != 4) {
      p.add("order_customer: malformed entry (%zu-byte key)", k.size());
      return true;
    }
    uint32_t w = readU32(k, 0), d = readU8(k, 4), c = readU32(k, 5), o = readU32(k, 9);
    uint32_t value;
    std::memcpy(&value, v.data(), 4);
    if (!validWD(w, d)) {
      p.add("order_customer: entry (%u, %u, %u, %u) outside the database", w, d, c, o);
      return true;
    }
    auto* oi = dist(w, d).order(o);
    if (oi == nullptr || !oi->exists) {
      p.add("order_customer: entry (%u, %u, %u, %u) points to no order", w, d, c, o);
      return true;
    }
    oi->indexEntries++;
    if (oi->customer != c || value != o) {
      p.add("order_customer: entry (%u, %u, %u, %u) but the order's O_C_ID is %u", w, d, c,
            o, oi->customer);
    }
    return true;
  });

  // ---- per warehouse / district / order / customer ----
  for (uint32_t w = 1; w <= W; ++w) {
    int64_t dSum = 0;
    for (uint32_t d = 1; d <= D; ++d) dSum += dist(w, d).ytd;
    if (wExists[w] && wYtd[w] != dSum) {
      p.add("condition 1: warehouse %u: W_YTD %s != sum(D_YTD) %s", w, money(wYtd[w]).c_str(),
            money(dSum).c_str());
    }
    if (wExists[w] && wYtd[w] != wHistory[w]) {
      p.add("condition 8: warehouse %u: W_YTD %s != sum(H_AMOUNT) %s", w,
            money(wYtd[w]).c_str(), money(wHistory[w]).c_str());
    }
    for (uint32_t d = 1; d <= D; ++d) {
      auto& di = dist(w, d);
      if (!di.exists) continue;
      if (di.nextOId - 1 != di.maxOId) {
        p.add("condition 2: district (%u, %u): D_NEXT_O_ID - 1 = %u != max(O_ID) %u", w, d,
              di.nextOId - 1, di.maxOId);
      }
      if (di.noCount > 0) {
        if (di.nextOId - 1 != di.maxNo) {
          p.add("condition 2: district (%u, %u): D_NEXT_O_ID - 1 = %u != max(NO_O_ID) %u", w,
                d, di.nextOId - 1, di.maxNo);
        }
        if (uint64_t(di.maxNo) - di.minNo + 1 != di.noCount) {
          p.add("condition 3: district (%u, %u): max(NO_O_ID) - min(NO_O_ID) + 1 = %u != "
                "%" PRIu64 " new_order rows",
                w, d, di.maxNo - di.minNo + 1, di.noCount);
        }
      }
      if (di.olCntSum != di.olRows) {
        p.add("condition 4: district (%u, %u): sum(O_OL_CNT) %" PRIu64 " != %" PRIu64
              " order_line rows",
              w, d, di.olCntSum, di.olRows);
      }
      if (di.ytd != di.historySum) {
        p.add("condition 9: district (%u, %u): D_YTD %s != sum(H_AMOUNT) %s", w, d,
              money(di.ytd).c_str(), money(di.historySum).c_str());
      }
      for (uint32_t o = 1; o < di.orders.size(); ++o) {
        const auto& oi = di.orders[o];
        if (!oi.exists) continue;
        if (!oi.newOrder && oi.carrier == 0) {
          p.add("condition 5: order (%u, %u, %u): O_CARRIER_ID null but no new_order row", w,
                d, o);
        }
        if (oi.lines != oi.olCnt) {
          p.add("condition 6: order (%u, %u, %u): O_OL_CNT %u != %u order_line rows", w, d,
                o, oi.olCnt, oi.lines);
        }
        if (oi.indexEntries != 1) {
          p.add("order_customer: order (%u, %u, %u) has %u index entries", w, d, o,
                oi.indexEntries);
        }
      }
      for (uint32_t c = 1; c <= C; ++c) {
        const auto& ci = cust(w, d, c);
        if (!ci.exists) {
          p.add("customer (%u, %u, %u): missing", w, d, c);
        } else if (ci.indexEntries != 1) {
          p.add("customer_name: customer (%u, %u, %u) has %u index entries", w, d, c,
                ci.indexEntries);
        }
      }
    }
  }

  // ---- item and stock row counts ----
  uint64_t items = 0;
  s.scan(kItem, kFirstKey, [&](std::string_view k, std::string_view v) {
    ItemRow r;
    if (k.size() != 4 || !rowFrom(v, &r) || r.i_id != readU32(k, 0)) {
      p.add("item: malformed row or key");
    }
    ++items;
    return true;
  });
  if (items != kItems) p.add("item: %" PRIu64 " rows, expected %u", items, kItems);
  uint64_t stock = 0;
  s.scan(kStock, kFirstKey, [&](std::string_view k, std::string_view v) {
    StockRow r;
    if (k.size() != 8 || !rowFrom(v, &r) || r.s_w_id != readU32(k, 0) ||
        r.s_i_id != readU32(k, 4) || !validW(r.s_w_id)) {
      p.add("stock: malformed row or key");
    }
    ++stock;
    return true;
  });
  if (stock != uint64_t(W) * kStockPerWarehouse) {
    p.add("stock: %" PRIu64 " rows, expected %" PRIu64, stock, uint64_t(W) * kStockPerWarehouse);
  }

  if (p.more > 0) {
    p.lines.push_back("... and " + std::to_string(p.more) + " more violations");
  }
  return std::move(p.lines);
}

}  // namespace vmstore::bench::tpcc
