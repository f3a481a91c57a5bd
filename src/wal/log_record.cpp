#include "wal/log_record.hpp"

#include <cstddef>
#include <cstring>

#include "buffer/checksum.hpp"

namespace vmstore::internal {

namespace {

template <class T>
void put(uint8_t*& p, T v) {
  std::memcpy(p, &v, sizeof(v));
  p += sizeof(v);
}

void putBytes(uint8_t*& p, std::string_view s) {
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  p += s.size();
}

// The count's top bit: the CRC covers the payload first (format version 3 on).
constexpr uint32_t kPayloadFirstCrc = 1u << 31;

// The header after its CRC field, appended to a CRC of the payload.
uint32_t sealedCrc(const uint8_t* record, uint32_t payloadCrc) {
  return crc32cExtend(payloadCrc, record + sizeof(uint32_t), sizeof(LogRecordHeader) - sizeof(uint32_t));
}

uint32_t recordCrc(const uint8_t* record, size_t length, bool payloadFirst) {
  if (payloadFirst) return sealedCrc(record, crc32c(record + sizeof(LogRecordHeader), length));
  return crc32c(record + sizeof(uint32_t), sizeof(LogRecordHeader) - sizeof(uint32_t) + length);
}

}  // namespace

void encodeRecord(std::span<const LogOp> ops, uint64_t salt, uint64_t offset, uint32_t epoch, uint8_t* out) {
  sealRecord(out, encodeUnsealed(ops, salt, out), offset, epoch);
}

void sealRecord(uint8_t* record, uint32_t payloadCrc, uint64_t offset, uint32_t epoch) {
  std::memcpy(record + offsetof(LogRecordHeader, offset), &offset, sizeof(offset));
  std::memcpy(record + offsetof(LogRecordHeader, epoch), &epoch, sizeof(epoch));
  uint32_t crc = sealedCrc(record, payloadCrc);
  std::memcpy(record, &crc, sizeof(crc));
}

uint32_t encodeUnsealed(std::span<const LogOp> ops, uint64_t salt, uint8_t* out) {
  size_t length = logPayloadSize(ops);
  LogRecordHeader h{0, static_cast<uint32_t>(length), salt, 0, 0,
                    static_cast<uint32_t>(ops.size()) | kPayloadFirstCrc};
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
  std::memset(p, 0, logPadded(sizeof(h) + length) - sizeof(h) - length);
  std::memcpy(out, &h, sizeof(h));
  return crc32c(out + sizeof(h), length);
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
  bool payloadFirst = (h.count & kPayloadFirstCrc) != 0;
  if (recordCrc(bytes.data(), h.length, payloadFirst) != h.crc) return RecordCheck::kMismatch;
  uint32_t count = h.count & ~kPayloadFirstCrc;
  ops->clear();
  const uint8_t* p = bytes.data() + sizeof(h);
  const uint8_t* end = p + h.length;
  for (uint32_t i = 0; i < count; i++) {
    if (static_cast<size_t>(end - p) < kLogOpHeader) return RecordCheck::kMismatch;
    uint8_t kind;
    uint16_t nameLen;
    uint32_t keyLen, valueLen;
    std::memcpy(&kind, p, 1);
    std::memcpy(&nameLen, p + 1, 2);
    std::memcpy(&keyLen, p + 3, 4);
    std::memcpy(&valueLen, p + 7, 4);
    p += kLogOpHeader;
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
  *size = logPadded(sizeof(h) + h.length);
  return RecordCheck::kValid;
}

}  // namespace vmstore::internal
