// The header every 4 KiB page begins with, owned by the buffer manager.
//
// On storage: checksum is the CRC-32C of bytes [8, 4096) and pid the page's own id, so
// a damaged page and a page written to the wrong place are both detected on read.
// In memory: dirty says the page changed since it was last written. `kind` belongs to
// the layer above (B+tree node, value page, free-list page) and is covered by the
// checksum; the buffer manager never interprets it beyond kFree. `epoch` names the
// checkpoint interval in which the page was written; the page journal (src/wal) accepts
// a journal frame only for the interval it belongs to.
//
// Variable-size pages (paper 000 §3.5): a page may span n contiguous page ids (an
// extent), one object in virtual memory whose physical frames need not be contiguous.
// Only its head page has a header; `pages` (0 or 1 for an ordinary page) says how many
// ids it spans, and the checksum covers all of its n * 4 KiB from byte 8 on. The head's
// state word is the extent's only one: the ids after it are never fixed on their own.
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
  uint8_t pages[3];  // little-endian page count of a variable-size page; 0: one page
  uint32_t epoch;  // the checkpoint interval the page was last written in (page journal)
  uint64_t pid;
  uint64_t lsn;  // reserved for the write-ahead log
};
static_assert(sizeof(PageHeader) == 32);

inline constexpr size_t kChecksumOffset = 8;
// The most ids one variable-size page may span (the 24-bit count): 64 GiB.
inline constexpr uint64_t kMaxSpanPages = (1u << 24) - 1;

// The number of ids the page with this header spans (at least 1).
inline uint64_t spanOf(const PageHeader& h) {
  uint64_t n = h.pages[0] | (uint64_t{h.pages[1]} << 8) | (uint64_t{h.pages[2]} << 16);
  return n == 0 ? 1 : n;
}
inline void setSpan(PageHeader* h, uint64_t pages) {
  uint64_t n = pages == 1 ? 0 : pages;
  h->pages[0] = static_cast<uint8_t>(n);
  h->pages[1] = static_cast<uint8_t>(n >> 8);
  h->pages[2] = static_cast<uint8_t>(n >> 16);
}
inline constexpr size_t kPagePayload = kPageSize - sizeof(PageHeader);

struct alignas(kPageSize) Page {
  PageHeader header;
  unsigned char payload[kPagePayload];
};
static_assert(sizeof(Page) == kPageSize);

// Told as a variable-size page being read in from storage arrives
// (BufferManager::fixS with an arrival): bytes [0, upTo) of page are in place, upTo
// ascending, the last time the whole page. Not yet verified (a checksum failure after
// makes the fix throw); called on the fixing thread, inside the fix, with the page
// locked for the read, so it must not take page locks. What it throws fails the fix.
struct SpanArrival {
  void (*fn)(void* ctx, const Page* page, size_t upTo);
  void* ctx;
};

// Sets the page's id, epoch and checksum (over all spanOf(header) pages) for writing it
// as page `pid`; clears dirty.
void sealPage(Page* page, uint64_t pid, uint32_t epoch = 0);
// True when a page read from storage as `pid` carries its own id, spans `pages` ids
// (read in whole) and has a good checksum.
bool pageIsIntact(const Page* page, uint64_t pid, uint64_t pages = 1);
// The same check for a page that arrived in pieces and was summed as it came:
// summed is pageChecksumPart's result over bytes [kChecksumOffset, pages * kPageSize).
bool pageIsIntactSummed(const Page* page, uint64_t pid, uint64_t pages, uint32_t summed);
// Continues the checksum of a page over its bytes [from, to) (offsets from its start,
// kChecksumOffset <= from <= to); start with sum 0 at from == kChecksumOffset.
uint32_t pageChecksumPart(uint32_t sum, const Page* page, size_t from, size_t to);

}  // namespace vmstore::internal
