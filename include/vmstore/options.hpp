// vmstore::Options: how a database is opened. Every field has a documented default.
//
// Options::parse() reads the C API's config string ("pool_size=64M,create=false");
// unknown keys, malformed values and a key given twice are an InvalidArgument error naming
// the key, and leave *out untouched. Keys not given keep the value *out holds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vmstore/status.hpp"

namespace vmstore {

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer reserves most of the address space for itself: 1 TiB cannot be mapped.
inline constexpr uint64_t kDefaultMaxSize = 64ull << 30;
#else
inline constexpr uint64_t kDefaultMaxSize = 1ull << 40;
#endif

// The largest read_ahead (pages a scan reads ahead at once).
inline constexpr uint32_t kMaxReadAhead = 256;

// What an acknowledged write survives (see README, "Durability").
enum class Durability {
  // put, delete and write return once their log record is on stable storage; concurrent
  // writers share one flush (group commit). Survives a crash and a power cut.
  kSync,
  // Every acknowledged write survives a crash of the process (the log record is in the
  // operating system's page cache when the call returns); a power cut loses at most the
  // last sync_interval_ms milliseconds. The database always opens consistent.
  kAsync,
  // No log: only sync and close make writes durable. After a crash the database opens at
  // its last checkpoint (the last sync or close); later writes are lost. For bulk loads
  // and benchmarks.
  kNone,
};

// How a page miss inside a task (task mode, get_many) reads the page.
enum class IoMode {
  // The task queues the read on its thread's io_uring ring and suspends; the thread runs
  // other tasks meanwhile, so one thread keeps many reads in flight. Outside tasks, and
  // where io_uring is unavailable, the same as kSync.
  kUring,
  // A blocking read: the thread waits, whatever task it runs (the baseline).
  kSync,
};

// The structure that records which pages are in memory (what the clock walks).
enum class ResidentSetType {
  // An open-addressing hash table sized by the pool (the vmcache paper's): 16 to 32
  // bytes per pool page, whatever the data size.
  kHash,
  // One bit per page id of the data file (an atomic bitmap): data size / 32768 bytes,
  // and the clock sweeps the file in order.
  kBitmap,
};

// One memory tier of the buffer pool (config tiers): a NUMA node and the most memory
// the pool may hold on it.
struct MemoryTier {
  int node = 0;
  uint64_t size = 0;  // bytes, at least 1 MiB
};

// How pages move between tiers.
enum class MigrateMode {
  // move_pages(2), migrate_batch pages per call: one round of page-table changes and one
  // TLB shootdown per batch.
  kMovePages,
  // mbind(2) page by page (a call and a shootdown each): the baseline to compare with.
  kMbind,
};

// The replacement policy of a database opened without `policy`.
inline constexpr const char* kDefaultPolicy = "s3fifo";

// The most memory tiers a pool may have.
inline constexpr size_t kMaxTiers = 4;

struct Options {
  // Memory budget of the buffer pool in bytes: resident pages never exceed it.
  // Default 1 GiB; minimum 1 MiB (256 pages); rounded down to whole 4 KiB pages.
  uint64_t pool_size = 1ull << 30;
  // Create the directory and an empty database if missing. Default true. With false,
  // opening a missing database is an InvalidArgument error ("does not exist").
  bool create = true;
  // Largest size the data file may reach; writes beyond it fail with NoSpace.
  // Reserves virtual address space (not memory). Default 1 TiB (64 GiB in
  // ThreadSanitizer builds), minimum 1 MiB, maximum 64 TiB.
  uint64_t max_size = kDefaultMaxSize;

