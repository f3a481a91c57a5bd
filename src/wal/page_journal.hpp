// PageJournal: keeps the data file an exact checkpoint between checkpoints (a redo page
// journal, like SQLite's WAL at page granularity), in two files so that a checkpoint can
// be written while the next interval's pages are written back beside it.
//
// Contract
// - No page of the last checkpoint is overwritten between checkpoints: every such page
//   the buffer manager writes back is appended as a frame (the sealed page itself, its
//   header naming its pid and the checkpoint interval, epoch, it belongs to) to the
//   journal file of that epoch's parity, DIR/journal-0.vms or DIR/journal-1.vms (a
//   variable-size page of n ids is one frame of n slots); a miss
//   reads the page's newest frame (the newer interval's file first). Pages from the
//   interval's `directFrom` on (the file grew since the last checkpoint) are written in
//   place: the last checkpoint does not contain them.
// - Two intervals are live at most: the one a checkpoint is writing (E) and the one
//   after its cut (E + 1). begin(E + 1) needs E + 1's file recycled, i.e. checkpoint
//   E - 1 completed (backfilled).
// - commit(E) appends the new superblock as E's commit frame and syncs E's file: that
//   sync is checkpoint E's commit point. backfill(E) then copies the newest frame of
//   every page of E, in the order they were written (a variable-size page may cover ids
//   that an older or newer frame holds as pages of their own: the newer one wins), and
//   the superblock into the data file, syncs it, and recycles E's
//   file (interval E + 2 overwrites it from the start; its stale frames carry an older
//   epoch). Appends of E + 1 go on meanwhile: they use the other file.
// - Space for frames is allocated ahead (fallocate, doubling), since appends that extend
//   an O_DIRECT file are serialized by the file system.
// - recover(): on open, a file whose frames up to a commit frame of the expected epoch
//   are intact is backfilled (the interrupted checkpoint completes); frames of an
//   interval that never committed are discarded, and a file holding any is truncated,
//   so the next interval with that epoch cannot meet them. So a crash, a failed write or
//   a failed sync at any point reopens at the last committed checkpoint.
// - A failed append leaves no trace that recovery would accept: the next append rewrites
//   the same slots. syncFailed() tells whether the last failure was a failed fdatasync,
//   after which nothing about the journal's durable content is known (the database must
//   turn read-only until reopened).
// - Thread-safe: appends, commit and backfill of one file are serialized; the two files
//   and readPage run concurrently.
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
  // The journal file of epochs of this parity.
  static std::string fileName(uint32_t epoch) { return epoch % 2 == 0 ? "journal-0.vms" : "journal-1.vms"; }

  // data: the open data file the journal stands in front of.
  Status open(const std::string& dir, DataFile* data, bool direct);
  void close();
  // Misses read from the journal files may suspend a task (DataFile::fetchPage).
  void setTaskReads(bool on) {
    for (File& f : files_) f.file.setTaskReads(on);
  }

  // Frames of `epoch` are appended from now on (to its recycled file); its pages from
  // `directFrom` on are written in place, and commit(epoch) syncs the data file first.
  void begin(uint32_t epoch, uint64_t directFrom);
  uint32_t epoch() const { return newest_.load(std::memory_order_acquire); }

  // On open: completes a committed checkpoint of `epoch` found in the journal (its
  // superblock frame is copied to *superblock, *applied = true); discards the frames of
  // every interval that never committed. epoch 0: the data file's superblock is lost,
  // take the newest committed checkpoint the journal holds.
  Status recover(uint32_t epoch, bool* applied, Page* superblock);

  Status readPage(uint64_t pid, Page* buf, uint64_t pages = 1, const ChunkedReadTarget* progress = nullptr) override;
  Status writePages(std::span<const PageWrite> writes) override;

  // Appends pages that are not in the pool (the free list) as frames.
  Status append(std::span<const PageWrite> writes) { return writePages(writes); }
  // Appends the sealed superblock image as the commit frame of `epoch` and syncs.
  Status commit(uint32_t epoch, const Page* superblock);
  // After commit(epoch): its newest frames and the superblock into the data file,
  // synced; its file recycled. A failure leaves the commit in the journal for recover().
  Status backfill(uint32_t epoch);

  uint64_t bytes() const;  // frames written in the live intervals
  bool syncFailed() const { return syncFailed_.load(std::memory_order_acquire); }

 private:
  struct Frame {
    uint64_t slot;
    uint64_t pages;  // slots it takes: > 1 for a variable-size page
  };
  struct File {
    DataFile file;
    std::mutex appendMutex;                 // appends, commit, backfill, truncate
    uint32_t epoch = 0;                     // the interval its frames belong to
    uint64_t directFrom = ~0ull;            // pages at or above it are written in place
    bool directWritten = false;             // since the last commit
    std::atomic<uint64_t> slots{0};         // frames written (next slot to write)
    uint64_t commitSlot = 0;                // slot of the commit frame after commit()
    uint64_t allocated = 0;                 // pages allocated on the device
    std::shared_mutex indexMutex;           // index and the file's content for readers
    std::unordered_map<uint64_t, Frame> index;  // pid -> its newest frame
    std::atomic<uint64_t> indexed{0};       // index.size(), for the lock-free miss path
    std::atomic<uint64_t> generation{0};    // +1 whenever the index is emptied (slots reused)
  };
  File& fileOf(uint32_t epoch) { return files_[epoch % 2]; }
  // Forgets every frame of f (indexMutex held exclusively, or no reader yet): a new
  // generation, so a read that looked its slot up before goes back (readPage).
  static void emptyIndex(File& f) {
    f.index.clear();
    f.generation.fetch_add(1, std::memory_order_release);
    f.indexed.store(0, std::memory_order_release);
  }
  Status appendTo(File& f, std::span<const PageWrite> writes);  // f.appendMutex held
  // Scans f from slot 0 for frames of epoch: *any tells whether one exists; a commit
  // found fills f's index and *superblock and returns true.
  Status scan(File& f, uint32_t epoch, bool* committed, bool* any, Page* superblock);
  Status backfillLocked(File& f);
  Status truncate(File& f);
  void failedSync() { syncFailed_.store(true, std::memory_order_release); }

  DataFile* data_ = nullptr;
  File files_[2];
  std::atomic<uint32_t> newest_{0};  // the newest interval begun
  std::atomic<bool> syncFailed_{false};
};

// Inline: every write asks (DatabaseImpl::checkpointDue).
inline uint64_t PageJournal::bytes() const {
  return (files_[0].slots.load(std::memory_order_acquire) + files_[1].slots.load(std::memory_order_acquire)) *
         kPageSize;
}

}  // namespace vmstore::internal
