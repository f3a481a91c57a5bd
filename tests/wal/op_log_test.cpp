// Tests of the operation log (wal/op_log.hpp) and its record format (wal/log_record.hpp).
#include "wal/op_log.hpp"

#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "buffer/checksum.hpp"
#include "os/fault_io.hpp"
#include "unit_util.hpp"

namespace vmstore::internal {
namespace {

using vmsunit::ScratchDir;

Options logOptions(Durability d = Durability::kSync, uint64_t logSize = 4ull << 20) {
  Options o;
  o.durability = d;
  o.log_size = logSize;
  return o;
}

// Reserves room for op's record and appends it, as a write does: the record's end, or 0
// (and a test failure) when the reservation fails.
uint64_t logOne(OpLog& log, const LogOp& op) {
  size_t size = recordSize({&op, 1});
  Status s = log.reserve(size);
  EXPECT_TRUE(s.ok()) << s.toString();
  return s.ok() ? log.append({&op, 1}, size) : 0;
}

// Whether the file system under dir allows O_DIRECT (the async log's whole-block write-out).
bool directIoAllowed(const ScratchDir& dir) {
  int probe = ::open(dir.file("probe").c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644);
  if (probe < 0) return false;
  ::close(probe);
  return true;
}

std::vector<std::vector<std::string>> replayAll(OpLog& log, uint32_t epoch, ReplayInfo* info) {
  std::vector<std::vector<std::string>> out;
  Status s = log.replay(epoch, [&](std::span<const LogOp> ops) {
    std::vector<std::string> r;
    for (const LogOp& op : ops) {
      r.push_back(std::to_string(static_cast<int>(op.kind)) + "|" + std::string(op.tree) + "|" + std::string(op.key) +
                  "|" + std::string(op.value));
    }
    out.push_back(r);
    return Status::OK();
  }, info);
  EXPECT_TRUE(s.ok()) << s.toString();
  return out;
}

TEST(LogRecord, RoundTripsAndRejectsEveryDamage) {
  std::string big(3000, 'v');
  LogOp ops[] = {{LogOpKind::kPut, "t", "key", big}, {LogOpKind::kDelete, "", "k2", {}},
                 {LogOpKind::kCreateTree, "new", {}, {}}, {LogOpKind::kDropTree, "old", {}, {}}};
  size_t size = recordSize(ops);
  ASSERT_EQ(size % 8, 0u);
  std::vector<uint8_t> buf(size);
  encodeRecord(ops, 77, 4096, 5, buf.data());
  uint64_t salt = 0;
  size_t got = 0;
  std::vector<LogOp> out;
  ASSERT_EQ(decodeRecord(buf, &salt, 4096, 5, &got, &out), RecordCheck::kValid);
  EXPECT_EQ(salt, 77u);
  EXPECT_EQ(got, size);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].value, big);
  EXPECT_EQ(out[1].key, "k2");
  EXPECT_EQ(out[2].tree, "new");
  EXPECT_EQ(out[3].kind, LogOpKind::kDropTree);
  // Wrong expectations.
  salt = 78;
  EXPECT_EQ(decodeRecord(buf, &salt, 4096, 5, &got, &out), RecordCheck::kMismatch);
  salt = 0;
  EXPECT_EQ(decodeRecord(buf, &salt, 0, 5, &got, &out), RecordCheck::kMismatch);
  EXPECT_EQ(decodeRecord(buf, &salt, 4096, 6, &got, &out), RecordCheck::kMismatch);
  // Every single flipped byte of header or payload, and every truncation.
  const size_t used = sizeof(LogRecordHeader) + 4 * 11 + (1 + 3 + 3000) + 2 + 3 + 3;  // no padding after
  ASSERT_LE(used, size);
  for (size_t i = 0; i < used; i += 7) {
    std::vector<uint8_t> bad = buf;
    bad[i] ^= 0x40;
    salt = 0;
    EXPECT_NE(decodeRecord(bad, &salt, 4096, 5, &got, &out), RecordCheck::kValid) << "byte " << i;
  }
  for (size_t n : {size_t{0}, size_t{31}, size_t{32}, size / 2, size - 9}) {
    salt = 0;
    EXPECT_NE(decodeRecord(std::span<const uint8_t>(buf.data(), n), &salt, 4096, 5, &got, &out), RecordCheck::kValid)
        << n << " bytes";
  }
}

TEST(LogRecord, SealedInTwoStepsEqualsEncodedAtOnce) {
  LogOp ops[] = {{LogOpKind::kPut, "t", "key", "value"}, {LogOpKind::kPatch, "t", "k", "patch"}};
  size_t size = recordSize(ops);
  std::vector<uint8_t> once(size), twice(size, 0xEE);
  encodeRecord(ops, 9, 8192, 3, once.data());
  uint32_t payloadCrc = encodeUnsealed(ops, 9, twice.data());
  sealRecord(twice.data(), payloadCrc, 8192, 3);
  EXPECT_EQ(once, twice);
}

TEST(LogRecord, RecordsOfFormatVersion2AreStillRead) {
  // Before version 3 the CRC covered the header (after the CRC field) first, and the
  // count had no flag bit.
  LogOp ops[] = {{LogOpKind::kPut, "t", "key", "value"}, {LogOpKind::kDelete, "t", "gone", {}}};
  size_t size = recordSize(ops);
  std::vector<uint8_t> buf(size);
  encodeRecord(ops, 77, 4096, 5, buf.data());
  LogRecordHeader h;
  std::memcpy(&h, buf.data(), sizeof(h));
  ASSERT_NE(h.count & (1u << 31), 0u);
  h.count &= ~(1u << 31);
  std::memcpy(buf.data(), &h, sizeof(h));
  std::vector<uint8_t> stale = buf;  // the flag cleared, the CRC not redone: damaged
  h.crc = vmstore::internal::crc32c(buf.data() + 4, sizeof(h) - 4 + h.length);
  std::memcpy(buf.data(), &h, sizeof(h));
  uint64_t salt = 0;
  size_t got = 0;
  std::vector<LogOp> out;
  ASSERT_EQ(decodeRecord(buf, &salt, 4096, 5, &got, &out), RecordCheck::kValid);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].value, "value");
  EXPECT_EQ(out[1].key, "gone");
  salt = 0;
  EXPECT_EQ(decodeRecord(stale, &salt, 4096, 5, &got, &out), RecordCheck::kMismatch);
}

