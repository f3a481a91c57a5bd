// The `rocksdb` bench engine: RocksDB (Debian librocksdb-dev, 7.8) behind the
// Engine/Session interface of bench/engine.hpp. Configuration and why it is fair:
// docs/ENGINES.md.
//
// - One DB in config.dir, one column family per table (default bytewise comparator:
//   unsigned byte order).
// - Memory budget: one LRU block cache of config.poolBytes, shared by all column
//   families. Index and filter blocks live in it (cache_index_and_filter_blocks), and the
//   memtables are charged to it through a WriteBufferManager (a quarter of the budget),
//   so poolBytes bounds data, index, filter and memtable memory together.
// - Direct I/O: use_direct_reads and use_direct_io_for_flush_and_compaction, so the OS
//   page cache does not act as a second, unbudgeted cache. If the file system refuses
//   O_DIRECT (tmpfs), the DB is reopened without it and a note goes to stderr.
// - Durability (config.durability), through WriteOptions on every write and commit:
//     none   WAL off (disableWAL), sync=false: as the paper ran it; close() flushes the
//            memtables, the only copy of the newest writes
//     async  WAL on, sync=false: each write is in the WAL file (the OS page cache) when it
//            returns; RocksDB syncs it on its own schedule (no periodic sync is added)
//     sync   WAL on, sync=true: each write (a put or del outside begin()/commit(), or a
//            commit) returns after the WAL is fsynced; concurrent writers are grouped
//            into one WAL write and sync by RocksDB's write group (its group commit)
//   stats(): logBytes = WAL_FILE_BYTES, logSyncs = WAL_FILE_SYNCED.
// - No compression (the other engines do not compress either), 4 KiB blocks (the
//   default; vmstore's page size), 10-bit Bloom filters (RocksDB's standard point-lookup
//   configuration), index and filters partitioned into 4 KiB blocks (see open()).
// - begin()/commit(): the transaction's writes are buffered in a WriteBatchWithIndex and
//   applied atomically at commit(); reads inside the transaction see the committed data
//   plus the transaction's own writes (GetFromBatchAndDB, NewIteratorWithBase); abort()
//   drops the batch. There are no locks: concurrent transactions do not see each other's
//   uncommitted writes and the last commit wins (the isolation of a read-committed
//   engine without write-conflict detection). Outside begin()/commit() every operation
//   is applied directly.
// - Large values: integrated BlobDB, as RocksDB's own blob benchmark
//   (tools/run_blob_bench.sh) runs it: enable_blob_files, values of kMinBlobSize and more
//   in blob files (a smaller value stays in its data block, beside its neighbours), blob
//   garbage collection on (age cutoff 0.25, RocksDB's default), the block cache as the
//   blob cache too (one budget), filled at flush (prepopulate_blob_cache: with direct
//   reads a blob not in the cache is a read from storage). With config.maxValueBytes the
//   cache has at most as many shards as leave each room for two such values (a value
//   larger than its shard is never cached), a memtable may hold two of them, and data
//   blocks too go into the cache at flush (prepopulate_block_cache; other workloads
//   keep RocksDB's default, off).
// - checkpoint(): a flush of every memtable (waiting for it); compact(): CompactRange of
//   every column family over the whole key range, bottommost level included, with blob
//   garbage collection forced at age cutoff 1.0 (every blob file may be rewritten).
// - del() reports whether the key existed, so it reads before it writes the tombstone.
// - Session objects must be destroyed before Engine::close().
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/write_batch_with_index.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../engine.hpp"
#include "../workload.hpp"

