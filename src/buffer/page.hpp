// The header every 4 KiB page begins with, owned by the buffer manager.
//
// On storage: checksum is the CRC-32C of bytes [8, 4096) and pid the page's own id, so
// a damaged page and a page written to the wrong place are both detected on read.
// In memory: dirty says the page changed since it was last written. `kind` belongs to
// the layer above (B+tree node, value page, free-list page) and is covered by the
// checksum; the buffer manager never interprets it beyond kFree. `epoch` names the
// checkpoint interval in which the page was written; the page journal (src/wal) accepts
// a journal frame only for the interval it belongs to.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vmstore::internal {

inline constexpr size_t kPageSize = 4096;

enum class PageKind : uint8_t {
  kFree = 0,         // never used or returned to free space
  kSuperblock = 1,
  kFreeList = 2,
  kBTreeInner = 3,
  kBTreeLeaf = 4,
  kValue = 5,        // an out-of-line value
};

struct PageHeader {
  uint32_t checksum;
  uint8_t dirty;  // memory only; not covered by the checksum
  uint8_t pad[3];
  // --- covered by the checksum from here on ---
  PageKind kind;
  uint8_t pad2[3];
  uint32_t epoch;  // the checkpoint interval the page was last written in (page journal)
  uint64_t pid;
  uint64_t lsn;  // reserved for the write-ahead log
};
static_assert(sizeof(PageHeader) == 32);

inline constexpr size_t kChecksumOffset = 8;
inline constexpr size_t kPagePayload = kPageSize - sizeof(PageHeader);

struct alignas(kPageSize) Page {
  PageHeader header;
  unsigned char payload[kPagePayload];
};
static_assert(sizeof(Page) == kPageSize);

// Sets the page's id, epoch and checksum for writing it as page `pid`; clears dirty.
void sealPage(Page* page, uint64_t pid, uint32_t epoch = 0);
// True when a page read from storage as `pid` carries its own id and a good checksum.
bool pageIsIntact(const Page* page, uint64_t pid);

}  // namespace vmstore::internal
