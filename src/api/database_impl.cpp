#include "api/database_impl.hpp"
#include "api/decided_change.hpp"
#include "api/guarded.hpp"
#include "api/leaf_hints.hpp"
#include "api/open_here.hpp"
#include "api/replay_window.hpp"
#include "api/write_scratch.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "api/validate.hpp"
#include "os/io.hpp"
#include "os/memory.hpp"
#include "os/numa.hpp"
#include "os/thread_name.hpp"
#include "policy/registry.hpp"
#include "task/cooperative.hpp"
#include "wal/value_patch.hpp"
#include "vmstore/limits.hpp"

namespace vmstore::internal {

namespace {

namespace fs = std::filesystem;

constexpr const char* kDataFileName = "data.vms";
// The single journal and log file of versions before the two-file layout.
constexpr const char* kLegacyJournalName = "journal.vms";
constexpr const char* kLegacyLogName = "log.vms";

// Catalog keys: "T" + tree name, so that the default tree "" has a non-empty key.
std::string catalogKey(std::string_view name) {
  std::string k = "T";
  k.append(name);
  return k;
}

std::string sizeText(uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

static uint64_t nextTreeSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

TreeImpl::TreeImpl(DatabaseImpl* db, std::string name, uint64_t root)
    : db(db), name(std::move(name)), serial(nextTreeSerial()), btree(db->bufferManager(), root), handle(this) {}

// Tiers (Options::tiers): on nodes with memory here, with the clock policy.
static Status checkTiersConfig(const Options& options) {
  if (options.tiers.empty()) return Status::OK();
  if (options.tiers.size() > kMaxTiers) {
    return Status::InvalidArgument("config tiers: at most " + std::to_string(kMaxTiers) + " tiers");
  }
  if (!options.policy.empty() && options.policy != "clock") {
    return Status::InvalidArgument("config tiers work with policy=clock only (policy=" + options.policy +
                                   " was given)");
  }
  if (options.migrate_batch < 1 || options.migrate_batch > 4096) {
    return Status::InvalidArgument("config migrate_batch must be from 1 to 4096");
  }
  std::vector<int> nodes = numa::memoryNodes();
  std::string known;
  for (int n : nodes) known += (known.empty() ? "" : ", ") + std::to_string(n);
  for (size_t i = 0; i < options.tiers.size(); i++) {
    const MemoryTier& t = options.tiers[i];
    if (t.size < (1ull << 20)) {
      return Status::InvalidArgument("config tiers: tier " + std::to_string(i) + " must be at least 1M");
    }
    if (std::find(nodes.begin(), nodes.end(), t.node) == nodes.end()) {
      return Status::InvalidArgument("config tiers: tier " + std::to_string(i) + "'s NUMA node " +
                                     std::to_string(t.node) + " has no memory on this machine (nodes with memory: " +
                                     known + ")");
    }
  }
  return Status::OK();
}

Status DatabaseImpl::open(const std::string& dir, const Options& options, std::unique_ptr<DatabaseImpl>* out) {
  if (dir.empty()) return Status::InvalidArgument("database directory name is empty");
  Status tierCheck = checkTiersConfig(options);
  if (!tierCheck.ok()) return tierCheck;
  uint64_t poolPages = options.pool_size / kPageSize;
  std::vector<TierSpec> tierSpecs;
  for (const MemoryTier& t : options.tiers) tierSpecs.push_back({t.node, t.size / kPageSize});
  if (!tierSpecs.empty()) {
    poolPages = 0;
    for (const TierSpec& t : tierSpecs) poolPages += t.pages;
  }
  uint64_t maxPages = options.max_size / kPageSize;
  if (poolPages < BufferManager::kMinPoolPages) return Status::InvalidArgument("pool_size must be at least 1M");
  if (maxPages < 256) return Status::InvalidArgument("max_size must be at least 1M");
  uint64_t memory = usableMemoryBytes();
  if (memory != 0 && poolPages * kPageSize > memory) {
    return Status::NoMemory(std::string(tierSpecs.empty() ? "pool_size" : "the tiers' sizes together") + " of " +
                            sizeText(poolPages * kPageSize) + (tierSpecs.empty() ? " exceeds the " : " exceed the ") + sizeText(memory) +
                            " of memory this process may use");
  }

  std::error_code ec;
  fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) {
    if (!options.create) {
      return Status::InvalidArgument("database " + dir + " does not exist (and create=false)");
    }
    fs::create_directories(dir, ec);
    if (ec) return Status::IOError("cannot create directory " + dir + ": " + ec.message());
  } else if (!fs::is_directory(st)) {
    return Status::InvalidArgument(dir + " exists and is not a directory");
  }
  std::string path = dir + "/" + kDataFileName;
  if (!options.create && !fs::exists(path, ec)) {  // before the lock: create nothing, not even LOCK
    if (Status orphaned = refuseOrphanedFiles(dir); !orphaned.ok()) return orphaned;
    return Status::InvalidArgument("no vmstore database in " + dir + " (and create=false)");
  }
  std::unique_ptr<DatabaseImpl> db(new DatabaseImpl());
  db->dir_ = dir;
  db->options_ = options;
  Status s = db->lock_.acquire(dir);
  // Only under the lock: whether the database exists (another opener may have created
  // it while this one waited).
  bool fileExists = fs::exists(path, ec);
  if (s.ok() && !fileExists && !options.create) {
    s = Status::InvalidArgument("no vmstore database in " + dir + " (and create=false)");
  }
  if (s.ok()) {
    s = guarded([&] {
      db->bm_ = std::make_unique<BufferManager>(
          &db->file_, poolPages, maxPages, 1,
          options.resident_set == ResidentSetType::kBitmap ? ResidentSetKind::kBitmap : ResidentSetKind::kHash);
      // clock is the buffer manager's own (over page-state marks, no hit hook). The test
      // suite's override replaces the default policy (registry.hpp).
      // No policy given: the default (s3fifo), or the test suite's override.
      std::string policy = options.policy;
      if (policy.empty()) policy = defaultPolicyOverride().empty() ? kDefaultPolicy : defaultPolicyOverride();
      if (!tierSpecs.empty()) {
        db->bm_->setTiers(tierSpecs, options.migrate, options.migrate_batch);  // with the built-in clock
      } else if (policy != "clock") {
        db->bm_->setPolicy(makePolicy(policy, poolPages, maxPages));
      }
      return Status::OK();
    });
  }
  if (s.ok() && !fileExists) s = refuseOrphanedFiles(dir);
  bool created = false;  // by this open: a failure below removes it again
  if (s.ok() && !fileExists) {
    s = db->create(path);
    created = s.ok();
  }
  if (s.ok()) s = db->file_.open(path, false, options.direct_io);
  if (s.ok() && db->file_.sizeBytes() == 0) {
    s = Status::Corruption(path + " is empty; if this database never held data, delete the file to start anew");
  }
  if (s.ok()) s = db->migrateLegacyFiles();
  if (s.ok()) s = db->journal_.open(dir, &db->file_, options.direct_io);
  if (s.ok()) {
    db->file_.setTaskReads(options.io == IoMode::kUring);
    db->journal_.setTaskReads(options.io == IoMode::kUring);
  }
  if (s.ok()) s = db->log_.open(dir, options);
  auto recoveryStart = std::chrono::steady_clock::now();
  if (s.ok()) {
    s = db->recoverAndLoad();
    if (s.ok() && options.huge_pages) db->bm_->useHugePagesWhileInMemory();
    if (s.ok()) s = db->replayLog();
    if (s.code() == Status::Code::kNoSpace) {
      // The checkpoint and the log are as they were (a later attempt reuses the space
      // this one took): say so, and what to do.
      s = Status::NoSpace("recovering " + dir + " needs more space (" + s.message() +
                          "); nothing acknowledged is lost: free space on the device (or, if the data file "
                          "reached max_size, raise it) and open again");
    }
  }
  db->recovery_.recovery_us = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                        std::chrono::steady_clock::now() - recoveryStart)
                                                        .count());
  if (s.ok() && options.durability != Durability::kNone) {
    DatabaseImpl* self = db.get();
    db->log_.onSyncFailure = [self](const Status& why) { self->poison(why, "a failed log sync"); };
    s = db->log_.startWriting(db->bm_->epoch());
  }
  if (s.ok() && !options.trace.empty()) {
    // Recorded from here (recovery is not the workload) until close.
    db->trace_ = std::make_unique<TraceRecorder>();
    s = db->trace_->open(options.trace);
    if (s.ok()) db->bm_->setAccessListener(db->trace_.get());
  }
  if (!s.ok()) {
    // A failed open leaves no database behind: creation is atomic (create()), and a
    // database this open created is removed again when a later step fails (the journal,
    // the log, a trace file that cannot be created). The directory and its LOCK file
    // stay: removing them could pull them from under a concurrent opener of the same path.
    db->catalog_.reset();
    db->bm_.reset();
    db->log_.close();
    db->journal_.close();
    db->file_.close();
    if (created) db->removeCreated(path);
    db->lock_.release();
    return s;
  }
  // From here on, not during recovery: a recovery needs exactly the space it writes,
  // and one that fails on a full device keeps none ahead.
  db->file_.setAllocateAhead(options.max_size, db->bm_->pageCount() * kPageSize);
  db->opened_ = true;
  db->bm_->setReadAheadPages(options.read_ahead);
  if (options.page_provider) db->bm_->startProvider();
  DatabaseImpl* self = db.get();
  db->checkpointer_ = std::thread([self] { self->checkpointerLoop(); });
  nameThread(db->checkpointer_, "vms-checkpoint");
  *out = std::move(db);
  return Status::OK();
}

