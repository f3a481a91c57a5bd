// TPC-C population (4.3.3.1): the item table, and per warehouse its stock, districts,
// customers (with the customer_name index entries), history, orders (with the
// order_customer index entries), order lines and new orders.
//
// Writes are grouped in begin()/commit() batches (one per district, one per 10,000 items
// or stock rows) so that transactional engines do not commit row by row.
#include <algorithm>
#include <ctime>
#include <numeric>

#include "tpcc.hpp"

namespace vmstore::bench::tpcc {
namespace {

constexpr uint32_t kBatch = 10000;

// I_DATA / S_DATA: a-string 26..50; 10% contain "ORIGINAL" at a random position.
uint8_t dataWithOriginal(Rng& rng, char* dst50) {
  size_t len = rng.astring(dst50, 50, 26, 50);
  if (rng.uniform(1, 10) == 1) {
    size_t at = static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(len - 8)));
    std::memcpy(dst50 + at, "ORIGINAL", 8);
  }
  return static_cast<uint8_t>(len);
}

void address(Rng& rng, Address* a) {
  rng.astring(a->street1, 20, 10, 20);
  rng.astring(a->street2, 20, 10, 20);
  rng.astring(a->city, 20, 10, 20);
  for (char& ch : a->state) ch = static_cast<char>('A' + rng.next() % 26);
  zipCode(rng, a->zip);
}

void loadStock(Session& s, Rng& rng, uint32_t w) {
  StockRow r;
  for (uint32_t i = 1; i <= kStockPerWarehouse; ++i) {
    if ((i - 1) % kBatch == 0) s.beginLoad();
    std::memset(&r, 0, sizeof r);
    r.s_i_id = i;
    r.s_w_id = w;
    r.s_quantity = static_cast<int32_t>(rng.uniform(10, 100));
    for (auto& dist : r.s_dist) rng.astring(dist, 24, 24, 24);
    r.s_ytd = 0;
    r.s_order_cnt = 0;
    r.s_remote_cnt = 0;
    r.s_data_len = dataWithOriginal(rng, r.s_data);
    s.put(kStock, stockKey(w, i), bytesOf(r));
    if (i % kBatch == 0 || i == kStockPerWarehouse) s.commit();
  }
}

