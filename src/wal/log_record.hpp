// Log records: the operations of one acknowledged write (a put, a delete, a batch, a tree
// created or dropped), as the operation log (wal/op_log.hpp) stores them.
//
// Contract
// - A record is a 32-byte header and a payload, padded to 8 bytes. The header holds a
//   CRC-32C, the payload length, the log's salt (random per log session), the record's
//   own offset in the log file, the checkpoint epoch it belongs to and its operation
//   count. The CRC covers the payload, then the header after the CRC field (so that all
//   but the 28 header bytes can be summed before the record's place in the log is
//   known); the count's top bit (kPayloadFirstCrc) says so. A record without that bit
//   (written before format version 3) has the CRC of the header after the CRC field,
//   then the payload; both are read. A record is accepted only
//   if all of them match what the reader expects, so a torn record, a record of an older
//   interval or of another session left behind in a recycled log is never taken for one
//   of this interval.
// - The payload is the operations in order: kind (1 byte), tree name length (2 bytes),
//   key length (4), value length (4), then the name, key and value bytes. A patch
//   (kPatch) is a same-size update of a key's value: its value bytes are the patch
//   (wal/value_patch.hpp), replayed over the value the key holds then.
// - decodeRecord() never reads past the bytes it is given and rejects every
//   inconsistency (lengths beyond the payload, unknown kinds, a count that does not
//   match); LogOp views point into the given bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace vmstore::internal {

enum class LogOpKind : uint8_t { kPut = 1, kDelete = 2, kCreateTree = 3, kDropTree = 4, kPatch = 5 };

struct LogOp {
  LogOpKind kind;
  std::string_view tree;
  std::string_view key;    // put, delete, patch
  std::string_view value;  // put; patch: the patch
};

struct LogRecordHeader {
  uint32_t crc;
  uint32_t length;  // payload bytes
  uint64_t salt;
  uint64_t offset;  // of this record in the log file
  uint32_t epoch;
  uint32_t count;  // operations in the payload
};
static_assert(sizeof(LogRecordHeader) == 32);

// An operation's bytes in a payload before its name, key and value: kind (1), name
// length (2), key length (4), value length (4).
constexpr size_t kLogOpHeader = 1 + 2 + 4 + 4;
inline size_t logPayloadSize(std::span<const LogOp> ops) {
  size_t n = 0;
  for (const LogOp& op : ops) n += kLogOpHeader + op.tree.size() + op.key.size() + op.value.size();
  return n;
}
inline size_t logPadded(size_t n) { return (n + 7) & ~size_t{7}; }  // records are 8-byte aligned
// Bytes the record of these operations occupies (header, payload, padding), with
// moreValueBytes value bytes beyond those the ops hold now (a value not yet written).
// Inline: every logged write sizes its record before and after applying it.
inline size_t recordSize(std::span<const LogOp> ops, size_t moreValueBytes = 0) {
  return logPadded(sizeof(LogRecordHeader) + logPayloadSize(ops) + moreValueBytes);
}
// Writes the record into out (recordSize(ops) bytes).
void encodeRecord(std::span<const LogOp> ops, uint64_t salt, uint64_t offset, uint32_t epoch, uint8_t* out);
// encodeRecord in two steps. encodeUnsealed writes all but the offset, epoch and CRC and
// returns the CRC of the payload; sealRecord then places the record: it writes offset
// and epoch and the record's CRC (from the payload's CRC and the header alone).
uint32_t encodeUnsealed(std::span<const LogOp> ops, uint64_t salt, uint8_t* out);
void sealRecord(uint8_t* record, uint32_t payloadCrc, uint64_t offset, uint32_t epoch);

// What decodeRecord found at an offset.
enum class RecordCheck {
  kValid,
  kShort,     // fewer bytes than the header or its payload: the end of the log
  kMismatch,  // checksum, salt, offset, epoch or contents do not match: the end too
};
// Decodes the record at the start of `bytes`, expected to carry salt (0: any salt, which
// is then returned in *salt), offset and epoch. On kValid, *size is the record's size
// and *ops its operations.
RecordCheck decodeRecord(std::span<const uint8_t> bytes, uint64_t* salt, uint64_t offset, uint32_t epoch,
                         size_t* size, std::vector<LogOp>* ops);

}  // namespace vmstore::internal