  // Durability of writes; config durability=sync|async|none. Default sync.
  Durability durability = Durability::kSync;
  // With async durability, the log is flushed to stable storage at least this often (in
  // milliseconds, 1 .. 60000). Default 100.
  uint32_t sync_interval_ms = 100;
  // With sync durability in task mode (vmstore/tasks.hpp): how long, in microseconds,
  // the flush a committing task asks for may wait for more commits to share it while
  // the worker threads have other tasks to run (group commit: fewer, larger flushes, so
  // less CPU per commit). A thread with no other task to run ends the wait at once, so
  // a lone committer never waits for it. 0: flush at once. Config commit_delay (0 ..
  // 100000). Default 500. Threads outside tasks flush at once.
  uint32_t commit_delay_us = 500;
  // The write-ahead log's two files and its ring stay below this size together: a
  // background checkpoint starts when the log passes five eighths of what the ring leaves;
  // the file before its cut is cut back to a quarter once it commits, and a writer that
  // finds no room meanwhile waits for that commit. Default 1 GiB; 1 MiB .. 64 GiB.
  uint64_t log_size = 1ull << 30;
  // With sync durability, a background thread zero-fills the log file a few MiB ahead of
  // the appends and syncs it, so that commits write into blocks the file system has
  // initialized (a flush into freshly allocated space also writes the file's block map:
  // twice the I/O per commit on ext4). Costs writing the log's space twice in the first
  // pass of each session. Config log_zero_fill=true|false. Default true.
  bool log_zero_fill = true;
  // Read and write the data file with O_DIRECT (bypassing the page cache) where the file
  // system allows it, and write the log out with it too (sync or async; whole blocks,
  // so the log's files stay out of the page cache and a flush copies nothing); false:
  // everything through the page cache. Default true.
  bool direct_io = true;
  // How misses inside tasks are read; config io=uring|sync. Default uring.
  IoMode io = IoMode::kUring;
  // A background thread evicts ahead of need once the pool is full (writing dirty pages
  // back in batches), so that reads rarely wait for an eviction; false: the thread that
  // misses evicts. It does nothing while the data fits the pool. Config
  // page_provider=true|false. Default true.
  bool page_provider = true;
  // While the whole data file fits in the pool, back the pool's first pool_size bytes
  // of pages with transparent huge pages (where the kernel has THP in "madvise" or
  // "always" mode): fewer TLB misses, so in-memory random lookups run faster. Memory
  // stays within pool_size (only page ids below the pool's size get huge pages). Once
  // the file grows beyond the pool, new memory is taken in 4 KiB pages again and
  // eviction splits the huge pages it meets. The first touch of each 2 MiB costs a
  // 2 MiB zeroing, which in some VMs (free page reporting) is much slower than 512
  // small faults: loads can take longer (docs/BENCHMARKS.md). Not with tiers. Config
  // huge_pages=true|false. Default false.
  bool huge_pages = false;
  // Scans and iterators that go on from leaf to leaf read the leaves ahead of them
  // together, up to this many pages at once (the window starts at 4 on the second leaf
  // and doubles with each leaf). 0: no read-ahead. Config read_ahead=N, 0 .. 256.
  // Default 32.
  uint32_t read_ahead = 32;
  // The page-replacement policy: which pages leave the pool when it is full. Config
  // policy=NAME, one of clock, fifo, lru, lru2, 2q, slru, arc, random, gclock, lfuda,
  // leanstore, s3fifo, sieve (docs/POLICIES.md says what each does and what it costs).
  // Default s3fifo, which had the best hit rate and throughput out of memory in
  // `vmstore bench policies` (docs/BENCHMARKS.md); clock is the one whose hits cost
  // nothing extra (about 4% fewer instructions per in-memory lookup). Empty (the
  // default): s3fifo, or clock with tiers.
  std::string policy;
  // Config resident_set=hash|bitmap. Default hash.
  ResidentSetType resident_set = ResidentSetType::kHash;
  // Config trace=FILE: record every page access of this open (after recovery, until
  // close) into FILE, the page-reference string `vmstore sim` replays (docs/POLICIES.md).
  // Costs a call on every page access and about 2 bytes per access on disk; close fails
  // if the file could not be written. Empty (default): no trace.
  std::string trace;
  // Memory tiers, fastest first (config tiers=NODE:SIZE+NODE:SIZE..., e.g.
  // tiers=0:4G+1:16G; up to kMaxTiers). Pages are read in to the first tier; when it is
  // full its coldest pages move one tier down, in batches, keeping their address (the
  // page table changes, not the data's place in the pool); pages used often in a lower
  // tier move back up; pages leave memory only from the last tier. Each size is a hard
  // budget, and the pool is their sum (pool_size is then not used; giving both in one
  // config string is an error). Tiers use the clock policy. Empty (default): one tier,
  // pool_size on whatever node the kernel chooses. See README, "Memory tiers".
  std::vector<MemoryTier> tiers;
  // Pages moved per move_pages call (config migrate_batch=N, 1 .. 4096). Default 64.
  uint32_t migrate_batch = 64;
  // Config migrate=move_pages|mbind. Default move_pages.
  MigrateMode migrate = MigrateMode::kMovePages;

  static Status parse(std::string_view config, Options* out);
};

// Parses "123", "64K", "16M", "2G", "1T" (powers of 1024). False on malformed input
// or overflow.
bool parseSize(std::string_view text, uint64_t* out);

}  // namespace vmstore