void loadDistrict(Session& s, Rng& rng, const NURandConstants& c, uint32_t w, uint32_t d,
                  uint64_t now) {
  s.beginLoad();
  DistrictRow dr;
  std::memset(&dr, 0, sizeof dr);
  dr.d_id = d;
  dr.d_w_id = w;
  rng.astring(dr.d_name, 10, 6, 10);
  address(rng, &dr.d_address);
  dr.d_tax = static_cast<int32_t>(rng.uniform(0, 2000));
  dr.d_ytd = 3000000;  // 30,000.00
  dr.d_next_o_id = kOrdersPerDistrict + 1;
  s.put(kDistrict, districtKey(w, d), bytesOf(dr));

  CustomerRow cr;
  HistoryRow hr;
  for (uint32_t cid = 1; cid <= kCustomersPerDistrict; ++cid) {
    std::memset(&cr, 0, sizeof cr);
    cr.c_id = cid;
    cr.c_d_id = d;
    cr.c_w_id = w;
    rng.astring(cr.c_first, 16, 8, 16);
    std::memcpy(cr.c_middle, "OE", 2);
    lastName(cid <= 1000 ? cid - 1 : rng.nurand(255, 0, 999, c.cLastLoad), cr.c_last);
    address(rng, &cr.c_address);
    rng.nstring(cr.c_phone, 16, 16, 16);
    cr.c_since = now;
    std::memcpy(cr.c_credit, rng.uniform(1, 10) == 1 ? "BC" : "GC", 2);
    cr.c_credit_lim = 5000000;  // 50,000.00
    cr.c_discount = static_cast<int32_t>(rng.uniform(0, 5000));
    cr.c_balance = -1000;       // -10.00
    cr.c_ytd_payment = 1000;    // 10.00
    cr.c_payment_cnt = 1;
    cr.c_delivery_cnt = 0;
    cr.c_data_len = static_cast<uint16_t>(rng.astring(cr.c_data, 500, 300, 500));
    s.put(kCustomer, customerKey(w, d, cid), bytesOf(cr));
    uint32_t idValue = cid;
    s.put(kCustomerName, customerNameKey(w, d, cr.c_last, cr.c_first, cid),
          {reinterpret_cast<const char*>(&idValue), sizeof idValue});

    std::memset(&hr, 0, sizeof hr);
    hr.h_c_id = cid;
    hr.h_c_d_id = d;
    hr.h_c_w_id = w;
    hr.h_d_id = d;
    hr.h_w_id = w;
    hr.h_date = now;
    hr.h_amount = 1000;  // 10.00
    rng.astring(hr.h_data, 24, 12, 24);
    uint64_t seq = ((uint64_t(w) * kDistrictsPerWarehouse + d) * kCustomersPerDistrict) + cid;
    s.put(kHistory, historyKey(0, seq), bytesOf(hr));
  }

  // Orders: O_C_ID a random permutation of 1..3000.
  std::vector<uint32_t> perm(kCustomersPerDistrict);
  std::iota(perm.begin(), perm.end(), 1u);
  for (size_t i = perm.size() - 1; i > 0; --i) {
    std::swap(perm[i], perm[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(i)))]);
  }
  OrderRow orow;
  OrderLineRow ol;
  NewOrderRow no;
  for (uint32_t o = 1; o <= kOrdersPerDistrict; ++o) {
    const bool delivered = o < kFirstUndeliveredOrder;
    std::memset(&orow, 0, sizeof orow);
    orow.o_id = o;
    orow.o_d_id = d;
    orow.o_w_id = w;
    orow.o_c_id = perm[o - 1];
    orow.o_entry_d = now;
    orow.o_carrier_id = delivered ? rng.uniformU(1, 10) : 0;
    orow.o_ol_cnt = static_cast<uint8_t>(rng.uniform(5, 15));
    orow.o_all_local = 1;
    s.put(kOrder, orderKey(w, d, o), bytesOf(orow));
    s.put(kOrderCustomer, orderCustomerKey(w, d, orow.o_c_id, o),
          {reinterpret_cast<const char*>(&o), sizeof o});
    for (uint32_t n = 1; n <= orow.o_ol_cnt; ++n) {
      std::memset(&ol, 0, sizeof ol);
      ol.ol_o_id = o;
      ol.ol_d_id = d;
      ol.ol_w_id = w;
      ol.ol_number = static_cast<uint8_t>(n);
      ol.ol_i_id = rng.uniformU(1, kItems);
      ol.ol_supply_w_id = w;
      ol.ol_delivery_d = delivered ? now : 0;
      ol.ol_quantity = 5;
      ol.ol_amount = delivered ? 0 : rng.uniform(1, 999999);
      rng.astring(ol.ol_dist_info, 24, 24, 24);
      s.put(kOrderLine, orderLineKey(w, d, o, n), bytesOf(ol));
    }
    if (!delivered) {
      no.no_o_id = o;
      no.no_d_id = d;
      no.no_w_id = w;
      s.put(kNewOrder, newOrderKey(w, d, o), bytesOf(no));
    }
  }
  s.commit();
}

}  // namespace

void loadItems(Session& s, Rng& rng) {
  ItemRow r;
  for (uint32_t i = 1; i <= kItems; ++i) {
    if ((i - 1) % kBatch == 0) s.beginLoad();
    std::memset(&r, 0, sizeof r);
    r.i_id = i;
    r.i_im_id = rng.uniformU(1, 10000);
    rng.astring(r.i_name, 24, 14, 24);
    r.i_price = rng.uniform(100, 10000);
    r.i_data_len = dataWithOriginal(rng, r.i_data);
    s.put(kItem, itemKey(i), bytesOf(r));
    if (i % kBatch == 0 || i == kItems) s.commit();
  }
}

void loadWarehouse(Session& s, Rng& rng, const NURandConstants& c, uint32_t w,
                   const std::function<void()>& afterDistrict) {
  const uint64_t now = static_cast<uint64_t>(std::time(nullptr));
  s.beginLoad();
  WarehouseRow wr;
  std::memset(&wr, 0, sizeof wr);
  wr.w_id = w;
  rng.astring(wr.w_name, 10, 6, 10);
  address(rng, &wr.w_address);
  wr.w_tax = static_cast<int32_t>(rng.uniform(0, 2000));
  wr.w_ytd = 30000000;  // 300,000.00
  s.put(kWarehouse, warehouseKey(w), bytesOf(wr));
  s.commit();
  loadStock(s, rng, w);
  for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
    loadDistrict(s, rng, c, w, d, now);
    if (afterDistrict) afterDistrict();
  }
}

}  // namespace vmstore::bench::tpcc
