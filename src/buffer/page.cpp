#include "buffer/page.hpp"

#include "buffer/checksum.hpp"

namespace vmstore::internal {

namespace {
uint32_t checksumOf(const Page* page) {
  return crc32c(reinterpret_cast<const char*>(page) + kChecksumOffset,
                spanOf(page->header) * kPageSize - kChecksumOffset);
}
}  // namespace

void sealPage(Page* page, uint64_t pid, uint32_t epoch) {
  // Runs under a shared lock while other holders may read the page: write only what
  // changes, and the checksum (read by nobody in memory) atomically.
  if (page->header.pid != pid) page->header.pid = pid;
  if (page->header.epoch != epoch) page->header.epoch = epoch;
  __atomic_store_n(&page->header.dirty, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&page->header.checksum, checksumOf(page), __ATOMIC_RELAXED);
}

bool pageIsIntact(const Page* page, uint64_t pid, uint64_t pages) {
  return page->header.pid == pid && spanOf(page->header) == pages && page->header.checksum == checksumOf(page);
}

bool pageIsIntactSummed(const Page* page, uint64_t pid, uint64_t pages, uint32_t summed) {
  return page->header.pid == pid && spanOf(page->header) == pages && page->header.checksum == summed;
}

uint32_t pageChecksumPart(uint32_t sum, const Page* page, size_t from, size_t to) {
  return crc32cExtend(sum, reinterpret_cast<const char*>(page) + from, to - from);
}

}  // namespace vmstore::internal
