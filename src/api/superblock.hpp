// The on-storage format of a database: the superblock (page 0) and the free-list pages.
//
// A database directory holds LOCK (the lock target), data.vms (an array of 4 KiB pages),
// journal-0.vms and journal-1.vms (the page journal) and log-0.vms and log-1.vms (the
// operation log; both in src/wal). Page 0 of data.vms is the superblock;
// every page carries the buffer manager's header (checksum, own id, epoch). data.vms is
// always exactly the last committed checkpoint: a checkpoint goes through the journal
// (see wal/page_journal.hpp), and `checkpoints` counts them. `clean` is always 1 in
// files this version writes; a 0 marks a file an older version left unclean.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "buffer/page.hpp"
#include "os/data_file.hpp"
#include "vmstore/status.hpp"

namespace vmstore::internal {

// Version 2 added patch records to the operation log (wal/log_record.hpp); version 3
// log records sum their payload before their header (a flag in each record says which
// order it uses); version 4 added the database id (a database created with it binds its
// log to itself: wal/op_log.hpp). This build writes 4 and reads 1 to 4 (an older
// database takes 4 at its next checkpoint, keeping id 0). An older build refuses a newer
// file; one that crashed before that first checkpoint may leave records that such a
// build would take for the log's end.
inline constexpr uint32_t kFormatVersion = 4;
inline constexpr uint32_t kOldestFormatVersion = 1;

struct Superblock {
  uint64_t pageCount = 0;    // pages in the file, including this one
  uint64_t catalogRoot = 0;  // root page of the catalog tree (names -> tree roots)
  uint64_t freeListHead = 0; // first free-list page, 0 if none
  uint64_t freeCount = 0;    // ids in the free list
  uint64_t checkpoints = 0;  // checkpoints written so far
  bool clean = false;
  // Random, chosen at creation (never 0 in its low 32 bits); 0 in a database created
  // before version 4. The log's records carry its low 32 bits, so a log file of another
  // database is refused instead of replayed.
  uint64_t databaseId = 0;
};
// A new database's id.
uint64_t newDatabaseId();

Status readSuperblock(const DataFile& file, Superblock* sb);
// The superblock as a page image (sealed as page 0 of interval `epoch`), and back.
void encodeSuperblock(const Superblock& sb, uint32_t epoch, Page* page);
Status decodeSuperblock(const Page* page, const std::string& path, Superblock* sb);

// Free-list pages needed to hold `entries` page ids.
uint64_t freeListPages(uint64_t entries);
// Encodes free + extraEntries as a chain of free-list pages stored in the first pages of
// `free` itself (so it never grows the file; the caller makes sure `free` has at least
// freeListPages(free.size() + extraEntries.size()) ids). Appends the sealed pages to
// *pages and their writes to *writes; the head page id goes to *head (0 if empty).
void encodeFreeList(const std::vector<uint64_t>& free, const std::vector<uint64_t>& extraEntries, uint32_t epoch,
                    std::vector<std::unique_ptr<Page>>* pages, std::vector<PageWrite>* writes, uint64_t* head);
// Reads the chain back; checks ids against pageCount.
Status readFreeList(const DataFile& file, uint64_t head, uint64_t count, uint64_t pageCount,
                    std::vector<uint64_t>* free);

}  // namespace vmstore::internal
