#include "wal/page_journal.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "os/io.hpp"

namespace vmstore::internal {

namespace {

// A frame counts when it is an intact page of the interval being recovered.
bool frameValid(const Page* p, uint32_t epoch) {
  return p->header.epoch == epoch && pageIsIntact(p, p->header.pid);
}

bool isCommitFrame(const Page* p) { return p->header.pid == 0 && p->header.kind == PageKind::kSuperblock; }

}  // namespace

Status PageJournal::open(const std::string& dir, DataFile* data, bool direct) {
  data_ = data;
  std::string path = dir + "/" + kFileName;
  struct stat st;
  bool existed = ::stat(path.c_str(), &st) == 0;
  Status s = file_.open(path, true, direct);
  if (!s.ok()) return s;
  if (!existed && io().syncDir(dir) != 0) {
    return Status::IOError("cannot sync directory " + dir + " after creating " + kFileName);
  }
  slots_.store(file_.sizeBytes() / kPageSize, std::memory_order_release);
  allocated_ = file_.sizeBytes() / kPageSize;
  return Status::OK();
}

void PageJournal::close() { file_.close(); }

Status PageJournal::recover(uint32_t epoch, bool* applied, Page* superblock) {
  *applied = false;
  uint64_t slots = file_.sizeBytes() / kPageSize;
  auto buf = std::make_unique<Page>();
  std::vector<std::pair<uint64_t, uint64_t>> frames;  // (pid, slot) before the last commit
  std::vector<std::pair<uint64_t, uint64_t>> pending;
  uint64_t commit = ~0ull;
  bool any = false;  // a frame of this interval exists
  for (uint64_t slot = 0; slot < slots; slot++) {
    Status s = file_.readPage(slot, buf.get());
    if (!s.ok()) return s;
    if (epoch == 0 && slot == 0) epoch = buf->header.epoch;  // superblock lost: trust the journal
    if (!frameValid(buf.get(), epoch)) break;                // torn or stale tail
    any = true;
    if (isCommitFrame(buf.get())) {
      frames.insert(frames.end(), pending.begin(), pending.end());
      pending.clear();
      commit = slot;
      std::memcpy(superblock, buf.get(), kPageSize);
    } else {
      pending.emplace_back(buf->header.pid, slot);
    }
  }
  if (commit == ~0ull) {
    // An interval that never committed: drop its frames, so that the next interval (the
    // same epoch) cannot meet them. A journal with none (recycled, or empty) stays.
    if (any) return truncateAll();
    slots_.store(0, std::memory_order_release);
    return Status::OK();
  }
  {
    std::unique_lock g(indexMutex_);
    index_.clear();
    for (auto& [pid, slot] : frames) index_[pid] = slot;
    indexed_.store(index_.size(), std::memory_order_release);
  }
  commitSlot_ = commit;
  slots_.store(commit + 1, std::memory_order_release);
  Status s = backfill();
  if (!s.ok()) return s;
  *applied = true;
  return Status::OK();
}

Status PageJournal::readPage(uint64_t pid, Page* buf) {
  if (indexed_.load(std::memory_order_acquire) != 0) {
    std::shared_lock g(indexMutex_);
    auto it = index_.find(pid);
    if (it != index_.end()) {
      Status s = file_.readPage(it->second, buf);
      if (s.ok() && buf->header.pid != pid) {
        return Status::Corruption("journal frame " + std::to_string(it->second) + " of " + file_.path() +
                                  " does not hold page " + std::to_string(pid));
      }
      return s;
    }
  }
  return data_->readPage(pid, buf);
}

Status PageJournal::writePages(std::span<const PageWrite> all) {
  if (all.empty()) return Status::OK();
  std::lock_guard g(appendMutex_);
  std::vector<PageWrite> direct;
  std::vector<PageWrite> journaled;
  for (const PageWrite& w : all) (w.pid >= directFrom_ ? direct : journaled).push_back(w);
  if (!direct.empty()) {
    Status s = data_->writeBatch(direct);
    if (!s.ok()) return s;
    directWritten_ = true;
  }
  std::span<const PageWrite> writes(journaled);
  if (writes.empty()) return Status::OK();
  uint64_t start = slots_.load(std::memory_order_relaxed);
  if (start + writes.size() > allocated_) {
    // Appends that extend an O_DIRECT file are serialized by the file system; writes
    // into allocated space are not. Allocate ahead, doubling (at least 16 MiB).
    uint64_t target = std::max<uint64_t>(start + writes.size(), std::max<uint64_t>(2 * allocated_, 4096));
    if (file_.allocate(target).ok()) allocated_ = target;
  }
  std::vector<PageWrite> frames;
  frames.reserve(writes.size());
  for (size_t i = 0; i < writes.size(); i++) frames.push_back({start + i, writes[i].buf});
  Status s = file_.writeBatch(frames);
  if (!s.ok()) return s;  // slots_ unchanged: the next append overwrites these slots
  {
    std::unique_lock ig(indexMutex_);
    for (size_t i = 0; i < writes.size(); i++) index_[writes[i].pid] = start + i;
    indexed_.store(index_.size(), std::memory_order_release);
  }
  slots_.store(start + writes.size(), std::memory_order_release);
  return Status::OK();
}

Status PageJournal::commit(const Page* superblock) {
  std::lock_guard g(appendMutex_);
  syncFailed_ = false;
  if (directWritten_) {
    // Pages written in place must be durable before the commit that counts them.
    Status s = data_->sync();
    if (!s.ok()) {
      syncFailed_ = true;
      return s;
    }
    directWritten_ = false;
  }
  uint64_t slot = slots_.load(std::memory_order_relaxed);
  Status s = file_.writePage(slot, superblock);
  if (!s.ok()) return s;
  s = file_.sync();
  if (!s.ok()) {
    syncFailed_ = true;
    return s;
  }
  commitSlot_ = slot;
  slots_.store(slot + 1, std::memory_order_release);
  return Status::OK();
}

Status PageJournal::backfill() {
  std::lock_guard g(appendMutex_);
  syncFailed_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> entries;  // (pid, slot)
  {
    std::shared_lock ig(indexMutex_);
    entries.assign(index_.begin(), index_.end());
  }
  // Read the journal in slot order (runs of adjacent frames with one read each), write
  // each chunk into the data file as one batch.
  std::sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  constexpr size_t kChunk = 256;
  std::unique_ptr<Page[]> bufs(new Page[kChunk]);
  for (size_t i = 0; i < entries.size(); i += kChunk) {
    size_t end = std::min(entries.size(), i + kChunk);
    for (size_t j = i; j < end;) {
      size_t run = 1;
      while (j + run < end && entries[j + run].second == entries[j].second + run) run++;
      Status s = file_.readPages(entries[j].second, run, &bufs[j - i]);
      if (!s.ok()) return s;
      j += run;
    }
    std::vector<PageWrite> writes;
    for (size_t j = i; j < end; j++) {
      Page* p = &bufs[j - i];
      if (!pageIsIntact(p, entries[j].first)) {
        return Status::Corruption("journal frame " + std::to_string(entries[j].second) + " of " + file_.path() +
                                  " is damaged");
      }
      writes.push_back({entries[j].first, p});
    }
    std::sort(writes.begin(), writes.end(), [](const PageWrite& x, const PageWrite& y) { return x.pid < y.pid; });
    Status s = data_->writeBatch(writes);
    if (!s.ok()) return s;
  }
  Status s = file_.readPage(commitSlot_, &bufs[0]);
  if (!s.ok()) return s;
  if (!isCommitFrame(&bufs[0]) || !pageIsIntact(&bufs[0], 0)) {
    return Status::Corruption("commit frame of " + file_.path() + " is damaged");
  }
  s = data_->writePage(0, &bufs[0]);
  if (s.ok()) s = data_->sync();
  if (!s.ok()) {
    syncFailed_ = true;  // the data file's state is unknown; the journal still holds it
    return s;
  }
  // Recycle the journal: the next interval's frames overwrite it from slot 0. What
  // remains of this interval's frames has an older epoch, which recovery never accepts.
  std::unique_lock ig(indexMutex_);
  index_.clear();
  indexed_.store(0, std::memory_order_release);
  slots_.store(0, std::memory_order_release);
  return Status::OK();
}

Status PageJournal::truncateAll() {
  std::unique_lock ig(indexMutex_);
  index_.clear();
  indexed_.store(0, std::memory_order_release);
  Status s = file_.truncate(0);
  if (s.ok()) s = file_.sync();
  if (!s.ok()) {
    syncFailed_ = true;
    return s;
  }
  slots_.store(0, std::memory_order_release);
  allocated_ = 0;
  return Status::OK();
}

}  // namespace vmstore::internal