namespace {

// The files of a database besides its data file: the log and journal, and their
// single-file names of earlier versions. Each is created only after data.vms.
std::vector<std::string> companionFiles() {
  return {OpLog::fileName(0),      OpLog::fileName(1),           PageJournal::fileName(0),
          PageJournal::fileName(1), std::string(kLegacyLogName), std::string(kLegacyJournalName)};
}

}  // namespace

void DatabaseImpl::removeCreated(const std::string& path) {
  // The journal and log files first, the data file last: a crash in between leaves an
  // empty database (as if creation had succeeded), never files that refuseOrphanedFiles
  // would take for a database whose data file was lost.
  for (const std::string& name : companionFiles()) io().unlink(dir_ + "/" + name);  // absent: nothing to do
  io().unlink(path);
  io().syncDir(dir_);
}

Status DatabaseImpl::refuseOrphanedFiles(const std::string& dir) {
  // The log and journal are created only after data.vms (create() renames it into place
  // first), so one without it means the data file was lost: creating a new database here
  // would replay the log over an empty one and report it damaged, or bury the log.
  std::error_code ec;
  for (const std::string& name : companionFiles()) {
    if (fs::exists(dir + "/" + name, ec)) {
      return Status::Corruption(dir + " holds " + name + " but no " + kDataFileName +
                                ": the database's data file is missing. Restore it, or remove the directory's "
                                ".vms files to create a new database there");
    }
  }
  return Status::OK();
}

Status DatabaseImpl::migrateLegacyFiles() {
  // Versions before the two-file journal and log kept one of each; their content belongs
  // to the interval after the data file's checkpoint.
  std::error_code ec;
  bool journal = fs::exists(dir_ + "/" + kLegacyJournalName, ec);
  bool log = fs::exists(dir_ + "/" + kLegacyLogName, ec);
  if (!journal && !log) return Status::OK();
  Superblock sb;
  Status s = readSuperblock(file_, &sb);
  if (!s.ok()) {
    return Status(s.code(), s.message() + " (and " + dir_ +
                                " holds the journal of an older vmstore version: open it with that version first)");
  }
  uint32_t epoch = static_cast<uint32_t>(sb.checkpoints + 1);
  auto move = [&](const char* from, const std::string& to) -> Status {
    std::string a = dir_ + "/" + from;
    std::string b = dir_ + "/" + to;
    if (fs::exists(b, ec)) return Status::Corruption(dir_ + " holds both " + from + " and " + to);
    if (io().rename(a, b) != 0) return Status::IOError("cannot rename " + a + ": " + std::strerror(errno));
    return Status::OK();
  };
  if (journal) s = move(kLegacyJournalName, PageJournal::fileName(epoch));
  if (s.ok() && log) s = move(kLegacyLogName, OpLog::fileName(epoch));
  if (s.ok() && io().syncDir(dir_) != 0) s = Status::IOError("cannot sync directory " + dir_);
  return s;
}