TEST(OpLog, AppendedRecordsReplayInOrderAfterReopen) {
  ScratchDir dir;
  {
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), logOptions()));
    UNIT_ASSERT_OK(log.startWriting(3));
    for (int i = 0; i < 1000; i++) {
      std::string k = "k" + std::to_string(i), v(i % 50, 'x');
      LogOp op{LogOpKind::kPut, "", k, v};
      uint64_t lsn = logOne(log, op);
      if (i % 100 == 0) UNIT_ASSERT_OK(log.waitDurable(lsn));
    }
    UNIT_ASSERT_OK(log.close());
  }
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions()));
  ReplayInfo info;
  auto recs = replayAll(log, 3, &info);
  ASSERT_EQ(recs.size(), 1000u);
  EXPECT_EQ(info.records, 1000u);
  EXPECT_EQ(recs[999][0], "1||k999|" + std::string(999 % 50, 'x'));
  // Another epoch's view of the same file: nothing.
  EXPECT_TRUE(replayAll(log, 4, &info).empty());
  EXPECT_TRUE(replayAll(log, 2, &info).empty());
}

// A log whose records are all in its file (flushed, then closed) replays them reading
// about what they take: the file in small first chunks, and of the ring (4 MiB with the
// default log_size) only the header where the next record would be. The open of a
// database after a clean close goes this way.
TEST(OpLog, ReplayOfALogThatEndsInItsFileReadsLittleMore) {
  ScratchDir dir;
  const Options o = logOptions(Durability::kSync, Options{}.log_size);
  uint64_t appended = 0;
  {
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), o));
    UNIT_ASSERT_OK(log.startWriting(1));
    for (int i = 0; i < 20; i++) {
      std::string k = "k" + std::to_string(i), v(100, 'v');
      LogOp op{LogOpKind::kPut, "", k, v};
      ASSERT_NE(logOne(log, op), 0u);
    }
    UNIT_ASSERT_OK(log.flush());
    appended = log.bytes();
    UNIT_ASSERT_OK(log.close());
  }
  ASSERT_EQ(std::filesystem::file_size(dir.path() / OpLog::ringFileName()), 4u << 20) << "the default ring";
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), o));
  ReplayInfo info;
  ASSERT_EQ(replayAll(log, 1, &info).size(), 20u);
  EXPECT_EQ(info.bytes, appended);
  EXPECT_LE(info.readBytes, (64u << 10) + sizeof(LogRecordHeader)) << "the whole ring or a large window was read";
  ReplayInfo other;  // an interval the file does not hold
  EXPECT_TRUE(replayAll(log, 2, &other).empty());
  EXPECT_LE(other.readBytes, (64u << 10) + sizeof(LogRecordHeader));
}

TEST(OpLog, CutMovesToTheOtherFileAndNeverReplaysAnOldIntervalOrSession) {
  ScratchDir dir;
  auto put = [](OpLog& log, const std::string& k) { return logOne(log, {LogOpKind::kPut, "", k, "v"}); };
  {
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), logOptions()));
    UNIT_ASSERT_OK(log.startWriting(1));
    for (int i = 0; i < 100; i++) put(log, "old" + std::to_string(i));
    uint64_t cutLsn = log.cut(2);  // a checkpoint of epoch 1 begins
    EXPECT_EQ(log.bytes(), 0u);
    put(log, "new");
    log.covered(cutLsn);  // ... and committed
    UNIT_ASSERT_OK(log.close());
  }
  {
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), logOptions()));
    ReplayInfo info;
    EXPECT_EQ(replayAll(log, 1, &info).size(), 100u) << "the cut must leave epoch 1's file alone";
    auto recs = replayAll(log, 2, &info);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0][0], "1||new|v");
    // Epoch 3 reuses epoch 1's file from the start: epoch 1's records behind it are gone.
    UNIT_ASSERT_OK(log.startWriting(2));
    put(log, "again");
    log.cut(3);
    put(log, "three");
    UNIT_ASSERT_OK(log.close());
  }
  {
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), logOptions()));
    ReplayInfo info;
    EXPECT_TRUE(replayAll(log, 1, &info).empty()) << "records of epoch 1 behind the reused start were replayed";
    auto recs = replayAll(log, 3, &info);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0][0], "1||three|v");
    // A new session (new salt) writing epoch 2 from the start again: its first record
    // overwrites "again"; records of the other session later in the file never count.
    UNIT_ASSERT_OK(log.startWriting(2));
    put(log, "s2");
    UNIT_ASSERT_OK(log.close());
  }
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions()));
  ReplayInfo info;
  auto recs = replayAll(log, 2, &info);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0][0], "1||s2|v");
  UNIT_ASSERT_OK(log.discard());
  EXPECT_EQ(log.fileBytes(), 0u);
  EXPECT_TRUE(replayAll(log, 2, &info).empty());
}

TEST(OpLog, TheTwoFilesShareLogSizeAndACoveredFileIsCutBack) {
  // log_size 4 MiB: a 256 KiB ring, a budget of 3,840 KiB for the files; a covered file
  // keeps a quarter (960 KiB), a cut is due past five eighths (2,400 KiB).
  ScratchDir dir;
  const uint64_t logSize = 4ull << 20;
  const uint64_t budget = 3840ull << 10;
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions(Durability::kSync, logSize)));
  UNIT_ASSERT_OK(log.startWriting(1));
  const std::string v(1000, 'v');
  const size_t size = recordSize(std::array{LogOp{LogOpKind::kPut, "", "k000000", v}});
  // Appends until the file is full; every append's bytes checked against the bounds.
  auto fill = [&](const std::string& prefix, bool* sawDue) {
    int n = 0;
    for (;; n++) {
      std::string k = prefix + std::to_string(100000 + n);
      LogOp op{LogOpKind::kPut, "", k, v};
      Status st = log.reserve(size);
      if (st.code() == Status::Code::kBusy) break;
      if (!st.ok()) {
        ADD_FAILURE() << st.toString();
        break;
      }
      log.append({&op, 1}, size);
      EXPECT_EQ(log.cutDue(), log.bytes() > budget / 8 * 5) << log.bytes();
      *sawDue = *sawDue || log.cutDue();
      EXPECT_LE(log.fileBytes(), logSize);
    }
    return n;
  };
  bool due = false;
  const int first = fill("a", &due);
  EXPECT_TRUE(due);
  EXPECT_GT(log.bytes(), budget - 2 * size) << "alone, the file may use the whole budget";
  const uint64_t cutLsn = log.cut(2);
  // Beside the uncovered file of epoch 1 there is almost no room.
  due = false;
  const int before = fill("b", &due);
  EXPECT_LE(log.bytes() + static_cast<uint64_t>(first) * size, budget);
  log.covered(cutLsn);  // epoch 1's file cut back to a quarter
  EXPECT_LE(log.fileBytes(), logSize);
  const int after = fill("c", &due);
  EXPECT_TRUE(due);
  EXPECT_GT(log.bytes(), budget / 4 * 3 - 2 * size) << "beside a covered file, three quarters";
  EXPECT_LE(log.bytes(), budget / 4 * 3);
  EXPECT_LE(log.fileBytes(), logSize);
  UNIT_ASSERT_OK(log.flush());
  UNIT_ASSERT_OK(log.close());
  OpLog again;
  UNIT_ASSERT_OK(again.open(dir.str(), logOptions(Durability::kSync, logSize)));
  ReplayInfo info;
  auto recs = replayAll(again, 2, &info);
  ASSERT_EQ(recs.size(), static_cast<size_t>(before + after));
  EXPECT_EQ(recs.back()[0], "1||c" + std::to_string(100000 + after - 1) + "|" + v);
}

