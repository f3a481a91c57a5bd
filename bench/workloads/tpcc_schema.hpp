// TPC-C schema of the `tpcc` workload: the nine tables and the two secondary indexes,
// their key encodings and their row layouts.
//
// Keys are big-endian fixed-width encodings of the key tuple, so unsigned byte order is
// tuple order (prefix scans walk a district's orders, a customer's orders, ...).
// Widths: warehouse id u32, district id u8, customer/order/item ids u32, order-line
// number u8; names (C_LAST, C_FIRST) are 16 bytes padded with NUL bytes, which keeps
// string order.
//
// Rows are packed structs with the specification's fields, stored as their raw bytes.
// Money (numeric(12,2)) is kept as int64 cents and rates (numeric(4,4): taxes, discount)
// as int32 ten-thousandths: exact fixed point, so the consistency checks compare sums
// exactly. Dates are seconds since the epoch, 0 meaning null; O_CARRIER_ID 0 is null.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vmstore::bench::tpcc {

// ---- scale (TPC-C 4.3.3.1) ----------------------------------------------------------
inline constexpr uint32_t kItems = 100000;
inline constexpr uint32_t kStockPerWarehouse = kItems;
inline constexpr uint32_t kDistrictsPerWarehouse = 10;
inline constexpr uint32_t kCustomersPerDistrict = 3000;
inline constexpr uint32_t kOrdersPerDistrict = 3000;
inline constexpr uint32_t kFirstUndeliveredOrder = 2101;  // orders 2101..3000 are new

// ---- tables -------------------------------------------------------------------------
enum Table : int {
  kWarehouse = 0,
  kDistrict,
  kCustomer,
  kCustomerName,   // secondary: (w, d, c_last, c_first, c_id) -> c_id
  kHistory,
  kNewOrder,
  kOrder,
  kOrderCustomer,  // secondary: (w, d, c_id, o_id) -> o_id
  kOrderLine,
  kItem,
  kStock,
  kTableCount
};

inline constexpr const char* kTableNames[kTableCount] = {
    "warehouse", "district",  "customer",       "customer_name", "history", "new_order",
    "order",     "order_customer", "order_line", "item",          "stock"};

// ---- keys ---------------------------------------------------------------------------
inline constexpr size_t kNameWidth = 16;  // C_LAST / C_FIRST in keys

// A key under construction: a small fixed buffer, appended to big-endian.
class Key {
 public:
  Key& u8(uint32_t v) {
    buf_[n_++] = static_cast<char>(v);
    return *this;
  }
  Key& u32(uint32_t v) {
    buf_[n_++] = static_cast<char>(v >> 24);
    buf_[n_++] = static_cast<char>(v >> 16);
    buf_[n_++] = static_cast<char>(v >> 8);
    buf_[n_++] = static_cast<char>(v);
    return *this;
  }
  Key& u64(uint64_t v) {
    u32(static_cast<uint32_t>(v >> 32));
    return u32(static_cast<uint32_t>(v));
  }
  // A string of at most `width` bytes (up to its first NUL), NUL-padded to `width`.
  Key& name(const char* s, size_t maxLen) {
    size_t len = strnlen(s, maxLen);
    if (len > kNameWidth) len = kNameWidth;
    std::memcpy(buf_ + n_, s, len);
    std::memset(buf_ + n_ + len, 0, kNameWidth - len);
    n_ += kNameWidth;
    return *this;
  }
  std::string_view view() const { return {buf_, n_}; }
  size_t size() const { return n_; }
  operator std::string_view() const { return view(); }

 private:
  char buf_[64];
  size_t n_ = 0;
};

inline uint32_t readU32(std::string_view k, size_t at) {
  auto b = reinterpret_cast<const unsigned char*>(k.data()) + at;
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
}
inline uint32_t readU8(std::string_view k, size_t at) {
  return static_cast<unsigned char>(k[at]);
}

inline Key warehouseKey(uint32_t w) { return Key().u32(w); }
inline Key districtKey(uint32_t w, uint32_t d) { return Key().u32(w).u8(d); }
inline Key customerKey(uint32_t w, uint32_t d, uint32_t c) { return Key().u32(w).u8(d).u32(c); }
// Byte offsets inside customer_name keys: w(0..3) d(4) last(5..20) first(21..36) c(37..40)
inline constexpr size_t kCustomerNameLastAt = 5;
inline constexpr size_t kCustomerNameIdAt = 5 + 2 * kNameWidth;
inline Key customerNameKey(uint32_t w, uint32_t d, const char* last, const char* first,
                           uint32_t c) {
  return Key().u32(w).u8(d).name(last, 16).name(first, 16).u32(c);
}
// The prefix (w, d, c_last) of customer_name keys.
inline Key customerNamePrefix(uint32_t w, uint32_t d, const char* last) {
  return Key().u32(w).u8(d).name(last, 16);
}
// History has no primary key in TPC-C: (origin, sequence), origin 0 for loaded rows
// (sequence = the customer's global number), 1, 2, ... for the rows added by Payment in
// each Worker (a per-instance number, so that repeated runs never reuse a key).
inline Key historyKey(uint32_t origin, uint64_t seq) { return Key().u32(origin).u64(seq); }
inline Key newOrderKey(uint32_t w, uint32_t d, uint32_t o) { return Key().u32(w).u8(d).u32(o); }
inline Key orderKey(uint32_t w, uint32_t d, uint32_t o) { return Key().u32(w).u8(d).u32(o); }
inline Key orderCustomerKey(uint32_t w, uint32_t d, uint32_t c, uint32_t o) {
  return Key().u32(w).u8(d).u32(c).u32(o);
}
inline Key orderLineKey(uint32_t w, uint32_t d, uint32_t o, uint32_t number) {
  return Key().u32(w).u8(d).u32(o).u8(number);
}
inline Key itemKey(uint32_t i) { return Key().u32(i); }
inline Key stockKey(uint32_t w, uint32_t i) { return Key().u32(w).u32(i); }

