#include "wal/op_log.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "task/cooperative.hpp"
#include "task/scheduler.hpp"
#include "os/io.hpp"
#include "os/thread_name.hpp"
#include "sync/futex.hpp"

namespace vmstore::internal {

namespace {

constexpr uint64_t kAllocationUnit = 64ull << 10;   // a file's capacity is a multiple of this
constexpr uint64_t kFirstAllocation = 1ull << 20;  // an empty file's first allocation
constexpr uint64_t kBlock = 4096;  // O_DIRECT write-outs: whole blocks of this, at offsets of it
constexpr size_t kReadChunk = 1 << 20;
constexpr size_t kFirstReadChunk = 64 << 10;
constexpr size_t kStagedRecord = 64 << 10;  // records up to this are encoded in a per-thread buffer
// The ring: a 16th of log_size, from 64 KiB to 4 MiB (the size of a cache, not of a
// checkpoint interval), in whole 64 KiB.
constexpr uint64_t kRingMin = 64ull << 10;
constexpr uint64_t kRingMax = 4ull << 20;
// Durability sync: the preparer keeps the current file zero-filled (written and synced)
// this far ahead of the appends, in chunks of kPrepareChunk written under the append lock.
constexpr uint64_t kPrepareAhead = 4ull << 20;
constexpr size_t kPrepareChunk = 64 << 10;
// refuseForeign reads a first record of up to this many payload bytes (larger: not checked).
constexpr uint32_t kMaxCheckedRecord = 64u << 20;

uint64_t roundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

uint64_t ringBytesFor(uint64_t logSize) {
  return std::clamp(logSize / 16 / kAllocationUnit * kAllocationUnit, kRingMin, kRingMax);
}

// Copies n bytes between a ring of ringBytes and flat memory, starting at ring position
// at (wrapping at the ring's end).
void toRing(uint8_t* ring, uint64_t ringBytes, uint64_t at, const uint8_t* from, size_t n) {
  size_t first = static_cast<size_t>(std::min<uint64_t>(n, ringBytes - at));
  std::memcpy(ring + at, from, first);
  if (first < n) std::memcpy(ring, from + first, n - first);
}
void fromRing(const uint8_t* ring, uint64_t ringBytes, uint64_t at, uint8_t* to, size_t n) {
  size_t first = static_cast<size_t>(std::min<uint64_t>(n, ringBytes - at));
  std::memcpy(to, ring + at, first);
  if (first < n) std::memcpy(to + first, ring, n - first);
}

// A busy word (a futex): 0 idle, 1 busy, 2 busy with a waiter. endBusy wakes only when
// a waiter marked it, so a write nobody waits for costs no system call.
void awaitBusyOnce(std::atomic<uint32_t>& busy) {
  uint32_t s = 1;
  if (busy.compare_exchange_strong(s, 2, std::memory_order_acq_rel) || s == 2) futexWait(busy, 2);
}
void endBusy(std::atomic<uint32_t>& busy) {
  if (busy.exchange(0, std::memory_order_acq_rel) == 2) futexWake(busy);
}

uint64_t newSalt() {
  std::random_device rd;
  uint64_t s = (uint64_t{rd()} << 32) ^ rd() ^
               static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return s == 0 ? 1 : s;
}

}  // namespace

OpLog::~OpLog() { close(); }

Status OpLog::open(const std::string& dir, const Options& options) {
  options_ = options;
  dir_ = dir;
  for (uint32_t parity = 0; parity < 2; parity++) {
    Segment& seg = segs_[parity];
    seg.path = dir + "/" + fileName(parity);
    seg.fd = io().open(seg.path, O_RDWR | O_CLOEXEC, 0644);
    if (seg.fd < 0 && errno != ENOENT) return ioStatus("cannot open log " + seg.path, errno);
  }
  ring_.path = dir + "/" + ringFileName();
  ring_.fd = io().open(ring_.path, O_RDWR | O_CLOEXEC, 0644);
  if (ring_.fd < 0 && errno != ENOENT) return ioStatus("cannot open log " + ring_.path, errno);
  return Status::OK();  // a missing log is an empty one; the first write creates it
}

Status OpLog::create(const std::string& path, int* fd) {
  *fd = io().open(path, O_RDWR | O_CLOEXEC | O_CREAT, 0644);
  if (*fd < 0) return ioStatus("cannot create log " + path, errno);
  if (io().syncDir(dir_) != 0) return ioStatus("cannot sync directory " + dir_, errno);
  return Status::OK();
}

void OpLog::openDirect(Segment& seg) {
  if (!options_.direct_io || options_.durability == Durability::kNone || seg.fd < 0 || seg.directFd >= 0) return;
  // Only faster: where the file system refuses O_DIRECT (EINVAL), or the open fails
  // otherwise, write-outs go through the page cache.
  seg.directFd = io().open(seg.path, O_RDWR | O_CLOEXEC | O_DIRECT, 0644);
}

uint64_t OpLog::ringFreeBefore(const Segment& seg) const {
  return seg.directFd >= 0 ? std::min(seg.written / kBlock * kBlock, seg.whole) : seg.written;
}

uint64_t OpLog::recordStartBefore(uint64_t from, uint64_t to, const std::vector<Direct>& direct) const {
  uint64_t at = from;
  auto d = direct.begin();
  while (at < to) {
    while (d != direct.end() && d->offset + d->size <= at) ++d;
    uint64_t size;
    if (d != direct.end() && d->offset == at) {
      size = d->size;
    } else {
      LogRecordHeader h;
      fromRing(ring_.base, ring_.bytes, at % ring_.bytes, reinterpret_cast<uint8_t*>(&h), sizeof(h));
      if (h.offset != at) return at;  // never met (the ring holds every record from `from`): keep the rest
      size = logPadded(sizeof(h) + uint64_t{h.length});
    }
    if (at + size > to) return at;
    at += size;
  }
  return at;
}

uint64_t OpLog::sizeOf(int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

uint64_t OpLog::fileBytes() const { return sizeOf(segs_[0].fd) + sizeOf(segs_[1].fd) + sizeOf(ring_.fd); }

std::string OpLog::path() const { return segs_[cur_].path; }

Status OpLog::discard() {
  for (auto [fd, path] : {std::pair{segs_[0].fd, &segs_[0].path}, {segs_[1].fd, &segs_[1].path}, {ring_.fd, &ring_.path}}) {
    if (fd < 0 || sizeOf(fd) == 0) continue;
    if (io().ftruncate(fd, *path, 0) != 0 || io().fdatasync(fd, *path) != 0) {
      return ioStatus("cannot empty log " + *path, errno);
    }
  }
  return Status::OK();
}

Status OpLog::foreign(const std::string& path) {
  return Status::Corruption(path + " holds the log of another database, so it is not replayed: move it out "
                            "of the directory (if it replaced this database's own log file, put that back; "
                            "without it the writes after the last checkpoint are lost)");
}

Status OpLog::refuseForeign() const {
  if (databaseTag_ == 0) return Status::OK();
  for (const Segment& seg : segs_) {
    // The file's first record, of whatever interval: one that is whole and carries another
    // database's id marks the file as that database's.
    LogRecordHeader h;
    if (seg.fd < 0 || sizeOf(seg.fd) < sizeof(h)) continue;
    size_t got = 0;
    if (int err = preadUpTo(seg.fd, seg.path, &h, sizeof(h), 0, &got); err != 0) {
      return ioStatus("cannot read log " + seg.path, err);
    }
    if (got != sizeof(h) || h.offset != 0 || static_cast<uint32_t>(h.salt) == databaseTag_) continue;
    const uint64_t whole = sizeof(h) + uint64_t{h.length} + 8;  // with its padding
    if (h.length > kMaxCheckedRecord || sizeOf(seg.fd) < sizeof(h) + h.length) continue;
    std::vector<uint8_t> record(static_cast<size_t>(std::min(whole, sizeOf(seg.fd))));
    if (int err = preadUpTo(seg.fd, seg.path, record.data(), record.size(), 0, &got); err != 0) {
      return ioStatus("cannot read log " + seg.path, err);
    }
    record.resize(got);
    uint64_t salt = 0;
    size_t size = 0;
    std::vector<LogOp> ops;
    if (decodeRecord(record, &salt, 0, h.epoch, &size, &ops) == RecordCheck::kValid &&
        static_cast<uint32_t>(salt) != databaseTag_) {
      return foreign(seg.path);
    }
  }
  return Status::OK();
}

RecordCheck OpLog::ringRecord(const std::vector<uint8_t>& ring, uint64_t off, uint32_t epoch, uint64_t* salt,
                              std::vector<uint8_t>* out, size_t* size, std::vector<LogOp>* ops) const {
  const uint64_t bytes = ring.size();
  LogRecordHeader h;
  if (bytes < sizeof(h)) return RecordCheck::kShort;
  fromRing(ring.data(), bytes, off % bytes, reinterpret_cast<uint8_t*>(&h), sizeof(h));
  const uint64_t whole = roundUp(sizeof(h) + uint64_t{h.length}, 8);
  if (h.offset != off || h.epoch != epoch || whole > bytes) return RecordCheck::kMismatch;
  out->resize(static_cast<size_t>(whole));
  fromRing(ring.data(), bytes, off % bytes, out->data(), out->size());
  return decodeRecord(*out, salt, off, epoch, size, ops);
}

Status OpLog::replay(uint32_t epoch, const std::function<Status(std::span<const LogOp>)>& fn, ReplayInfo* info) {
  *info = {};
  const Segment& seg = segs_[epoch % 2];
  // The ring holds the records the file does not hold yet (whole ring sizes only). It is
  // read whole once a record must come from it: when the header at that record's place
  // in the ring is of that record (its offset and epoch). A log that ends where the file
  // ends (a clean close, an empty log) does not read it.
  const uint64_t ringBytes = sizeOf(ring_.fd);
  const bool ringUsable = ringBytes >= kRingMin && ringBytes <= kRingMax && ringBytes % kAllocationUnit == 0;
  std::vector<uint8_t> ring;
  auto ringHolds = [&](uint64_t off, bool* holds) -> Status {
    *holds = false;
    if (!ringUsable) return Status::OK();
    if (!ring.empty()) {
      *holds = true;
      return Status::OK();
    }
    LogRecordHeader h;
    auto* to = reinterpret_cast<uint8_t*>(&h);
    const uint64_t at = off % ringBytes;
    const size_t first = static_cast<size_t>(std::min<uint64_t>(sizeof(h), ringBytes - at));
    size_t got = 0, got2 = 0;
    int err = preadUpTo(ring_.fd, ring_.path, to, first, at, &got);
    if (err == 0 && got == first && first < sizeof(h)) {  // the header wraps at the ring's end
      err = preadUpTo(ring_.fd, ring_.path, to + first, sizeof(h) - first, 0, &got2);
    }
    if (err != 0) return ioStatus("cannot read log " + ring_.path, err);
    info->readBytes += got + got2;
    if (got + got2 < sizeof(h) || h.offset != off || h.epoch != epoch) return Status::OK();
    ring.resize(static_cast<size_t>(ringBytes));
    got = 0;
    if (err = preadUpTo(ring_.fd, ring_.path, ring.data(), ring.size(), 0, &got); err != 0) {
      return ioStatus("cannot read log " + ring_.path, err);
    }
    info->readBytes += got;
    if (got < ring.size()) {
      ring.clear();
      return Status::OK();
    }
    *holds = true;
    return Status::OK();
  };
  std::vector<uint8_t> fromRingRecord;
  uint64_t size = sizeOf(seg.fd);
  std::vector<uint8_t> window;  // file bytes [windowAt, windowAt + window.size())
  uint64_t windowAt = 0;
  // Reads grow from kFirstReadChunk to kReadChunk: an empty log reads little.
  size_t readChunk = kFirstReadChunk;
  // Makes [off, off + n) available in the window (fewer bytes at the end of the file).
  auto load = [&](uint64_t off, size_t n) -> Status {
    if (off >= windowAt && off + n <= windowAt + window.size()) return Status::OK();
    size_t want = static_cast<size_t>(std::min<uint64_t>(std::max<size_t>(n, readChunk), size - std::min(off, size)));
    readChunk = std::min(kReadChunk, readChunk * 2);
    window.resize(want);
    windowAt = off;
    size_t got = 0;
    if (int err = preadUpTo(seg.fd, seg.path, window.data(), want, off, &got); err != 0) {
      return ioStatus("cannot read log " + seg.path, err);
    }
    info->readBytes += got;
    window.resize(got);
    return Status::OK();
  };
  uint64_t salt = 0;
  uint64_t off = 0;
  std::vector<LogOp> ops;
  for (;;) {
    Status s = load(off, sizeof(LogRecordHeader));
    if (!s.ok()) return s;
    std::span<const uint8_t> at(window.data() + (off - windowAt), window.size() - (off - windowAt));
    size_t recSize = 0;
    RecordCheck c = decodeRecord(at, &salt, off, epoch, &recSize, &ops);
    if (c == RecordCheck::kShort && at.size() >= sizeof(LogRecordHeader)) {
      LogRecordHeader h;
      std::memcpy(&h, at.data(), sizeof(h));
      if (h.epoch == epoch && h.offset == off && off + sizeof(h) + h.length <= size) {
        s = load(off, sizeof(h) + h.length);  // a record longer than the window
        if (!s.ok()) return s;
        at = std::span<const uint8_t>(window.data(), window.size());
        c = decodeRecord(at, &salt, off, epoch, &recSize, &ops);
      }
    }
    bool inRing = false;
    if (c != RecordCheck::kValid) {
      s = ringHolds(off, &inRing);
      if (!s.ok()) return s;
    }
    if (inRing) {
      c = ringRecord(ring, off, epoch, &salt, &fromRingRecord, &recSize, &ops);
      if (c == RecordCheck::kValid && databaseTag_ != 0 && static_cast<uint32_t>(salt) != databaseTag_) {
        return foreign(ring_.path);
      }
    }
    if (c != RecordCheck::kValid) break;
    if (databaseTag_ != 0 && static_cast<uint32_t>(salt) != databaseTag_) return foreign(seg.path);
    s = fn(ops);
    if (!s.ok()) return s;
    info->records++;
    info->operations += ops.size();
    info->bytes += recSize;
    off += recSize;
  }
  return Status::OK();
}

Status OpLog::startWriting(uint32_t epoch) {
  // The ring beside the two files, which share the rest of log_size (the contract); a
  // file starts at 1 MiB and doubles (a small database does not hold log_size of
  // allocated space).
  ring_.bytes = ringBytesFor(options_.log_size);
  ringRecord_ = ring_.bytes / 4;
  budget_ = std::max(2 * kAllocationUnit, (options_.log_size - ring_.bytes) / kAllocationUnit * kAllocationUnit);
  keep_ = budget_ / 4 / kAllocationUnit * kAllocationUnit;
  step_ = std::max(kAllocationUnit, budget_ / 16 / kAllocationUnit * kAllocationUnit);
  cutAt_ = budget_ / 8 * 5;
  zeroFill_ = options_.durability == Durability::kSync && options_.log_zero_fill;
  salt_ = newSalt();
  if (databaseTag_ != 0) salt_ = (salt_ & ~uint64_t{0xffffffff}) | databaseTag_;
  std::lock_guard g(appendMutex_);
  epoch_ = epoch;
  cur_ = static_cast<int>(epoch % 2);
  // Both files hold only records a checkpoint covers (or none). The other one is cut
  // back at the session's first reservation (one that only reads writes nothing); until
  // then what it holds counts against the current one's limit.
  Segment& other = segs_[1 - cur_];
  for (Segment& seg : segs_) {
    seg.capacity = 0;
    seg.written = 0;
    seg.whole = 0;
    seg.zeroed = 0;
  }
  if (other.fd >= 0) {
    other.capacity = std::min(sizeOf(other.fd) / kAllocationUnit * kAllocationUnit, budget_);
    openDirect(other);
  }
  setLimit();
  if (Segment& seg = segs_[cur_]; seg.fd >= 0) {
    Status s = grow(seg, std::min(sizeOf(seg.fd) / kAllocationUnit * kAllocationUnit, limit_.load()));  // what the file holds
    if (!s.ok()) return s;
    openDirect(seg);
  }
  // No reservation takes the fast path before the first maps the ring (reserve()).
  allocated_.store(0, std::memory_order_release);
  writing_ = true;
  if (options_.durability == Durability::kAsync) {
    flusher_ = std::thread([this] { flusherLoop(); });
    nameThread(flusher_, "vms-log-flush");
    writer_ = std::thread([this] { writerLoop(); });
    nameThread(writer_, "vms-log-write");
  } else if (zeroFill_) {
    flusher_ = std::thread([this] { preparerLoop(); });
    nameThread(flusher_, "vms-log-prepare");
  }
  if (options_.durability == Durability::kSync) {
    committer_ = std::thread([this] { committerLoop(); });
    nameThread(committer_, "vms-log-commit");
  }
  return Status::OK();
}

Status OpLog::mapRing() {
  if (ring_.base != nullptr) return Status::OK();
  if (ring_.fd < 0) {
    Status s = create(ring_.path, &ring_.fd);
    if (!s.ok()) return s;
  }
  // Exactly this session's size (replay reads a ring by its file's size), allocated on
  // the device: a store into the mapping never meets a full device (no SIGBUS).
  if (sizeOf(ring_.fd) != ring_.bytes && io().ftruncate(ring_.fd, ring_.path, 0) != 0) {
    return ioStatus("cannot resize log " + ring_.path, errno);
  }
  if (io().fallocate(ring_.fd, ring_.path, 0, ring_.bytes) != 0) {
    return ioStatus("cannot allocate log space in " + ring_.path, errno);
  }
  void* p = mmap(nullptr, ring_.bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return Status::NoMemory("cannot reserve address space for the log");
  if (io().mapShared(ring_.fd, ring_.path, p, ring_.bytes, 0) != 0) {
    int err = errno;
    munmap(p, ring_.bytes);
    return ioStatus("cannot map log " + ring_.path, err);
  }
  ring_.base = static_cast<uint8_t*>(p);
  return Status::OK();
}

void OpLog::setLimit() {
  const uint64_t held = segs_[1 - cur_].capacity;
  limit_.store(held < budget_ ? budget_ - held : 0, std::memory_order_relaxed);  // 0: Busy until it is covered
}

int OpLog::otherToShrink() const {
  const Segment& other = segs_[1 - cur_];
  return other.fd >= 0 && other.capacity > keep_ ? other.fd : -1;
}

void OpLog::shrunk() {
  Segment& other = segs_[1 - cur_];
  other.capacity = keep_;
  other.zeroed = std::min(other.zeroed, keep_);
  setLimit();
}

void OpLog::waitForZeros(uint64_t below) {
  while (zeroBusy_.load(std::memory_order_acquire) != 0 && zeroFrom_.load(std::memory_order_relaxed) < below) {
    awaitBusyOnce(zeroBusy_);
  }
}

void OpLog::covered(uint64_t lsn) {
  advanceDurable(lsn);
  // The file before the cut now holds only what the checkpoint holds: cut it back,
  // outside the append lock (appends use the other file; no cut runs, the caller's).
  int fd;
  std::string path;
  {
    std::lock_guard g(appendMutex_);
    fd = otherToShrink();
    if (fd < 0) return;
    path = segs_[1 - cur_].path;
  }
  waitForZeros(~0ull);  // a chunk of zeros begun before the cut may still be going to it
  if (io().ftruncate(fd, path, keep_) != 0) return;  // the current file keeps less room
  std::lock_guard g(appendMutex_);
  shrunk();
}

Status OpLog::grow(Segment& seg, uint64_t need) {
  if (need <= seg.capacity) return Status::OK();
  const uint64_t limit = limit_.load(std::memory_order_relaxed);
  uint64_t want = std::max({need, std::min({seg.capacity * 2, seg.capacity + step_, limit}), kFirstAllocation});
  uint64_t cap = std::min(limit, roundUp(want, kAllocationUnit));
  if (cap < need) return Status::Busy("log full");
  if (seg.fd < 0) {
    Status s = create(seg.path, &seg.fd);
    if (!s.ok()) return s;
    openDirect(seg);
  }
  // Allocated on the device before records are accepted into it: a full device fails the
  // reservation (the write it logs changes nothing), never a write-out of an acknowledged
  // record. What an earlier session allocated stays.
  if (cap > sizeOf(seg.fd) && io().fallocate(seg.fd, seg.path, 0, cap) != 0) {
    return ioStatus("cannot allocate log space in " + seg.path, errno);
  }
  seg.capacity = cap;
  return Status::OK();
}

uint64_t OpLog::cut(uint32_t epoch) {
  std::lock_guard w(writeMutex_);
  // The interval ends: its records go to its file now (a failure fails the log, and the
  // waiters see it), so that a flush after the cut only syncs that file, and the ring
  // starts over. No reservation is open (the caller's contract), so nothing is appended
  // meanwhile.
  Segment& old = segs_[cur_];
  uint64_t end;
  uint64_t directEnd;
  std::vector<Direct> direct;
  {
    std::lock_guard g(appendMutex_);
    end = end_;
    direct = direct_;
    directEnd = directEnd_;
  }
  (void)writeOut(old, end, direct, directEnd);
  std::lock_guard g(appendMutex_);
  epoch_ = epoch;
  cur_ = static_cast<int>(epoch % 2);
  lsnBase_ += end_;
  end_ = 0;
  direct_.clear();
  directEnd_ = 0;
  Segment& seg = segs_[cur_];
  seg.written = 0;
  seg.whole = 0;
  setLimit();  // beside the file just cut, which holds the checkpoint's records
  writtenOff_.store(0, std::memory_order_release);
  claimed_.store(0, std::memory_order_relaxed);
  allocated_.store(ring_.base != nullptr ? std::min(seg.capacity, limit_.load(std::memory_order_relaxed)) : 0,
                   std::memory_order_release);
  bytes_.store(0, std::memory_order_relaxed);
  return lsnBase_;
}

Status OpLog::writeOut(Segment& seg, uint64_t upTo, const std::vector<Direct>& direct, uint64_t directEnd,
                       bool wholeBlocks) {
  if (upTo <= seg.written) return Status::OK();
  if (failed_.load(std::memory_order_acquire)) return failure();
  // [from, to) of the file from the ring, through fd, in one or two writes (where the
  // ring wraps; its size is a multiple of kBlock).
  auto fromRingTo = [&](int fd, uint64_t from, uint64_t to) -> int {
    while (from < to) {
      uint64_t at = from % ring_.bytes;
      uint64_t n = std::min(to - from, ring_.bytes - at);
      if (int err = pwriteAll(fd, seg.path, ring_.base + at, n, from); err != 0) return err;
      from += n;
    }
    return 0;
  };
  waitForZeros(roundUp(upTo, kBlock));
  uint64_t at = seg.written;
  uint64_t done = upTo;
  int err = 0;
  const uint64_t blockStart = at / kBlock * kBlock;
  if (seg.directFd >= 0 && directEnd <= blockStart) {
    // The ring holds every byte from blockStart on (ringFreeBefore), none written
    // directly: whole blocks with O_DIRECT, the first one's bytes before `at` again as
    // they are (a torn write leaves each sector old or new, both holding them). No other
    // write touches these blocks meanwhile: direct records and the preparer's zeros go
    // at or past the end of the records, upTo or later.
    // A flush writes the last block whole as well: past upTo it holds what the ring
    // holds there (records appended since, maybe half copied, or an earlier lap's bytes),
    // which replay refuses (a record's header names its offset, its sums its bytes) and
    // the next write-out writes again. No direct record is placed in that block
    // meanwhile (tailBusy_), and the preparer's zeros start past it.
    const uint64_t blocksEnd = wholeBlocks ? upTo / kBlock * kBlock : roundUp(upTo, kBlock);
    if (blocksEnd > blockStart) err = fromRingTo(seg.directFd, blockStart, blocksEnd);
    at = std::max(at, std::min(upTo, blocksEnd));
    if (wholeBlocks) done = at;
  } else {
    for (const Direct& d : direct) {  // in the file already
      if (d.offset + d.size <= at || d.offset >= upTo) continue;
      if (err == 0) err = fromRingTo(seg.fd, at, d.offset);
      at = d.offset + d.size;
    }
    if (err == 0) err = fromRingTo(seg.fd, at, upTo);
  }
  if (err != 0) {
    // What reached the file is unknown: like a failed sync, never retried.
    Status st = ioStatus("cannot write log " + seg.path, err);
    fail(st);
    return st;
  }
  // upTo ends a record; a whole-block write-out may end inside one, whose bytes the ring
  // keeps until the file holds all of them.
  seg.whole = done >= upTo ? upTo : recordStartBefore(seg.whole, done, direct);
  seg.written = std::max(seg.written, done);
  writtenOff_.store(ringFreeBefore(seg), std::memory_order_release);  // the ring's space behind it is free
  return Status::OK();
}

Status OpLog::writeOutTo(uint64_t lsn, bool wholeBlocks) {
  if (writtenLsn_.load(std::memory_order_acquire) >= lsn) return failure();
  std::unique_lock w = task::lock(writeMutex_);
  uint64_t end;
  uint64_t endLsn;
  uint64_t directEnd;
  Segment* seg;
  std::vector<Direct> direct;
  {
    std::lock_guard g(appendMutex_);
    end = end_;
    endLsn = endLsn_.load(std::memory_order_acquire);
    seg = &segs_[cur_];
    // Direct records behind what is written out are done with.
    const uint64_t written = seg->written;
    std::erase_if(direct_, [&](const Direct& d) { return d.offset + d.size <= written; });
    direct = direct_;
    directEnd = directEnd_;
    if (!wholeBlocks) {
      tailBlockEnd_ = roundUp(end, kBlock);
      tailBusy_.store(1, std::memory_order_relaxed);  // released by the append lock
    }
  }
  // Everything of earlier intervals was written out by their cut.
  Status st = writeOut(*seg, end, direct, directEnd, wholeBlocks);
  if (!wholeBlocks) endBusy(tailBusy_);
  if (!st.ok()) return st;
  const uint64_t writtenLsn = endLsn - (end - std::min(end, seg->written));
  uint64_t was = writtenLsn_.load(std::memory_order_relaxed);
  while (was < writtenLsn && !writtenLsn_.compare_exchange_weak(was, writtenLsn, std::memory_order_acq_rel)) {
  }
  return failure();
}

void OpLog::fail(const Status& st) {
  std::unique_lock g(syncMutex_);
  if (failed_.load(std::memory_order_acquire)) return;
  failure_ = st;
  failed_.store(true, std::memory_order_release);  // no flush or append from here on
  // Told before any waiter can return the failure: failure() takes syncMutex_, held
  // until the database knows. A waiter that returned it and wrote again would otherwise
  // find the database still writable, and a change it then applied (not logged, not
  // acknowledged) could reach a checkpoint that commits it.
  if (onSyncFailure) onSyncFailure(st);
  g.unlock();
  advanceDurable(0);  // wakes the waiters, which find the failure
}

Status OpLog::reserve(size_t bytes) {
  // Fast path: room in what is allocated. A claim that does not fit is taken back (others
  // may see it for a moment and take the slow path: only slower, never wrong).
  if (claimed_.fetch_add(bytes, std::memory_order_relaxed) + bytes <= allocated_.load(std::memory_order_acquire)) {
    return Status::OK();
  }
  claimed_.fetch_sub(bytes, std::memory_order_relaxed);
  std::lock_guard g(appendMutex_);
  if (ring_.base == nullptr) {  // the session's first reservation
    Status s = mapRing();
    if (!s.ok()) return s;
    // Once a session: the other file's stale records go (only less room if they cannot).
    if (int fd = otherToShrink();
        fd >= 0 && io().ftruncate(fd, segs_[1 - cur_].path, keep_) == 0) {
      shrunk();
    }
  }
  Segment& seg = segs_[cur_];
  for (uint64_t claimed = claimed_.load(std::memory_order_relaxed);;) {
    uint64_t need = claimed + bytes;
    const uint64_t limit = limit_.load(std::memory_order_relaxed);
    if (need > limit) return Status::Busy("log full");
    if (need > seg.capacity) {
      Status s = grow(seg, need);
      if (!s.ok()) return s;
    }
    allocated_.store(std::min(seg.capacity, limit), std::memory_order_release);
    if (claimed_.compare_exchange_weak(claimed, need, std::memory_order_relaxed)) return Status::OK();
  }
}

bool OpLog::room(size_t bytes) const {
  return claimed_.load(std::memory_order_relaxed) + bytes <= limit_.load(std::memory_order_relaxed);
}

void OpLog::unreserve(size_t bytes) { claimed_.fetch_sub(bytes, std::memory_order_relaxed); }

uint64_t OpLog::append(std::span<const LogOp> ops, size_t size) {
  // The record is encoded and its payload summed before the append lock, in a buffer of
  // the thread's (a record larger than kStagedRecord in one of its own): under the lock
  // only its place is written into it and it is copied into the ring.
  thread_local std::vector<uint8_t> staged;
  std::vector<uint8_t> large;
  uint8_t* record;
  if (size <= kStagedRecord) {
    if (staged.size() < kStagedRecord) staged.resize(kStagedRecord);
    record = staged.data();
  } else {
    large.resize(size);
    record = large.data();
  }
  const uint32_t payloadCrc = encodeUnsealed(ops, salt_, record);
  uint64_t lsn;
  int err = 0;
  bool halfFull = false;
  bool prepare = false;
  const Segment* seg;
  {
    std::lock_guard g(appendMutex_);
    seg = &segs_[cur_];
    sealRecord(record, payloadCrc, end_, epoch_);
    // The ring holds the file's bytes from the written-out position on, each at its
    // offset modulo the ring's size.
    const uint64_t pending = end_ + size - writtenOff_.load(std::memory_order_acquire);
    if (failed_.load(std::memory_order_acquire)) {
      // Failed: nothing more is stored. A failed cut left the interval before it in the
      // ring only, and the ring starts over at a cut: this record would land on it.
    } else if (size <= ringRecord_ && pending <= ring_.bytes) {
      toRing(ring_.base, ring_.bytes, end_ % ring_.bytes, record, size);
      halfFull = pending > ring_.bytes / 2;
    } else {
      // Too large for the ring, or the ring full: to its place in the file at once,
      // once no write-out is writing the block it starts in whole (a rare wait, under
      // the append lock: the write-out does not take it before it is done).
      if (end_ < tailBlockEnd_) {
        while (tailBusy_.load(std::memory_order_acquire) != 0) awaitBusyOnce(tailBusy_);
      }
      waitForZeros(end_ + size);
      err = pwriteAll(seg->fd, seg->path, record, size, end_);
      if (err == 0) {
        direct_.push_back({end_, size});
        directEnd_ = end_ + size;
      }
    }
    end_ += size;
    bytes_.store(end_, std::memory_order_relaxed);
    lsn = lsnBase_ + end_;
    endLsn_.store(lsn, std::memory_order_release);
    prepare = zeroFill_ && std::min(seg->capacity, end_ + kPrepareAhead / 2) > seg->zeroed;
  }
  if (err != 0) fail(ioStatus("cannot write log " + seg->path, err));  // not in the log: failure() says so
  if (options_.durability == Durability::kAsync) {
    if (halfFull) ask(writeOutWanted_, writerWake_);
  } else if (prepare) {
    ask(prepareWanted_, wake_);
  }
  return lsn;
}

void OpLog::ask(std::atomic<bool>& wanted, std::condition_variable& cv) {
  if (wanted.load(std::memory_order_relaxed) || wanted.exchange(true, std::memory_order_acq_rel)) {
    return;  // asked already
  }
  { std::lock_guard g(syncMutex_); }  // the thread is waiting, or checks the flag before it does
  cv.notify_one();
}

void OpLog::advanceDurable(uint64_t lsn) {
  uint64_t d = durable_.load(std::memory_order_acquire);
  while (d < lsn && !durable_.compare_exchange_weak(d, lsn, std::memory_order_acq_rel)) {
  }
  flushEvents_.fetch_add(1, std::memory_order_release);
  flushEvents_.notify_all();
}

Status OpLog::waitDurable(uint64_t lsn) {
  if (task::Scheduler* s = task::Scheduler::current(); s != nullptr && committer_.joinable()) {
    // Inside a task: the committer flushes. A task that flushed itself would see its
    // fdatasync complete only once its thread had run every other ready task (a round
    // of transactions, milliseconds), and every committer waits for that flush.
    if (durable_.load(std::memory_order_acquire) >= lsn) return Status::OK();
    uint64_t r = requested_.load(std::memory_order_relaxed);
    while (r < lsn && !requested_.compare_exchange_weak(r, lsn, std::memory_order_seq_cst)) {
    }
    requestSeq_.fetch_add(1, std::memory_order_seq_cst);
    if (committerAsleep_.load(std::memory_order_seq_cst)) requestSeq_.notify_one();
    while (durable_.load(std::memory_order_acquire) < lsn) {
      uint32_t events = flushEvents_.load(std::memory_order_acquire);
      if (failed_.load(std::memory_order_acquire)) return failure();
      if (durable_.load(std::memory_order_acquire) >= lsn) break;
      if (!s->othersRunnable()) {  // this thread would sleep: no more gathering
        hurry_.fetch_add(1, std::memory_order_release);
        futexWake(hurry_);
      }
      s->waitChange(flushEvents_, events);
    }
    return Status::OK();
  }
  // No mutex: waiters sleep on the flush-event counter (a futex) and re-check the
  // durable position themselves, so the end of a flush does not queue every waiter
  // through one lock before the next flush can begin.
  while (durable_.load(std::memory_order_acquire) < lsn) {
    uint32_t events = flushEvents_.load(std::memory_order_acquire);
    if (failed_.load(std::memory_order_acquire)) return failure();
    if (durable_.load(std::memory_order_acquire) >= lsn) break;
    bool idle = false;
    if (!flushing_.compare_exchange_strong(idle, true, std::memory_order_acq_rel)) {
      // A flush is running. Inside a task, the thread's other tasks run meanwhile (the
      // flusher may be one of them).
      task::waitChange(flushEvents_, events);
      continue;
    }
    // This thread flushes, for everyone: writes out everything appended so far, then
    // syncs it (the file before the last cut first, if the checkpoint that covers it has
    // not committed yet; that file was written out by the cut).
    Status st = writeOutTo(endLsn());
    if (!st.ok()) {
      flushing_.store(false, std::memory_order_release);
      return st;
    }
    uint64_t target = writtenLsn_.load(std::memory_order_acquire);
    uint64_t cutLsn;
    int fds[2];  // the file before the last cut, the current one (descriptors stay open)
    const Segment* segs[2];
    {
      std::lock_guard g(appendMutex_);
      cutLsn = lsnBase_;
      segs[0] = &segs_[1 - cur_];
      segs[1] = &segs_[cur_];
      fds[0] = segs[0]->fd;
      fds[1] = segs[1]->fd;
    }
    for (int i = 0; i < 2; i++) {
      bool needed = i == 0 ? durable_.load(std::memory_order_acquire) < cutLsn : target > cutLsn;
      if (!needed || fds[i] < 0) continue;
      // No lock is held here: inside a task the sync suspends only the task.
      int err = syncDataInTask(fds[i], segs[i]->path);
      if (err != 0) {
        st = ioStatus("cannot sync log " + segs[i]->path, err);
        break;
      }
    }
    flushes_.fetch_add(1, std::memory_order_relaxed);
    if (st.ok()) st = preparerSyncOutcome();
    // Failed before the next flusher may start: it then finds the failure (writeOutTo
    // returns it) instead of syncing again, where the error, reported once, would not
    // show and records past the lost ones would count as durable.
    if (!st.ok()) fail(st);
    flushing_.store(false, std::memory_order_release);
    if (!st.ok()) return st;
    advanceDurable(target);
  }
  return Status::OK();
}

Status OpLog::preparerSyncOutcome() {
  // The preparer syncs the same descriptor outside flushing_. A sync error is reported
  // once: if its sync took it, this flush's syncs returned 0 although records written out
  // beside its zeros may be lost. It fails the log before its count turns even again.
  for (uint32_t n = preparerSyncs_.load(std::memory_order_acquire); n % 2 == 1;
       n = preparerSyncs_.load(std::memory_order_acquire)) {
    task::waitChange(preparerSyncs_, n);
  }
  return failure();
}

Status OpLog::failure() {
  if (!failed()) return Status::OK();
  std::lock_guard g(syncMutex_);
  return failure_;
}

void OpLog::flusherLoop() {
  // Syncs every sync_interval_ms. The write-out of a half-full ring is the writer's
  // (writerLoop), so that the ring keeps draining while this thread waits in fdatasync
  // (15-40 ms here, at times 270 ms): a ring that fills meanwhile sends records to the
  // file directly, under the append lock, where every other appender waits.
  const auto interval = std::chrono::milliseconds(options_.sync_interval_ms);
  auto next = std::chrono::steady_clock::now() + interval;
  std::unique_lock g(syncMutex_);
  while (!stop_) {
    wake_.wait_until(g, next, [&] { return stop_; });
    if (stop_) break;
    if (std::chrono::steady_clock::now() < next) continue;  // a spurious wake-up
    next = std::chrono::steady_clock::now() + interval;
    g.unlock();
    if (!failed_.load(std::memory_order_acquire)) {
      const uint64_t end = endLsn_.load(std::memory_order_acquire);
      if (end > durable_.load(std::memory_order_acquire)) (void)waitDurable(end);
    }
    g.lock();
  }
}

void OpLog::writerLoop() {
  // Writes out whole blocks of the ring whenever an append finds it half full. The flag
  // is cleared before the end is read: an append past that end that finds the ring half
  // full asks again.
  std::unique_lock g(syncMutex_);
  while (!stop_) {
    writerWake_.wait(g, [&] { return stop_ || writeOutWanted_.load(std::memory_order_acquire); });
    if (stop_) break;
    g.unlock();
    writeOutWanted_.store(false, std::memory_order_release);
    if (!failed_.load(std::memory_order_acquire)) {
      (void)writeOutTo(endLsn_.load(std::memory_order_acquire), /*wholeBlocks=*/true);
    }
    g.lock();
  }
}

void OpLog::committerLoop() {
  // Flushes while a task waits for an LSN not yet durable; sleeps on requestSeq_
  // otherwise (asleep set, then the request checked again: a requester that bumps the
  // count after the check finds asleep set and wakes it).
  auto wanted = [&] {
    return !failed_.load(std::memory_order_acquire) &&
           requested_.load(std::memory_order_seq_cst) > durable_.load(std::memory_order_acquire);
  };
  while (!stopCommitter_.load(std::memory_order_acquire)) {
    const uint32_t seq = requestSeq_.load(std::memory_order_acquire);
    if (wanted()) {
      gatherCommits();
      (void)waitDurable(requested_.load(std::memory_order_acquire));  // flushes, or waits for one
      continue;
    }
    committerAsleep_.store(true, std::memory_order_seq_cst);
    if (!wanted() && !stopCommitter_.load(std::memory_order_acquire)) requestSeq_.wait(seq, std::memory_order_acquire);
    committerAsleep_.store(false, std::memory_order_relaxed);
  }
}

void OpLog::gatherCommits() {
  // A waiter whose thread has nothing else to run bumps hurry_ and ends the wait, so a
  // lone committing task never waits longer than before; while the threads still have
  // tasks to run, the flush waits for their commits, up to the delay.
  if (options_.commit_delay_us == 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(options_.commit_delay_us);
  for (;;) {
    const uint32_t h = hurry_.load(std::memory_order_acquire);
    if (h != hurrySeen_ || stopCommitter_.load(std::memory_order_acquire)) break;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) break;
    futexWait(hurry_, h, left);
  }
  hurrySeen_ = hurry_.load(std::memory_order_acquire);
}

void OpLog::preparerLoop() {
  std::unique_lock g(syncMutex_);
  while (!stop_) {
    wake_.wait(g, [&] { return stop_ || prepareWanted_.load(std::memory_order_acquire); });
    if (stop_) break;
    prepareWanted_.store(false, std::memory_order_release);
    g.unlock();
    prepareAhead();
    g.lock();
  }
}

void OpLog::prepareAhead() {
  // Zeros go only where no record is: past end_, as the append lock shows it, in a
  // chunk at a time. The write itself runs outside the lock (with O_DIRECT it waits for
  // the device, and every append would wait with it); meanwhile a write to the file
  // that would reach the chunk (a write-out, a record written directly, the cut back
  // of a covered file) waits for it (zeroBusy_). A record appended there later is
  // written out over them, in order.
  // With O_DIRECT write-outs the zeros go in whole blocks with O_DIRECT too, from the
  // block after the one the records end in (a flush writes that one whole): a zero page
  // in the page cache over a block a direct write-out then writes would cost a
  // write-back and an invalidation, and could be written back over it.
  alignas(kBlock) static const uint8_t zeros[kPrepareChunk] = {};
  Segment* seg = nullptr;
  for (;;) {
    Segment* cur;
    uint64_t from;
    uint64_t to;
    int fd;
    {
      std::lock_guard g(appendMutex_);
      if (failed_.load(std::memory_order_acquire)) return;
      cur = &segs_[cur_];
      if (seg != nullptr && seg != cur) break;  // a cut: sync what was zeroed, then go on
      from = std::max(cur->zeroed, end_);
      to = std::min({cur->capacity, end_ + kPrepareAhead, from + kPrepareChunk});
      if (cur->directFd >= 0) {
        from = roundUp(from, kBlock);
        to = to / kBlock * kBlock;
      }
      if (from >= to) break;
      fd = cur->directFd >= 0 ? cur->directFd : cur->fd;
      zeroFrom_.store(from, std::memory_order_relaxed);
      zeroBusy_.store(1, std::memory_order_relaxed);  // released by the append lock
    }
    const int err = pwriteAll(fd, cur->path, zeros, to - from, from);
    endBusy(zeroBusy_);
    std::lock_guard g(appendMutex_);
    // A cut meanwhile made cur the file before it, which covered() may cut back (and
    // shrunk() count as zeroed no further): what was zeroed in it is no longer recorded.
    const bool stillCurrent = cur == &segs_[cur_];
    if (err != 0) {
      // Only slower: later syncs initialize the space themselves. Stop until the next ask.
      if (stillCurrent) cur->zeroed = cur->capacity;
      break;
    }
    seg = cur;
    if (!stillCurrent) break;  // sync what was zeroed, then look again
    cur->zeroed = to;
  }
  if (seg == nullptr || failed_.load(std::memory_order_acquire)) return;
  // A failed sync may have dropped records written out beside the zeros, and the next
  // sync of the same descriptor would not report it again: the log fails.
  // Odd while it runs, and the failure recorded before it turns even: a flush whose own
  // sync succeeded meanwhile may have missed the error this one took.
  preparerSyncs_.fetch_add(1, std::memory_order_acq_rel);
  const int err = io().fdatasync(seg->fd, seg->path) != 0 ? errno : 0;
  if (err != 0) fail(ioStatus("cannot sync log " + seg->path, err));
  preparerSyncs_.fetch_add(1, std::memory_order_release);
  preparerSyncs_.notify_all();
  if (err != 0) return;
  ask(prepareWanted_, wake_);  // after a cut, or more to do: look again
}

Status OpLog::close() {
  if (committer_.joinable()) {
    stopCommitter_.store(true, std::memory_order_release);
    requestSeq_.fetch_add(1, std::memory_order_seq_cst);
    requestSeq_.notify_all();
    hurry_.fetch_add(1, std::memory_order_release);
    futexWake(hurry_);
    committer_.join();
    stopCommitter_.store(false, std::memory_order_relaxed);
  }
  if (flusher_.joinable()) {
    {
      std::lock_guard g(syncMutex_);
      stop_ = true;
    }
    wake_.notify_all();
    writerWake_.notify_all();
    flusher_.join();
    if (writer_.joinable()) writer_.join();
  }
  Status st;
  if (writing() && options_.durability != Durability::kNone) st = flush();
  writing_ = false;
  for (Segment& seg : segs_) {
    for (int* fd : {&seg.fd, &seg.directFd}) {
      if (*fd >= 0) {
        io().close(*fd);
        *fd = -1;
      }
    }
  }
  if (ring_.fd >= 0) {
    io().close(ring_.fd);  // before the mapping goes (io.hpp)
    ring_.fd = -1;
  }
  if (ring_.base != nullptr) {
    munmap(ring_.base, ring_.bytes);
    ring_.base = nullptr;
  }
  return st;
}

}  // namespace vmstore::internal
