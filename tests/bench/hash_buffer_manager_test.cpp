// HashBufferManager: the traditional buffer manager under the same B+tree
// (BasicBTree<HashBufferManager>), checked against std::map with a pool small enough to
// evict and write back, and under concurrent writers.
#include "hashbm/hash_buffer_manager.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <random>
#include <thread>

#include "btree/btree_impl.hpp"
#include "unit_util.hpp"

namespace {

using vmstore::internal::asBytes;
using vmstore::internal::BasicBTree;
using vmstore::internal::DataFile;
using vmstore::internal::HashBufferManager;
using vmstore::internal::LeafBatch;
using vmstore::internal::StorageError;
using HashTree = BasicBTree<HashBufferManager>;

struct HashEnv {
  explicit HashEnv(uint64_t poolPages) {
    EXPECT_TRUE(file.open(dir.file("hash.data"), true).ok());
    bm = std::make_unique<HashBufferManager>(&file, poolPages, 1 << 20, 1);
  }
  vmsunit::ScratchDir dir;
  DataFile file;
  std::unique_ptr<HashBufferManager> bm;
};

std::string keyOf(uint64_t i) {
  uint64_t be = __builtin_bswap64(i * 7919 % 1000003);
  return std::string(reinterpret_cast<char*>(&be), 8);
}

TEST(HashBufferManager, TreeMatchesMapWhileEvicting) {
  HashEnv env(64);
  HashTree tree(*env.bm, HashTree::create(*env.bm));
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(7);
  const int ops = vmsunit::scaled(30000, 6000);
  for (int i = 0; i < ops; i++) {
    std::string k = keyOf(rng() % 5000);
    if (rng() % 4 == 0) {
      EXPECT_EQ(tree.remove(asBytes(k)), model.erase(k) == 1);
    } else {
      std::string v(rng() % 3 == 0 ? 2000 : 100, static_cast<char>('a' + i % 26));
      tree.put(asBytes(k), asBytes(v));
      model[k] = v;
    }
  }
  for (auto& [k, v] : model) {
    std::string got;
    ASSERT_TRUE(tree.getString(asBytes(k), &got));
    ASSERT_EQ(got, v);
  }
  // A full ascending scan sees exactly the model.
  LeafBatch batch;
  std::string from;
  auto it = model.begin();
  for (;;) {
    tree.readForward(asBytes(from), &batch);
    for (size_t i = 0; i < batch.keys.size(); i++, ++it) {
      ASSERT_NE(it, model.end());
      ASSERT_EQ(batch.keys[i], it->first);
      ASSERT_EQ(batch.values[i], it->second);
    }
    if (batch.fence.empty()) break;
    from = batch.fence + '\0';
  }
  EXPECT_EQ(it, model.end());
  vmstore::Stats s;
  env.bm->fillStats(&s);
  EXPECT_GT(s.evictions, 0u) << "the pool was not small enough to evict";
  EXPECT_GT(s.pages_written, 0u);
  EXPECT_LE(s.resident_pages, s.pool_pages);
  std::vector<std::string> problems;
  std::vector<uint64_t> pages;
  tree.verify(&problems, &pages);
  EXPECT_TRUE(problems.empty()) << problems.front();
}

TEST(HashBufferManager, ConcurrentWritersOnDisjointRanges) {
  HashEnv env(128);
  HashTree tree(*env.bm, HashTree::create(*env.bm));
  const int perThread = vmsunit::scaled(5000, 1000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < perThread; i++) {
        std::string k = std::to_string(t) + "/" + keyOf(static_cast<uint64_t>(i));
        tree.put(asBytes(k), asBytes(k));
        if (i % 3 == 0) tree.remove(asBytes(k));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; t++) {
    for (int i = 0; i < perThread; i++) {
      std::string k = std::to_string(t) + "/" + keyOf(static_cast<uint64_t>(i));
      std::string v;
      bool found = tree.getString(asBytes(k), &v);
      ASSERT_EQ(found, i % 3 != 0) << k;
      if (found) {
        ASSERT_EQ(v, k);
      }
    }
  }
  std::vector<std::string> problems;
  std::vector<uint64_t> pages;
  tree.verify(&problems, &pages);
  EXPECT_TRUE(problems.empty()) << problems.front();
}

TEST(HashBufferManager, DamagedPageOnStorageIsCorruption) {
  HashEnv env(32);
  HashTree tree(*env.bm, HashTree::create(*env.bm));
  for (int i = 0; i < 3000; i++) tree.put(asBytes(keyOf(i)), asBytes(std::string(100, 'v')));
  // Damage every written page but the first few on storage; later reads must fail
  // cleanly or return the right value, never a wrong one.
  int fd = ::open(env.dir.file("hash.data").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint64_t pages = env.file.sizeBytes() / 4096;
  for (uint64_t p = 2; p < pages; p++) {
    char junk = 0x5a;
    ASSERT_EQ(pwrite(fd, &junk, 1, static_cast<off_t>(p * 4096 + 100)), 1);
  }
  ::close(fd);
  int corrupt = 0;
  for (int i = 0; i < 3000; i++) {
    std::string v;
    try {
      if (tree.getString(asBytes(keyOf(i)), &v)) {
        EXPECT_EQ(v, std::string(100, 'v'));
      }
    } catch (const StorageError& e) {
      EXPECT_EQ(e.status().code(), vmstore::Status::Code::kCorruption);
      corrupt++;
    }
  }
  EXPECT_GT(corrupt, 0);
}

}  // namespace