TEST(OpLog, AFlushAfterACutCoversTheFileBeforeIt) {
  ScratchDir dir;
  FaultIo faults;
  faults.trackUnsynced();
  Io* prev = setIo(&faults);
  {
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), logOptions()));
    UNIT_ASSERT_OK(log.startWriting(1));
    logOne(log, {LogOpKind::kPut, "", "before", "v"});
    log.cut(2);  // the checkpoint of epoch 1 has not committed
    uint64_t lsn = logOne(log, {LogOpKind::kPut, "", "after", "v"});
    UNIT_ASSERT_OK(log.waitDurable(lsn));
    faults.powerCut(1, false);
    log.close();
  }
  faults.revive();
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions()));
  ReplayInfo info;
  EXPECT_EQ(replayAll(log, 1, &info).size(), 1u) << "the record before the cut was not made durable";
  EXPECT_EQ(replayAll(log, 2, &info).size(), 1u);
  log.close();
  setIo(prev);
}

// Writers append large records (their copies into the log run after the append lock)
// and wait for each; the power fails while they run. Every record a wait acknowledged
// is replayed, and each writer's records come back as a prefix of what it wrote: a
// flush never syncs past a record whose copy was still in progress. With tear, each
// 512-byte sector written since the last sync is old or new at random (under async the
// write-out rewrites the first block of each write-out with O_DIRECT: its records
// already synced must survive that).
void acknowledgedSurviveAPowerCut(Durability durability, bool tear = false) {
  ScratchDir dir;
  FaultIo faults;
  faults.trackUnsynced();
  Io* prev = setIo(&faults);
  constexpr int kThreads = 4;
  std::atomic<int> acked[kThreads];
  for (auto& a : acked) a = 0;
  {
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), logOptions(durability, 64ull << 20)));
    UNIT_ASSERT_OK(log.startWriting(1));
    std::atomic<bool> stop{false};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++) {
      ts.emplace_back([&, t] {
        const std::string value(20000 + t, static_cast<char>('a' + t));
        for (int i = 0; !stop.load(); i++) {
          const std::string key = std::to_string(t) + ":" + std::to_string(i);  // the op only views it
          LogOp op{LogOpKind::kPut, "", key, value};
          size_t size = recordSize({&op, 1});
          if (!log.reserve(size).ok()) return;
          uint64_t lsn = log.append({&op, 1}, size);
          Status s = log.waitDurable(lsn);
          if (!s.ok() || stop.load()) return;
          acked[t] = i + 1;
        }
      });
    }
    // The cut comes once enough writes were acknowledged to mean something (under a
    // slow build, such as ThreadSanitizer's, 300 ms may not be enough), at most 20 s.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    auto ackedSoFar = [&] {
      int total = 0;
      for (const auto& a : acked) total += a.load();
      return total;
    };
    while (ackedSoFar() <= 2 * kThreads && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    faults.powerCut(3, tear);
    stop = true;
    for (auto& th : ts) th.join();
    log.close();
  }
  faults.revive();
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions(durability, 64ull << 20)));
  int next[kThreads] = {};
  ReplayInfo info;
  Status s = log.replay(1, [&](std::span<const LogOp> ops) {
    std::string key(ops[0].key);
    int t = std::stoi(key.substr(0, key.find(':')));
    int i = std::stoi(key.substr(key.find(':') + 1));
    EXPECT_EQ(i, next[t]) << "thread " << t << ": a record is missing before " << key;
    EXPECT_EQ(ops[0].value, std::string(20000 + t, static_cast<char>('a' + t))) << key;
    next[t] = i + 1;
    return Status::OK();
  }, &info);
  UNIT_ASSERT_OK(s);
  int total = 0;
  for (int t = 0; t < kThreads; t++) {
    EXPECT_GE(next[t], acked[t].load()) << "thread " << t << ": an acknowledged record was lost";
    total += acked[t].load();
  }
  EXPECT_GT(total, kThreads) << "too few writes acknowledged before the cut to mean anything";
  log.close();
  setIo(prev);
}

TEST(OpLog, AcknowledgedRecordsSurviveAPowerCutAmongConcurrentWritersSync) {
  acknowledgedSurviveAPowerCut(Durability::kSync);
}

TEST(OpLog, AcknowledgedRecordsSurviveAPowerCutAmongConcurrentWritersAsync) {
  acknowledgedSurviveAPowerCut(Durability::kAsync);
}

TEST(OpLog, AcknowledgedRecordsSurviveATearingPowerCutAmongConcurrentWritersAsync) {
  acknowledgedSurviveAPowerCut(Durability::kAsync, /*tear=*/true);
}

TEST(OpLog, AcknowledgedRecordsSurviveATearingPowerCutAmongConcurrentWritersSync) {
  acknowledgedSurviveAPowerCut(Durability::kSync, /*tear=*/true);
}

// Overwrites one byte of a file in dir.
void damage(const ScratchDir& dir, const std::string& name, uint64_t at) {
  int fd = ::open(dir.file(name).c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << name;
  char c = 'Z';
  ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(at)), 1);
  ::close(fd);
}

// Three records of 600-byte values in epoch 1's file, closed (so all three are in the
// file and still in the ring): their ends.
std::array<uint64_t, 3> threeRecords(const ScratchDir& dir) {
  std::array<uint64_t, 3> ends{};
  OpLog log;
  EXPECT_TRUE(log.open(dir.str(), logOptions()).ok());
  EXPECT_TRUE(log.startWriting(1).ok());
  for (int i = 0; i < 3; i++) {
    std::string k = "k" + std::to_string(i), v(600, static_cast<char>('a' + i));
    LogOp op{LogOpKind::kPut, "", k, v};
    ends[i] = logOne(log, op);
  }
  EXPECT_TRUE(log.close().ok());
  return ends;
}

TEST(OpLog, ReplayStopsAtATornRecord) {
  ScratchDir dir;
  auto ends = threeRecords(dir);
  // One byte in the middle of the second record, in the file and in the ring (which
  // holds the file's bytes at their offsets while the log is smaller than the ring).
  damage(dir, OpLog::fileName(1), ends[0] + 300);
  damage(dir, OpLog::ringFileName(), ends[0] + 300);
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions()));
  ReplayInfo info;
  auto recs = replayAll(log, 1, &info);
  EXPECT_EQ(recs.size(), 1u) << "a record after a torn one was replayed";
  EXPECT_EQ(info.bytes, ends[0]);
}

