// TraceRecorder: records a buffer manager's page references into a trace file
// (trace_format.hpp), as its AccessListener (buffer/access_listener.hpp). Config
// trace=FILE of a database installs one.
//
// Contract
// - open(path) creates (truncates) the file through the Io interface (os/io.hpp) and
//   writes the magic; an error is returned as a Status and nothing is recorded.
// - onAccess appends to the calling thread's own buffer (one per thread index,
//   sync/thread_index.hpp: no lock on the common path); a buffer of kBlockBytes is
//   written as one block, under a mutex, at the end of the file.
// - close() writes every thread's remaining references (threads that exited included;
//   the caller makes sure no access is in flight), syncs and closes the file, and
//   returns the first error of the whole recording (after an error, references are
//   dropped, not written). The destructor closes if close() was not called.
// - references() and bytes() count what was recorded and written so far.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "buffer/access_listener.hpp"
#include "vmstore/status.hpp"

namespace vmstore::internal {

class TraceRecorder final : public AccessListener {
 public:
  static constexpr size_t kBlockBytes = 64 * 1024;
  static constexpr unsigned kMaxThreads = 4096;

  TraceRecorder() = default;
  ~TraceRecorder() override;
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  Status open(const std::string& path);
  void onAccess(uint64_t pid, bool miss) noexcept override;
  Status close();
  uint64_t references() const { return references_.load(std::memory_order_relaxed); }
  uint64_t bytes() const { return offset_; }

 private:
  struct Buffer {
    std::vector<uint8_t> payload;
    uint32_t records = 0;
    uint64_t prev = 0;
  };
  Buffer* bufferOf(unsigned index);
  void writeBlock(Buffer& b);  // under mu_

  std::string path_;
  int fd_ = -1;
  std::mutex mu_;  // the file, offset_, status_
  uint64_t offset_ = 0;
  Status status_;
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> references_{0};
  std::unique_ptr<std::atomic<Buffer*>[]> buffers_ = std::make_unique<std::atomic<Buffer*>[]>(kMaxThreads);
};

}  // namespace vmstore::internal
