// PageStore: where the buffer manager reads missed pages from and writes dirty pages to.
//
// Contract
// - readPage(pid, buf, pages) fills buf (4 KiB aligned, pages * 4 KiB) with the newest
//   stored copy of pid, a variable-size page of `pages` ids when pages > 1, or with
//   zeros (which fail the checksum) if pid was never written. It is the miss path:
//   inside a task it may suspend the task while the read is in flight (DataFile::
//   fetchPage), so it holds no lock across the read that another task could need.
// - readPage with progress (the buffer manager passes it for pages > 1): a store may
//   call progress->arrived(upTo), with ascending upTo, each time bytes [0, upTo) of buf
//   are in place, so the caller can check and use the first bytes of a large page while
//   the rest is read. It may also report less, or nothing: when readPage returns OK the
//   caller takes the whole page as arrived.
// - writePages(writes) stores sealed pages; on failure none of them may be assumed
//   stored, and the caller keeps them dirty.
// - Both are called concurrently from many threads; writePages calls are serialized by
//   the buffer manager (one evictor or flusher at a time).
// - FileStore, the default, reads and writes the data file in place. The database puts
//   the page journal (src/wal) here instead, so that the data file stays the last
//   checkpoint until the next one commits.
#pragma once

#include <cstdint>
#include <span>

#include "buffer/page.hpp"
#include "os/data_file.hpp"
#include "vmstore/status.hpp"

namespace vmstore::internal {

class PageStore {
 public:
  virtual ~PageStore() = default;
  virtual Status readPage(uint64_t pid, Page* buf, uint64_t pages = 1,
                          const ChunkedReadTarget* progress = nullptr) = 0;
  // Each page is sealed with the checkpoint interval it belongs to (header.epoch).
  virtual Status writePages(std::span<const PageWrite> writes) = 0;
};

class FileStore : public PageStore {
 public:
  explicit FileStore(DataFile* file) : file_(file) {}
  Status readPage(uint64_t pid, Page* buf, uint64_t pages = 1, const ChunkedReadTarget* progress = nullptr) override {
    return pages == 1 ? file_->fetchPage(pid, buf) : file_->readPages(pid, pages, buf, progress);
  }
  Status writePages(std::span<const PageWrite> writes) override { return file_->writeBatch(writes); }

 private:
  DataFile* file_;
};

}  // namespace vmstore::internal
