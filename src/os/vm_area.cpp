#include "os/vm_area.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <system_error>
#include <vector>

#include "os/memory.hpp"

namespace vmstore::internal {

namespace {

long processMadvise(int pidfd, const iovec* iov, size_t n, int advice) {
  return syscall(SYS_process_madvise, pidfd, iov, n, advice, 0);
}

// process_madvise(MADV_DONTNEED) on the own process is recent (Linux 6.x); probe it on
// a page of our own so that we fall back cleanly on older kernels.
int openSelfPidfdIfUsable(char* probePage) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (fd < 0) return -1;
  probePage[0] = 1;
  iovec iov{probePage, VmArea::kPageSize};
  if (processMadvise(fd, &iov, 1, MADV_DONTNEED) != static_cast<long>(VmArea::kPageSize) ||
      probePage[0] != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

VmArea::VmArea(uint64_t pages, size_t guardBytes) : pages_(pages) {
  mappedBytes_ = pages * kPageSize + guardBytes;
  void* p = mmap(nullptr, mappedBytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw std::system_error(errno, std::generic_category(), "mmap of the page area");
  }
  base_ = static_cast<char*>(p);
  // The kernel must not merge our pages into huge pages: eviction works per 4 KiB page.
  madvise(base_, mappedBytes_, MADV_NOHUGEPAGE);
  pidfd_ = openSelfPidfdIfUsable(base_);
}

void VmArea::adviseHugePages() {
  if (base_ != nullptr) ::madvise(base_, mappedBytes_, MADV_HUGEPAGE);
}

bool VmArea::adviseHugePrefix(uint64_t pages, bool on) {
  if (!transparentHugePagesOn() || base_ == nullptr || pages > pages_) return false;
  return ::madvise(base_, pages * kPageSize, on ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) == 0;
}

size_t VmArea::populateHuge(PageRun run) {
  constexpr uintptr_t kHuge = 2u << 20;
  if (!transparentHugePagesOn()) return 0;  // populating 4 KiB pages ahead saves nothing
  const auto from = reinterpret_cast<uintptr_t>(pageAddress(run.pid));
  const uintptr_t to = from + run.pages * kPageSize;
  const uintptr_t a = (from + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t b = to & ~(kHuge - 1);
  if (b <= a || !backoff_.tryNow()) return 0;
  void* start = reinterpret_cast<void*>(a);
  const size_t len = b - a;
  const auto began = std::chrono::steady_clock::now();
  // The range takes huge pages only while it is populated; the flag goes back at once,
  // so that the area's mapping merges into one again and no later fault elsewhere (nor
  // khugepaged) makes huge pages the 4 KiB evictions would have to split.
  if (::madvise(start, len, MADV_HUGEPAGE) != 0) return 0;
  const bool populated = ::madvise(start, len, MADV_POPULATE_WRITE) == 0;
  ::madvise(start, len, MADV_NOHUGEPAGE);
  if (!populated) return 0;
  backoff_.report(
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began).count()),
      len);
  return len;
}

VmArea::~VmArea() {
  if (pidfd_ >= 0) close(pidfd_);
  if (base_) munmap(base_, mappedBytes_);
}

size_t VmArea::release(std::span<const uint64_t> pids) {
  std::vector<PageRun> runs;
  runs.reserve(pids.size());
  for (uint64_t pid : pids) runs.push_back({pid, 1});
  return release(runs);
}

size_t VmArea::release(std::span<const PageRun> runs) {
  if (runs.empty()) return 0;
  std::vector<PageRun> sorted(runs.begin(), runs.end());
  std::sort(sorted.begin(), sorted.end(), [](const PageRun& a, const PageRun& b) { return a.pid < b.pid; });
  // Coalesce adjacent runs into one range each (up to 1 GiB, well under the kernel's
  // 2 GiB per process_madvise call).
  constexpr size_t kMaxBytes = 1ull << 30;
  std::vector<iovec> ranges;
  ranges.reserve(sorted.size());
  for (const PageRun& run : sorted) {
    char* addr = pageAddress(run.pid);
    size_t bytes = run.pages * kPageSize;
    if (!ranges.empty() && static_cast<char*>(ranges.back().iov_base) + ranges.back().iov_len == addr &&
        ranges.back().iov_len + bytes <= kMaxBytes) {
      ranges.back().iov_len += bytes;
    } else {
      ranges.push_back({addr, bytes});
    }
  }
  size_t calls = 0;
  if (pidfd_ >= 0) {
    constexpr size_t kMaxIov = 1024;        // IOV_MAX
    for (size_t i = 0, n = 0; i < ranges.size(); i += n) {
      size_t bytes = 0;
      for (n = 0; i + n < ranges.size() && n < kMaxIov; n++) {
        if (n > 0 && bytes + ranges[i + n].iov_len > kMaxBytes) break;
        bytes += ranges[i + n].iov_len;
      }
      long r = processMadvise(pidfd_, &ranges[i], n, MADV_DONTNEED);
      calls++;
      if (r < 0 || static_cast<size_t>(r) != bytes) {
        throw std::system_error(r < 0 ? errno : EIO, std::generic_category(),
                                "process_madvise(MADV_DONTNEED)");
      }
    }
    return calls;
  }
  for (const iovec& r : ranges) {
    calls++;
    if (madvise(r.iov_base, r.iov_len, MADV_DONTNEED) != 0) {
      throw std::system_error(errno, std::generic_category(), "madvise(MADV_DONTNEED)");
    }
  }
  return calls;
}

}  // namespace vmstore::internal
