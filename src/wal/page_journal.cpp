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

uint32_t epochOf(const PageWrite& w) { return static_cast<const Page*>(w.buf)->header.epoch; }

}  // namespace

Status PageJournal::open(const std::string& dir, DataFile* data, bool direct) {
  data_ = data;
  bool created = false;
  for (uint32_t parity = 0; parity < 2; parity++) {
    File& f = files_[parity];
    std::string path = dir + "/" + fileName(parity);
    struct stat st;
    created |= ::stat(path.c_str(), &st) != 0;
    Status s = f.file.open(path, true, direct);
    if (!s.ok()) return s;
    f.allocated = f.file.sizeBytes() / kPageSize;
  }
  if (created && io().syncDir(dir) != 0) {
    return Status::IOError("cannot sync directory " + dir + " after creating the journal");
  }
  return Status::OK();
}

void PageJournal::close() {
  for (File& f : files_) f.file.close();
}

void PageJournal::begin(uint32_t epoch, uint64_t directFrom) {
  File& f = fileOf(epoch);
  std::lock_guard g(f.appendMutex);
  {
    std::unique_lock ig(f.indexMutex);
    f.epoch = epoch;
  }
  f.directFrom = directFrom;
  f.directWritten = false;
  newest_.store(epoch, std::memory_order_release);
}

uint64_t PageJournal::bytes() const {
  return (files_[0].slots.load(std::memory_order_acquire) + files_[1].slots.load(std::memory_order_acquire)) *
         kPageSize;
}

Status PageJournal::scan(File& f, uint32_t epoch, bool* committed, bool* any, Page* superblock) {
  *committed = false;
  *any = false;
  uint64_t slots = f.file.sizeBytes() / kPageSize;
  auto buf = std::make_unique<Page>();
  std::vector<std::pair<uint64_t, uint64_t>> frames;  // (pid, slot) before the last commit
  std::vector<std::pair<uint64_t, uint64_t>> pending;
  uint64_t commit = ~0ull;
  for (uint64_t slot = 0; slot < slots; slot++) {
    Status s = f.file.readPage(slot, buf.get());
    if (!s.ok()) return s;
    if (!frameValid(buf.get(), epoch)) break;  // torn or stale tail
    *any = true;
    if (isCommitFrame(buf.get())) {
      frames.insert(frames.end(), pending.begin(), pending.end());
      pending.clear();
      commit = slot;
      std::memcpy(superblock, buf.get(), kPageSize);
    } else {
      pending.emplace_back(buf->header.pid, slot);
    }
  }
  if (commit == ~0ull) return Status::OK();
  std::unique_lock g(f.indexMutex);
  f.epoch = epoch;
  emptyIndex(f);
  for (auto& [pid, slot] : frames) f.index[pid] = slot;
  f.indexed.store(f.index.size(), std::memory_order_release);
  f.commitSlot = commit;
  f.slots.store(commit + 1, std::memory_order_release);
  *committed = true;
  return Status::OK();
}

Status PageJournal::recover(uint32_t epoch, bool* applied, Page* superblock) {
  *applied = false;
  auto buf = std::make_unique<Page>();
  if (epoch == 0) {
    // The superblock was torn while a checkpoint was copied in: that checkpoint's commit
    // frame is in the journal. Take the newest interval either file committed.
    for (File& f : files_) {
      if (f.file.sizeBytes() < kPageSize) continue;
      Status s = f.file.readPage(0, buf.get());
      if (!s.ok()) return s;
      if (!pageIsIntact(buf.get(), buf->header.pid) || buf->header.epoch <= epoch) continue;
      bool committed = false;
      bool any = false;
      s = scan(f, buf->header.epoch, &committed, &any, superblock);
      if (!s.ok()) return s;
      if (committed) epoch = buf->header.epoch;
    }
    if (epoch == 0) return Status::OK();  // nothing to restore it from
  }
  File& last = fileOf(epoch);
  bool committed = false;
  bool any = false;
  Status s = scan(last, epoch, &committed, &any, superblock);
  if (!s.ok()) return s;
  if (committed) {
    std::lock_guard g(last.appendMutex);
    s = backfillLocked(last);
    if (!s.ok()) return s;
    *applied = true;
  } else if (any) {
    s = truncate(last);  // an interval that never committed
    if (!s.ok()) return s;
  }
  // The interval after a cut of `epoch` never committed either way: its frames go.
  File& next = fileOf(epoch + 1);
  s = scan(next, epoch + 1, &committed, &any, buf.get());
  if (!s.ok()) return s;
  if (any) return truncate(next);
  emptyIndex(next);
  next.slots.store(0, std::memory_order_release);
  return Status::OK();
}