TEST(OpLog, ARecordTornInItsFileIsReadFromTheRing) {
  ScratchDir dir;
  auto ends = threeRecords(dir);
  damage(dir, OpLog::fileName(1), ends[0] + 300);
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions()));
  ReplayInfo info;
  auto recs = replayAll(log, 1, &info);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[1][0], "1||k1|" + std::string(600, 'b'));
  EXPECT_EQ(info.bytes, ends[2]);
}

// Records still in the ring when the process dies (most or all of them not yet written
// out to the file) are replayed, by a log whose own ring would be of another size.
TEST(OpLog, RecordsInTheRingSurviveACrashOfTheProcess) {
  ScratchDir dir;
  constexpr int kRecords = 2000;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    OpLog* log = new OpLog;  // never closed: the process ends as a crash would end it
    if (!log->open(dir.str(), logOptions(Durability::kAsync, 64ull << 20)).ok() || !log->startWriting(1).ok()) {
      _exit(2);
    }
    for (int i = 0; i < kRecords; i++) {
      std::string k = "k" + std::to_string(i), v(i % 300, static_cast<char>('a' + i % 26));
      LogOp op{LogOpKind::kPut, "", k, v};
      size_t size = recordSize({&op, 1});
      if (!log->reserve(size).ok()) _exit(3);
      log->append({&op, 1}, size);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions(Durability::kAsync, 1ull << 20)));  // a 64 KiB ring
  ReplayInfo info;
  auto recs = replayAll(log, 1, &info);
  ASSERT_EQ(recs.size(), static_cast<size_t>(kRecords));
  for (int i = 0; i < kRecords; i += 97) {
    EXPECT_EQ(recs[i][0], "1||k" + std::to_string(i) + "|" + std::string(i % 300, static_cast<char>('a' + i % 26)));
  }
}

// With a 1 MiB log_size the ring is 64 KiB: records over 16 KiB, and records that find
// the ring full of records not yet written out, go to the file directly. Four threads
// mix both, with flushes now and then; every record replays, in the order of its LSN.
void largeRecordsGoToTheFile(Durability durability) {
  ScratchDir dir;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 300;
  std::vector<std::pair<uint64_t, std::string>> appended;  // (end, key)
  std::mutex appendedMutex;
  {
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), logOptions(durability, 1ull << 20)));
    UNIT_ASSERT_OK(log.startWriting(1));
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++) {
      ts.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; i++) {
          std::string k = std::to_string(t) + ":" + std::to_string(i);
          std::string v(i % 7 == 0 ? 20000 + t : 100 + i, static_cast<char>('a' + t));
          LogOp op{LogOpKind::kPut, "", k, v};
          size_t size = recordSize({&op, 1});
          Status s = log.reserve(size);
          if (s.code() == Status::Code::kBusy) return;  // the file is full (no cut here)
          ASSERT_TRUE(s.ok()) << s.toString();
          uint64_t end = log.append({&op, 1}, size);
          {
            std::lock_guard g(appendedMutex);
            appended.emplace_back(end, k);
          }
          if (i % 50 == 49) {
            ASSERT_TRUE(log.waitDurable(end).ok());
          }
        }
      });
    }
    for (auto& th : ts) th.join();
    UNIT_ASSERT_OK(log.failure());
    UNIT_ASSERT_OK(log.close());
  }
  std::sort(appended.begin(), appended.end());
  ASSERT_GT(appended.size(), 100u);
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions(durability, 1ull << 20)));
  ReplayInfo info;
  auto recs = replayAll(log, 1, &info);
  ASSERT_EQ(recs.size(), appended.size());
  for (size_t i = 0; i < recs.size(); i++) {
    const std::string& k = appended[i].second;
    int t = std::stoi(k.substr(0, k.find(':')));
    int n = std::stoi(k.substr(k.find(':') + 1));
    ASSERT_EQ(recs[i][0], "1||" + k + "|" + std::string(n % 7 == 0 ? 20000 + t : 100 + n, static_cast<char>('a' + t)))
        << "record " << i;
  }
  EXPECT_EQ(info.bytes, appended.back().first);
}

TEST(OpLog, RecordsTooLargeForTheRingOrFindingItFullGoToTheFile) { largeRecordsGoToTheFile(Durability::kSync); }

// Under async the write-out also goes with O_DIRECT around the records written directly.
TEST(OpLog, RecordsTooLargeForTheRingOrFindingItFullGoToTheFileAsync) {
  largeRecordsGoToTheFile(Durability::kAsync);
}

// Pages of fd's file in the page cache.
size_t pagesCached(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0) return 0;
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return 0;
  std::vector<unsigned char> in((static_cast<size_t>(st.st_size) + 4095) / 4096);
  size_t n = 0;
  if (mincore(p, static_cast<size_t>(st.st_size), in.data()) == 0) {
    for (unsigned char c : in) n += c & 1;
  }
  munmap(p, static_cast<size_t>(st.st_size));
  return n;
}

// The log's write-out bypasses the page cache (direct_io, where the file system allows
// O_DIRECT), a flush's last block and sync's zero-fill ahead included: after 16 MiB of
// records, the log file holds few pages in the cache (those of records that found the
// ring full, if any), not the log.
void writeOutLeavesTheLogOutOfThePageCache(Durability durability) {
  ScratchDir dir;
  if (!directIoAllowed(dir)) GTEST_SKIP() << "the file system here refuses O_DIRECT";
  constexpr size_t kRecords = 4096;
  const std::string value(4000, 'v');
  {
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), logOptions(durability, 256ull << 20)));
    UNIT_ASSERT_OK(log.startWriting(1));
    uint64_t end = 0;
    for (size_t i = 0; i < kRecords; i++) {
      const std::string key = "k" + std::to_string(i);
      end = logOne(log, LogOp{LogOpKind::kPut, "", key, value});
      if (i % 512 == 511) UNIT_ASSERT_OK(log.waitDurable(end));  // some flushes between
    }
    UNIT_ASSERT_OK(log.flush());
    int fd = ::open(log.path().c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    const size_t cached = pagesCached(fd);
    ::close(fd);
    const uint64_t pages = end / 4096;
    EXPECT_LT(cached, pages / 8) << cached << " of the log's " << pages << " pages are in the page cache";
    UNIT_ASSERT_OK(log.close());
  }
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions(durability, 256ull << 20)));
  ReplayInfo info;
  auto recs = replayAll(log, 1, &info);
  ASSERT_EQ(recs.size(), kRecords);
  for (size_t i = 0; i < kRecords; i++) ASSERT_EQ(recs[i][0], "1||k" + std::to_string(i) + "|" + value) << i;
}

TEST(OpLog, AsyncWriteOutLeavesTheLogOutOfThePageCache) {
  writeOutLeavesTheLogOutOfThePageCache(Durability::kAsync);
}

