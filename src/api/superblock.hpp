// The on-storage format of a database: the superblock (page 0) and the free-list pages.
//
// A database directory holds LOCK (the flock target) and data.vms, an array of 4 KiB
// pages. Page 0 is the superblock; every page carries the buffer manager's header
// (checksum, own id). The superblock says whether the file is a consistent checkpoint
// ("clean"): a checkpoint writes all pages and the free list, syncs, then writes the
// superblock with clean=1 and syncs again; the first page write after it first rewrites
// the superblock with clean=0 and syncs. So a file whose superblock says clean is
// exactly the last checkpoint, and one that does not was changed after it.
#pragma once

#include <cstdint>
#include <vector>

#include "buffer/page.hpp"
#include "os/data_file.hpp"
#include "vmstore/status.hpp"

namespace vmstore::internal {

inline constexpr uint32_t kFormatVersion = 1;

struct Superblock {
  uint64_t pageCount = 0;    // pages in the file, including this one
  uint64_t catalogRoot = 0;  // root page of the catalog tree (names -> tree roots)
  uint64_t freeListHead = 0; // first free-list page, 0 if none
  uint64_t freeCount = 0;    // ids in the free list
  uint64_t checkpoints = 0;  // checkpoints written so far
  bool clean = false;
};

Status readSuperblock(const DataFile& file, Superblock* sb);
Status writeSuperblock(const DataFile& file, const Superblock& sb);

// Writes `free` as a chain of free-list pages stored in pages taken from `free` itself
// (so it never grows the file). Returns the head page id in *head (0 if empty).
Status writeFreeList(const DataFile& file, const std::vector<uint64_t>& free,
                     const std::vector<uint64_t>& extraEntries, uint64_t* head);
// Reads the chain back; checks ids against pageCount.
Status readFreeList(const DataFile& file, uint64_t head, uint64_t count, uint64_t pageCount,
                    std::vector<uint64_t>* free);

}  // namespace vmstore::internal