Status DatabaseImpl::create(const std::string& path) {
  std::string tmp = path + ".tmp";
  return guarded([&] {
    DataFile f;
    Status s = f.open(tmp, true);
    if (s.ok()) s = f.truncate(0);  // a creation killed earlier may have left one
    if (!s.ok()) return s;
    // The first image: the superblock and the catalog's empty root (page 1).
    uint64_t root = BTree::create(*bm_);
    Page* rootPage = bm_->pageAt(root);
    sealPage(rootPage, root, 0);
    s = f.writePage(root, rootPage);
    Superblock sb;
    sb.pageCount = bm_->pageCount();
    sb.catalogRoot = root;
    sb.clean = true;
    sb.databaseId = newDatabaseId();
    auto page = std::make_unique<Page>();
    encodeSuperblock(sb, 0, page.get());
    if (s.ok()) s = f.writePage(0, page.get());
    if (s.ok()) s = f.sync();
    f.close();
    if (s.ok() && io().rename(tmp, path) != 0) {
      s = Status::IOError("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
    }
    if (s.ok() && io().syncDir(dir_) != 0) {
      s = Status::IOError("cannot sync directory " + dir_ + ": " + std::strerror(errno));
    }
    if (s.ok()) {
      fs::path parent = fs::absolute(fs::path(dir_)).parent_path();
      io().syncDir(parent.string());  // the directory's own entry, if we just made it
    }
    if (!s.ok()) io().unlink(tmp);
    return s;
  });
}

Status DatabaseImpl::recoverAndLoad() {
  return guarded([&] {
    Superblock sb;
    Status s = readSuperblock(file_, &sb);
    if (!s.ok() && s.code() != Status::Code::kCorruption) return s;
    // A superblock torn while a checkpoint was copied in: the journal still holds it.
    uint32_t expect = s.ok() ? static_cast<uint32_t>(sb.checkpoints + 1) : 0;
    auto committed = std::make_unique<Page>();
    bool applied = false;
    Status r = journal_.recover(expect, &applied, committed.get());
    if (!r.ok()) return r;
    if (applied) {
      s = decodeSuperblock(committed.get(), file_.path(), &sb);
      recovery_.recovered_checkpoint = 1;
    }
    if (!s.ok()) return s;
    if (!sb.clean) {
      return Status::Corruption("database " + dir_ +
                                " was left unclean by a vmstore version older than the page journal; "
                                "it cannot be recovered");
    }
    if (sb.pageCount > options_.max_size / kPageSize) {
      return Status::InvalidArgument("max_size is smaller than the data file of " + dir_);
    }
    bm_->setPageCount(sb.pageCount);
    std::vector<uint64_t> free;
    s = readFreeList(file_, sb.freeListHead, sb.freeCount, sb.pageCount, &free);
    if (!s.ok()) return s;
    bm_->freeSpace().assign(std::move(free));
    catalog_ = std::make_unique<BTree>(*bm_, sb.catalogRoot);
    sb_ = sb;
    log_.setDatabaseId(sb.databaseId);
    checkpoints_.store(sb.checkpoints, std::memory_order_relaxed);
    uint32_t epoch = static_cast<uint32_t>(sb.checkpoints + 1);
    journal_.begin(epoch, sb.pageCount);
    bm_->setEpoch(epoch);
    bm_->setStore(&journal_);
    return Status::OK();
  });
}

Status DatabaseImpl::replayWrite(TreeImpl* t, const LogOp& op, BTree::LeafHint* hint) {
  // As put() and del() without what only concurrent callers need (the call gate, the
  // key's lock, the writer gate, the leaf hints of the thread): replay runs alone, before
  // open returns. The checks that refuse writes stay.
  Status st = validateKey(op.key);
  if (st.ok() && op.kind == LogOpKind::kPut) st = validateValue(op.value);
  if (!st.ok()) return st;
  if (!writesClear()) [[unlikely]] {
    if (st = writable(); !st.ok()) return st;
  }
  markChanged();
  return guarded([&] {
    if (op.kind == LogOpKind::kPut) {
      t->btree.put(asBytes(op.key), asBytes(op.value), hint);
      return Status::OK();
    }
    return t->btree.remove(asBytes(op.key), nullptr, hint) ? Status::OK() : Status::NotFound();
  });
}

Status DatabaseImpl::replayPatch(TreeImpl* t, std::string_view key, std::string_view patch) {
  // A key that is absent, or holds a value of another size, is met only when the record
  // is replayed a second time over later writes (see replayLog): skipped, as a delete of
  // an absent key is.
  struct Ctx {
    std::string_view patch;
    std::string value;
    bool malformed = false;
  } ctx{patch, {}};
  Status st = update(
      t, key,
      [](void* c, std::optional<std::string_view> current) {
        auto* x = static_cast<Ctx*>(c);
        if (!current || current->size() != patchedSize(x->patch)) return Change::keep();
        x->value.assign(*current);
        if (!applyPatch(x->patch, {reinterpret_cast<uint8_t*>(x->value.data()), x->value.size()})) {
          x->malformed = true;
          return Change::keep();
        }
        return Change::put(std::string_view(x->value));
      },
      &ctx);
  if (st.ok() && ctx.malformed) return Status::Corruption("a malformed patch record for a key of tree '" + t->name + "'");
  return st;
}

Status DatabaseImpl::replayLog() {
  // The records of the interval after the checkpoint, then those after a cut of it that
  // never committed (the other log file). A record met a second time (a crash after a
  // recovery's checkpoint, before the log was emptied) changes nothing: every operation
  // is a blind write, and one on a tree that is not there is skipped.
  // The tree of the last operation, so that a run of operations on one tree looks it
  // up once; forgotten at every creation and drop.
  std::string_view lastName;
  TreeImpl* last = nullptr;
  BTree::LeafHint hint;  // of last's last write
  // Puts and deletes are applied in groups of up to kGroup of one tree, whose leaves are
  // first found side by side (BTree::locateLeaves): the cache misses of their descents
  // overlap instead of each write waiting for its own.
  constexpr size_t kGroup = 32;
  std::array<Bytes, kGroup> keys;
  std::array<BTree::LeafHint, kGroup> hints;
  auto isWrite = [](const LogOp& op) { return op.kind == LogOpKind::kPut || op.kind == LogOpKind::kDelete; };
  auto outcome = [&](Status st) {
    if (st.isNotFound()) return Status::OK();  // an absent key or tree
    if (st.ok()) return st;
    return Status(st.code(), "replaying the log of " + dir_ + ": " + st.message());
  };
  auto apply = [&](std::span<const LogOp> ops) {
    for (size_t i = 0; i < ops.size();) {
      const size_t at = i++;  // ops[at]; i: the next operation to apply
      const LogOp& op = ops[at];
      Status st;
      Tree* tree = nullptr;
      if (op.kind == LogOpKind::kCreateTree) {
        last = nullptr;
        st = openTree(op.tree, true, &tree);
      } else if (op.kind == LogOpKind::kDropTree) {
        last = nullptr;
        st = dropTree(op.tree);
      } else {
        if (last == nullptr || op.tree != lastName) {
          last = nullptr;
          st = openTree(op.tree, false, &tree);
          if (st.ok()) {
            last = TreeImpl::of(tree);
            lastName = last->name;
            hint = {};
          }
        }
        if (last != nullptr && op.kind == LogOpKind::kPatch) {
          st = replayPatch(last, op.key, op.value);
        } else if (last != nullptr) {
          // The group: ops[at, i), this write and the next ones of its tree.
          while (i - at < kGroup && i < ops.size() && isWrite(ops[i]) && ops[i].tree == op.tree) i++;
          const size_t n = i - at;
          hints[0] = hint;
          if (n > 1) {
            for (size_t k = 0; k < n; k++) keys[k] = asBytes(ops[at + k].key);
            last->btree.locateLeaves({keys.data(), n}, {hints.data(), n});
          }
          for (size_t k = 0; k < n && st.ok(); k++) st = outcome(replayWrite(last, ops[at + k], &hints[k]));
          hint = hints[n - 1];
        }
      }
      if (st = outcome(st); !st.ok()) return st;
    }
    return Status::OK();
  };
  // Records are applied a window at a time (copied: a record's operations are views
  // into the log's read buffer). With data larger than the pool, one operation after
  // another would each wait for its leaf's read, so before a window is applied the
  // pages its keys lead to are read with many reads in flight: a getMany of each tree's
  // keys whose results are dropped. Only reads: a failed one is met again, and
  // reported, by the operation that needs the page. A tree the window creates is not
  // there yet and is skipped. While the data fits the pool (the file only grows during
  // replay), nothing is read ahead.
  const uint64_t poolPages = bm_->poolPages();
  auto prefetch = [&](std::span<const LogOp> ops) {
    std::vector<std::pair<std::string_view, std::vector<std::string_view>>> byTree;
    for (const LogOp& op : ops) {
      if (!isWrite(op) && op.kind != LogOpKind::kPatch) continue;
      auto it = std::find_if(byTree.begin(), byTree.end(), [&](const auto& e) { return e.first == op.tree; });
      if (it == byTree.end()) it = byTree.insert(byTree.end(), {op.tree, {}});
      it->second.push_back(op.key);
    }
    for (const auto& [name, keys] : byTree) {
      Tree* tree = nullptr;
      if (!openTree(name, false, &tree).ok()) continue;
      TreeImpl* t = TreeImpl::of(tree);
      std::vector<Status> statuses(keys.size());
      (void)getMany(
          t, keys, statuses, [](size_t, Bytes) {},
          [&](size_t i) {
            size_t vlen = 0;
            return get(t, keys[i], std::span<std::byte>(), &vlen);
          });
    }
  };
  // A window's leaves take at most an eighth of the pool.
  ReplayWindow window(std::max<size_t>(kGroup, static_cast<size_t>(poolPages / 8)));
  auto applyWindow = [&] {
    Status st;
    if (!window.empty()) {
      if (bm_->pageCount() > poolPages) {
        try {
          prefetch(window.ops());
        } catch (const std::bad_alloc&) {
          // Without the read-ahead the window is applied all the same, only slower.
        }
      }
      st = apply(window.ops());
      window.clear();
    }
    return st;
  };
  auto buffer = [&](std::span<const LogOp> ops) {
    try {
      window.add(ops);
    } catch (const std::bad_alloc&) {
      return Status::NoMemory("no memory to replay the log of " + dir_);
    }
    return window.full() ? applyWindow() : Status::OK();
  };
  if (Status s = log_.refuseForeign(); !s.ok()) return s;
  replaying_ = true;
  uint32_t epoch = bm_->epoch();
  for (uint32_t e : {epoch, epoch + 1}) {
    ReplayInfo info;
    Status s = log_.replay(e, buffer, &info);
    if (s.ok()) s = applyWindow();  // the interval's last operations
    if (!s.ok()) {
      replaying_ = false;
      return s;
    }
    recovery_.recovered_records += info.records;
    recovery_.recovered_operations += info.operations;
    recovery_.recovered_bytes += info.bytes;
    if (info.records == 0) break;  // no cut after this interval
  }
  replaying_ = false;
  if (recovery_.recovered_records == 0) return Status::OK();
  // Commit what was replayed, then empty the log. Until that commit, a crash recovers
  // again from the same checkpoint and the same records.
  Status s = checkpoint();
  if (s.ok()) s = log_.discard();
  return s;
}

DatabaseImpl::~DatabaseImpl() {
  // A database whose open failed half-way is never written to.
  if (opened_) close();
}

// A condition added here or in notPoisoned() belongs in writesClear() too: writes that
// find it clear do not call these.
Status DatabaseImpl::writable() {
  if (bm_->writeBackFailing()) {
    // The device refused write-back (full, or failing): take no new change until the
    // dirty pages can be written, so the pool keeps room for reads.
    Status st = guarded([&] { return bm_->flushAll(); });
    if (!st.ok()) return st;
  }
  if (pendingFailed_.load(std::memory_order_acquire)) {
    // A checkpoint failed part-way (a full device) and its snapshot is still pending.
    // A change of one of its pages would have to write the page's snapshot image first
    // (BufferManager::markDirty), in the middle of the change, where a failure leaves
    // the change half made. So the snapshot is finished first; while it cannot be,
    // writes fail here, having changed nothing.
    auto cg = task::lock(checkpointMutex_);
    Status st = finishPendingLocked();
    if (!st.ok()) return st;
  }
  return notPoisoned();
}

Status DatabaseImpl::notPoisoned() {
  if (!poisoned_.load(std::memory_order_acquire)) return Status::OK();
  std::lock_guard g(poisonMutex_);
  return poison_;
}

void DatabaseImpl::poison(const Status& why, const char* after) {
  std::lock_guard g(poisonMutex_);
  if (poisoned_.load(std::memory_order_relaxed)) return;
  poison_ = Status(why.code(), "database " + dir_ + " is read-only until reopened after " + after + " (" +
                                   why.message() + ")");
  poisoned_.store(true, std::memory_order_release);
}

Status DatabaseImpl::checkpoint() {
  auto cg = task::lock(checkpointMutex_);
  Status st = finishPendingLocked();
  if (st.ok()) st = cutLocked();
  if (st.ok() && pending_) st = finishLocked();
  return st;
}

Status DatabaseImpl::cutLocked() {
  const auto waitStart = std::chrono::steady_clock::now();
  std::unique_lock gate(writeGate_);  // task-aware itself (writer_gate.hpp)
  const auto waited = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - waitStart).count());
  if (!changed_.load(std::memory_order_acquire)) return Status::OK();  // nothing to write
  cuts_.fetch_add(1, std::memory_order_relaxed);
  cutWaitUs_.fetch_add(waited, std::memory_order_relaxed);
  if (waited > cutWaitMaxUs_.load(std::memory_order_relaxed)) cutWaitMaxUs_.store(waited, std::memory_order_relaxed);
  return guarded([&] {
    Snapshot snap;
    snap.epoch = bm_->epoch();
    // Roots of dropped trees stay allocated while their handles live; on storage they
    // are free, since a reopened database has no handles.
    if (!droppedRootsFreed_) {
      for (auto& t : droppedTrees_) snap.extra.push_back(t->btree.rootPid());
    }
    snap.free = bm_->freeSpace().snapshot();
    // The list lives in free pages; grow the file when there are too few of them.
    for (uint64_t need; snap.free.size() < (need = freeListPages(snap.free.size() + snap.extra.size()));) {
      bm_->appendFreePages(need - snap.free.size());
      snap.free = bm_->freeSpace().snapshot();
    }
    snap.pageCount = bm_->pageCount();
    // From here on, changes belong to the next interval: pages dirty now are the
    // snapshot (a writer copies one aside before changing it), records go to the other
    // log file.
    journal_.begin(snap.epoch + 1, snap.pageCount);
    bm_->setEpoch(snap.epoch + 1);
    if (log_.writing()) snap.cutLsn = log_.cut(snap.epoch + 1);
    changed_.store(false, std::memory_order_release);
    pending_ = std::move(snap);
    return Status::OK();
  });
}

