// FaultIo: an Io backend for tests that fails chosen calls, the way SQLite's test VFS does,
// and that can simulate a power loss.
//
// Contract
// - Every call is forwarded to the POSIX backend unless a rule fires first. A rule names
//   an operation, a substring of the file's path ("" matches every file), how many
//   matching calls to let through first (skip), how many to fail after that (times; -1:
//   every one) and the errno to fail with. A failed call changes nothing on storage.
//   mapShared() is kMap; close() and unlink() have no rules.
// - spaceLimit(bytes): a write that would make the files written through this backend
//   grow past `bytes` in total (counting from when the limit is set) fails with ENOSPC,
//   as a full file system does. clearSpaceLimit() lifts it.
// - calls(op) counts the calls of an operation seen so far (also the failed ones).
// - Power loss. trackUnsynced() (call it before opening the files under test) makes the
//   backend remember, per file (all descriptors of one file share it; a file is known by
//   its inode, so it keeps its history across rename), every write not yet durable:
//   - pwrite: the bytes it overwrites are saved first (bytes past the end of the file
//     count as zeros). A successful fdatasync of the file makes all its writes durable.
//   - mapShared: the range is not mapped from the file; anonymous private memory filled
//     with the file's current content (zeros past its end) is mapped at addr instead.
//     Stores into it behave like stores into a shared mapping that the kernel never
//     writes back on its own: a successful fdatasync of the file writes every 512-byte
//     sector the stores changed (compared with what the file holds) to the file with a
//     plain pwrite, then syncs it: durable. close() of the mapping's descriptor writes
//     the changed sectors to the file as unsynced writes (there without a power loss,
//     gone after one) and forgets the mapping; its memory stays, the caller unmaps it.
//     A new mapShared over (part of) a mapping's addresses does the same for that
//     mapping first; the parts it does not cover stay tracked. Changed sectors at or
//     past the end of the file are not written (a real mapping faults there). pwrite,
//     pread, ftruncate and fallocate see and update the mapped memory of their range,
//     as with a shared mapping; two live mappings of one file range do not see each
//     other's stores. mapShared refuses what mmap would: len 0 or an unaligned addr or
//     off (EINVAL), a descriptor not open O_RDWR (EACCES).
//   - A tracked call that cannot save the before-image (FaultIo keeps its own O_RDWR
//     descriptor per file, opened through /proc/self/fd) fails with that errno.
//   - Limitation: metadata is durable at once: creating a file, its size (ftruncate,
//     fallocate, a pwrite past the end), rename and unlink are never undone (syncDir is
//     not needed for them); a write past the end that a power loss undoes leaves zeros.
//   powerCut(seed, tear): the power fails. For every file the unsynced writes are undone,
//   newest first, by putting the saved bytes back (clipped to the file's size now);
//   unsynced mapped stores are dropped. With tear = true each 512-byte sector of the file
//   (offset / 512) ends up as it was after some prefix of the unsynced writes touching
//   it: for each such write, oldest first, a coin decides whether it reached the sector,
//   up to the first that did not; the unsynced changed sectors of mappings each reach
//   the file or not by a coin, on top. So no sector ever holds a mix of two versions.
//   The coins are a hash of seed, the path the file was first seen under, the write's
//   position in its history and the sector: the same seed and history tear the same way.
//   After powerCut the device is gone: open, pread, pwrite, fdatasync, ftruncate,
//   fallocate, rename, unlink, syncDir and mapShared fail with EIO and change nothing
//   (rules are not consulted, calls() still counts); close() still closes the descriptor.
//   Mappings are forgotten, their memory stays mapped (stores into it do no harm).
//   Without trackUnsynced(), powerCut only makes the device gone.
//   revive(): the device works again: the gone state and everything tracked are cleared
//   (tracking itself stays on if it was on: later writes are tracked afresh). Without a
//   power cut before it, the stores in live mappings are written to their files first
//   (kept, as the writes are) and the mappings forgotten: later stores into that memory
//   reach no file. Rules, the space limit and the counts are kept.
// - hold(op, pathPart): pwrite and fdatasync calls of that op on a matching path wait
//   (before doing anything) until unhold(); holding() counts the calls waiting now. For
//   tests that need an operation provably in progress while others run.
// - Thread-safe. While tracking (or gone), every call holds one mutex for its whole
//   duration, so powerCut() never interleaves with a call in flight. Install with setIo()
//   before opening the database under test. usesKernelOnly() is false.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "os/io.hpp"

namespace vmstore::internal {

class FaultIo : public Io {
 public:
  enum class Op { kOpen, kRead, kWrite, kSync, kTruncate, kRename, kSyncDir, kMap, kCount };
  struct Rule {
    Op op;
    std::string pathPart;
    uint64_t skip = 0;
    int64_t times = 1;
    int err = 5;  // EIO
  };

