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

namespace vmstore::internal {

namespace {

constexpr uint64_t kPageBytes = 4096;
constexpr uint64_t kAllocationUnit = 64ull << 10;   // a file's capacity is a multiple of this
constexpr uint64_t kFirstAllocation = 1ull << 20;  // an empty file's first allocation
constexpr size_t kReadChunk = 1 << 20;
constexpr uint64_t kReleaseStep = 1ull << 20;  // buffer memory given back in steps of this
constexpr size_t kStagedRecord = 64 << 10;       // records up to this are encoded before the lock
// refuseForeign reads a first record of up to this many payload bytes (larger: not checked).
constexpr uint32_t kMaxCheckedRecord = 64u << 20;

uint64_t roundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

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
  return Status::OK();  // a missing log is an empty one; the first write creates it
}

Status OpLog::create(Segment& seg) {
  seg.fd = io().open(seg.path, O_RDWR | O_CLOEXEC | O_CREAT, 0644);
  if (seg.fd < 0) return ioStatus("cannot create log " + seg.path, errno);
  if (io().syncDir(dir_) != 0) return ioStatus("cannot sync directory " + dir_, errno);
  return Status::OK();
}

uint64_t OpLog::sizeOf(const Segment& seg) {
  struct stat st;
  if (seg.fd < 0 || fstat(seg.fd, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

uint64_t OpLog::fileBytes() const { return sizeOf(segs_[0]) + sizeOf(segs_[1]); }

std::string OpLog::path() const { return segs_[cur_].path; }

Status OpLog::discard() {
  for (Segment& seg : segs_) {
    if (seg.fd < 0 || sizeOf(seg) == 0) continue;
    if (io().ftruncate(seg.fd, seg.path, 0) != 0 || io().fdatasync(seg.fd, seg.path) != 0) {
      return ioStatus("cannot empty log " + seg.path, errno);
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
    if (seg.fd < 0 || sizeOf(seg) < sizeof(h)) continue;
    ssize_t r = io().pread(seg.fd, seg.path, &h, sizeof(h), 0);
    if (r < 0) return ioStatus("cannot read log " + seg.path, errno);
    if (static_cast<size_t>(r) != sizeof(h) || h.offset != 0 || static_cast<uint32_t>(h.salt) == databaseTag_) continue;
    const uint64_t whole = sizeof(h) + uint64_t{h.length} + 8;  // with its padding
    if (h.length > kMaxCheckedRecord || sizeOf(seg) < sizeof(h) + h.length) continue;
    std::vector<uint8_t> record(static_cast<size_t>(std::min(whole, sizeOf(seg))));
    r = io().pread(seg.fd, seg.path, record.data(), record.size(), 0);
    if (r < 0) return ioStatus("cannot read log " + seg.path, errno);
    record.resize(static_cast<size_t>(r));
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

Status OpLog::replay(uint32_t epoch, const std::function<Status(std::span<const LogOp>)>& fn, ReplayInfo* info) {
  *info = {};
  const Segment& seg = segs_[epoch % 2];
  if (seg.fd < 0) return Status::OK();
  uint64_t size = sizeOf(seg);
  std::vector<uint8_t> window;  // file bytes [windowAt, windowAt + window.size())
  uint64_t windowAt = 0;
  // Makes [off, off + n) available in the window (fewer bytes at the end of the file).
  auto load = [&](uint64_t off, size_t n) -> Status {
    if (off >= windowAt && off + n <= windowAt + window.size()) return Status::OK();
    size_t want = static_cast<size_t>(std::min<uint64_t>(std::max<size_t>(n, kReadChunk), size - std::min(off, size)));
    window.resize(want);
    windowAt = off;
    size_t got = 0;
    while (got < want) {
      ssize_t r = io().pread(seg.fd, seg.path, window.data() + got, want - got, off + got);
      if (r < 0) return ioStatus("cannot read log " + seg.path, errno);
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
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
  // Each file stops at half of log_size; it starts at 1 MiB and doubles (a small
  // database does not hold log_size of allocated space).
  limit_ = roundUp(options_.log_size / 2, kAllocationUnit);
  salt_ = newSalt();
  if (databaseTag_ != 0) salt_ = (salt_ & ~uint64_t{0xffffffff}) | databaseTag_;
  mapped_ = options_.durability == Durability::kAsync;
  for (Segment& seg : segs_) {
    // Mapped: the file is mapped over this reservation as it grows. Buffered: anonymous
    // memory, written out with pwrite.
    void* p = mmap(nullptr, limit_, mapped_ ? PROT_NONE : PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return Status::NoMemory("cannot reserve address space for the log");
    seg.base = static_cast<uint8_t*>(p);
    seg.capacity = 0;
    seg.written = 0;
    seg.released = 0;
    if (seg.fd >= 0) {
      std::lock_guard g(appendMutex_);
      Status s = grow(seg, std::min(sizeOf(seg) / kAllocationUnit * kAllocationUnit, limit_));  // what the file holds
      if (!s.ok()) return s;
    }
  }
  std::lock_guard g(appendMutex_);
  epoch_ = epoch;
  cur_ = static_cast<int>(epoch % 2);
  allocated_.store(segs_[cur_].capacity, std::memory_order_release);
  if (options_.durability == Durability::kAsync) flusher_ = std::thread([this] { flusherLoop(); });
  return Status::OK();
}

Status OpLog::grow(Segment& seg, uint64_t need) {
  if (need <= seg.capacity) return Status::OK();
  uint64_t want = std::max({need, std::min(seg.capacity * 2, limit_), kFirstAllocation});
  uint64_t cap = std::min(limit_, roundUp(want, kAllocationUnit));
  if (cap < need) return Status::Busy("log full");
  if (seg.fd < 0) {
    Status s = create(seg);
    if (!s.ok()) return s;
  }
  // Allocated on the device before records are accepted into it: a full device fails the
  // reservation (the write it logs changes nothing), never a write-out of an acknowledged
  // record. What an earlier session allocated stays.
  // (Mapped, a store into the mapping then never meets a full device: no SIGBUS.)
  if (cap > sizeOf(seg) && io().fallocate(seg.fd, seg.path, cap) != 0) {
    return ioStatus("cannot allocate log space in " + seg.path, errno);
  }
  if (mapped_ &&
      io().mapShared(seg.fd, seg.path, seg.base + seg.capacity, cap - seg.capacity, seg.capacity) != 0) {
    return ioStatus("cannot map log " + seg.path, errno);
  }
  seg.capacity = cap;
  return Status::OK();
}

uint64_t OpLog::cut(uint32_t epoch) {
  std::lock_guard w(writeMutex_);
  // The interval ends: its records go to its file now (a failure fails the log, and the
  // waiters see it), so that a flush after the cut only syncs that file. No reservation
  // is open (the caller's contract), so nothing is appended meanwhile.
  Segment& old = segs_[cur_];
  uint64_t end;
  {
    std::lock_guard g(appendMutex_);
    end = end_;
  }
  (void)writeOut(old, end);
  if (!mapped_ && old.released < old.written) {
    madvise(old.base + old.released, roundUp(old.written, kPageBytes) - old.released, MADV_DONTNEED);
  }
  std::lock_guard g(appendMutex_);
  epoch_ = epoch;
  cur_ = static_cast<int>(epoch % 2);
  lsnBase_ += end_;
  end_ = 0;
  Segment& seg = segs_[cur_];
  seg.written = 0;
  seg.released = 0;
  claimed_.store(0, std::memory_order_relaxed);
  allocated_.store(seg.capacity, std::memory_order_release);
  bytes_.store(0, std::memory_order_relaxed);
  return lsnBase_;
}

Status OpLog::writeOut(Segment& seg, uint64_t upTo) {
  if (upTo <= seg.written) return Status::OK();
  if (mapped_) {  // the records are in the file's pages already
    seg.written = upTo;
    // Whole pages behind upTo leave the mapping before the sync writes them back: one
    // range flush here, instead of the sync write-protecting each page (a TLB
    // shootdown apiece, 7% of the time under TPC-C). Appends go on in upTo's page.
    uint64_t whole = upTo / kPageBytes * kPageBytes;
    if (whole > seg.released) {
      io().dropMapped(seg.base + seg.released, whole - seg.released);
      seg.released = whole;
    }
    return Status::OK();
  }
  if (failed_.load(std::memory_order_acquire)) return failure();
  int err = pwriteAll(seg.fd, seg.path, seg.base + seg.written, upTo - seg.written, seg.written);
  if (err != 0) {
    // What reached the file is unknown: like a failed sync, never retried.
    Status st = ioStatus("cannot write log " + seg.path, err);
    fail(st);
    return st;
  }
  seg.written = upTo;
  // Memory behind what was written goes back to the system in steps of 1 MiB (the page
  // holding upTo stays: later records are appended into it).
  uint64_t whole = upTo / kPageBytes * kPageBytes;
  if (whole >= seg.released + kReleaseStep) {
    madvise(seg.base + seg.released, whole - seg.released, MADV_DONTNEED);
    seg.released = whole;
  }
  return Status::OK();
}

Status OpLog::writeOutTo(uint64_t lsn) {
  if (writtenLsn_.load(std::memory_order_acquire) >= lsn) return failure();
  std::unique_lock w = task::lock(writeMutex_);
  uint64_t end;
  uint64_t endLsn;
  Segment* seg;
  {
    std::lock_guard g(appendMutex_);
    end = end_;
    endLsn = endLsn_.load(std::memory_order_acquire);
    seg = &segs_[cur_];
  }
  // Everything of earlier intervals was written out by their cut.
  Status st = writeOut(*seg, end);
  if (!st.ok()) return st;
  uint64_t was = writtenLsn_.load(std::memory_order_relaxed);
  while (was < endLsn && !writtenLsn_.compare_exchange_weak(was, endLsn, std::memory_order_acq_rel)) {
  }
  return failure();
}

void OpLog::fail(const Status& st) {
  {
    std::lock_guard g(syncMutex_);
    if (failed_.load(std::memory_order_acquire)) return;
    failure_ = st;
  }
  failed_.store(true, std::memory_order_release);
  advanceDurable(0);  // wakes the waiters, which find the failure
  if (onSyncFailure) onSyncFailure(st);
}

Status OpLog::reserve(size_t bytes) {
  // Fast path: room in what is allocated. A claim that does not fit is taken back (others
  // may see it for a moment and take the slow path: only slower, never wrong).
  if (claimed_.fetch_add(bytes, std::memory_order_relaxed) + bytes <= allocated_.load(std::memory_order_acquire)) {
    return Status::OK();
  }
  claimed_.fetch_sub(bytes, std::memory_order_relaxed);
  std::lock_guard g(appendMutex_);
  Segment& seg = segs_[cur_];
  for (uint64_t claimed = claimed_.load(std::memory_order_relaxed);;) {
    uint64_t need = claimed + bytes;
    if (need > limit_) return Status::Busy("log full");
    if (need > seg.capacity) {
      Status s = grow(seg, need);
      if (!s.ok()) return s;
      allocated_.store(seg.capacity, std::memory_order_release);
    }
    if (claimed_.compare_exchange_weak(claimed, need, std::memory_order_relaxed)) return Status::OK();
  }
}

bool OpLog::room(size_t bytes) const { return claimed_.load(std::memory_order_relaxed) + bytes <= limit_; }

void OpLog::unreserve(size_t bytes) { claimed_.fetch_sub(bytes, std::memory_order_relaxed); }

uint64_t OpLog::append(std::span<const LogOp> ops, size_t size) {
  // A record of up to kStagedRecord bytes is encoded and its payload summed before the
  // append lock, in a buffer of the thread's: under the lock only its place is written
  // into it and it is copied into the log. A larger one is encoded in place.
  thread_local std::vector<uint8_t> staged;
  uint32_t payloadCrc = 0;
  bool stage = size <= kStagedRecord;
  if (stage) {
    if (staged.size() < size) staged.resize(kStagedRecord);
    payloadCrc = encodeUnsealed(ops, salt_, staged.data());
  }
  uint64_t lsn;
  {
    std::lock_guard g(appendMutex_);
    uint8_t* at = segs_[cur_].base + end_;
    if (stage) {
      sealRecord(staged.data(), payloadCrc, end_, epoch_);
      std::memcpy(at, staged.data(), size);
    } else {
      encodeRecord(ops, salt_, end_, epoch_, at);
    }
    end_ += size;
    bytes_.store(end_, std::memory_order_relaxed);
    lsn = lsnBase_ + end_;
    endLsn_.store(lsn, std::memory_order_release);
  }
  return lsn;
}

void OpLog::advanceDurable(uint64_t lsn) {
  uint64_t d = durable_.load(std::memory_order_acquire);
  while (d < lsn && !durable_.compare_exchange_weak(d, lsn, std::memory_order_acq_rel)) {
  }
  flushEvents_.fetch_add(1, std::memory_order_release);
  flushEvents_.notify_all();
}

Status OpLog::waitDurable(uint64_t lsn) {
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
      if (task::Scheduler* s = task::Scheduler::current()) {
        s->waitChange(flushEvents_, events);
      } else {
        flushEvents_.wait(events, std::memory_order_acquire);
      }
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
    flushing_.store(false, std::memory_order_release);
    if (!st.ok()) {
      fail(st);
      return st;
    }
    advanceDurable(target);
  }
  return Status::OK();
}

Status OpLog::failure() {
  if (!failed_.load(std::memory_order_acquire)) return Status::OK();
  std::lock_guard g(syncMutex_);
  return failure_;
}

void OpLog::flusherLoop() {
  auto interval = std::chrono::milliseconds(options_.sync_interval_ms);
  std::unique_lock g(syncMutex_);
  while (!stop_) {
    wake_.wait_for(g, interval, [&] { return stop_; });
    if (stop_ || failed_.load(std::memory_order_acquire)) continue;
    uint64_t end = endLsn_.load(std::memory_order_acquire);
    if (end <= durable_.load(std::memory_order_acquire)) continue;
    g.unlock();
    waitDurable(end);
    g.lock();
  }
}

Status OpLog::close() {
  if (flusher_.joinable()) {
    {
      std::lock_guard g(syncMutex_);
      stop_ = true;
    }
    wake_.notify_all();
    flusher_.join();
  }
  Status st;
  if (writing() && options_.durability != Durability::kNone) st = flush();
  for (Segment& seg : segs_) {
    if (seg.fd >= 0) {
      io().close(seg.fd);
      seg.fd = -1;
    }
    if (seg.base != nullptr) {
      munmap(seg.base, limit_);
      seg.base = nullptr;
    }
  }
  return st;
}

}  // namespace vmstore::internal