// ---- rows ---------------------------------------------------------------------------
// char arrays hold the spec's text fields (not NUL-terminated when full).
#pragma pack(push, 1)
struct Address {
  char street1[20];
  char street2[20];
  char city[20];
  char state[2];
  char zip[9];
};

struct WarehouseRow {
  uint32_t w_id;
  char w_name[10];
  Address w_address;
  int32_t w_tax;   // 1/10000
  int64_t w_ytd;   // cents
};

struct DistrictRow {
  uint32_t d_id;
  uint32_t d_w_id;
  char d_name[10];
  Address d_address;
  int32_t d_tax;   // 1/10000
  int64_t d_ytd;   // cents
  uint32_t d_next_o_id;
};

struct CustomerRow {
  uint32_t c_id;
  uint32_t c_d_id;
  uint32_t c_w_id;
  char c_first[16];
  char c_middle[2];
  char c_last[16];
  Address c_address;
  char c_phone[16];
  uint64_t c_since;
  char c_credit[2];          // "GC" or "BC"
  int64_t c_credit_lim;      // cents
  int32_t c_discount;        // 1/10000
  int64_t c_balance;         // cents
  int64_t c_ytd_payment;     // cents
  uint32_t c_payment_cnt;
  uint32_t c_delivery_cnt;
  uint16_t c_data_len;
  char c_data[500];
};

struct HistoryRow {
  uint32_t h_c_id;
  uint32_t h_c_d_id;
  uint32_t h_c_w_id;
  uint32_t h_d_id;
  uint32_t h_w_id;
  uint64_t h_date;
  int64_t h_amount;  // cents
  char h_data[24];
};

struct NewOrderRow {
  uint32_t no_o_id;
  uint32_t no_d_id;
  uint32_t no_w_id;
};

struct OrderRow {
  uint32_t o_id;
  uint32_t o_d_id;
  uint32_t o_w_id;
  uint32_t o_c_id;
  uint64_t o_entry_d;
  uint32_t o_carrier_id;  // 0: null
  uint8_t o_ol_cnt;
  uint8_t o_all_local;
};

struct OrderLineRow {
  uint32_t ol_o_id;
  uint32_t ol_d_id;
  uint32_t ol_w_id;
  uint8_t ol_number;
  uint32_t ol_i_id;
  uint32_t ol_supply_w_id;
  uint64_t ol_delivery_d;  // 0: null
  uint8_t ol_quantity;
  int64_t ol_amount;       // cents
  char ol_dist_info[24];
};

struct ItemRow {
  uint32_t i_id;
  uint32_t i_im_id;
  char i_name[24];
  int64_t i_price;  // cents
  uint8_t i_data_len;
  char i_data[50];
};

struct StockRow {
  uint32_t s_i_id;
  uint32_t s_w_id;
  int32_t s_quantity;
  char s_dist[10][24];
  uint32_t s_ytd;
  uint32_t s_order_cnt;
  uint32_t s_remote_cnt;
  uint8_t s_data_len;
  char s_data[50];
};
#pragma pack(pop)

// Row <-> value bytes.
template <class Row>
inline std::string_view bytesOf(const Row& r) {
  return {reinterpret_cast<const char*>(&r), sizeof(Row)};
}
template <class Row>
inline bool rowFrom(std::string_view v, Row* r) {
  if (v.size() != sizeof(Row)) return false;
  std::memcpy(r, v.data(), sizeof(Row));
  return true;
}
template <class Row>
inline void rowOrThrow(std::string_view v, Row* r, const char* table) {
  if (!rowFrom(v, r)) {
    throw std::runtime_error(std::string("tpcc: malformed ") + table + " row (" +
                             std::to_string(v.size()) + " bytes)");
  }
}

// A fixed-size text field as a string_view (up to its first NUL).
inline std::string_view field(const char* s, size_t width) { return {s, strnlen(s, width)}; }

}  // namespace vmstore::bench::tpcc
