#include "wal/log_record.hpp"

#include <cstring>

#include "buffer/checksum.hpp"

namespace vmstore::internal {

namespace {

constexpr size_t kOpHeader = 1 + 2 + 4 + 4;

size_t payloadSize(std::span<const LogOp> ops) {
  size_t n = 0;
  for (const LogOp& op : ops) n += kOpHeader + op.tree.size() + op.key.size() + op.value.size();
  return n;
}

size_t padded(size_t n) { return (n + 7) & ~size_t{7}; }

template <class T>
void put(uint8_t*& p, T v) {
  std::memcpy(p, &v, sizeof(v));
  p += sizeof(v);
}

void putBytes(uint8_t*& p, std::string_view s) {
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  p += s.size();
}

uint32_t recordCrc(const uint8_t* record, size_t length) {
  return crc32c(record + sizeof(uint32_t), sizeof(LogRecordHeader) - sizeof(uint32_t) + length);
}

}  // namespace

size_t recordSize(std::span<const LogOp> ops, size_t moreValueBytes) {
  return padded(sizeof(LogRecordHeader) + payloadSize(ops) + moreValueBytes);
}

void encodeRecord(std::span<const LogOp> ops, uint64_t salt, uint64_t offset, uint32_t epoch, uint8_t* out) {
  size_t length = payloadSize(ops);
  LogRecordHeader h{0, static_cast<uint32_t>(length), salt, offset, epoch, static_cast<uint32_t>(ops.size())};
  uint8_t* p = out + sizeof(h);
  for (const LogOp& op : ops) {
    put(p, static_cast<uint8_t>(op.kind));
    put(p, static_cast<uint16_t>(op.tree.size()));
    put(p, static_cast<uint32_t>(op.key.size()));
    put(p, static_cast<uint32_t>(op.value.size()));
    putBytes(p, op.tree);
    putBytes(p, op.key);
    putBytes(p, op.value);
  }
  std::memset(p, 0, padded(sizeof(h) + length) - sizeof(h) - length);
  std::memcpy(out, &h, sizeof(h));
  h.crc = recordCrc(out, length);
  std::memcpy(out, &h.crc, sizeof(h.crc));
}

RecordCheck decodeRecord(std::span<const uint8_t> bytes, uint64_t* salt, uint64_t offset, uint32_t epoch,
                         size_t* size, std::vector<LogOp>* ops) {
  LogRecordHeader h;
  if (bytes.size() < sizeof(h)) return RecordCheck::kShort;
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.epoch != epoch || h.offset != offset || (*salt != 0 && h.salt != *salt) || h.salt == 0) {
    return RecordCheck::kMismatch;
  }
  if (h.length > bytes.size() - sizeof(h)) return RecordCheck::kShort;
  if (recordCrc(bytes.data(), h.length) != h.crc) return RecordCheck::kMismatch;
  ops->clear();
  const uint8_t* p = bytes.data() + sizeof(h);
  const uint8_t* end = p + h.length;
  for (uint32_t i = 0; i < h.count; i++) {
    if (static_cast<size_t>(end - p) < kOpHeader) return RecordCheck::kMismatch;
    uint8_t kind;
    uint16_t nameLen;
    uint32_t keyLen, valueLen;
    std::memcpy(&kind, p, 1);
    std::memcpy(&nameLen, p + 1, 2);
    std::memcpy(&keyLen, p + 3, 4);
    std::memcpy(&valueLen, p + 7, 4);
    p += kOpHeader;
    if (kind < 1 || kind > static_cast<uint8_t>(LogOpKind::kPatch)) return RecordCheck::kMismatch;
    uint64_t need = uint64_t{nameLen} + keyLen + valueLen;
    if (need > static_cast<uint64_t>(end - p)) return RecordCheck::kMismatch;
    LogOp op{static_cast<LogOpKind>(kind), {reinterpret_cast<const char*>(p), nameLen},
             {reinterpret_cast<const char*>(p + nameLen), keyLen},
             {reinterpret_cast<const char*>(p + nameLen + keyLen), valueLen}};
    p += need;
    ops->push_back(op);
  }
  if (p != end) return RecordCheck::kMismatch;
  *salt = h.salt;
  *size = padded(sizeof(h) + h.length);
  return RecordCheck::kValid;
}

}  // namespace vmstore::internal
