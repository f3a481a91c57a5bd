// VmArea: one anonymous MAP_NORESERVE virtual memory area covering all of storage.
//
// Page p lives at base() + p * 4096 for the life of the area. Untouched or released
// pages read as zeros and never fault, which is what lets optimistic readers race with
// eviction (paper 000 §3.3). Memory is committed by the kernel on first write (or by a
// read() into the page); release() gives pages back to the kernel.
//
// release() removes a batch of pages from the page table with ONE process_madvise
// (MADV_DONTNEED) system call, one TLB shootdown for the whole batch, when the kernel
// supports it on the own process; otherwise one madvise per contiguous run of pages.
// Which one is in use is decided once at construction (batchedRelease()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "os/huge_backoff.hpp"

namespace vmstore::internal {

// Pages [pid, pid + pages): one variable-size page, or a run of pages.
struct PageRun {
  uint64_t pid;
  uint64_t pages;
};

class VmArea {
 public:
  static constexpr size_t kPageSize = 4096;
  // Throws std::system_error if the address space cannot be reserved.
  // guardBytes of extra zero pages follow the last page, so that a racy optimistic
  // read running past a page end stays inside the area.
  VmArea(uint64_t pages, size_t guardBytes);
  ~VmArea();
  VmArea(const VmArea&) = delete;
  VmArea& operator=(const VmArea&) = delete;

  char* base() const { return base_; }
  uint64_t pages() const { return pages_; }
  char* pageAddress(uint64_t pid) const { return base_ + pid * kPageSize; }

  // Releases the memory of the given pages (sorted or not). Returns the number of
  // system calls it took. Throws std::system_error on failure.
  size_t release(std::span<const uint64_t> pids);
  // The same for runs of pages (variable-size pages among them).
  size_t release(std::span<const PageRun> runs);
  bool batchedRelease() const { return pidfd_ >= 0; }
  // Backs the whole 2 MiB-aligned stretches inside a run of pages (a large variable-size
  // page about to be filled) with transparent huge pages now, zeroed: one fault per
  // 2 MiB instead of one per 4 KiB page when the run is then written. Best effort:
  // nothing happens where THP is off, the run is shorter than an aligned 2 MiB, or the
  // kernel refuses (the pages then fault in one by one as before). The rest of the area
  // stays without huge pages. The run's pages must not be in use (nothing there yet).
  // Where populating proves slower than the faults it saves (a VM's unbacked memory),
  // it is skipped for a while (HugeBackoff, huge_backoff.hpp). Returns the bytes
  // populated with huge pages asked for (0 if none); a kernel out of free huge pages
  // may still have used small ones for some.
  size_t populateHuge(PageRun run);
  // Asks the kernel to back the area with transparent huge pages where it can (best
  // effort: ignored where THP is off). For dense metadata such as the page states.
  void adviseHugePages();
  // Pages [0, pages) (a multiple of 512) take transparent huge pages when they fault in
  // (on), or 4 KiB pages again (off: huge pages already there stay until something
  // splits them). False where THP is off or the kernel refuses.
  bool adviseHugePrefix(uint64_t pages, bool on);

 private:
  char* base_ = nullptr;
  size_t mappedBytes_ = 0;
  uint64_t pages_ = 0;
  int pidfd_ = -1;  // pidfd of this process when process_madvise works, else -1
  HugeBackoff backoff_;
};

}  // namespace vmstore::internal