  FaultIo() = default;
  ~FaultIo() override;
  FaultIo(const FaultIo&) = delete;
  FaultIo& operator=(const FaultIo&) = delete;

  void fail(const Rule& rule);
  void clearRules();
  void spaceLimit(uint64_t bytes);
  void clearSpaceLimit();
  uint64_t calls(Op op) const;
  void hold(Op op, const std::string& pathPart);
  void unhold();
  uint64_t holding() const;

  // Power loss (see the contract above).
  void trackUnsynced();
  void powerCut(uint64_t seed, bool tear);
  void revive();

  int open(const std::string& path, int flags, mode_t mode) override;
  int close(int fd) override;
  ssize_t pread(int fd, const std::string& path, void* buf, size_t n, uint64_t off) override;
  ssize_t pwrite(int fd, const std::string& path, const void* buf, size_t n, uint64_t off) override;
  int fdatasync(int fd, const std::string& path) override;
  int ftruncate(int fd, const std::string& path, uint64_t size) override;
  int fallocate(int fd, const std::string& path, uint64_t offset, uint64_t len) override;
  int rename(const std::string& from, const std::string& to) override;
  int unlink(const std::string& path) override;
  int mapShared(int fd, const std::string& path, void* addr, size_t len, uint64_t off) override;
  int syncDir(const std::string& dir) override;
  bool usesKernelOnly() const override { return false; }

 private:
  struct Active {
    Rule rule;
    uint64_t seen = 0;
    int64_t failed = 0;
  };
  using FileKey = std::pair<uint64_t, uint64_t>;  // (st_dev, st_ino)
  // One write not yet durable: the bytes [off, off + before.size()) held `before` before it.
  struct Undo {
    uint64_t off;
    std::vector<uint8_t> before;
  };
  // A file under tracking, known by its inode.
  struct File {
    std::string name;  // the path it was first seen under (seeds the tearing coins)
    int fd = -1;       // own descriptor (O_RDWR, never O_DIRECT) for before-images and undo
    std::vector<Undo> undo;  // oldest first
  };
  // A range mapped by mapShared while tracking: anonymous memory at addr standing for
  // [off, off + len) of the file; shadow is what the file holds there (as far as known).
  struct Mapping {
    FileKey key;
    std::string path;
    int fd;
    uint8_t* addr;
    size_t len;
    uint64_t off;
    std::vector<uint8_t> shadow;
  };

  // Counts the call; true (errno set) when the device is gone or a rule says it fails.
  bool refusedLocked(Op op, const std::string& path);
  bool shouldFailLocked(Op op, const std::string& path);
  bool wouldExceedSpaceLocked(int fd, uint64_t end);
  // The tracked file behind fd, created (with its own descriptor) on first sight.
  // nullptr with errno set when it cannot be opened.
  File* fileOfLocked(int fd, const std::string& path, FileKey* key);
  // Reads [off, off + n) of f, zeros past its end. False with errno set on failure.
  bool readFileLocked(const File& f, uint8_t* out, size_t n, uint64_t off);
  // The file's size became `size` (ftruncate, O_TRUNC): saved bytes past it are dropped
  // and the mappings' shadows (and memory past the end) follow.
  void clipLocked(const FileKey& key, uint64_t size);
  // Makes m's shadow cover exactly the part of m inside a file of `size` bytes.
  void resizeShadowLocked(Mapping& m, uint64_t size);
  // Writes the sectors of m (those in [from, to) of it) that differ from its shadow to
  // the file as unsynced writes.
  void spillLocked(Mapping& m, size_t from = 0, size_t to = SIZE_MAX);
  // Forgets a file once no name and no mapping leads to it any more (after unlink, rename).
  void dropIfGoneLocked(const FileKey& key);
  // Drops every saved before-image and mapping, closes the own descriptors.
  void forgetAllLocked();

  // Waits while a hold matches (lk holds mutex_; released while waiting).
  void waitWhileHeld(std::unique_lock<std::mutex>& lk, Op op, const std::string& path);

  mutable std::mutex mutex_;
  bool held_ = false;
  Op heldOp_ = Op::kWrite;
  std::string heldPath_;
  uint64_t waiting_ = 0;
  std::condition_variable unheld_;
  std::vector<Active> rules_;
  uint64_t counts_[static_cast<int>(Op::kCount)] = {};
  bool limited_ = false;
  uint64_t spaceLeft_ = 0;
  bool tracking_ = false;
  bool gone_ = false;
  std::map<FileKey, std::unique_ptr<File>> files_;
  std::vector<Mapping> mappings_;
};

}  // namespace vmstore::internal