Status PageJournal::readPage(uint64_t pid, Page* buf) {
  // No lock is held across the read (a task may be suspended in it): the slot and the
  // file's generation are taken under the index lock, and a read that overlapped the
  // file's recycling looks again. While the caller holds the page (evicted, locked), no
  // newer frame of it can be written, so within a generation its slot stays put.
  for (;;) {
    bool recycled = false;
    uint32_t newest = newest_.load(std::memory_order_acquire);
    for (uint32_t epoch : {newest, newest - 1}) {  // the newer interval's frame wins
      File& f = fileOf(epoch);
      if (f.indexed.load(std::memory_order_acquire) == 0) continue;
      uint64_t slot;
      uint64_t generation;
      {
        std::shared_lock g(f.indexMutex);
        auto it = f.index.find(pid);
        if (it == f.index.end()) continue;
        slot = it->second;
        generation = f.generation.load(std::memory_order_relaxed);
      }
      Status s = f.file.fetchPage(slot, buf);
      if (f.generation.load(std::memory_order_acquire) != generation) {
        recycled = true;
        break;
      }
      if (s.ok() && buf->header.pid != pid) {
        return Status::Corruption("journal frame " + std::to_string(slot) + " of " + f.file.path() +
                                  " does not hold page " + std::to_string(pid));
      }
      return s;
    }
    if (!recycled) return data_->fetchPage(pid, buf);
  }
}

