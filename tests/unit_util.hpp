// Shared helpers of vmstore's UNIT tests (tests/{sync,os,buffer,btree}/*_test.cpp):
// the test scale, scratch directories, 4 KiB-aligned page buffers and a buffer manager
// over a fresh data file.
//
// Header-only (inline), namespace vmsunit: every tests/**/*_test.cpp file is compiled
// into one executable together with the end-to-end tests (namespace vmstest).
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "buffer/buffer_manager.hpp"
#include "os/data_file.hpp"
#include "os/memory.hpp"
#include "policy/registry.hpp"
#include "scratch_registry.hpp"

#ifndef VMSTORE_TEST_TMPDIR
#error "VMSTORE_TEST_TMPDIR must name a scratch directory"
#endif

// ASSERT that an expression yields an OK vmstore::Status, printing it otherwise.
#define UNIT_ASSERT_OK(expr)                                                                \
  do {                                                                                      \
    ::vmstore::Status unit_assert_status_ = (expr);                                         \
    ASSERT_TRUE(unit_assert_status_.ok()) << #expr << " -> " << unit_assert_status_.toString(); \
  } while (0)

namespace vmsunit {

namespace fs = std::filesystem;

// The process's resident memory (os/memory.hpp).
using vmstore::internal::residentBytes;

// `size` bytes of address space that read as zeros and take no memory until written:
// for passing lengths beyond the limits (which must be refused unread) without
// allocating them.
class ZeroBuffer {
 public:
  explicit ZeroBuffer(size_t size) : size_(size) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<char*>(p);
  }
  ~ZeroBuffer() { munmap(data_, size_); }
  ZeroBuffer(const ZeroBuffer&) = delete;
  ZeroBuffer& operator=(const ZeroBuffer&) = delete;
  char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }

 private:
  char* data_;
  size_t size_;
};

// The code of the StorageError fn throws (kOk when it throws none).
inline vmstore::Status::Code codeOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const vmstore::internal::StorageError& e) {
    return e.status().code();
  }
  return vmstore::Status::Code::kOk;
}

// The largest value most tests use: one that takes a page of its own (the limit before
// variable-size pages). Values beyond it have tests of their own.
inline constexpr size_t kOnePageValue = 4000;

// True when VMSTORE_TEST_SCALE=small (the sanitizer runs): tests shrink their sizes.
inline bool smallScale() {
  const char* s = std::getenv("VMSTORE_TEST_SCALE");
  return s != nullptr && std::string_view(s) == "small";
}

// `full` normally, `small` when VMSTORE_TEST_SCALE=small.
template <class T>
inline T scaled(T full, T small) {
  return smallScale() ? small : full;
}

// Where tests put their files: VMSTORE_TEST_TMPDIR from the environment (the NUMA guest
// points it at its tmpfs: the build directory is shared over 9p, which cannot allocate
// file space ahead), else the build's test-tmp directory.
inline fs::path testTmpDir() {
  const char* env = std::getenv("VMSTORE_TEST_TMPDIR");
  return fs::path(env != nullptr && *env != '\0' ? env : VMSTORE_TEST_TMPDIR);
}

// A fresh, empty directory under testTmpDir() named after the running test,
// removed again (with its content) when the object goes away.
class ScratchDir {
 public:
  ScratchDir() {
    std::string name = "unit";
    if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
      name += std::string("-") + info->test_suite_name() + "-" + info->name();
    }
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    name += "-" + std::to_string(::getpid());
    path_ = testTmpDir() / name;
    std::error_code ec;
    fs::remove_all(path_, ec);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// `pages` zeroed pages of 4 KiB, 4 KiB aligned (O_DIRECT buffers, B+tree nodes).
class AlignedPages {
 public:
  explicit AlignedPages(size_t pages = 1) : bytes_(pages * 4096) {
    data_ = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes_));
    if (data_ == nullptr) throw std::bad_alloc();
    std::memset(data_, 0, bytes_);
  }
  ~AlignedPages() { std::free(data_); }
  AlignedPages(const AlignedPages&) = delete;
  AlignedPages& operator=(const AlignedPages&) = delete;

  uint8_t* data() const { return data_; }
  uint8_t* page(size_t i) const { return data_ + i * 4096; }
  size_t bytes() const { return bytes_; }
  template <class T>
  T* as(size_t i = 0) const {
    return reinterpret_cast<T*>(page(i));
  }

 private:
  uint8_t* data_;
  size_t bytes_;
};

// A buffer manager over a fresh data file in a scratch directory. Page 0 stands for the
// superblock (never handed out), as in the database: the manager starts with pageCount 1.
struct BufferEnv {
  explicit BufferEnv(uint64_t poolPages = 256, uint64_t maxPages = 1 << 20) {
    vmstore::Status st = file.open(dir.file("data.vms"), true);
    if (!st.ok()) throw std::runtime_error("cannot open data file: " + st.toString());
    bm = std::make_unique<vmstore::internal::BufferManager>(&file, poolPages, maxPages, 1);
    // The suite's policy (VMSTORE_TEST_POLICY, tests/test_main.cpp), even clock as an object.
    const std::string& policy = vmstore::internal::defaultPolicyOverride();
    if (!policy.empty()) bm->setPolicy(vmstore::internal::makePolicy(policy, poolPages, maxPages));
  }
  ~BufferEnv() {
    bm.reset();
    file.close();
  }
  std::string dataPath() const { return dir.file("data.vms"); }

  ScratchDir dir;
  vmstore::internal::DataFile file;
  std::unique_ptr<vmstore::internal::BufferManager> bm;
};

// Touches other pages (allocating up to 2 pools of filler pages, then reading them in
// turn, twice each) until every page in `targets` is evicted, under any replacement
// policy. False if that did not happen. The fillers are freed again at the end (they go
// to the free space, the file stays grown).
inline bool evictAll(vmstore::internal::BufferManager& bm, const std::vector<uint64_t>& targets) {
  using vmstore::internal::PageState;
  auto allEvicted = [&] {
    for (uint64_t pid : targets) {
      if (PageState::stateOf(bm.state(pid).load()) != PageState::kEvicted) return false;
    }
    return true;
  };
  std::vector<uint64_t> fillers;
  struct FreeFillers {
    vmstore::internal::BufferManager& bm;
    std::vector<uint64_t>& fillers;
    ~FreeFillers() {
      for (uint64_t pid : fillers) {
        bm.fixX(pid);
        bm.freePage(pid);
      }
    }
  } freeFillers{bm, fillers};
  for (uint64_t i = 0; i < 50 * bm.poolPages(); i++) {
    if (allEvicted()) return true;
    if (fillers.size() < 2 * bm.poolPages()) {
      vmstore::internal::Page* p = bm.allocPage(vmstore::internal::PageKind::kValue);
      fillers.push_back(p->header.pid);
      bm.unfixX(p->header.pid);
    } else {
      // Each filler read twice in a row: to policies that protect pages seen more than
      // once (SLRU, ARC, LRU-2, LFU-DA) the fillers then look at least as valuable as
      // the targets, which a loop of single reads would never displace (by design).
      uint64_t pid = fillers[i % fillers.size()];
      for (int twice = 0; twice < 2; twice++) {
        bm.fixS(pid);
        bm.unfixS(pid);
      }
    }
  }
  return allEvicted();
}

}  // namespace vmsunit