Status DatabaseImpl::finishPendingLocked() {
  Status st = notPoisoned();
  if (st.ok() && pending_) st = finishLocked();
  return st;
}

Status DatabaseImpl::finishLocked() {
  Snapshot& snap = *pending_;
  Status result = guarded([&] {
    Status st = bm_->flushEpoch(snap.epoch);  // the snapshot's pages into the journal
    if (!st.ok()) return st;
    // The chain goes into the lowest free pages, so that it does not stretch the file.
    std::vector<uint64_t> free = snap.free;
    std::sort(free.begin(), free.end());
    std::vector<std::unique_ptr<Page>> listPages;
    std::vector<PageWrite> writes;
    uint64_t head = 0;
    encodeFreeList(free, snap.extra, snap.epoch, &listPages, &writes, &head);
    st = journal_.append(writes);
    if (!st.ok()) return st;
    Superblock s = sb_;
    s.pageCount = snap.pageCount;
    s.freeListHead = head;
    s.freeCount = free.size() + snap.extra.size();
    s.checkpoints = snap.epoch;
    s.clean = true;
    auto sbPage = std::make_unique<Page>();
    encodeSuperblock(s, snap.epoch, sbPage.get());
    st = journal_.commit(snap.epoch, sbPage.get());  // the commit point
    if (!st.ok()) {
      if (journal_.syncFailed()) poison(st);
      return st;
    }
    sb_ = s;
    checkpoints_.store(s.checkpoints, std::memory_order_relaxed);
    if (log_.writing()) log_.covered(snap.cutLsn);  // every record before the cut is in it
    uint32_t epoch = snap.epoch;
    pending_.reset();
    st = journal_.backfill(epoch);
    if (!st.ok()) poison(st);  // committed: the next open completes the copy
    return st;
  });
  // Still pending after a failure (a full device): writable() finishes it before the
  // next change (see there).
  pendingFailed_.store(!result.ok() && pending_.has_value(), std::memory_order_release);
  return result;
}

Status DatabaseImpl::makeLogRoom(size_t recordBytes) {
  logFullWaits_.fetch_add(1, std::memory_order_relaxed);
  auto cg = task::lock(checkpointMutex_);
  if (log_.room(recordBytes)) return Status::OK();  // another writer cut meanwhile
  Status st = finishPendingLocked();
  // A checkpoint that commits gives back the room of the file before its cut.
  if (st.ok() && log_.room(recordBytes)) return Status::OK();
  if (st.ok()) st = cutLocked();
  if (st.ok()) wakeCheckpointer();  // writes the snapshot
  return st;
}

void DatabaseImpl::wakeCheckpointer() {
  if (checkpointWanted_.exchange(true, std::memory_order_acq_rel)) return;
  std::lock_guard g(checkpointerMutex_);
  checkpointerWake_.notify_one();
}

void DatabaseImpl::checkpointerLoop() {
  std::unique_lock g(checkpointerMutex_);
  for (;;) {
    checkpointerWake_.wait(g, [&] { return checkpointerStop_ || checkpointWanted_.load(std::memory_order_acquire); });
    if (checkpointerStop_) return;
    checkpointWanted_.store(false, std::memory_order_release);
    g.unlock();
    {
      // Its failure belongs to no write: the next sync or close reports it.
      std::lock_guard cg(checkpointMutex_);
      if (notPoisoned().ok()) {
        if (pending_) {
          finishLocked();
        } else if (checkpointDue() && cutLocked().ok() && pending_) {
          finishLocked();
        }
      }
    }
    g.lock();
  }
}

Status DatabaseImpl::sync() {
  if (anyHere(this)) return openTransactionStatus();
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  return checkpoint();
}

Status DatabaseImpl::close() {
  if (released_) return Status::OK();
  if (anyHere(this)) return openTransactionStatus();
  gate_.close();  // waits for the calls in flight; later ones are refused
  {
    std::lock_guard g(checkpointerMutex_);
    checkpointerStop_ = true;
  }
  checkpointerWake_.notify_one();
  if (checkpointer_.joinable()) checkpointer_.join();
  Status st;
  {
    std::unique_lock gate(writeGate_);
    st = guarded([&] {
      // Nobody holds a handle after close, so the roots of dropped trees become free.
      // On storage they already are (checkpoints list them as free).
      for (auto& t : droppedTrees_) bm_->freePageById(t->btree.rootPid());
      droppedRootsFreed_ = true;
      return Status::OK();
    });
  }
  Status cp = checkpoint();
  if (st.ok()) st = cp;
  if (st.ok()) {
    // The space allocated ahead of the pages in use (DataFile::setAllocateAhead) belongs
    // to no checkpoint: a closed database's data file ends at its last page.
    const uint64_t used = bm_->pageCount();
    if (file_.sizeBytes() > used * kPageSize) st = file_.truncate(used);
  }
  // After a failed checkpoint the log still holds the writes: flush it for the next open.
  Status lg = log_.close();
  if (st.ok()) st = lg;
  // Tree handles stay allocated (calls on them are refused by the gate) until the
  // DatabaseImpl itself goes.
  catalog_.reset();
  bm_.reset();
  if (trace_) {
    Status ts = trace_->close();  // no access is in flight any more
    if (st.ok()) st = ts;
  }
  journal_.close();
  file_.close();
  lock_.release();  // another open may begin now
  released_ = true;
  return st;
}

Status DatabaseImpl::catalogLookup(std::string_view name, uint64_t* root) {
  std::string value;
  if (!catalog_->getString(asBytes(catalogKey(name)), &value)) return Status::NotFound("no tree named '" + std::string(name) + "'");
  if (value.size() != sizeof(uint64_t)) return Status::Corruption("catalog entry of tree '" + std::string(name) + "' is damaged");
  std::memcpy(root, value.data(), sizeof(uint64_t));
  return Status::OK();
}

std::vector<std::pair<std::string, uint64_t>> DatabaseImpl::catalogEntries() {
  std::vector<std::pair<std::string, uint64_t>> out;
  catalog_->scan({}, true, [&](std::string_view key, std::string_view value) {
    uint64_t root = 0;
    if (value.size() == sizeof(root)) std::memcpy(&root, value.data(), sizeof(root));
    out.emplace_back(std::string(key.substr(1)), root);
    return true;
  });
  return out;
}

Status DatabaseImpl::openExisting(std::string_view name, Tree** tree) {
  auto g = task::lock(treesMutex_);
  auto it = trees_.find(name);
  if (it != trees_.end()) {
    *tree = &it->second->handle;
    return Status::OK();
  }
  uint64_t root;
  Status st = catalogLookup(name, &root);
  if (!st.ok()) return st;
  auto impl = std::make_unique<TreeImpl>(this, std::string(name), root);
  *tree = &impl->handle;
  trees_.emplace(std::string(name), std::move(impl));
  return Status::OK();
}