Status PageJournal::writePages(std::span<const PageWrite> all) {
  if (all.empty()) return Status::OK();
  // At most two intervals are live; each goes to its own file.
  uint32_t first = epochOf(all[0]);
  std::vector<PageWrite> other;
  std::vector<PageWrite> mine;
  for (const PageWrite& w : all) (epochOf(w) == first ? mine : other).push_back(w);
  for (auto* group : {&mine, &other}) {
    if (group->empty()) continue;
    uint32_t epoch = epochOf((*group)[0]);
    File& f = fileOf(epoch);
    std::lock_guard g(f.appendMutex);
    if (f.epoch != epoch) {
      return Status::Corruption("page " + std::to_string((*group)[0].pid) + " of checkpoint interval " +
                                std::to_string(epoch) + " written while " + f.file.path() + " holds interval " +
                                std::to_string(f.epoch));
    }
    Status s = appendTo(f, *group);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status PageJournal::appendTo(File& f, std::span<const PageWrite> all) {
  std::vector<PageWrite> direct;
  std::vector<PageWrite> journaled;
  for (const PageWrite& w : all) (w.pid >= f.directFrom ? direct : journaled).push_back(w);
  if (!direct.empty()) {
    Status s = data_->writeBatch(direct);
    if (!s.ok()) return s;
    f.directWritten = true;
  }
  std::span<const PageWrite> writes(journaled);
  if (writes.empty()) return Status::OK();
  uint64_t start = f.slots.load(std::memory_order_relaxed);
  if (start + writes.size() > f.allocated) {
    // Appends that extend an O_DIRECT file are serialized by the file system; writes
    // into allocated space are not. Allocate ahead, doubling (at least 16 MiB).
    uint64_t target = std::max<uint64_t>(start + writes.size(), std::max<uint64_t>(2 * f.allocated, 4096));
    if (f.file.allocate(target).ok()) f.allocated = target;
  }
  std::vector<PageWrite> frames;
  frames.reserve(writes.size());
  for (size_t i = 0; i < writes.size(); i++) frames.push_back({start + i, writes[i].buf});
  Status s = f.file.writeBatch(frames);
  if (!s.ok()) return s;  // slots unchanged: the next append overwrites these slots
  {
    std::unique_lock ig(f.indexMutex);
    for (size_t i = 0; i < writes.size(); i++) f.index[writes[i].pid] = start + i;
    f.indexed.store(f.index.size(), std::memory_order_release);
  }
  f.slots.store(start + writes.size(), std::memory_order_release);
  return Status::OK();
}

Status PageJournal::commit(uint32_t epoch, const Page* superblock) {
  File& f = fileOf(epoch);
  std::lock_guard g(f.appendMutex);
  syncFailed_.store(false, std::memory_order_release);
  if (f.directWritten) {
    // Pages written in place must be durable before the commit that counts them.
    Status s = data_->sync();
    if (!s.ok()) {
      failedSync();
      return s;
    }
    f.directWritten = false;
  }
  uint64_t slot = f.slots.load(std::memory_order_relaxed);
  Status s = f.file.writePage(slot, superblock);
  if (!s.ok()) return s;
  s = f.file.sync();
  if (!s.ok()) {
    failedSync();
    return s;
  }
  f.commitSlot = slot;
  f.slots.store(slot + 1, std::memory_order_release);
  return Status::OK();
}

Status PageJournal::backfill(uint32_t epoch) {
  File& f = fileOf(epoch);
  std::lock_guard g(f.appendMutex);
  syncFailed_.store(false, std::memory_order_release);
  return backfillLocked(f);
}

Status PageJournal::backfillLocked(File& f) {
  std::vector<std::pair<uint64_t, uint64_t>> entries;  // (pid, slot)
  {
    std::shared_lock ig(f.indexMutex);
    entries.assign(f.index.begin(), f.index.end());
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
      Status s = f.file.readPages(entries[j].second, run, &bufs[j - i]);
      if (!s.ok()) return s;
      j += run;
    }
    std::vector<PageWrite> writes;
    for (size_t j = i; j < end; j++) {
      Page* p = &bufs[j - i];
      if (!pageIsIntact(p, entries[j].first)) {
        return Status::Corruption("journal frame " + std::to_string(entries[j].second) + " of " + f.file.path() +
                                  " is damaged");
      }
      writes.push_back({entries[j].first, p});
    }
    std::sort(writes.begin(), writes.end(), [](const PageWrite& x, const PageWrite& y) { return x.pid < y.pid; });
    Status s = data_->writeBatch(writes);
    if (!s.ok()) return s;
  }
  Status s = f.file.readPage(f.commitSlot, &bufs[0]);
  if (!s.ok()) return s;
  if (!isCommitFrame(&bufs[0]) || !pageIsIntact(&bufs[0], 0)) {
    return Status::Corruption("commit frame of " + f.file.path() + " is damaged");
  }
  s = data_->writePage(0, &bufs[0]);
  if (s.ok()) s = data_->sync();
  if (!s.ok()) {
    failedSync();  // the data file's state is unknown; the journal still holds it
    return s;
  }
  // Recycle the file: interval epoch + 2 overwrites it from slot 0. What remains of
  // this interval's frames has an older epoch, which recovery never accepts.
  std::unique_lock ig(f.indexMutex);
  emptyIndex(f);
  f.slots.store(0, std::memory_order_release);
  return Status::OK();
}

Status PageJournal::truncate(File& f) {
  std::unique_lock ig(f.indexMutex);
  emptyIndex(f);
  Status s = f.file.truncate(0);
  if (s.ok()) s = f.file.sync();
  if (!s.ok()) {
    failedSync();
    return s;
  }
  f.slots.store(0, std::memory_order_release);
  f.allocated = 0;
  return Status::OK();
}

}  // namespace vmstore::internal