TEST(OpLog, SyncWriteOutLeavesTheLogOutOfThePageCache) {
  writeOutLeavesTheLogOutOfThePageCache(Durability::kSync);
}

// A flush writes its last block whole with O_DIRECT, the ring's bytes past the records
// included. A record too large for the ring goes to its place in the file directly: if
// it starts in that block, it must wait for the flush's write, which would otherwise
// write the ring's stale bytes over its first part. Here the flush's write is held; the
// large record must not reach the file before it is released, and both replay.
TEST(OpLog, ARecordWrittenDirectlyWaitsForTheFlushOfItsBlock) {
  ScratchDir dir;
  if (!directIoAllowed(dir)) GTEST_SKIP() << "the file system here refuses O_DIRECT";
  FaultIo faults;
  struct Restore {
    Io* prev;
    ~Restore() { setIo(prev); }
  } restore{setIo(&faults)};
  Options options = logOptions(Durability::kSync, 1ull << 20);  // a 64 KiB ring: 16 KiB records
  options.log_zero_fill = false;  // no other write to the file meanwhile
  const std::string small(300, 's'), large(20000, 'L');
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), options));
  UNIT_ASSERT_OK(log.startWriting(1));
  const uint64_t smallEnd = logOne(log, LogOp{LogOpKind::kPut, "", "small", small});
  ASSERT_LT(smallEnd, 4096u);
  faults.hold(FaultIo::Op::kWrite, OpLog::fileName(1));
  Status flushed;
  std::thread flusher([&] { flushed = log.waitDurable(smallEnd); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (faults.holding() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (faults.holding() < 1) {  // (the thread is joined before the test ends)
    faults.unhold();
    flusher.join();
    FAIL() << "the flush's write was not held";
  }
  std::atomic<uint64_t> largeEnd{0};
  std::thread appender([&] { largeEnd = logOne(log, LogOp{LogOpKind::kPut, "", "large", large}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(faults.holding(), 1u) << "the large record was written while the flush of its block was held";
  EXPECT_EQ(largeEnd.load(), 0u);
  faults.unhold();
  flusher.join();
  appender.join();
  UNIT_ASSERT_OK(flushed);
  UNIT_ASSERT_OK(log.waitDurable(largeEnd));
  UNIT_ASSERT_OK(log.close());
  OpLog replayed;
  UNIT_ASSERT_OK(replayed.open(dir.str(), options));
  ReplayInfo info;
  auto recs = replayAll(replayed, 1, &info);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0][0], "1||small|" + small);
  EXPECT_EQ(recs[1][0], "1||large|" + large);
}

// Under async an O_DIRECT write-out starts at the block holding the first byte not yet
// written out and writes that block's earlier bytes again, from the ring: the ring must
// not take new records over them meanwhile. A flush leaves the file written out to an
// unaligned end; then, with the log file's writes held, records fill the 64 KiB ring
// (the flusher's write-out and then a record that finds the ring full wait on the hold).
// Once released, every record replays whole.
TEST(OpLog, AsyncKeepsTheRingBytesOfTheBlockItWritesOutAgain) {
  ScratchDir dir;
  if (!directIoAllowed(dir)) GTEST_SKIP() << "the file system here refuses O_DIRECT";
  FaultIo faults;
  Io* prev = setIo(&faults);
  std::vector<std::string> keys;
  const std::string value(1000, 'w');
  {
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), logOptions(Durability::kAsync, 1ull << 20)));  // a 64 KiB ring
    UNIT_ASSERT_OK(log.startWriting(1));
    uint64_t end = 0;
    for (int i = 0; i < 3; i++) {
      keys.push_back("first" + std::to_string(i));
      end = logOne(log, LogOp{LogOpKind::kPut, "", keys.back(), std::string(300, 'f')});
    }
    UNIT_ASSERT_OK(log.waitDurable(end));
    ASSERT_NE(end % 4096, 0u);
    faults.hold(FaultIo::Op::kWrite, OpLog::fileName(1));
    std::thread writer([&] {
      int i = 0;
      auto one = [&] {
        std::string key = "k" + std::to_string(i++);
        end = logOne(log, LogOp{LogOpKind::kPut, "", key, value});
        keys.push_back(key);
      };
      // Past half the ring, which asks the flusher to write out; then, once its write-out
      // is held, on until a record finds the ring full. (A record that found it full
      // first would hold the append lock while held, and the flusher, which reads the
      // end under that lock, would never reach its write: a loaded machine did that.)
      while (end < (32u << 10) + 2000) one();
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (faults.holding() < 1 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      while (end < (64u << 10) + 3000) one();
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (faults.holding() < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(faults.holding(), 2u) << "the write-out and a record that found the ring full were not both held";
    faults.unhold();
    writer.join();
    UNIT_ASSERT_OK(log.flush());
    UNIT_ASSERT_OK(log.close());
  }
  setIo(prev);
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions(Durability::kAsync, 1ull << 20)));
  ReplayInfo info;
  auto recs = replayAll(log, 1, &info);
  ASSERT_EQ(recs.size(), keys.size());
  for (size_t i = 0; i < keys.size(); i++) {
    ASSERT_EQ(recs[i][0], "1||" + keys[i] + "|" + (i < 3 ? std::string(300, 'f') : value)) << i;
  }
}

// The background write-out of a half-full ring writes whole 4 KiB blocks only, so the
// file may end inside a record: its first bytes in the file, the rest only in the ring.
// The ring must keep that record whole until the file holds all of it, since replay
// takes a record from the file or from the ring, never a part from each. Here the
// write-out ends at 32 KiB, inside record 31; then, with the file's writes held, records
// fill the 64 KiB ring up to where its next lap would reach that record's first bytes.
// A copy of the log taken then (a crash of the process) replays every record
// acknowledged. (Found by `make crash-test`: a loaded machine stalled the write-out.)
TEST(OpLog, AsyncKeepsARecordTheFileHoldsInPartWholeInTheRing) {
  ScratchDir dir;
  if (!directIoAllowed(dir)) GTEST_SKIP() << "the file system here refuses O_DIRECT";
  FaultIo faults;
  struct Restore {  // the I/O layer goes back even when an assertion ends the test early
    Io* prev;
    ~Restore() { setIo(prev); }
  } restore{setIo(&faults)};
  Options options = logOptions(Durability::kAsync, 1ull << 20);  // a 64 KiB ring
  options.sync_interval_ms = 600000;  // no periodic flush: only the half-full write-out
  const std::string value(1000, 'v');
  std::vector<std::string> keys;
  for (int i = 0; i < 94; i++) {
    char key[8];
    std::snprintf(key, sizeof(key), "k%03d", i);
    keys.push_back(key);
  }
  std::vector<LogOp> ops;
  for (int i = 0; i < 94; i++) {
    ops.push_back(LogOp{LogOpKind::kPut, "", keys[i], std::string_view(value).substr(0, i < 93 ? 1000 : 753)});
  }
  ASSERT_EQ(recordSize({&ops[0], 1}), 1048u);
  ASSERT_EQ(recordSize({&ops[93], 1}), 800u);  // ends at 98,216: within 280 bytes of the next lap
  std::atomic<size_t> acked{0};
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), options));
  UNIT_ASSERT_OK(log.startWriting(1));
  for (size_t i = 0; i < 32; i++) {  // record 31 is [32,488, 33,536): past half the ring
    logOne(log, ops[i]);
    acked++;
  }
  // The writer writes [0, 32 KiB): record 31's header reaches the file.
  const std::string file = dir.file(OpLog::fileName(1));
  bool written = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       !written && std::chrono::steady_clock::now() < until;) {
    LogRecordHeader h{};
    int fd = ::open(file.c_str(), O_RDONLY);
    written = fd >= 0 && ::pread(fd, &h, sizeof(h), 32488) == sizeof(h) && h.offset == 32488;
    if (fd >= 0) ::close(fd);
    if (!written) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(written) << "the half-full ring was not written out";  // (no thread runs yet)
  faults.hold(FaultIo::Op::kWrite, OpLog::fileName(1));
  std::thread appender([&] {
    for (size_t i = 32; i < ops.size(); i++) {
      logOne(log, ops[i]);  // the last one may wait for the held file (the ring full)
      acked++;
    }
  });
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       acked < ops.size() - 1 && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // The last record either lands in the ring at once or waits for the held file.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // The process crashes now: what its files hold (the ring is mapped shared).
  const std::filesystem::path copy = dir.path() / "crashed";
  std::filesystem::create_directory(copy);
  for (const std::string& name : {OpLog::fileName(1), OpLog::ringFileName()}) {
    std::error_code ec;
    std::filesystem::copy_file(dir.file(name), copy / name, ec);
    EXPECT_FALSE(ec) << name << ": " << ec.message();
  }
  const size_t acknowledged = acked;
  std::vector<std::vector<std::string>> recs;
  {
    OpLog replayed;
    EXPECT_TRUE(replayed.open(copy.string(), options).ok());
    ReplayInfo info;
    recs = replayAll(replayed, 1, &info);
  }
  faults.unhold();
  appender.join();
  // The last record would reach record 31's first bytes in the ring: it went to the file.
  EXPECT_EQ(acknowledged, ops.size() - 1) << "the ring took a record over one the file holds only in part";
  ASSERT_GE(recs.size(), acknowledged) << "records acknowledged but not replayed";
  for (size_t i = 0; i < acknowledged; i++) {
    ASSERT_EQ(recs[i][0], "1||" + std::string(ops[i].key) + "|" + std::string(ops[i].value)) << i;
  }
  UNIT_ASSERT_OK(log.close());
}