namespace vmstore::bench {
namespace {

constexpr uint64_t kDefaultPool = uint64_t{64} << 20;  // when config.poolBytes == 0
constexpr uint64_t kMinBlobSize = 4096;                // one data block

// Shard bits of the cache: RocksDB's default (-1: shards of at least 512 KiB, at most
// 64), or with large values as many as leave each shard room for two of them.
int cacheShardBits(uint64_t pool, uint64_t maxValueBytes) {
  if (maxValueBytes < kMinBlobSize) return -1;
  int bits = 0;
  while (bits < 6 && (pool >> (bits + 1)) >= 2 * maxValueBytes) ++bits;
  return bits;
}

[[noreturn]] void fail(const std::string& op, const rocksdb::Status& s) {
  throw std::runtime_error("rocksdb: " + op + ": " + s.ToString());
}

inline void check(const char* op, const rocksdb::Status& s) {
  if (!s.ok()) fail(op, s);
}

inline rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }

inline std::string_view view(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

class RocksSession final : public Session {
 public:
  RocksSession(rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>* cfs,
               const rocksdb::WriteOptions& wopts)
      : db_(db), cfs_(cfs), wopts_(wopts) {}

  void begin() override {
    if (inTxn_) throw std::runtime_error("rocksdb: begin: transaction already open");
    if (!batch_) {
      batch_ = std::make_unique<rocksdb::WriteBatchWithIndex>(
          rocksdb::BytewiseComparator(), 0, /*overwrite_key=*/true);
    }
    inTxn_ = true;
  }

  void commit() override {
    if (!inTxn_) return;
    inTxn_ = false;
    rocksdb::Status s;
    if (batch_->GetWriteBatch()->Count() > 0) s = db_->Write(wopts_, batch_->GetWriteBatch());
    batch_->Clear();
    check("commit: Write", s);
  }

  void abort() override {
    if (!inTxn_) return;
    inTxn_ = false;
    batch_->Clear();
  }

  void put(int table, std::string_view key, std::string_view value) override {
    if (inTxn_) {
      check("put (batch)", batch_->Put(cf(table), slice(key), slice(value)));
    } else {
      check("put", db_->Put(wopts_, cf(table), slice(key), slice(value)));
    }
  }

  bool get(int table, std::string_view key, std::string* value) override {
    buf_.Reset();
    rocksdb::Status s =
        inTxn_ ? batch_->GetFromBatchAndDB(db_, ropts_, cf(table), slice(key), &buf_)
               : db_->Get(ropts_, cf(table), slice(key), &buf_);
    if (s.IsNotFound()) return false;
    check("get", s);
    value->assign(buf_.data(), buf_.size());
    buf_.Reset();
    return true;
  }

  // RocksDB's batched lookup (MultiGet: the keys' block reads and index searches done
  // together), over the open transaction's writes when there is one.
  void getMany(int table, const std::vector<std::string_view>& keys, std::vector<std::string>* values,
               std::vector<bool>* found) override {
    const size_t n = keys.size();
    slices_.resize(n);
    for (size_t i = 0; i < n; i++) slices_[i] = slice(keys[i]);
    if (pinned_.size() < n) pinned_.resize(n);
    statuses_.resize(n);
    if (inTxn_) {
      batch_->MultiGetFromBatchAndDB(db_, ropts_, cf(table), n, slices_.data(), pinned_.data(), statuses_.data(),
                                     /*sorted_input=*/false);
    } else {
      db_->MultiGet(ropts_, cf(table), n, slices_.data(), pinned_.data(), statuses_.data());
    }
    growTo(n, values, found);
    for (size_t i = 0; i < n; i++) {
      (*found)[i] = !statuses_[i].IsNotFound();
      if ((*found)[i]) {
        check("getMany", statuses_[i]);
        (*values)[i].assign(pinned_[i].data(), pinned_[i].size());
      }
      pinned_[i].Reset();
    }
  }

  bool del(int table, std::string_view key) override {
    buf_.Reset();
    rocksdb::Status s =
        inTxn_ ? batch_->GetFromBatchAndDB(db_, ropts_, cf(table), slice(key), &buf_)
               : db_->Get(ropts_, cf(table), slice(key), &buf_);
    buf_.Reset();
    if (s.IsNotFound()) return false;
    check("del: get", s);
    if (inTxn_) {
      check("del (batch)", batch_->Delete(cf(table), slice(key)));
    } else {
      check("del", db_->Delete(wopts_, cf(table), slice(key)));
    }
    return true;
  }

  void scan(int table, std::string_view start, const ScanFn& fn) override {
    std::unique_ptr<rocksdb::Iterator> it = iterator(table);
    for (it->Seek(slice(start)); it->Valid(); it->Next()) {
      if (!fn(view(it->key()), view(it->value()))) return;
    }
    check("scan", it->status());
  }

  void scanReverse(int table, std::string_view start, const ScanFn& fn) override {
    std::unique_ptr<rocksdb::Iterator> it = iterator(table);
    for (it->SeekForPrev(slice(start)); it->Valid(); it->Prev()) {
      if (!fn(view(it->key()), view(it->value()))) return;
    }
    check("scanReverse", it->status());
  }

 private:
  rocksdb::ColumnFamilyHandle* cf(int table) const {
    return cfs_->at(static_cast<size_t>(table));
  }

  std::unique_ptr<rocksdb::Iterator> iterator(int table) {
    rocksdb::Iterator* base = db_->NewIterator(ropts_, cf(table));
    if (!inTxn_) return std::unique_ptr<rocksdb::Iterator>(base);
    // Takes ownership of base; shows the batch's writes over the committed data.
    return std::unique_ptr<rocksdb::Iterator>(batch_->NewIteratorWithBase(cf(table), base));
  }

  rocksdb::DB* db_;
  const std::vector<rocksdb::ColumnFamilyHandle*>* cfs_;
  rocksdb::WriteOptions wopts_;
  rocksdb::ReadOptions ropts_;
  rocksdb::PinnableSlice buf_;
  std::vector<rocksdb::Slice> slices_;            // getMany's, reused
  std::vector<rocksdb::PinnableSlice> pinned_;
  std::vector<rocksdb::Status> statuses_;
  std::unique_ptr<rocksdb::WriteBatchWithIndex> batch_;
  bool inTxn_ = false;
};

class RocksEngine final : public Engine {
 public:
  ~RocksEngine() override {
    try {
      close();
    } catch (...) {
    }
  }

  std::string name() const override { return "rocksdb"; }

  void open(const EngineConfig& config, const std::vector<std::string>& tables) override {
    if (db_ != nullptr) throw std::runtime_error("rocksdb: open: already open");
    std::error_code ec;
    std::filesystem::create_directories(config.dir, ec);
    if (ec) {
      throw std::runtime_error("rocksdb: open: create " + config.dir + ": " + ec.message());
    }
    uint64_t pool = config.poolBytes != 0 ? config.poolBytes : kDefaultPool;
    durability_ = config.durability;

    cache_ = rocksdb::NewLRUCache(static_cast<size_t>(pool), cacheShardBits(pool, config.maxValueBytes));
    statistics_ = rocksdb::CreateDBStatistics();

    rocksdb::BlockBasedTableOptions table;
    table.block_cache = cache_;
    table.block_size = 4096;
    table.cache_index_and_filter_blocks = true;
    // Partitioned (two-level) index and filters: 4 KiB partitions that the cache can
    // hold and evict like data blocks. A monolithic index/filter block per SST file is
    // hundreds of KiB and, with a budget of a few shards' worth, is evicted and re-read
    // on every lookup (measured: ~450 KB read per lookup at 1M keys, 32 MiB cache).
    table.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
    table.partition_filters = true;
    table.metadata_block_size = 4096;
    table.pin_top_level_index_and_filter = true;
    table.pin_l0_filter_and_index_blocks_in_cache = true;
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    if (config.maxValueBytes > 0) {
      // The values benchmark reads what it has just written: with direct reads, blocks
      // not put into the cache at flush would each be read from storage once first.
      table.prepopulate_block_cache = rocksdb::BlockBasedTableOptions::PrepopulateBlockCache::kFlushOnly;
    }

    // Memtables: a quarter of the budget, charged to the block cache.
    size_t memBudget = static_cast<size_t>(std::max<uint64_t>(pool / 4, 1 << 20));
    rocksdb::ColumnFamilyOptions cfo;
    cfo.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    cfo.compression = rocksdb::kNoCompression;
    cfo.bottommost_compression = rocksdb::kNoCompression;
    const size_t twoValues = static_cast<size_t>(2 * config.maxValueBytes);
    cfo.write_buffer_size =
        std::clamp<size_t>(memBudget / 2, size_t{1} << 20, std::max(size_t{64} << 20, twoValues));
    cfo.enable_blob_files = true;
    cfo.min_blob_size = kMinBlobSize;
    cfo.blob_compression_type = rocksdb::kNoCompression;
    cfo.enable_blob_garbage_collection = true;
    cfo.blob_cache = cache_;
    cfo.prepopulate_blob_cache = rocksdb::PrepopulateBlobCache::kFlushOnly;

    rocksdb::DBOptions dbo;
    dbo.create_if_missing = true;
    dbo.create_missing_column_families = true;
    dbo.use_direct_reads = true;
    dbo.use_direct_io_for_flush_and_compaction = true;
    dbo.statistics = statistics_;
    wbm_ = std::make_shared<rocksdb::WriteBufferManager>(memBudget, cache_);
    dbo.write_buffer_manager = wbm_;
    dbo.max_background_jobs = std::max(2, static_cast<int>(std::min(config.threads, 8u)));
    dbo.stats_dump_period_sec = 0;
    dbo.stats_persist_period_sec = 0;

    std::vector<rocksdb::ColumnFamilyDescriptor> descs;
    descs.emplace_back(rocksdb::kDefaultColumnFamilyName, cfo);
    for (const auto& t : tables) {
      if (t == rocksdb::kDefaultColumnFamilyName) {
        throw std::runtime_error("rocksdb: open: table name 'default' is reserved");
      }
      descs.emplace_back(t, cfo);
    }

    std::set<std::string> before;  // the directory's entries before RocksDB's own
    for (const auto& e : std::filesystem::directory_iterator(config.dir, ec)) {
      before.insert(e.path().filename().string());
    }
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::Status s = rocksdb::DB::Open(dbo, config.dir, descs, &handles, &db_);
    std::string why = s.ToString();
    if (!s.ok() && (why.find("irect") != std::string::npos ||
                    why.find("Invalid argument") != std::string::npos)) {
      // O_DIRECT refused by this file system: run through the page cache instead.
      std::fprintf(stderr,
                   "rocksdb: direct I/O not available in %s (%s); running without it\n",
                   config.dir.c_str(), why.c_str());
      for (const auto& e : std::filesystem::directory_iterator(config.dir, ec)) {
        if (before.count(e.path().filename().string()) == 0) {
          std::filesystem::remove_all(e.path(), ec);  // what the failed attempt created
        }
      }
      dbo.use_direct_reads = false;
      dbo.use_direct_io_for_flush_and_compaction = false;
      directIo_ = false;
      handles.clear();
      s = rocksdb::DB::Open(dbo, config.dir, descs, &handles, &db_);
    }
    check("open", s);
    defaultCf_ = handles[0];
    cfs_.assign(handles.begin() + 1, handles.end());

    wopts_.disableWAL = config.durability == Durability::kNone;
    wopts_.sync = config.durability == Durability::kSync;
  }

  std::unique_ptr<Session> session() override {
    if (db_ == nullptr) throw std::runtime_error("rocksdb: session: not open");
    return std::make_unique<RocksSession>(db_, &cfs_, wopts_);
  }

  EngineStats stats() override {
    EngineStats st;
    if (!statistics_) return st;
    auto t = [&](uint32_t ticker) { return statistics_->getTickerCount(ticker); };
    st.pageMisses = t(rocksdb::BLOCK_CACHE_MISS);
    // Every SST read goes through RandomAccessFileReader, which counts it as a last- or
    // non-last-level read (user reads and compaction reads alike).
    st.bytesRead = t(rocksdb::LAST_LEVEL_READ_BYTES) + t(rocksdb::NON_LAST_LEVEL_READ_BYTES);
    st.bytesWritten = t(rocksdb::FLUSH_WRITE_BYTES) + t(rocksdb::COMPACT_WRITE_BYTES) +
                      t(rocksdb::WAL_FILE_BYTES);
    st.logBytes = t(rocksdb::WAL_FILE_BYTES);
    st.logSyncs = t(rocksdb::WAL_FILE_SYNCED);
    // The LRU cache counts no evictions (and its GetOccupancyCount() is 0 in 7.8):
    // estimated as blocks added minus blocks still cached, the latter from the cache's
    // usage (less the memtables' placeholder entries) over the mean block charge.
    uint64_t added = t(rocksdb::BLOCK_CACHE_ADD);
    uint64_t addedBytes = t(rocksdb::BLOCK_CACHE_BYTES_WRITE);
    if (added > 0 && addedBytes > 0 && cache_) {
      uint64_t usage = cache_->GetUsage();
      uint64_t dummy = wbm_ ? wbm_->dummy_entries_in_cache_usage() : 0;
      usage = usage > dummy ? usage - dummy : 0;
      uint64_t resident = static_cast<uint64_t>(static_cast<double>(usage) /
                                                (static_cast<double>(addedBytes) / added));
      st.evictions = added > resident ? added - resident : 0;
    }
    return st;
  }

  void checkpoint() override {
    rocksdb::FlushOptions fo;
    fo.wait = true;
    std::vector<rocksdb::ColumnFamilyHandle*> all(cfs_);
    check("checkpoint: Flush", db_->Flush(fo, all));
  }

  void compact() override {
    rocksdb::CompactRangeOptions co;
    co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    co.blob_garbage_collection_policy = rocksdb::BlobGarbageCollectionPolicy::kForce;
    co.blob_garbage_collection_age_cutoff = 1.0;
    for (rocksdb::ColumnFamilyHandle* cf : cfs_) {
      check("compact: CompactRange", db_->CompactRange(co, cf, nullptr, nullptr));
    }
  }

  void close() override {
    if (db_ == nullptr) return;
    rocksdb::Status s;
    if (durability_ == Durability::kNone) {
      // Without a WAL the memtables are the only copy of the newest writes.
      rocksdb::FlushOptions fo;
      fo.wait = true;
      std::vector<rocksdb::ColumnFamilyHandle*> all(cfs_);
      s = db_->Flush(fo, all);
    } else if (durability_ == Durability::kAsync) {
      s = db_->SyncWAL();  // a clean close leaves every acknowledged write durable
    }
    for (auto* h : cfs_) db_->DestroyColumnFamilyHandle(h);
    if (defaultCf_ != nullptr) db_->DestroyColumnFamilyHandle(defaultCf_);
    cfs_.clear();
    defaultCf_ = nullptr;
    rocksdb::Status cs = db_->Close();
    delete db_;
    db_ = nullptr;
    check(durability_ == Durability::kNone ? "close: Flush" : "close: SyncWAL", s);
    check("close", cs);
  }

  bool directIo() const { return directIo_; }

 private:
  rocksdb::DB* db_ = nullptr;
  rocksdb::ColumnFamilyHandle* defaultCf_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs_;
  std::shared_ptr<rocksdb::Cache> cache_;
  std::shared_ptr<rocksdb::Statistics> statistics_;
  std::shared_ptr<rocksdb::WriteBufferManager> wbm_;
  rocksdb::WriteOptions wopts_;
  Durability durability_ = Durability::kNone;
  bool directIo_ = true;
};

Registrar<Engine> reg("rocksdb", [] { return std::make_unique<RocksEngine>(); });

}  // namespace
}  // namespace vmstore::bench
