#include "wal/page_journal.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "os/io.hpp"

namespace vmstore::internal {

namespace {

constexpr uint64_t kFirstSlots = (1u << 20) / kPageSize;  // an empty file's first allocation: 1 MiB

// A frame counts when it is an intact page (of `pages` ids) of the interval being recovered.
bool frameValid(const Page* p, uint32_t epoch, uint64_t pages) {
  return p->header.epoch == epoch && pageIsIntact(p, p->header.pid, pages);
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

Status PageJournal::scan(File& f, uint32_t epoch, bool* committed, bool* any, Page* superblock) {
  *committed = false;
  *any = false;
  uint64_t slots = f.file.sizeBytes() / kPageSize;
  auto buf = std::make_unique<Page>();
  std::vector<std::pair<uint64_t, Frame>> frames;  // (pid, frame) before the last commit
  std::vector<std::pair<uint64_t, Frame>> pending;
  uint64_t commit = ~0ull;
  std::unique_ptr<Page[]> span;  // a variable-size frame, read whole to check it
  for (uint64_t slot = 0; slot < slots;) {
    Status s = f.file.readPage(slot, buf.get());
    if (!s.ok()) return s;
    const uint64_t pages = spanOf(buf->header);
    const Page* frame = buf.get();
    if (pages > 1) {
      if (pages > slots - slot) break;  // torn or stale: it would run past the file's end
      span.reset(new (std::nothrow) Page[pages]);
      if (!span) return Status::NoMemory("journal frame of " + std::to_string(pages) + " pages");
      s = f.file.readPages(slot, pages, span.get());
      if (!s.ok()) return s;
      frame = span.get();
    }
    if (!frameValid(frame, epoch, pages)) break;  // torn or stale tail
    *any = true;
    if (isCommitFrame(frame)) {
      frames.insert(frames.end(), pending.begin(), pending.end());
      pending.clear();
      commit = slot;
      std::memcpy(superblock, frame, kPageSize);
    } else {
      pending.push_back({frame->header.pid, Frame{slot, pages}});
    }
    span.reset();
    slot += pages;
  }
  if (commit == ~0ull) return Status::OK();
  std::unique_lock g(f.indexMutex);
  f.epoch = epoch;
  emptyIndex(f);
  for (auto& [pid, frame] : frames) f.index[pid] = frame;
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
      if (!pageIsIntact(buf.get(), buf->header.pid, spanOf(buf->header)) || buf->header.epoch <= epoch) continue;
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

Status PageJournal::readPage(uint64_t pid, Page* buf, uint64_t pages, const ChunkedReadTarget* progress) {
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
        slot = it->second.slot;
        generation = f.generation.load(std::memory_order_relaxed);
      }
      Status s = pages == 1 ? f.file.fetchPage(slot, buf) : f.file.readPages(slot, pages, buf);
      if (f.generation.load(std::memory_order_acquire) != generation) {
        recycled = true;
        break;
      }
      if (s.ok() && buf->header.pid != pid) {
        return Status::Corruption("journal frame " + std::to_string(slot) + " of " + f.file.path() +
                                  " does not hold page " + std::to_string(pid));
      }
      // A frame may be read again (above): it reports no progress, the caller takes it
      // whole once this returns.
      return s;
    }
    if (!recycled) return pages == 1 ? data_->fetchPage(pid, buf) : data_->readPages(pid, pages, buf, progress);
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
  // A frame takes one slot per page: a variable-size page is one frame of n slots.
  uint64_t start = f.slots.load(std::memory_order_relaxed);
  uint64_t need = 0;
  for (const PageWrite& w : writes) need += w.pages;
  if (start + need > f.allocated) {
    // Appends that extend an O_DIRECT file are serialized by the file system; writes
    // into allocated space are not. Allocate ahead, doubling.
    uint64_t target = std::max<uint64_t>(start + need, std::max<uint64_t>(2 * f.allocated, kFirstSlots));
    if (f.file.allocate(f.allocated, target).ok()) f.allocated = target;
  }
  std::vector<PageWrite> frames;
  frames.reserve(writes.size());
  uint64_t slot = start;
  for (const PageWrite& w : writes) {
    frames.push_back({slot, w.buf, w.pages});
    slot += w.pages;
  }
  Status s = f.file.writeBatch(frames);
  if (!s.ok()) return s;  // slots unchanged: the next append overwrites these slots
  {
    std::unique_lock ig(f.indexMutex);
    for (size_t i = 0; i < writes.size(); i++) f.index[writes[i].pid] = Frame{frames[i].pid, writes[i].pages};
    f.indexed.store(f.index.size(), std::memory_order_release);
  }
  f.slots.store(slot, std::memory_order_release);
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
  std::vector<std::pair<uint64_t, Frame>> entries;  // (pid, frame)
  {
    std::shared_lock ig(f.indexMutex);
    entries.assign(f.index.begin(), f.index.end());
  }
  // In slot order, the order they were written: a variable-size frame may overlap ids
  // that older or newer frames hold, and the newer must land last. Runs of one-page
  // frames are read with one read each and written as one batch (their ids are
  // distinct); a variable-size frame is written on its own, between them.
  std::sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) { return x.second.slot < y.second.slot; });
  auto damaged = [&](uint64_t slot) {
    return Status::Corruption("journal frame " + std::to_string(slot) + " of " + f.file.path() + " is damaged");
  };
  constexpr size_t kChunk = 256;
  std::unique_ptr<Page[]> bufs(new Page[kChunk]);
  for (size_t i = 0; i < entries.size();) {
    const auto& [pid, frame] = entries[i];
    if (frame.pages > 1) {
      std::unique_ptr<Page[]> big(new (std::nothrow) Page[frame.pages]);
      if (!big) return Status::NoMemory("journal frame of " + std::to_string(frame.pages) + " pages");
      Status s = f.file.readPages(frame.slot, frame.pages, big.get());
      if (!s.ok()) return s;
      if (!pageIsIntact(big.get(), pid, frame.pages)) return damaged(frame.slot);
      s = data_->writePage(pid, big.get(), frame.pages);
      if (!s.ok()) return s;
      i++;
      continue;
    }
    size_t end = i;
    while (end < entries.size() && end - i < kChunk && entries[end].second.pages == 1) end++;
    for (size_t j = i; j < end;) {
      size_t run = 1;
      while (j + run < end && entries[j + run].second.slot == entries[j].second.slot + run) run++;
      Status s = f.file.readPages(entries[j].second.slot, run, &bufs[j - i]);
      if (!s.ok()) return s;
      j += run;
    }
    std::vector<PageWrite> writes;
    for (size_t j = i; j < end; j++) {
      Page* p = &bufs[j - i];
      if (!pageIsIntact(p, entries[j].first)) return damaged(entries[j].second.slot);
      writes.push_back({entries[j].first, p});
    }
    std::sort(writes.begin(), writes.end(), [](const PageWrite& x, const PageWrite& y) { return x.pid < y.pid; });
    Status s = data_->writeBatch(writes);
    if (!s.ok()) return s;
    i = end;
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