TEST(OpLog, ConcurrentCommittersShareFlushes) {
  ScratchDir dir;
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions()));
  UNIT_ASSERT_OK(log.startWriting(1));
  const int threads = 8, each = 50;
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < each; i++) {
        std::string k = std::to_string(t) + ":" + std::to_string(i);
        LogOp op{LogOpKind::kPut, "", k, "v"};
        uint64_t lsn = logOne(log, op);
        if (lsn == 0 || !log.waitDurable(lsn).ok()) failures++;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LT(log.flushes(), static_cast<uint64_t>(threads * each)) << "no flush served two committers";
  EXPECT_GT(log.flushes(), 0u);
  UNIT_ASSERT_OK(log.close());
  OpLog again;
  UNIT_ASSERT_OK(again.open(dir.str(), logOptions()));
  ReplayInfo info;
  replayAll(again, 1, &info);
  EXPECT_EQ(info.records, static_cast<uint64_t>(threads * each));
}

// Without the zero-fill, whose syncs and writes would also count (its failures have
// tests of their own).
Options noZeroFill() {
  Options o = logOptions();
  o.log_zero_fill = false;
  return o;
}

// A log in a scratch directory writing from epoch 1, its I/O through `faults` while it
// lives (closed, and the I/O layer put back, at the end), counting the sync failures
// it reports.
struct LogOnFaults {
  explicit LogOnFaults(const Options& o) : prev(setIo(&faults)) {
    log.onSyncFailure = [this](const Status& s) {
      told++;
      lastTold = s;
    };
    opened = log.open(dir.str(), o).ok() && log.startWriting(1).ok();
  }
  ~LogOnFaults() {
    log.close();
    setIo(prev);
  }
  ScratchDir dir;
  FaultIo faults;
  Io* prev;
  OpLog log;
  bool opened = false;
  int told = 0;  // onSyncFailure calls
  Status lastTold;
};

TEST(OpLog, FailedFlushIsNeverRetried) {
  LogOnFaults f(noZeroFill());
  ASSERT_TRUE(f.opened);
  f.faults.fail({FaultIo::Op::kSync, "log-", 0, 1, EIO});
  LogOp op{LogOpKind::kPut, "", "k", "v"};
  uint64_t lsn = logOne(f.log, op);
  ASSERT_NE(lsn, 0u);
  Status s = f.log.waitDurable(lsn);
  EXPECT_EQ(s.code(), Status::Code::kIOError) << s.toString();
  EXPECT_EQ(f.lastTold.code(), Status::Code::kIOError);
  uint64_t syncs = f.faults.calls(FaultIo::Op::kSync);
  // The rule fired once only; a retry would now succeed, and must not happen.
  EXPECT_EQ(f.log.waitDurable(lsn).code(), Status::Code::kIOError);
  EXPECT_EQ(f.log.failure().code(), Status::Code::kIOError);
  EXPECT_EQ(f.faults.calls(FaultIo::Op::kSync), syncs) << "a failed flush was retried";
}

// onSyncFailure is told before any waiter wakes with the failure: a waiter that then
// writes again must find the database read-only already. Two threads wait for one
// record; the failure's callback takes 100 ms; neither may return before it is done.
TEST(OpLog, AFailedFlushIsToldBeforeItsWaitersWake) {
  LogOnFaults f(noZeroFill());
  ASSERT_TRUE(f.opened);
  std::atomic<bool> told{false};
  f.log.onSyncFailure = [&](const Status&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    told = true;
  };
  f.faults.fail({FaultIo::Op::kSync, "log-", 0, 1, EIO});
  LogOp op{LogOpKind::kPut, "", "k", "v"};
  const uint64_t lsn = logOne(f.log, op);
  ASSERT_NE(lsn, 0u);
  std::atomic<int> early{0};
  auto wait = [&] {
    Status s = f.log.waitDurable(lsn);
    EXPECT_EQ(s.code(), Status::Code::kIOError) << s.toString();
    if (!told) early++;
  };
  std::thread a(wait), b(wait);
  a.join();
  b.join();
  EXPECT_EQ(early.load(), 0) << "a waiter woke with the failure before onSyncFailure was done";
  EXPECT_TRUE(told);
}

