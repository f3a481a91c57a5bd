#include "trace/trace_reader.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "os/io.hpp"

namespace vmstore::internal {

Status readTrace(const std::string& path, Trace* out) {
  *out = Trace();
  int fd = io().open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return ioStatus("cannot open trace " + path, errno);
  std::vector<uint8_t> data;
  Status s;
  for (uint64_t off = 0;;) {
    data.resize(off + (1 << 20));
    ssize_t n = io().pread(fd, path, data.data() + off, 1 << 20, off);
    if (n < 0) {
      s = ioStatus("cannot read trace " + path, errno);
      break;
    }
    off += static_cast<uint64_t>(n);
    if (n == 0) {
      data.resize(off);
      break;
    }
  }
  io().close(fd);
  if (!s.ok()) return s;
  if (data.size() < sizeof kTraceMagic || std::memcmp(data.data(), kTraceMagic, sizeof kTraceMagic) != 0) {
    return Status::Corruption(path + " is not a vmstore trace (bad magic)");
  }
  size_t pos = sizeof kTraceMagic;
  for (uint64_t block = 0; pos < data.size(); block++) {
    if (data.size() - pos < kTraceBlockHeader) {
      return Status::Corruption(path + ": block " + std::to_string(block) + " has a truncated header");
    }
    uint32_t records, bytes;
    decodeBlockHeader(data.data() + pos, &records, &bytes);
    pos += kTraceBlockHeader;
    if (data.size() - pos < bytes) {
      return Status::Corruption(path + ": block " + std::to_string(block) + " is truncated (" + std::to_string(bytes) +
                                " bytes announced, " + std::to_string(data.size() - pos) + " left)");
    }
    std::string error;
    if (!decodeBlock(data.data() + pos, bytes, records, &out->refs, &error)) {
      return Status::Corruption(path + ": block " + std::to_string(block) + ": " + error);
    }
    pos += bytes;
  }
  std::vector<uint8_t> seen;
  for (const TraceRef& r : out->refs) {
    out->maxPid = std::max(out->maxPid, r.pid);
    out->misses += r.miss;
  }
  seen.assign(out->maxPid + 1, 0);
  for (const TraceRef& r : out->refs) {
    if (!seen[r.pid]) {
      seen[r.pid] = 1;
      out->distinct++;
    }
  }
  return Status::OK();
}

}  // namespace vmstore::internal
