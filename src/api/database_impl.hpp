// DatabaseImpl and TreeImpl: what stands behind the public Database and Tree.
//
// Contract
// - One DatabaseImpl per open directory; it owns the directory lock, the data file, the
//   buffer manager, the catalog tree (name -> root page id) and every Tree handle ever
//   opened (handles of dropped trees stay, answering NotFound, until close).
// - Writers (put, delete, tree create/drop) hold writeGate_ shared; a checkpoint (sync,
//   close) and check() hold it exclusive, so the image they write or inspect is one
//   consistent state of every tree. Readers never touch it.
// - Every engine exception is turned into a Status here; nothing throws past this layer.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "api/superblock.hpp"
#include "btree/btree.hpp"
#include "buffer/buffer_manager.hpp"
#include "os/data_file.hpp"
#include "vmstore/database.hpp"

namespace vmstore::internal {

class DatabaseImpl;

class TreeImpl {
 public:
  TreeImpl(DatabaseImpl* db, std::string name, uint64_t root);
  DatabaseImpl* db;
  std::string name;
  BTree btree;
  Tree handle;
};

class DatabaseImpl {
 public:
  static Status open(const std::string& dir, const Options& options, std::unique_ptr<DatabaseImpl>* out);
  ~DatabaseImpl();

  Status close();
  Status sync();
  Status openTree(std::string_view name, bool create, Tree** tree);
  Status dropTree(std::string_view name);
  Status listTrees(std::vector<std::string>* names);
  Stats stats();
  Status check(std::vector<std::string>* problems);

  Status put(TreeImpl* t, std::string_view key, std::string_view value);
  Status get(TreeImpl* t, std::string_view key, std::string* value);
  Status get(TreeImpl* t, std::string_view key, std::span<std::byte> buf, size_t* vlen);
  Status del(TreeImpl* t, std::string_view key);

  BufferManager& bufferManager() { return *bm_; }
  bool closed() const { return closed_; }

 private:
  DatabaseImpl() = default;
  Status checkpointLocked();  // writeGate_ held exclusively
  Status markInUse();         // the write hook: superblock clean=0, synced
  Status catalogLookup(std::string_view name, uint64_t* root);
  std::vector<std::pair<std::string, uint64_t>> catalogEntries();

  std::string dir_;
  Options options_;
  DirectoryLock lock_;
  DataFile file_;
  std::unique_ptr<BufferManager> bm_;
  std::unique_ptr<BTree> catalog_;
  Superblock sb_;  // as last written
  std::mutex sbMutex_;
  std::shared_mutex writeGate_;
  std::mutex treesMutex_;
  std::map<std::string, std::unique_ptr<TreeImpl>, std::less<>> trees_;
  std::vector<std::unique_ptr<TreeImpl>> droppedTrees_;
  bool opened_ = false;  // open() completed
  bool closed_ = false;
};

}  // namespace vmstore::internal