// Durability sync writes its records out with pwrite at the flush: a failed write-out
// fails the log like a failed sync, once, and nothing is written again.
TEST(OpLog, FailedWriteOutIsNeverRetried) {
  LogOnFaults f(noZeroFill());
  ASSERT_TRUE(f.opened);
  LogOp op{LogOpKind::kPut, "", "k", "v"};
  uint64_t first = logOne(f.log, op);
  UNIT_ASSERT_OK(f.log.waitDurable(first));
  uint64_t writes = f.faults.calls(FaultIo::Op::kWrite);
  EXPECT_GT(writes, 0u) << "the record was not written with pwrite";
  f.faults.fail({FaultIo::Op::kWrite, "log-", 0, 1, EIO});
  uint64_t lsn = logOne(f.log, op);
  ASSERT_NE(lsn, 0u);
  EXPECT_EQ(f.log.waitDurable(lsn).code(), Status::Code::kIOError);
  EXPECT_EQ(f.told, 1);
  uint64_t after = f.faults.calls(FaultIo::Op::kWrite);
  EXPECT_EQ(f.log.waitDurable(lsn).code(), Status::Code::kIOError);
  EXPECT_TRUE(f.log.waitDurable(first).ok()) << "what was durable before stays durable";
  EXPECT_EQ(f.faults.calls(FaultIo::Op::kWrite), after) << "a failed write-out was retried";
  EXPECT_EQ(f.told, 1);
}

// A cut whose write-out of the interval before it fails fails the log, and that
// interval's records then live only in the ring. A write that was already past the
// database's check when the cut failed still appends after it, at the start of the next
// interval: it must not store over them (the ring starts over at a cut), and it is not
// acknowledged. Reopened, the interval before the cut replays whole.
TEST(OpLog, AnAppendAfterAFailedCutKeepsTheRecordsOnlyTheRingHolds) {
  Options o = logOptions(Durability::kAsync, 16ull << 20);
  o.sync_interval_ms = 60000;  // nothing is written out but by the cut
  {
    LogOnFaults f(o);
    ASSERT_TRUE(f.opened);
    for (int i = 0; i < 3; i++) {
      std::string k = "k" + std::to_string(i), v(40, static_cast<char>('a' + i));  // outlive the op's views
      LogOp op{LogOpKind::kPut, "", k, v};
      ASSERT_NE(logOne(f.log, op), 0u);
    }
    f.faults.fail({FaultIo::Op::kWrite, OpLog::fileName(1), 0, -1, EIO});
    f.log.cut(2);
    EXPECT_EQ(f.log.failure().code(), Status::Code::kIOError);
    std::string lateValue(200, 'z');
    LogOp late{LogOpKind::kPut, "", "late", lateValue};
    ASSERT_NE(logOne(f.log, late), 0u);
    EXPECT_EQ(f.log.failure().code(), Status::Code::kIOError) << "the late write is not acknowledged";
    EXPECT_EQ(f.log.close().code(), Status::Code::kIOError);
    f.faults.clearRules();
    OpLog again;  // the directory lives as long as f
    UNIT_ASSERT_OK(again.open(f.dir.str(), o));
    ReplayInfo info;
    auto recs = replayAll(again, 1, &info);
    ASSERT_EQ(recs.size(), 3u);
    for (int i = 0; i < 3; i++) {
      EXPECT_EQ(recs[i][0], "1||k" + std::to_string(i) + "|" + std::string(40, static_cast<char>('a' + i)));
    }
  }
}

// The sync log's buffer gives its memory back behind the write-out: 64 MiB of records
// flushed as they go leave the process's resident memory about where it was.
TEST(OpLog, SyncLogBufferStaysSmall) {
  using vmsunit::residentBytes;
  ScratchDir dir;
  OpLog log;
  UNIT_ASSERT_OK(log.open(dir.str(), logOptions(Durability::kSync, 256ull << 20)));
  UNIT_ASSERT_OK(log.startWriting(1));
  std::string v(60000, 'x');
  LogOp op{LogOpKind::kPut, "", "k", v};
  const int64_t before = static_cast<int64_t>(residentBytes());
  int64_t peak = before;
  for (int i = 0; i < 1100; i++) {  // about 64 MiB
    uint64_t lsn = logOne(log, op);
    ASSERT_NE(lsn, 0u);
    if (i % 16 == 15) UNIT_ASSERT_OK(log.waitDurable(lsn));
    peak = std::max(peak, static_cast<int64_t>(residentBytes()));
  }
  UNIT_ASSERT_OK(log.flush());
#if !defined(__SANITIZE_THREAD__)  // ThreadSanitizer's shadow memory grows with what is written
  EXPECT_LT(peak - before, int64_t{16} << 20) << "resident memory grew with the log";
#endif
  EXPECT_GT(log.bytes(), 60ull << 20);
  UNIT_ASSERT_OK(log.close());
}

TEST(OpLog, FullDeviceFailsTheReservationNotAStore) {
  ScratchDir dir;
  FaultIo faults;
  Io* prev = setIo(&faults);
  {
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), logOptions(Durability::kAsync, 8ull << 20)));
    UNIT_ASSERT_OK(log.startWriting(1));
    faults.spaceLimit(2ull << 20);
    std::string v(3000, 'x');
    LogOp op{LogOpKind::kPut, "", "k", v};
    Status s;
    int n = 0;
    const size_t size = recordSize({&op, 1});
    for (; n < 100000; n++) {
      s = log.reserve(size);
      if (!s.ok()) break;
      log.append({&op, 1}, size);
    }
    EXPECT_EQ(s.code(), Status::Code::kNoSpace) << s.toString();
    EXPECT_GT(n, 0);
    faults.clearSpaceLimit();
    ASSERT_NE(logOne(log, op), 0u);  // space again: logging goes on
    UNIT_ASSERT_OK(log.close());
    OpLog again;
    UNIT_ASSERT_OK(again.open(dir.str(), logOptions()));
    ReplayInfo info;
    replayAll(again, 1, &info);
    EXPECT_EQ(info.records, static_cast<uint64_t>(n + 1));
  }
  setIo(prev);
}

