#include "trace/trace_recorder.hpp"

#include <fcntl.h>

#include <cerrno>

#include "os/io.hpp"
#include "sync/thread_index.hpp"
#include "trace/trace_format.hpp"

namespace vmstore::internal {

TraceRecorder::~TraceRecorder() {
  close();
  for (unsigned i = 0; i < kMaxThreads; i++) delete buffers_[i].load(std::memory_order_relaxed);
}

Status TraceRecorder::open(const std::string& path) {
  path_ = path;
  fd_ = io().open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return ioStatus("cannot create trace file " + path, errno);
  ssize_t n = io().pwrite(fd_, path_, kTraceMagic, sizeof kTraceMagic, 0);
  if (n != static_cast<ssize_t>(sizeof kTraceMagic)) {
    Status s = ioStatus("cannot write trace file " + path, n < 0 ? errno : EIO);
    io().close(fd_);
    fd_ = -1;
    return s;
  }
  offset_ = sizeof kTraceMagic;
  return Status::OK();
}

TraceRecorder::Buffer* TraceRecorder::bufferOf(unsigned index) {
  std::atomic<Buffer*>& slot = buffers_[index % kMaxThreads];
  Buffer* b = slot.load(std::memory_order_acquire);
  if (b != nullptr) return b;
  auto* fresh = new Buffer();
  fresh->payload.reserve(kBlockBytes + 16);
  if (slot.compare_exchange_strong(b, fresh, std::memory_order_acq_rel)) return fresh;
  delete fresh;
  return b;
}

void TraceRecorder::onAccess(uint64_t pid, bool miss) noexcept {
  if (fd_ < 0 || failed_.load(std::memory_order_relaxed)) return;
  Buffer* b = bufferOf(threadIndex());
  try {
    encodeReference(b->payload, &b->prev, pid, miss);
  } catch (...) {  // out of memory: the recording is incomplete, say so at close
    std::lock_guard g(mu_);
    status_ = Status::NoMemory("trace " + path_ + ": out of memory while recording");
    failed_.store(true, std::memory_order_relaxed);
    return;
  }
  b->records++;
  references_.fetch_add(1, std::memory_order_relaxed);
  if (b->payload.size() >= kBlockBytes) {
    std::lock_guard g(mu_);
    writeBlock(*b);
  }
}

void TraceRecorder::writeBlock(Buffer& b) {
  if (b.records == 0) return;
  if (status_.ok()) {
    uint8_t header[kTraceBlockHeader];
    encodeBlockHeader(header, b.records, static_cast<uint32_t>(b.payload.size()));
    int err = pwriteAll(fd_, path_, header, sizeof header, offset_);
    if (err == 0) err = pwriteAll(fd_, path_, b.payload.data(), b.payload.size(), offset_ + sizeof header);
    if (err == 0) {
      offset_ += sizeof header + b.payload.size();
    } else {
      status_ = ioStatus("cannot write trace file " + path_, err);
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  b.payload.clear();
  b.records = 0;
  b.prev = 0;
}

Status TraceRecorder::close() {
  if (fd_ < 0) return status_;
  std::lock_guard g(mu_);
  for (unsigned i = 0; i < kMaxThreads; i++) {
    if (Buffer* b = buffers_[i].load(std::memory_order_acquire)) writeBlock(*b);
  }
  if (status_.ok() && io().fdatasync(fd_, path_) != 0) status_ = ioStatus("cannot sync trace file " + path_, errno);
  if (io().close(fd_) != 0 && status_.ok()) status_ = ioStatus("cannot close trace file " + path_, errno);
  fd_ = -1;
  return status_;
}

}  // namespace vmstore::internal
