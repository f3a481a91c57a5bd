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

#include "os/io.hpp"

namespace vmstore::internal {

namespace {

constexpr uint64_t kMaxGrowthStep = 16ull << 20;
constexpr size_t kReadChunk = 1 << 20;

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
  path_ = dir + "/" + kFileName;
  fd_ = io().open(path_, O_RDWR | O_CLOEXEC, 0644);
  if (fd_ < 0 && errno != ENOENT) return ioStatus("cannot open log " + path_, errno);
  return Status::OK();  // a missing log is an empty one; the first write creates it
}

Status OpLog::create() {
  fd_ = io().open(path_, O_RDWR | O_CLOEXEC | O_CREAT, 0644);
  if (fd_ < 0) return ioStatus("cannot create log " + path_, errno);
  if (io().syncDir(dir_) != 0) return ioStatus("cannot sync directory " + dir_, errno);
  return Status::OK();
}

uint64_t OpLog::fileBytes() const {
  struct stat st;
  if (fd_ < 0 || fstat(fd_, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

Status OpLog::replay(uint32_t epoch, const std::function<Status(std::span<const LogOp>)>& fn, ReplayInfo* info) {
  *info = {};
  if (fd_ < 0) return Status::OK();
  uint64_t size = fileBytes();
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
      ssize_t r = io().pread(fd_, path_, window.data() + got, want - got, off + got);
      if (r < 0) return ioStatus("cannot read log " + path_, errno);
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
  // The unit of growth: a quarter of log_size, from 1 MiB to 16 MiB.
  step_ = std::clamp<uint64_t>(roundUp(options_.log_size / 4, 1ull << 20), 1ull << 20, kMaxGrowthStep);
  // The address space for the mapping: four times log_size (a writer checkpoints once the
  // log passes log_size; writes in flight meanwhile need room), plus room for a batch.
  limit_ = roundUp(4 * options_.log_size + (32ull << 20), step_);
  void* p = mmap(nullptr, limit_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return Status::NoMemory("cannot reserve address space for the log");
  base_ = static_cast<uint8_t*>(p);
  capacity_ = 0;
  salt_ = newSalt();
  if (fd_ >= 0) {
    std::lock_guard g(appendMutex_);
    Status s = grow(std::min(fileBytes() / step_ * step_, limit_));  // what the file holds
    if (!s.ok()) return s;
  }
  begin(epoch);
  if (options_.durability == Durability::kAsync) flusher_ = std::thread([this] { flusherLoop(); });
  return Status::OK();
}

Status OpLog::grow(uint64_t need) {
  if (need <= capacity_) return Status::OK();
  // Doubling, but not far past log_size: a checkpoint recycles the log once it is there.
  uint64_t want = std::max({need, std::min(capacity_ * 2, options_.log_size + step_), step_});
  uint64_t cap = std::min(limit_, roundUp(want, step_));
  if (cap < need) return Status::Busy("log full");
  if (fd_ < 0) {
    Status s = create();
    if (!s.ok()) return s;
  }
  // Allocated on the device before it is mapped: a store into the mapping can then never
  // meet a full device (which would be SIGBUS). What an earlier session allocated stays.
  if (cap > fileBytes() && io().fallocate(fd_, path_, cap) != 0) {
    return ioStatus("cannot allocate log space in " + path_, errno);
  }
  if (io().mapShared(fd_, path_, base_ + capacity_, cap - capacity_, capacity_) != 0) {
    return ioStatus("cannot map log " + path_, errno);
  }
  capacity_ = cap;
  return Status::OK();
}

void OpLog::begin(uint32_t epoch) {
  uint64_t covered;
  {
    std::lock_guard g(appendMutex_);
    epoch_ = epoch;
    lsnBase_ += end_;
    end_ = 0;
    covered = lsnBase_;
    bytes_.store(0, std::memory_order_relaxed);
  }
  advanceDurable(covered);
}

Status OpLog::reserve(size_t bytes) {
  std::lock_guard g(appendMutex_);
  uint64_t need = end_ + reserved_ + bytes;
  if (need > limit_) return Status::Busy("log full");
  if (need > capacity_) {
    Status s = grow(need);
    if (!s.ok()) return s;
  }
  reserved_ += bytes;
  return Status::OK();
}

void OpLog::unreserve(size_t bytes) {
  std::lock_guard g(appendMutex_);
  reserved_ -= bytes;
}

uint64_t OpLog::append(std::span<const LogOp> ops, size_t size) {
  std::lock_guard g(appendMutex_);
  reserved_ -= size;
  encodeRecord(ops, salt_, end_, epoch_, base_ + end_);
  end_ += size;
  bytes_.store(end_, std::memory_order_relaxed);
  uint64_t lsn = lsnBase_ + end_;
  endLsn_.store(lsn, std::memory_order_release);
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
      flushEvents_.wait(events, std::memory_order_acquire);  // a flush is running
      continue;
    }
    // This thread flushes, for everyone: everything appended so far.
    uint64_t target = endLsn_.load(std::memory_order_acquire);
    int r = io().fdatasync(fd_, path_);
    Status st = r == 0 ? Status::OK() : ioStatus("cannot sync log " + path_, errno);
    flushes_.fetch_add(1, std::memory_order_relaxed);
    if (!st.ok()) {
      {
        std::lock_guard g(syncMutex_);
        failure_ = st;
      }
      failed_.store(true, std::memory_order_release);
      flushing_.store(false, std::memory_order_release);
      advanceDurable(0);  // wakes the waiters, which find the failure
      if (onSyncFailure) onSyncFailure(st);
      return st;
    }
    flushing_.store(false, std::memory_order_release);
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
  if (base_ != nullptr && options_.durability != Durability::kNone) st = flush();
  if (fd_ >= 0) {
    io().close(fd_);
    fd_ = -1;
  }
  if (base_ != nullptr) {
    munmap(base_, limit_);
    base_ = nullptr;
  }
  return st;
}

}  // namespace vmstore::internal
