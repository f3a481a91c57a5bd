#include "buffer/page.hpp"

#include "buffer/checksum.hpp"

namespace vmstore::internal {

namespace {
uint32_t checksumOf(const Page* page) {
  return crc32c(reinterpret_cast<const char*>(page) + kChecksumOffset, kPageSize - kChecksumOffset);
}
}  // namespace

void sealPage(Page* page, uint64_t pid) {
  page->header.pid = pid;
  __atomic_store_n(&page->header.dirty, 0, __ATOMIC_RELAXED);
  page->header.checksum = checksumOf(page);
}

bool pageIsIntact(const Page* page, uint64_t pid) {
  return page->header.pid == pid && page->header.checksum == checksumOf(page);
}

}  // namespace vmstore::internal
