#include "api/superblock.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>

namespace vmstore::internal {

namespace {

constexpr char kMagic[8] = {'V', 'M', 'S', 'T', 'O', 'R', 'E', '\0'};

struct SuperblockPage {
  PageHeader page;
  char magic[8];
  uint32_t formatVersion;
  uint32_t pageSize;
  uint64_t pageCount;
  uint64_t catalogRoot;
  uint64_t freeListHead;
  uint64_t freeCount;
  uint64_t checkpoints;
  uint32_t clean;
  uint32_t pad;
  uint64_t databaseId;  // version 4; zero in older files
};

struct FreeListPage {
  PageHeader page;
  uint64_t next;
  uint32_t n;
  uint32_t pad;
  static constexpr size_t kCapacity = (kPageSize - sizeof(PageHeader) - 16) / 8;
  uint64_t pids[kCapacity];
};
static_assert(sizeof(FreeListPage) <= kPageSize);

std::unique_ptr<Page> newPage() {
  auto p = std::make_unique<Page>();
  std::memset(p.get(), 0, kPageSize);
  return p;
}

}  // namespace

Status readSuperblock(const DataFile& file, Superblock* sb) {
  auto buf = newPage();
  Status st = file.readPage(0, buf.get());
  if (!st.ok()) return st;
  return decodeSuperblock(buf.get(), file.path(), sb);
}

Status decodeSuperblock(const Page* page, const std::string& path, Superblock* sb) {
  auto* p = reinterpret_cast<const SuperblockPage*>(page);
  if (std::memcmp(p->magic, kMagic, sizeof(kMagic)) != 0) {
    return Status::Corruption(path + " is not a vmstore data file (bad magic)");
  }
  if (!pageIsIntact(page, 0) || p->page.kind != PageKind::kSuperblock) {
    return Status::Corruption("superblock of " + path + " is damaged (checksum mismatch)");
  }
  if (p->formatVersion < kOldestFormatVersion || p->formatVersion > kFormatVersion) {
    return Status::Corruption(path + " has format version " + std::to_string(p->formatVersion) +
                              "; this build reads versions " + std::to_string(kOldestFormatVersion) + " to " +
                              std::to_string(kFormatVersion));
  }
  if (p->pageSize != kPageSize) {
    return Status::Corruption(path + " uses a page size of " + std::to_string(p->pageSize));
  }
  sb->pageCount = p->pageCount;
  sb->catalogRoot = p->catalogRoot;
  sb->freeListHead = p->freeListHead;
  sb->freeCount = p->freeCount;
  sb->checkpoints = p->checkpoints;
  sb->clean = p->clean == 1;
  sb->databaseId = p->formatVersion >= 4 ? p->databaseId : 0;
  if (sb->pageCount < 2 || sb->catalogRoot == 0 || sb->catalogRoot >= sb->pageCount ||
      sb->freeListHead >= sb->pageCount || sb->freeCount >= sb->pageCount) {
    return Status::Corruption("superblock of " + path + " holds impossible values");
  }
  return Status::OK();
}

void encodeSuperblock(const Superblock& sb, uint32_t epoch, Page* page) {
  std::memset(page, 0, kPageSize);
  auto* p = reinterpret_cast<SuperblockPage*>(page);
  p->page.kind = PageKind::kSuperblock;
  std::memcpy(p->magic, kMagic, sizeof(kMagic));
  p->formatVersion = kFormatVersion;
  p->pageSize = kPageSize;
  p->pageCount = sb.pageCount;
  p->catalogRoot = sb.catalogRoot;
  p->freeListHead = sb.freeListHead;
  p->freeCount = sb.freeCount;
  p->checkpoints = sb.checkpoints;
  p->clean = sb.clean ? 1 : 0;
  p->databaseId = sb.databaseId;
  sealPage(page, 0, epoch);
}

uint64_t newDatabaseId() {
  std::random_device rd;
  for (;;) {
    uint64_t id = (uint64_t{rd()} << 32) | rd();
    if (static_cast<uint32_t>(id) != 0) return id;
  }
}

uint64_t freeListPages(uint64_t entries) { return (entries + FreeListPage::kCapacity - 1) / FreeListPage::kCapacity; }

void encodeFreeList(const std::vector<uint64_t>& free, const std::vector<uint64_t>& extraEntries, uint32_t epoch,
                    std::vector<std::unique_ptr<Page>>* pages, std::vector<PageWrite>* writes, uint64_t* head) {
  std::vector<uint64_t> entries(free);
  entries.insert(entries.end(), extraEntries.begin(), extraEntries.end());
  size_t n = freeListPages(entries.size());
  *head = 0;
  // Page i of the chain is free[i] and holds entries [i*cap, (i+1)*cap).
  for (size_t i = n; i-- > 0;) {
    auto buf = newPage();
    auto* p = reinterpret_cast<FreeListPage*>(buf.get());
    p->page.kind = PageKind::kFreeList;
    p->next = *head;
    size_t begin = i * FreeListPage::kCapacity;
    size_t count = std::min(FreeListPage::kCapacity, entries.size() - begin);
    p->n = static_cast<uint32_t>(count);
    std::memcpy(p->pids, entries.data() + begin, count * sizeof(uint64_t));
    sealPage(buf.get(), free[i], epoch);
    writes->push_back({free[i], buf.get()});
    pages->push_back(std::move(buf));
    *head = free[i];
  }
}

Status readFreeList(const DataFile& file, uint64_t head, uint64_t count, uint64_t pageCount,
                    std::vector<uint64_t>* free) {
  free->clear();
  auto buf = newPage();
  auto* p = reinterpret_cast<const FreeListPage*>(buf.get());
  uint64_t pid = head;
  uint64_t hops = 0;
  while (pid != 0) {
    if (pid >= pageCount || ++hops > pageCount) {
      return Status::Corruption("free list refers to page " + std::to_string(pid) + " outside the file");
    }
    Status st = file.readPage(pid, buf.get());
    if (!st.ok()) return st;
    if (!pageIsIntact(buf.get(), pid) || p->page.kind != PageKind::kFreeList || p->n > FreeListPage::kCapacity) {
      return Status::Corruption("free-list page " + std::to_string(pid) + " is damaged");
    }
    for (uint32_t i = 0; i < p->n; i++) {
      if (p->pids[i] == 0 || p->pids[i] >= pageCount) {
        return Status::Corruption("free list holds page id " + std::to_string(p->pids[i]) + " outside the file");
      }
      free->push_back(p->pids[i]);
    }
    pid = p->next;
  }
  std::vector<uint64_t> sorted(*free);
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return Status::Corruption("free list holds a page id twice");
  }
  if (free->size() != count) {
    return Status::Corruption("free list holds " + std::to_string(free->size()) + " pages, superblock says " +
                              std::to_string(count));
  }
  return Status::OK();
}

}  // namespace vmstore::internal