Status DatabaseImpl::openTree(std::string_view name, bool create, Tree** tree) {
  if (name.size() > kMaxTreeNameSize) {
    return Status::InvalidArgument("tree name of " + std::to_string(name.size()) + " bytes exceeds the maximum of " +
                                   std::to_string(kMaxTreeNameSize));
  }
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  // An existing tree: the list's lock only, which nobody holds while waiting for
  // transactions, so this works on a thread that holds one.
  Status st = guarded([&] { return openExisting(name, tree); });
  if (!st.isNotFound() || !create) return st;
  // A creation is a plain write. Refused before treeChangesMutex_: another creation may
  // hold it while it waits for a checkpoint, which waits for this caller's transaction.
  if (heldHere(this)) [[unlikely]] return plainWriteInTransactionStatus();
  auto changing = task::lock(treeChangesMutex_);
  st = guarded([&] { return openExisting(name, tree); });  // created meanwhile?
  if (!st.isNotFound()) return st;
  uint64_t root = 0;
  LogOp op{LogOpKind::kCreateTree, name, {}, {}};
  st = writeUnder<std::shared_lock<WriterGate>>({&op, 1}, KeyLock{}, &DatabaseImpl::writable, [&] {
    root = BTree::create(*bm_);
    try {
      catalog_->put(asBytes(catalogKey(name)), Bytes(reinterpret_cast<const uint8_t*>(&root), sizeof(root)));
    } catch (...) {
      bm_->freePageById(root);
      throw;
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  // An openTree that found the catalog entry first has listed the tree: keep its handle.
  return guarded([&] {
    auto g = task::lock(treesMutex_);
    auto it = trees_.find(name);
    if (it == trees_.end()) {
      it = trees_.emplace(std::string(name), std::make_unique<TreeImpl>(this, std::string(name), root)).first;
    }
    *tree = &it->second->handle;
    return Status::OK();
  });
}

Status DatabaseImpl::dropTree(std::string_view name) {
  if (anyHere(this)) return openTransactionStatus();
  auto changing = task::lock(treeChangesMutex_);
  LogOp op{LogOpKind::kDropTree, name, {}, {}};
  // Exclusive: no put to the tree sits between its change and its log record, so none
  // is logged after the drop. A drop only frees pages: allowed on a full device.
  return writeUnder<std::unique_lock<WriterGate>>({&op, 1}, KeyLock{}, &DatabaseImpl::notPoisoned, [&] {
    // The list's lock from the catalog lookup to the list's change: an openTree in
    // between would list a tree whose pages this frees. Taken with the gate held
    // exclusively (no transaction is open), so it never waits for one.
    auto g = task::lock(treesMutex_);
    uint64_t root;
    Status st = catalogLookup(name, &root);
    if (!st.ok()) return st;
    auto it = trees_.find(name);
    std::unique_ptr<TreeImpl> temp;
    TreeImpl* impl = it != trees_.end() ? it->second.get() : (temp = std::make_unique<TreeImpl>(this, std::string(name), root)).get();
    markChanged();
    // Everything that may fail (reading the tree's pages, changing the catalog) comes
    // before anything that cannot be undone: a failed drop changes nothing.
    std::vector<PageRun> pages;
    auto savedRoot = std::make_unique<Page>();
    impl->btree.drop(&pages, savedRoot.get());
    try {
      catalog_->remove(asBytes(catalogKey(name)));
    } catch (const StorageError&) {
      try {
        impl->btree.undrop(savedRoot.get());
      } catch (const StorageError& e) {
        poison(e.status(), "a tree drop that could not be undone");
      }
      throw;
    }
    if (it != trees_.end()) {
      temp = std::move(it->second);
      trees_.erase(it);
    }
    droppedTrees_.push_back(std::move(temp));  // its handle stays valid until close
    for (const PageRun& r : pages) bm_->freeSpan(r.pid, r.pages);
    return Status::OK();
  });
}

Status DatabaseImpl::listTrees(std::vector<std::string>* names) {
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  return guarded([&] {
    names->clear();
    for (auto& [name, root] : catalogEntries()) names->push_back(name);
    return Status::OK();
  });
}

Stats DatabaseImpl::stats() {
  Stats s;
  CallGate::Pass pass(gate_);
  if (!pass) return s;
  bm_->fillStats(&s);
  s.file_bytes += journal_.bytes();  // pages written since the last checkpoint live there
  s.log_bytes = log_.bytes();
  s.log_appended_bytes = log_.endLsn();
  s.log_file_bytes = log_.fileBytes();
  s.file_bytes += s.log_file_bytes;
  s.log_flushes = log_.flushes();
  s.checkpoints = checkpoints_.load(std::memory_order_relaxed);  // sb_ is the checkpointer's
  s.checkpoint_cuts = cuts_.load(std::memory_order_relaxed);
  s.log_full_waits = logFullWaits_.load(std::memory_order_relaxed);
  s.checkpoint_cut_wait_us = cutWaitUs_.load(std::memory_order_relaxed);
  s.checkpoint_cut_wait_max_us = cutWaitMaxUs_.load(std::memory_order_relaxed);
  s.recovered_records = recovery_.recovered_records;
  s.recovered_operations = recovery_.recovered_operations;
  s.recovered_bytes = recovery_.recovered_bytes;
  s.recovered_checkpoint = recovery_.recovered_checkpoint;
  s.recovery_us = recovery_.recovery_us;
  if (std::optional<uint64_t> tlb = tlbShootdowns(); tlb && *tlb >= tlbAtOpen_) s.tlb_shootdowns = *tlb - tlbAtOpen_;
  try {
    s.trees = catalogEntries().size();
  } catch (const StorageError&) {
    s.trees = 0;
  }
  return s;
}

Status DatabaseImpl::check(std::vector<std::string>* problems) {
  if (anyHere(this)) return openTransactionStatus();
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  auto cg = task::lock(checkpointMutex_);
  std::unique_lock gate(writeGate_);  // task-aware itself (writer_gate.hpp)
  return guarded([&] {
    std::vector<uint64_t> used;
    catalog_->verify(problems, &used);
    for (auto& [name, root] : catalogEntries()) {
      BTree tree(*bm_, root);
      size_t before = problems->size();
      tree.verify(problems, &used);
      for (size_t i = before; i < problems->size(); i++) (*problems)[i] = "tree '" + name + "': " + (*problems)[i];
    }
    if (!droppedRootsFreed_) {
      for (auto& t : droppedTrees_) used.push_back(t->btree.rootPid());
    }
    bm_->checkTiers(problems);
    if (log_.writing()) {
      // The log holds exactly the records appended since the last checkpoint, all valid.
      ReplayInfo info;
      Status ls = log_.replay(bm_->epoch(), [](std::span<const LogOp>) { return Status::OK(); }, &info);
      if (!ls.ok()) {
        problems->push_back("log: " + ls.message());
      } else if (info.bytes != log_.bytes()) {
        problems->push_back("log " + log_.path() + ": " + std::to_string(info.bytes) + " bytes of valid records, but " +
                            std::to_string(log_.bytes()) + " bytes were appended since the last checkpoint");
      }
    }
    uint64_t pages = bm_->pageCount();
    std::vector<uint8_t> seen(pages, 0);
    seen[0] = 1;  // superblock
    auto mark = [&](uint64_t pid, const char* what) {
      if (pid == 0 || pid >= pages) {
        problems->push_back(std::string(what) + " page id " + std::to_string(pid) + " is outside the file");
      } else if (seen[pid]) {
        problems->push_back("page " + std::to_string(pid) + " is " + what + " but also used elsewhere");
      } else {
        seen[pid] = 1;
      }
    };
    for (uint64_t pid : used) mark(pid, "in use");
    for (uint64_t pid : bm_->freeSpace().snapshot()) mark(pid, "free");
    for (uint64_t pid : bm_->deferredFrees()) mark(pid, "free after the pending checkpoint");
    uint64_t leaked = 0;
    for (uint64_t pid = 1; pid < pages; pid++) {
      if (!seen[pid] && leaked++ < 20) {
        problems->push_back("page " + std::to_string(pid) + " is neither in use nor free");
      }
    }
    if (leaked > 20) problems->push_back(std::to_string(leaked - 20) + " more pages neither in use nor free");
    if (problems->empty()) return Status::OK();
    return Status::Corruption(std::to_string(problems->size()) + " problems found in " + dir_);
  });
}

Status DatabaseImpl::put(TreeImpl* t, std::string_view key, std::string_view value) {
  Status st = validateKey(key);
  if (st.ok()) st = validateValue(value);
  if (!st.ok()) return st;
  LogOp op{LogOpKind::kPut, t->name, key, value};
  const KeySlot slot = t->keyLocks.slot(key);
  return writeUnder<std::shared_lock<WriterGate>>({&op, 1}, KeyLock{{&slot, 1}}, &DatabaseImpl::writable, [&] {
    BTree::LeafHint hint = LeafHints::of(t->serial);
    t->btree.put(asBytes(key), asBytes(value), &hint);
    LeafHints::remember(t->serial, hint);
    return Status::OK();
  });
}

template <class Lock, class Fn>
Status DatabaseImpl::writeUnder(std::span<const LogOp> ops, KeyLock keyLock, Status (DatabaseImpl::*allowed)(),
                                Fn&& change, size_t lateValueBytes, uint64_t* commit) {
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  if (heldHere(this)) [[unlikely]] return plainWriteInTransactionStatus();
  Status st;
  if (!writesClear()) [[unlikely]] {
    st = (this->*allowed)();
    if (!st.ok()) return st;
  }
  // The keys' locks before the writer gate: a writer waiting for a key lock holds no
  // gate, so a checkpoint's cut never waits for it, and the locks can be kept across a
  // checkpoint this write needs (a full log file, a write too large for the log).
  std::optional<KeyLocks::Held> keys;  // also unlogged: update() relies on them
  if (!keyLock.slots.empty()) keys.emplace(keyLock.slots);
  uint64_t lsn = 0;
  bool unlogged = false;
  for (;;) {
    Lock gate(writeGate_, std::defer_lock);
    gate.lock();  // task-aware itself (writer_gate.hpp)
    const size_t record = logging() ? recordSize(ops, lateValueBytes) : 0;  // 0: not logged
    size_t size = 0;  // reserved
    if (record > unloggedRecordBytes()) {
      unlogged = true;  // too large for the log: a checkpoint makes it durable below
    } else if (record != 0) {
      size = record;
      st = log_.reserve(size);
      if (st.code() == Status::Code::kBusy) {
        if (!log_.fits(size)) {
          return Status::TooBig("a log record of " + std::to_string(size) + " bytes does not fit the log of " +
                                dir_ + " (raise log_size)");
        }
        gate.unlock();
        st = makeLogRoom(size);  // the log file is full: move to the other one
        if (!st.ok()) return st;
        continue;
      }
      if (!st.ok()) return st;
    }
    markChanged();
    st = guarded(change);
    if (size != 0) {
      if (st.ok()) {
        // The change may have made its record smaller (a batch's updates as patches).
        size_t actual = recordSize(ops);
        assert(actual <= size);
        lsn = log_.append(ops, actual);
        if (actual < size) log_.unreserve(size - actual);
      } else {
        log_.unreserve(size);
      }
    }
    break;
  }
  // Not logged: durable once a checkpoint holds it. Its keys stay locked until then, so
  // no later write of them is logged (as a patch, say) against a value that only that
  // checkpoint holds: a crash before it commits must find neither.
  if (unlogged && st.ok()) st = durableByCheckpoint();
  keys.reset();
  return afterWrite(std::move(st), lsn, commit);
}

Status DatabaseImpl::durableByCheckpoint() {
  // Durable once a checkpoint whose cut follows the change has committed. Waited for
  // with async durability too: a later logged write must not outlive this one.
  Status st = checkpoint();
  if (st.ok()) return st;
  return Status(st.code(), "the write was applied but could not be made durable: " + st.message());
}

Status DatabaseImpl::afterWriteSlow(Status st, uint64_t lsn, uint64_t* commit) {
  if (!st.ok()) return st;
  if (commit != nullptr) {
    *commit = lsn;  // the caller waits (waitDurable), after letting go of its own locks
  } else if (lsn != 0 && options_.durability == Durability::kSync) {
    st = log_.waitDurable(lsn);  // group commit: one flush for every writer waiting
    if (!st.ok()) return st;
  } else if (lsn != 0) {
    st = log_.failure();  // a record that could not be written is not acknowledged
    if (!st.ok()) return st;
  }
  if (!replaying_ && checkpointDue()) wakeCheckpointer();
  return st;
}

Status DatabaseImpl::getMany(TreeImpl* t, std::span<const std::string_view> keys, std::span<Status> statuses,
                             const std::function<void(size_t, Bytes)>& copy,
                             const std::function<Status(size_t)>& getOne) {
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  using Lookup = BTree::Lookup;
  constexpr size_t kGroup = BTree::kLookupGroup;
  std::vector<size_t> rest;  // the keys for getOne
  Bytes group[kGroup];
  size_t index[kGroup];
  Lookup outcome[kGroup];
  size_t m = 0;
  auto lookUpGroup = [&] {
    bool done = true;
    try {
      t->btree.lookupResident(std::span<const Bytes>(group, m), std::span<Lookup>(outcome, m),
                              [&](size_t j, Bytes value) { copy(index[j], value); });
    } catch (const std::exception&) {
      done = false;  // copy ran out of memory: getOne reports it
    }
    for (size_t j = 0; j < m; j++) {
      const Lookup o = done ? outcome[j] : Lookup::kLeft;
      if (o == Lookup::kLeft) {
        rest.push_back(index[j]);
      } else {
        statuses[index[j]] = o == Lookup::kFound ? Status::OK() : Status::NotFound();
      }
    }
    m = 0;
  };
  try {
    for (size_t i = 0; i < keys.size(); i++) {
      if (!validateKey(keys[i]).ok()) {
        rest.push_back(i);  // getOne gives its error
        continue;
      }
      group[m] = asBytes(keys[i]);
      index[m++] = i;
      if (m == kGroup) lookUpGroup();
    }
    if (m > 0) lookUpGroup();
    if (!rest.empty()) task::runEach(rest.size(), kGetManyInFlight, [&](size_t j) { statuses[rest[j]] = getOne(rest[j]); });
  } catch (const std::bad_alloc&) {
    return Status::NoMemory("out of memory running lookups as tasks");
  } catch (const std::system_error& e) {
    return Status::NoMemory(std::string("cannot run lookups as tasks: ") + e.what());
  }
  return Status::OK();
}

Status DatabaseImpl::get(TreeImpl* t, std::string_view key, std::string* value) {
  Status st = validateKey(key);
  if (!st.ok()) return st;
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  return guarded([&] {
    if (!t->btree.getString(asBytes(key), value)) return Status::NotFound();
    return Status::OK();
  });
}

Status DatabaseImpl::get(TreeImpl* t, std::string_view key, std::span<std::byte> buf, size_t* vlen) {
  Status st = validateKey(key);
  if (!st.ok()) return st;
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  return guarded([&] {
    if (!t->btree.get(asBytes(key), reinterpret_cast<uint8_t*>(buf.data()), buf.size(), vlen)) return Status::NotFound();
    return Status::OK();
  });
}

Status DatabaseImpl::putReserve(TreeImpl* t, std::string_view key, size_t len,
                                const std::function<Status(std::span<std::byte>)>& fill) {
  Status st = validateKey(key);
  if (st.ok() && len > kMaxValueSize) {
    st = Status::TooBig("value of " + std::to_string(len) + " bytes exceeds the maximum of " +
                        std::to_string(kMaxValueSize));
  }
  if (!st.ok()) return st;
  if (BTreeNode::storedInline(key.size(), len)) {
    // Stored in the leaf: filled aside (a small copy), then put.
    std::string v(len, '\0');
    st = fill(std::as_writable_bytes(std::span<char>(v)));
    return st.ok() ? put(t, key, v) : st;
  }
  // Its own page, filled in place under the writer gate (so no checkpoint sees the page
  // allocated but unreferenced), held while the log record copies it, then linked.
  LogOp op{LogOpKind::kPut, t->name, key, {}};
  const KeySlot slot = t->keyLocks.slot(key);
  Status filled;
  uint64_t held = kNoPage;  // the value's page, held shared until the record is appended
  std::exception_ptr thrown;
  st = writeUnder<std::shared_lock<WriterGate>>(
      {&op, 1}, KeyLock{{&slot, 1}}, &DatabaseImpl::writable,
      [&] {
        uint64_t pid = t->btree.allocValue(len, [&](uint8_t* data) {
          try {
            filled = fill(std::span<std::byte>(reinterpret_cast<std::byte*>(data), len));
          } catch (...) {  // rethrown below, once the write has unwound cleanly
            thrown = std::current_exception();
            filled = Status::InvalidArgument("putReserve: the fill function threw");
          }
        });
        if (!filled.ok()) {
          t->btree.freeValue(pid, len);
          return filled;  // not logged: nothing changed
        }
        const uint8_t* bytes = nullptr;
        try {
          bytes = t->btree.holdValue(pid, len);
          try {
            t->btree.linkValue(asBytes(key), pid, len);
          } catch (...) {
            t->btree.unpin(pid);
            throw;
          }
        } catch (...) {
          t->btree.freeValue(pid, len);
          throw;
        }
        held = pid;
        op.value = std::string_view(reinterpret_cast<const char*>(bytes), len);
        return Status::OK();
      },
      len);
  if (held != kNoPage) t->btree.unpin(held);
  if (thrown) std::rethrow_exception(thrown);
  return st;
}

Status DatabaseImpl::getView(TreeImpl* t, std::string_view key, uint64_t* pinned, const std::byte** data,
                             size_t* len) {
  Status st = validateKey(key);
  if (!st.ok()) return st;
  if (!gate_.enter()) return closedStatus();
  st = guarded([&] {
    const uint8_t* bytes = nullptr;
    if (!t->btree.pin(asBytes(key), pinned, &bytes, len)) return Status::NotFound();
    *data = reinterpret_cast<const std::byte*>(bytes);
    return Status::OK();
  });
  if (!st.ok()) gate_.leave();  // held only with a view
  return st;
}

Status DatabaseImpl::readOptimistic(TreeImpl* t, std::string_view key, Tree::ReadFn fn, void* ctx) {
  if (fn == nullptr) return Status::InvalidArgument("the read function is null");
  Status st = validateKey(key);
  if (!st.ok()) return st;
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  // What the last run of fn threw: a run that is repeated may have thrown on torn bytes,
  // so each run starts over, and only the validated one's exception reaches the caller
  // (rethrown here, outside guarded(), which would take some for its own; the pass is
  // let go as it propagates).
  std::exception_ptr thrown;
  Status found = guarded([&] {
    bool present = t->btree.readOptimistic(asBytes(key), [&](Bytes value) {
      if (thrown) [[unlikely]] thrown = nullptr;
      try {
        fn(ctx, std::string_view(reinterpret_cast<const char*>(value.data()), value.size()));
      } catch (...) {
        thrown = std::current_exception();
      }
    });
    return present ? Status::OK() : Status::NotFound();
  });
  if (thrown && found.ok()) [[unlikely]] std::rethrow_exception(thrown);
  return found;
}

void DatabaseImpl::releaseView(TreeImpl* t, uint64_t pinned) {
  t->btree.unpin(pinned);
  gate_.leave();
}

Status DatabaseImpl::scan(TreeImpl* t, std::string_view start, Tree::ScanFn fn, void* ctx) {
  if (fn == nullptr) return Status::InvalidArgument("the scan function is null");
  if (!start.empty()) {
    if (Status bad = validateKey(start); !bad.ok()) return bad;
  }
  std::exception_ptr thrown;  // fn's exception, rethrown as it was once nothing is held
  Status st;
  {
    CallGate::Pass pass(gate_);
    if (!pass) return closedStatus();
    st = guarded([&] {
      t->btree.scanInPlace(asBytes(start), [&](Bytes key, Bytes value) {
        try {
          return fn(ctx, std::string_view(reinterpret_cast<const char*>(key.data()), key.size()),
                    std::string_view(reinterpret_cast<const char*>(value.data()), value.size()));
        } catch (...) {
          thrown = std::current_exception();
          return false;
        }
      });
      return Status::OK();
    });
  }
  if (thrown) std::rethrow_exception(thrown);
  return st;
}

Status DatabaseImpl::del(TreeImpl* t, std::string_view key) {
  Status st = validateKey(key);
  if (!st.ok()) return st;
  LogOp op{LogOpKind::kDelete, t->name, key, {}};
  const KeySlot slot = t->keyLocks.slot(key);
  return writeUnder<std::shared_lock<WriterGate>>({&op, 1}, KeyLock{{&slot, 1}}, &DatabaseImpl::writable, [&] {
    if (!t->btree.remove(asBytes(key))) return Status::NotFound();
    return Status::OK();
  });
}

Status DatabaseImpl::update(TreeImpl* t, std::string_view key, Tree::UpdateFn fn, void* ctx) {
  if (Status bad = validateKey(key); !bad.ok()) return bad;
  if (fn == nullptr) return Status::InvalidArgument("the update function is null");
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  if (heldHere(this)) [[unlikely]] return plainWriteInTransactionStatus();
  if (!writesClear()) [[unlikely]] {
    if (Status refused = writable(); !refused.ok()) return refused;
  }
  std::exception_ptr thrown;  // fn's exception, rethrown once everything is let go
  // A same-size put's record: the bytes that changed, in a scratch string of this
  // thread's (write_scratch.hpp), which a warm update reuses instead of allocating.
  std::optional<ScratchLease> scratch;
  if (logging()) scratch.emplace();
  uint64_t lsn = 0;
  bool unlogged = false;  // a put too large for the log (see writeUnder)
  Status st;
  // Every writer of the key holds this lock: the value read below stays the current one
  // until the change is written (taken before the writer gate, and kept across a
  // checkpoint the update needs, as in writeUnder).
  auto keyLock = task::lock(t->keyLocks.of(key));
  for (;;) {
    std::shared_lock<WriterGate> gate(writeGate_, std::defer_lock);
    gate.lock();  // task-aware itself (writer_gate.hpp)
    Change change = Change::keep();  // fn's decision (a put's value may live in it)
    std::optional<LogOp> op;         // the change, as logged
    std::string owned;        // a put value that viewed `current`, which ends with the read
    std::string_view newValue;  // a put's value (logged whole, or as a patch)
    size_t reserved = 0;
    size_t logFull = 0;  // the record that found the log file full
    Status decided;
    st = guarded([&] {
      BTree::LeafHint hint = LeafHints::of(t->serial);
      bool inPlace = t->btree.updateInPlace(asBytes(key), [&](const Bytes* current) -> std::optional<Bytes> {
        std::optional<std::string_view> cur;
        change = callUpdateFn(fn, ctx, current, &cur, &thrown);
        switch (decideChange(change, cur, &owned, &newValue, &decided)) {
          case Decided::kNothing:
            return std::nullopt;
          case Decided::kDelete:
            op = LogOp{LogOpKind::kDelete, t->name, key, {}};
            break;
          case Decided::kPut: {
            const std::string_view v = newValue;
            op = LogOp{LogOpKind::kPut, t->name, key, v};
            std::string_view patch;
            if (scratch && cur && cur->size() == v.size() &&
                encodePatch(asBytes(*cur), asBytes(v), &(**scratch).one, &patch)) {
              op = LogOp{LogOpKind::kPatch, t->name, key, patch};  // a row update: its changed bytes
            }
            break;
          }
        }
        const size_t size = logging() ? recordSize({&*op, 1}) : 0;  // 0: not logged
        if (size > unloggedRecordBytes()) {
          unlogged = true;
        } else if (size != 0) {
          Status r = log_.reserve(size);
          if (!r.ok()) {
            if (r.code() != Status::Code::kBusy) {
              decided = r;
            } else if (!log_.fits(size)) {
              decided = Status::TooBig("a log record of " + std::to_string(size) + " bytes does not fit the log of " +
                                       dir_ + " (raise log_size)");
            } else {
              logFull = size;
            }
            op.reset();
            return std::nullopt;
          }
          reserved = size;
        }
        markChanged();
        if (op->kind == LogOpKind::kDelete) return std::nullopt;
        return asBytes(newValue);
      }, &hint);
      if (op && !inPlace) {
        if (op->kind != LogOpKind::kDelete) {
          t->btree.put(asBytes(key), asBytes(newValue), &hint);
        } else {
          t->btree.remove(asBytes(key));
        }
      }
      LeafHints::remember(t->serial, hint);
      return std::move(decided);
    });
    if (reserved != 0) {
      if (st.ok()) {
        lsn = log_.append({&*op, 1}, reserved);
      } else {
        log_.unreserve(reserved);
      }
    }
    if (logFull != 0) {
      gate.unlock();
      st = makeLogRoom(logFull);  // then fn runs again (on the same value: the key stays locked)
      if (!st.ok()) return st;
      continue;
    }
    break;
  }
  if (thrown) {
    keyLock.unlock();
    std::rethrow_exception(thrown);
  }
  if (unlogged && st.ok()) st = durableByCheckpoint();  // the key still locked (writeUnder)
  keyLock.unlock();
  return afterWrite(std::move(st), lsn);
}

Status DatabaseImpl::shape(TreeImpl* t, TreeShape* out) {
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  return guarded([&] {
    std::vector<std::string> problems;
    std::vector<uint64_t> pages;
    *out = TreeShape{};
    t->btree.verify(&problems, &pages, out);
    if (t->btree.isDropped()) return Status::NotFound("tree '" + t->name + "' was dropped");
    if (!problems.empty()) return Status::Corruption(problems.front());
    return Status::OK();
  });
}

Status DatabaseImpl::waitDurable(uint64_t commit) {
  CallGate::Pass pass(gate_);
  if (!pass) return closedStatus();
  if (commit > log_.endLsn()) {
    return Status::InvalidArgument("commit point " + std::to_string(commit) +
                                   " was not returned by this database since it was opened");
  }
  if (commit == 0 || options_.durability != Durability::kSync) return Status::OK();
  return log_.waitDurable(commit);
}

void DatabaseImpl::locateLeaves(std::span<const WriteBatch::Op> batchOps, WriteScratch& x) {
  // Per tree, the leaves of its writes found side by side (BTree::locateLeaves) when
  // there are enough of them for their descents to overlap. Keys in ascending order (rows
  // added in order, a sorted load) mostly share leaves, which the hint of the last write
  // already gives, one after another, so finding each of them first would be a descent
  // each for nothing; but sorted keys may be scattered too. Their group is left to
  // landed(): once two of its writes in a row miss the leaf they were given, the rest is
  // found side by side then.
  const size_t n = batchOps.size();
  x.leaves.assign(n, BTree::LeafHint{});
  x.groups.clear();
  if (n < kLocatedWrites) return;  // no tree has enough (a transaction of a row or two)
  x.index.resize(n);  // the ops, grouped by tree (in batch order within a tree)
  for (size_t i = 0; i < n; i++) x.index[i] = i;
  std::stable_sort(x.index.begin(), x.index.end(), [&](size_t a, size_t b) { return x.trees[a] < x.trees[b]; });
  x.group.resize(n);
  for (size_t first = 0, end = 0; first < n; first = end) {
    TreeImpl* const tree = x.trees[x.index[first]];
    for (end = first; end < n && x.trees[x.index[end]] == tree; end++) x.group[x.index[end]] = x.groups.size();
    WriteScratch::Group& g = x.groups.emplace_back(WriteScratch::Group{first, end});
    if (end - first < kLocatedWrites) continue;
    x.keys.clear();
    for (size_t k = first; k < end; k++) x.keys.push_back(asBytes(batchOps[x.index[k]].key));
    if (std::is_sorted(x.keys.begin(), x.keys.end(), [](Bytes a, Bytes b) { return compareBytes(a, b) < 0; })) {
      g.watch = true;
      continue;
    }
    locateGroup(batchOps, x, g, 0);
  }
}

void DatabaseImpl::locateGroup(std::span<const WriteBatch::Op> batchOps, WriteScratch& x, const WriteScratch::Group& g,
                               size_t after) {
  // The group's ops with an index of at least `after`, found side by side.
  x.keys.clear();
  x.pending.clear();
  for (size_t k = g.begin; k < g.end; k++) {
    const size_t i = x.index[k];
    if (i < after) continue;
    x.keys.push_back(asBytes(batchOps[i].key));
    x.pending.push_back(i);
  }
  if (x.keys.size() < 2) return;
  x.found.resize(x.keys.size());
  x.trees[x.index[g.begin]]->btree.locateLeaves(x.keys, x.found);
  for (size_t k = 0; k < x.keys.size(); k++) x.leaves[x.pending[k]] = x.found[k];
}

void DatabaseImpl::landed(std::span<const WriteBatch::Op> batchOps, WriteScratch& x, size_t i, bool inGiven) {
  if (x.groups.empty()) return;  // a batch too small to be located (locateLeaves)
  WriteScratch::Group& g = x.groups[x.group[i]];
  if (!g.watch) return;
  if (inGiven) {
    g.misses = 0;
  } else if (++g.misses == 2) {  // scattered: the rest of the group is found now
    g.watch = false;
    locateGroup(batchOps, x, g, i + 1);
  }
}

Status DatabaseImpl::write(const WriteBatch& batch, uint64_t* commit) {
  ScratchLease lease;
  WriteScratch& x = *lease;
  const std::span<const WriteBatch::Op> batchOps = batch.ops();
  const size_t n = batchOps.size();
  x.trees.clear();
  for (const WriteBatch::Op& op : batchOps) {
    TreeImpl* tree = TreeImpl::of(op.tree);
    if (tree->db != this) return Status::InvalidArgument("the batch holds a tree of another database; nothing was written");
    x.trees.push_back(tree);
  }
  // The locks of all its keys: no other write of those keys interleaves (so the undo
  // below restores exactly what the batch changed, and the records of each key are in
  // the order applied); the writer gate shared: no checkpoint's cut falls inside it.
  // Writers of other keys, and other batches, go on beside it.
  x.slots.resize(n);
  for (size_t i = 0; i < n; i++) x.slots[i] = x.trees[i]->keyLocks.slot(batchOps[i].key);
  std::sort(x.slots.begin(), x.slots.end());
  x.slots.erase(std::unique(x.slots.begin(), x.slots.end()), x.slots.end());
  x.ops.clear();  // the batch's log record
  if (logging()) {
    for (size_t i = 0; i < n; i++) {
      const WriteBatch::Op& op = batchOps[i];
      x.ops.push_back({op.isPut ? LogOpKind::kPut : LogOpKind::kDelete, x.trees[i]->name, op.key, op.value});
    }
  }
  x.patches.clear();
  return writeUnder<std::shared_lock<WriterGate>>(x.ops, KeyLock{x.slots}, &DatabaseImpl::writable, [&] {
    if (x.undo.size() < n) x.undo.resize(n);
    x.undone = 0;
    Status st = guarded([&] {
      locateLeaves(batchOps, x);
      for (size_t i = 0; i < n; i++) {
        const WriteBatch::Op& op = batchOps[i];
        WriteScratch::Undo& u = x.undo[i];
        TreeImpl* const tree = x.trees[i];
        u.had = false;
        // The leaf found for the key (locateLeaves), unless it is the one this thread's
        // last write of the tree went to (api/leaf_hints.hpp), whose version is newer:
        // keys added in order, and rows written again, often share it.
        BTree::LeafHint hint = LeafHints::of(tree->serial);
        if (x.leaves[i].pid != kNoPage && x.leaves[i].pid != hint.pid) hint = x.leaves[i];
        const uint64_t given = hint.pid;
        if (op.isPut) {
          // One descent for the undo image and, when the new value has the old one's size
          // (a row update), the write in place; otherwise a put.
          bool inPlace = tree->btree.updateInPlace(
              asBytes(op.key),
              [&](const Bytes* current) {
                u.had = current != nullptr;
                if (u.had) u.old.assign(reinterpret_cast<const char*>(current->data()), current->size());
                return std::optional<Bytes>(asBytes(op.value));
              },
              &hint);
          if (!inPlace) tree->btree.put(asBytes(op.key), asBytes(op.value), &hint);
        } else {
          // One descent (or none, by the hint) for the undo image and the removal.
          u.had = tree->btree.remove(asBytes(op.key), &u.old, &hint);
        }
        LeafHints::remember(tree->serial, hint);
        x.undone = i + 1;
        landed(batchOps, x, i, given != kNoPage && hint.pid == given);
      }
      return Status::OK();
    });
    if (!st.ok()) {
      Status undone = guarded([&] {
        for (size_t i = x.undone; i-- > 0;) {
          const WriteScratch::Undo& u = x.undo[i];
          const std::string& key = batchOps[i].key;
          if (u.had) {
            x.trees[i]->btree.put(asBytes(key), asBytes(u.old));
          } else {
            x.trees[i]->btree.remove(asBytes(key));
          }
        }
        return Status::OK();
      });
      // Half a batch in memory must never reach a checkpoint: refuse further writes; the
      // reopened database is the last checkpoint, which holds none of it.
      if (!undone.ok()) poison(undone, "a batch that could not be undone");
    } else if (!x.ops.empty()) {
      // Its same-size puts (row updates) are logged as the bytes that changed.
      x.at.assign(n, {0, 0});
      for (size_t i = 0; i < n; i++) {
        const WriteBatch::Op& op = batchOps[i];
        const WriteScratch::Undo& u = x.undo[i];
        if (!op.isPut || !u.had || u.old.size() != op.value.size()) continue;
        std::string_view patch;
        if (!encodePatch(asBytes(u.old), asBytes(op.value), &x.one, &patch)) continue;
        x.at[i] = {x.patches.size(), patch.size()};
        x.patches += patch;
      }
      for (size_t i = 0; i < n; i++) {
        if (x.at[i].second == 0) continue;
        x.ops[i] = LogOp{LogOpKind::kPatch, x.ops[i].tree, x.ops[i].key,
                         std::string_view(x.patches).substr(x.at[i].first, x.at[i].second)};
      }
    }
    return st;
  }, 0, commit);
}

}  // namespace vmstore::internal
