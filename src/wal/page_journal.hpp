// PageJournal: keeps the data file an exact checkpoint between checkpoints (a redo page
// journal, like SQLite's WAL at page granularity).
//
// Contract
// - No page of the last checkpoint is overwritten between checkpoints: every such page
//   the buffer manager writes back in checkpoint interval `epoch` is appended to
//   DIR/journal.vms as a frame (the sealed page itself, its header naming its pid and
//   epoch), and a miss of such a page reads its newest frame (readPage). Pages beyond the
//   last checkpoint's end are written in place: the checkpoint does not contain them.
// - A checkpoint appends every remaining dirty page and the new free list, then commit()
//   appends the new superblock as the commit frame and syncs the journal: that sync is
//   the checkpoint's commit point. backfill() then copies the newest frame of every page
//   and the superblock into the data file, syncs it, and recycles the journal (the next
//   interval overwrites it from the start; its stale frames carry an older epoch).
// - Space for frames is allocated ahead (fallocate, doubling), since appends that extend
//   an O_DIRECT file are serialized by the file system. recover() truncates a journal it
//   discards, so an interval that never committed leaves no frames of its epoch behind.
// - recover(): on open, a journal whose frames up to a commit frame of the expected epoch
//   are intact is backfilled (the interrupted checkpoint completes); anything else in it
//   (frames of an interval that never committed, a torn tail) is discarded. So a crash,
//   a failed write or a failed sync at any point reopens at the last committed checkpoint.
// - A failed append leaves no trace that recovery would accept: the next append rewrites
//   the same slots. syncFailed() tells whether the last failure was a failed fdatasync,
//   after which nothing about the journal's durable content is known (the database must
//   turn read-only until reopened).
// - Thread-safe: appends, commit and backfill are serialized; readPage runs concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>

#include "buffer/page_store.hpp"
#include "os/data_file.hpp"

namespace vmstore::internal {

class PageJournal : public PageStore {
 public:
  static constexpr const char* kFileName = "journal.vms";

  // data: the open data file the journal stands in front of.
  Status open(const std::string& dir, DataFile* data, bool direct);
  void close();

  // The interval whose frames are appended from now on. Pages from `directFrom` on are
  // not part of the last checkpoint (the file grew since): they are written in place,
  // and commit() syncs the data file before its commit frame.
  void begin(uint32_t epoch, uint64_t directFrom) {
    std::lock_guard g(appendMutex_);
    epoch_.store(epoch, std::memory_order_relaxed);
    directFrom_ = directFrom;
  }
  uint32_t epoch() const override { return epoch_.load(std::memory_order_relaxed); }

  // On open: completes a committed checkpoint of `epoch` found in the journal (its
  // superblock frame is copied to *superblock, *applied = true), else empties it.
  Status recover(uint32_t epoch, bool* applied, Page* superblock);

  Status readPage(uint64_t pid, Page* buf) override;
  Status writePages(std::span<const PageWrite> writes) override;

  // Appends pages that are not in the pool (the free list) as frames.
  Status append(std::span<const PageWrite> writes) { return writePages(writes); }
  // Appends the sealed superblock image as the commit frame and syncs the journal.
  Status commit(const Page* superblock);
  // After commit: newest frames and the superblock into the data file, synced; journal
  // emptied and synced. A failure leaves the commit in the journal for recover().
  Status backfill();

  bool empty() const { return slots_.load(std::memory_order_acquire) == 0; }
  uint64_t bytes() const { return slots_.load(std::memory_order_acquire) * kPageSize; }
  bool syncFailed() const { return syncFailed_; }

 private:
  Status truncateAll();

  DataFile file_;
  DataFile* data_ = nullptr;
  std::atomic<uint32_t> epoch_{0};
  std::mutex appendMutex_;                  // appends, commit, backfill, truncate
  std::atomic<uint64_t> slots_{0};          // frames written (next slot to write)
  uint64_t commitSlot_ = 0;                 // slot of the commit frame after commit()
  std::shared_mutex indexMutex_;            // index_ and the file's content for readers
  std::unordered_map<uint64_t, uint64_t> index_;  // pid -> slot of its newest frame
  std::atomic<uint64_t> indexed_{0};        // index_.size(), for the lock-free miss path
  bool syncFailed_ = false;
  uint64_t allocated_ = 0;  // pages allocated on the device (appends stay inside)
  uint64_t directFrom_ = ~0ull;  // pages at or above it are written in place
  bool directWritten_ = false;   // since the last commit
};

}  // namespace vmstore::internal
