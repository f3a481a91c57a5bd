// vmstore::Stats: counters of a database, read with Database::stats().
//
// The event counters are kept per thread (no shared cache line on the hot path) and
// summed when read, so a read is a consistent-enough snapshot, not an atomic one.
#pragma once

#include <cstdint>

namespace vmstore {

struct Stats {
  // Events since open, summed over all threads.
  uint64_t hits = 0;           // page accesses that found the page resident
  uint64_t misses = 0;         // page accesses that read the page from storage
  uint64_t evictions = 0;      // pages evicted from the pool
  uint64_t pages_written = 0;  // pages written to storage (eviction, sync, close)
  uint64_t restarts = 0;       // optimistic operations that failed validation and retried
  uint64_t release_calls = 0;  // system calls that removed pages from the page table
  uint64_t read_ahead_pages = 0;  // of the misses, pages scans read ahead of need
  // Bytes of large values' pages (2 MiB and more) populated with transparent huge pages
  // as they were read in or written: one page fault per 2 MiB instead of 512 (a kernel
  // short of free huge pages may use small ones for some). 0 where the kernel has THP
  // off ("never") or with memory tiers.
  uint64_t huge_page_bytes = 0;
  // 1 while config huge_pages=true is in effect: the data file fits in the pool, and
  // the pool's pages come in huge pages (this is not counted in huge_page_bytes); 0
  // without the option, once the file outgrew the pool, with tiers or where THP is off.
  uint64_t huge_pages_in_memory = 0;
  // Replacement (config policy, resident_set): time spent choosing eviction candidates
  // (the clock's sweep or the policy's choice), candidates that were in use and stayed,
  // and the memory the policy's and the resident set's structures take now.
  uint64_t victim_ns = 0;
  uint64_t victims_kept = 0;
  uint64_t policy_bytes = 0;
  uint64_t resident_set_bytes = 0;
  // TLB shootdown interrupts on this machine since open, every process's (the "TLB:"
  // row of /proc/interrupts; 0 where it is missing). Divided by evictions: the
  // shootdowns an eviction costs, while this database is what runs.
  uint64_t tlb_shootdowns = 0;
  // Memory tiers (config tiers; all 0 without): frames moved one tier down (demoted)
  // and up (promoted), pages whose move failed (they stay and are retried), the system
  // calls that moved them, the time spent moving, and the TLB shootdown interrupts
  // counted on this machine during the moves (divided by demoted + promoted: the
  // shootdowns a migrated page costs).
  uint64_t demoted_pages = 0;
  uint64_t promoted_pages = 0;
  uint64_t migrate_failures = 0;
  uint64_t migrate_calls = 0;
  uint64_t migrate_ns = 0;
  uint64_t migrate_tlb_shootdowns = 0;
  // State now.
  uint64_t pool_pages = 0;      // budget of the pool, in 4 KiB pages
  uint64_t resident_pages = 0;  // pages in memory now (never above pool_pages)
  // With tiers: how many, and per tier (fastest first) its NUMA node, its budget and the
  // frames it holds now (never above the budget).
  uint64_t tier_count = 0;
  int64_t tier_node[4] = {};
  uint64_t tier_budget_pages[4] = {};
  uint64_t tier_pages[4] = {};
  uint64_t page_count = 0;      // pages allocated in the data file (used + free)
  uint64_t free_pages = 0;      // pages free for reuse
  uint64_t file_bytes = 0;      // bytes on storage: the data file plus the page journal
  uint64_t trees = 0;           // named trees, including the default tree if created
  // Durability.
  uint64_t log_bytes = 0;       // write-ahead log written since the last checkpoint
  uint64_t log_appended_bytes = 0;  // write-ahead log written since open (all intervals)
  uint64_t log_file_bytes = 0;  // size of the log's two files and its ring (recycled; at most log_size)
  uint64_t log_flushes = 0;     // flushes (fdatasync) of the log since open
  // Writes since open that found the log full and waited for a checkpoint to commit (or
  // cut one themselves): a log_size too small for the write rate shows here.
  uint64_t log_full_waits = 0;
  uint64_t checkpoints = 0;     // checkpoints committed over the database's life
  // Checkpoint cuts since open, and the time they waited in all for the writes in flight
  // (the writer gate, taken exclusively) and longest: how long a checkpoint's start
  // waits behind the writers.
  uint64_t checkpoint_cuts = 0;
  uint64_t checkpoint_cut_wait_us = 0;
  uint64_t checkpoint_cut_wait_max_us = 0;
  // What opening the database recovered: log records replayed (0 after a clean close),
  // their operations and bytes, whether an interrupted checkpoint was completed, and the
  // time recovery took.
  uint64_t recovered_records = 0;
  uint64_t recovered_operations = 0;
  uint64_t recovered_bytes = 0;
  uint64_t recovered_checkpoint = 0;  // 1: an interrupted checkpoint was completed
  uint64_t recovery_us = 0;
};

// The shape of one tree (Tree::shape): a walk of all its pages under shared locks.
struct TreeShape {
  uint32_t height = 0;        // levels, leaves included (a lone root leaf: 1)
  uint64_t leaf_pages = 0;
  uint64_t inner_pages = 0;
  uint64_t value_pages = 0;   // pages of values stored outside the leaves
  uint64_t keys = 0;
  double leaf_fill = 0;       // average share of a leaf page in use (0..1)
  double inner_fill = 0;      // the same for inner pages (0 when there are none)
};

}  // namespace vmstore
