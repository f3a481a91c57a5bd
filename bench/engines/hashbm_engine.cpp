// hashbm: vmstore's own B+tree over the traditional hash-table buffer manager
// (bench/hashbm/hash_buffer_manager.hpp). The control experiment of the benchmark: the same
// tree code and page format as the vmstore engine, with page-id translation through a
// hash table instead of the page table. No log, no sync: it supports durability=none
// only (supports() says so; the runner refuses sync and async for it). The data file is
// opened with O_DIRECT where the filesystem allows it.
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "btree/btree_impl.hpp"
#include "hashbm/hash_buffer_manager.hpp"
#include "engine.hpp"
#include "workload.hpp"

namespace vmstore::bench {

namespace {

using internal::BasicBTree;
using internal::HashBufferManager;
using internal::StorageError;
using HashTree = BasicBTree<HashBufferManager>;

internal::Bytes bytesOf(std::string_view s) { return internal::asBytes(s); }

[[noreturn]] void fail(const char* op, const StorageError& e) {
  throw std::runtime_error(std::string("hashbm: ") + op + ": " + e.status().toString());
}

class HashbmSession : public Session {
 public:
  explicit HashbmSession(std::vector<std::unique_ptr<HashTree>>* trees) : trees_(trees) {}

  void put(int table, std::string_view key, std::string_view value) override {
    try {
      tree(table).put(bytesOf(key), bytesOf(value));
    } catch (const StorageError& e) {
      fail("put", e);
    }
  }
  bool get(int table, std::string_view key, std::string* value) override {
    try {
      return tree(table).getString(bytesOf(key), value);
    } catch (const StorageError& e) {
      fail("get", e);
    }
  }
  bool del(int table, std::string_view key) override {
    try {
      return tree(table).remove(bytesOf(key));
    } catch (const StorageError& e) {
      fail("del", e);
    }
  }
  void scan(int table, std::string_view start, const ScanFn& fn) override {
    try {
      tree(table).scan(bytesOf(start), true, fn);
    } catch (const StorageError& e) {
      fail("scan", e);
    }
  }
  void scanReverse(int table, std::string_view start, const ScanFn& fn) override {
    try {
      tree(table).scan(bytesOf(start), false, fn);
    } catch (const StorageError& e) {
      fail("scanReverse", e);
    }
  }

 private:
  HashTree& tree(int table) { return *(*trees_)[static_cast<size_t>(table)]; }
  std::vector<std::unique_ptr<HashTree>>* trees_;
};

class HashbmEngine : public Engine {
 public:
  std::string name() const override { return "hashbm"; }
  bool supports(Durability d) const override { return d == Durability::kNone; }

  void open(const EngineConfig& config, const std::vector<std::string>& tables) override {
    if (!supports(config.durability)) {
      throw std::invalid_argument(std::string("hashbm has no log: durability=") +
                                  durabilityName(config.durability) + " is not available (only none)");
    }
    std::filesystem::create_directories(config.dir);
    Status st = file_.open(config.dir + "/hashbm.data", true);
    if (!st.ok()) throw std::runtime_error("hashbm: open: " + st.toString());
    uint64_t poolPages = std::max<uint64_t>(config.poolBytes / internal::kPageSize, 256);
    constexpr uint64_t kMaxPages = 1ull << 28;  // 1 TiB
    bm_ = std::make_unique<HashBufferManager>(&file_, poolPages, kMaxPages, 1);  // page 0 unused
    try {
      for (size_t i = 0; i < tables.size(); i++) {
        trees_.push_back(std::make_unique<HashTree>(*bm_, HashTree::create(*bm_)));
      }
    } catch (const StorageError& e) {
      fail("open", e);
    }
  }
  std::unique_ptr<Session> session() override { return std::make_unique<HashbmSession>(&trees_); }
  EngineStats stats() override {
    Stats s;
    bm_->fillStats(&s);
    return {s.misses, s.evictions, s.misses * internal::kPageSize, s.pages_written * internal::kPageSize};
  }
  void close() override {
    trees_.clear();
    bm_.reset();
    file_.close();
  }

 private:
  internal::DataFile file_;
  std::unique_ptr<HashBufferManager> bm_;
  std::vector<std::unique_ptr<HashTree>> trees_;
};

Registrar<Engine> reg("hashbm", [] { return std::make_unique<HashbmEngine>(); });

}  // namespace

}  // namespace vmstore::bench