// Bytes of [from, to) of the file at path that its file system holds allocated but
// unwritten (FIEMAP_EXTENT_UNWRITTEN), or -1 where FIEMAP is not supported.
int64_t unwrittenBytes(const std::string& path, uint64_t from, uint64_t to) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  constexpr unsigned kExtents = 512;
  std::vector<uint8_t> buf(sizeof(fiemap) + kExtents * sizeof(fiemap_extent));
  auto* fm = reinterpret_cast<fiemap*>(buf.data());
  fm->fm_start = from;
  fm->fm_length = to - from;
  fm->fm_extent_count = kExtents;  // no FIEMAP_FLAG_SYNC: that would write the file out itself
  int r = ioctl(fd, FS_IOC_FIEMAP, fm);
  ::close(fd);
  if (r != 0) return -1;
  int64_t n = 0;
  for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
    const fiemap_extent& e = fm->fm_extents[i];
    if ((e.fe_flags & FIEMAP_EXTENT_UNWRITTEN) == 0) continue;
    uint64_t a = std::max<uint64_t>(e.fe_logical, from);
    uint64_t b = std::min<uint64_t>(e.fe_logical + e.fe_length, to);
    if (b > a) n += static_cast<int64_t>(b - a);
  }
  return n;
}

// Durability sync: the preparer writes zeros over the log file ahead of the appends and
// syncs them, so that a flush writes into initialized blocks (the file system holds no
// unwritten extent there); with log_zero_fill=false that space stays unwritten.
TEST(OpLog, SyncLogIsZeroFilledAheadOfTheAppends) {
  for (bool zeroFill : {false, true}) {
    SCOPED_TRACE(zeroFill ? "log_zero_fill=true" : "log_zero_fill=false");
    ScratchDir dir;
    Options o = logOptions(Durability::kSync, 64ull << 20);
    o.log_zero_fill = zeroFill;
    OpLog log;
    UNIT_ASSERT_OK(log.open(dir.str(), o));
    UNIT_ASSERT_OK(log.startWriting(1));
    const std::string value(1000, 'v');  // outlives op, which only views it
    LogOp op{LogOpKind::kPut, "", "k", value};
    uint64_t lsn = 0;
    for (int i = 0; i < 100; i++) lsn = logOne(log, op);
    UNIT_ASSERT_OK(log.waitDurable(lsn));
    // The first interval starts at LSN 0, and its file's first allocation is 1 MiB.
    const std::string path = dir.str() + "/" + OpLog::fileName(1);
    const uint64_t from = (lsn + 4095) / 4096 * 4096;
    const uint64_t to = 1ull << 20;
    ASSERT_LT(from, to);
    int64_t unwritten = unwrittenBytes(path, from, to);
    if (!zeroFill) {
      if (unwritten <= 0) GTEST_SKIP() << "this file system does not keep allocated space unwritten (or has no FIEMAP)";
      UNIT_ASSERT_OK(log.close());
      continue;
    }
    for (int i = 0; i < 1000 && unwritten != 0; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      unwritten = unwrittenBytes(path, from, to);
    }
    EXPECT_EQ(unwritten, 0) << "bytes ahead of the appends still unwritten";
    UNIT_ASSERT_OK(log.failure());
    UNIT_ASSERT_OK(log.close());
    OpLog again;
    UNIT_ASSERT_OK(again.open(dir.str(), o));
    ReplayInfo info;
    EXPECT_EQ(replayAll(again, 1, &info).size(), 100u) << "the zeros went over records";
  }
}

// A failed sync of the zero-fill fails the log as a failed flush does: it may have lost
// records written out beside the zeros, and the descriptor would not report it twice.
TEST(OpLog, AFailedSyncOfTheZeroFillFailsTheLog) {
  LogOnFaults f(logOptions());
  ASSERT_TRUE(f.opened);
  f.faults.fail({FaultIo::Op::kSync, "log-", 0, 1, EIO});
  LogOp op{LogOpKind::kPut, "", "k", "v"};
  uint64_t lsn = logOne(f.log, op);  // asks the preparer; nothing here flushes
  ASSERT_NE(lsn, 0u);
  for (int i = 0; i < 1000 && f.log.failure().ok(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(f.log.failure().code(), Status::Code::kIOError);
  EXPECT_EQ(f.log.waitDurable(lsn).code(), Status::Code::kIOError);
  EXPECT_EQ(f.told, 1);
}

// A flush whose own sync succeeds while the zero-fill's sync of the same file fails
// does not count its records durable: the error, reported once, may be of pages the
// flush wrote out, and the zero-fill's sync took it. Both syncs are held until both are
// in flight; which goes on first (and fails) is up to the scheduler, so the run is
// repeated: when the flush's own sync fails, it reports that.
TEST(OpLog, AFlushBesideAFailingSyncOfTheZeroFillFails) {
  for (int round = 0; round < 8; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    LogOnFaults f(logOptions());
    ASSERT_TRUE(f.opened);
    f.faults.hold(FaultIo::Op::kSync, "log-");
    LogOp op{LogOpKind::kPut, "", "k", "v"};
    const uint64_t lsn = logOne(f.log, op);  // asks the preparer, whose sync is held
    ASSERT_NE(lsn, 0u);
    for (int i = 0; i < 1000 && f.faults.holding() < 1; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(f.faults.holding(), 1u) << "the zero-fill did not sync";
    Status flushed;
    std::thread flusher([&] { flushed = f.log.waitDurable(lsn); });
    for (int i = 0; i < 1000 && f.faults.holding() < 2; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(f.faults.holding(), 2u) << "the flush did not sync";
    f.faults.fail({FaultIo::Op::kSync, "log-", 0, 1, EIO});  // the first to go on
    f.faults.unhold();
    flusher.join();
    EXPECT_EQ(flushed.code(), Status::Code::kIOError) << flushed.toString();
    EXPECT_EQ(f.log.failure().code(), Status::Code::kIOError);
    EXPECT_EQ(f.told, 1);
  }
}

// A failed write of zeros only stops the zero-fill: records go on being written and
// synced.
TEST(OpLog, AFailedWriteOfTheZeroFillLosesNothing) {
  LogOnFaults f(logOptions());
  ASSERT_TRUE(f.opened);
  // The file's writes: its allocation (fallocate counts as a write), then the
  // preparer's first zeros, which fail. The ring's allocation is the one other write.
  f.faults.fail({FaultIo::Op::kWrite, OpLog::fileName(1), 1, 1, EIO});
  LogOp op{LogOpKind::kPut, "", "k", "v"};
  ASSERT_NE(logOne(f.log, op), 0u);  // asks the preparer; nothing here writes out
  for (int i = 0; i < 1000 && f.faults.calls(FaultIo::Op::kWrite) < 3; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(f.faults.calls(FaultIo::Op::kWrite), 3u);
  uint64_t lsn = logOne(f.log, op);
  UNIT_ASSERT_OK(f.log.waitDurable(lsn));
  UNIT_ASSERT_OK(f.log.failure());
  UNIT_ASSERT_OK(f.log.close());
  OpLog again;  // through the fault layer, which has no rule left
  UNIT_ASSERT_OK(again.open(f.dir.str(), logOptions()));
  ReplayInfo info;
  EXPECT_EQ(replayAll(again, 1, &info).size(), 2u);
}

}  // namespace
}  // namespace vmstore::internal
