// Shared helpers of vmstore's API and end-to-end tests: scratch directories, the test
// scale, random keys and values, value tags that let a reader check a value belongs to
// its key, full scans, small file-system helpers and runAndKill (a child process killed
// by SIGKILL, as a crashed one).
//
// Everything here is header-only (inline) because every tests/**/*_test.cpp file is
// compiled into one executable.
#pragma once

#include <gtest/gtest.h>

#include "unit_util.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "os/fault_io.hpp"
#include "vmstore.h"
#include "vmstore/vmstore.hpp"

#ifndef VMSTORE_TEST_TMPDIR
#error "VMSTORE_TEST_TMPDIR must name a scratch directory"
#endif

// ASSERT/EXPECT that a vmstore::Status is OK, printing the status otherwise.
#define VMS_ASSERT_OK(expr)                                                       \
  do {                                                                            \
    ::vmstore::Status vms_assert_status_ = (expr);                                \
    ASSERT_TRUE(vms_assert_status_.ok()) << #expr << " -> " << vms_assert_status_.toString(); \
  } while (0)
#define VMS_EXPECT_OK(expr)                                                       \
  do {                                                                            \
    ::vmstore::Status vms_expect_status_ = (expr);                                \
    EXPECT_TRUE(vms_expect_status_.ok()) << #expr << " -> " << vms_expect_status_.toString(); \
  } while (0)

namespace vmstest {

namespace fs = std::filesystem;
using vmstore::Status;
using Code = vmstore::Status::Code;

// ---- scale ------------------------------------------------------------------------

// True when VMSTORE_TEST_SCALE=small (the AddressSanitizer run): tests shrink sizes.
inline bool smallScale() {
  const char* s = std::getenv("VMSTORE_TEST_SCALE");
  return s != nullptr && std::string_view(s) == "small";
}

// True in ThreadSanitizer builds (5-15x slower CPU; they also run with scale=small).
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

// `release` normally, `small` when VMSTORE_TEST_SCALE=small.
template <typename T>
inline T scaled(T release, T small) {
  return smallScale() ? small : release;
}

// ---- scratch directories ------------------------------------------------------------

inline fs::path tmpRoot() {
  const char* env = std::getenv("VMSTORE_TEST_TMPDIR");  // as vmsunit::testTmpDir()
  return fs::path(env != nullptr && *env != '\0' ? env : VMSTORE_TEST_TMPDIR);
}

// A path unique to the running test (plus an optional suffix), removed if it exists,
// its parent created. The directory itself is NOT created (vms_open creates it). It is
// removed again when the test passes (scratch_registry.hpp).
inline std::string freshDir(std::string_view suffix = {}) {
  const testing::TestInfo* info = testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info != nullptr
                         ? std::string(info->test_suite_name()) + "." + info->name()
                         : std::string("no_test");
  if (!suffix.empty()) name += "." + std::string(suffix);
  for (char& c : name) {
    if (c == '/' || c == '\\' || c == ' ') c = '_';
  }
  fs::path p = tmpRoot() / name;
  std::error_code ec;
  fs::remove_all(p, ec);
  fs::create_directories(tmpRoot(), ec);
  vmstscratch::removeAfterTest(p);
  return p.string();
}

inline bool pathExists(const std::string& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// Regular files directly inside `dir`.
inline std::vector<fs::path> regularFiles(const std::string& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file()) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline bool looksLikeLockFile(const fs::path& p) {
  std::string n = p.filename().string();
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  return n.find("lock") != std::string::npos;
}

// The data file of the database in `dir`: data.vms (docs/DESIGN.md), else the largest
// regular file whose name does not say "lock". Empty path when there is none.
inline fs::path dataFile(const std::string& dir) {
  std::error_code nec;
  if (fs::is_regular_file(fs::path(dir) / "data.vms", nec)) return fs::path(dir) / "data.vms";
  fs::path best;
  uintmax_t best_size = 0;
  bool have = false;
  for (const fs::path& p : regularFiles(dir)) {
    if (looksLikeLockFile(p)) continue;
    std::error_code ec;
    uintmax_t sz = fs::file_size(p, ec);
    if (!have || sz > best_size) {
      best = p;
      best_size = sz;
      have = true;
    }
  }
  return best;
}

inline uintmax_t fileSize(const fs::path& p) {
  std::error_code ec;
  uintmax_t sz = fs::file_size(p, ec);
  return ec ? 0 : sz;
}

// Copies directory `src` to a fresh `dst` (removing `dst` first).
inline void copyDir(const std::string& src, const std::string& dst) {
  std::error_code ec;
  fs::remove_all(dst, ec);
  fs::copy(src, dst, fs::copy_options::recursive);
}

inline std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Creates or replaces a file holding exactly `bytes`.
inline void writeFile(const fs::path& p, std::string_view bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << "cannot write " << p;
}

// Overwrites bytes of a file in place.
inline void patchFile(const fs::path& p, uint64_t offset, std::string_view bytes) {
  std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
  ASSERT_TRUE(f.good()) << "cannot open " << p;
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << "cannot write " << p;
}

// XORs the byte at `offset` with `mask` (non-zero).
inline void flipByte(const fs::path& p, uint64_t offset, unsigned char mask) {
  std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
  ASSERT_TRUE(f.good()) << "cannot open " << p;
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  ASSERT_TRUE(f.good()) << "cannot read " << p << " at " << offset;
  c = static_cast<char>(static_cast<unsigned char>(c) ^ mask);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
  ASSERT_TRUE(f.good()) << "cannot write " << p;
}

// ---- hashing and deterministic values -------------------------------------------------

inline uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline uint64_t hash64(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return mix64(h ^ s.size());
}

// `len` bytes that depend only on (key, salt).
inline std::string fillFor(std::string_view key, uint64_t salt, size_t len) {
  std::string out(len, '\0');
  uint64_t state = hash64(key) ^ mix64(salt);
  for (size_t i = 0; i < len; i += 8) {
    state = mix64(state);
    for (size_t b = 0; b < 8 && i + b < len; ++b) out[i + b] = static_cast<char>(state >> (8 * b));
  }
  return out;
}

// A value that carries a tag of its key: 16 hex digits of hash64(key), 8 hex digits of
// the salt, then fillFor(key, salt). len >= kTagSize.
inline constexpr size_t kTagSize = 24;
inline std::string taggedValue(std::string_view key, uint32_t salt, size_t len) {
  if (len < kTagSize) len = kTagSize;
  char head[kTagSize + 1];
  std::snprintf(head, sizeof head, "%016llx%08x", static_cast<unsigned long long>(hash64(key)),
                static_cast<unsigned>(salt));
  return std::string(head, kTagSize) + fillFor(key, salt, len - kTagSize);
}

// True when `value` is some taggedValue(key, salt, len) of this key.
inline bool isTaggedValueOf(std::string_view key, std::string_view value) {
  if (value.size() < kTagSize) return false;
  char head[17];
  std::snprintf(head, sizeof head, "%016llx", static_cast<unsigned long long>(hash64(key)));
  if (value.substr(0, 16) != std::string_view(head, 16)) return false;
  std::string salt_hex(value.substr(16, 8));
  for (char c : salt_hex) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  uint32_t salt = static_cast<uint32_t>(std::strtoul(salt_hex.c_str(), nullptr, 16));
  return value.substr(kTagSize) == fillFor(key, salt, value.size() - kTagSize);
}

// Fixed-width decimal key: "prefix" + zero-padded i, so string order = numeric order.
inline std::string numKey(std::string_view prefix, uint64_t i, int width = 10) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llu", width, static_cast<unsigned long long>(i));
  return std::string(prefix) + buf;
}

// 8 big-endian bytes.
inline std::string beKey(uint64_t i) {
  std::string k(8, '\0');
  for (int b = 0; b < 8; ++b) k[b] = static_cast<char>(i >> (56 - 8 * b));
  return k;
}

// Printable form of a binary string for failure messages (truncated).
inline std::string show(std::string_view s, size_t max = 48) {
  std::string out;
  char buf[8];
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > max) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

// ---- random keys and values ---------------------------------------------------------

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  uint64_t next() { return gen_(); }
  // Uniform in [lo, hi].
  uint64_t uniform(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(gen_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(gen_) < p; }
  std::string bytes(size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(gen_() & 0xff);
    return s;
  }
  // n bytes from a small alphabet that includes 0x00 and 0xff, so many keys share
  // prefixes and the unsigned-byte order is exercised.
  std::string smallAlphabet(size_t n) {
    static constexpr char kAlpha[] = {'\x00', '\x01', 'a', 'b', 'c', 'z', '\x7f', '\x80', '\xfe', '\xff'};
    std::string s(n, '\0');
    for (char& c : s) c = kAlpha[gen_() % sizeof kAlpha];
    return s;
  }
  std::mt19937_64& engine() { return gen_; }

 private:
  std::mt19937_64 gen_;
};

// Keys from a skewed distribution: most are short, many share one of a few prefixes
// (some of them long), a few are long, up to kMaxKeySize bytes.
class KeyGen {
 public:
  explicit KeyGen(Rng* rng, size_t max_len = vmstore::kMaxKeySize) : rng_(rng), max_len_(max_len) {
    for (int i = 0; i < 12; ++i) {
      size_t len = i < 6 ? rng_->uniform(1, 4) : (i < 10 ? rng_->uniform(5, 40) : rng_->uniform(100, 600));
      prefixes_.push_back(i % 2 ? rng_->smallAlphabet(len) : rng_->bytes(len));
    }
  }

  std::string next() {
    uint64_t r = rng_->uniform(0, 99);
    std::string k;
    if (r < 45) {  // shared prefix + short suffix
      k = prefixes_[rng_->uniform(0, prefixes_.size() - 1)] + rng_->smallAlphabet(rng_->uniform(0, 12));
    } else if (r < 75) {  // short random
      k = rng_->bytes(rng_->uniform(1, 16));
    } else if (r < 90) {  // medium
      k = rng_->smallAlphabet(rng_->uniform(1, 300));
    } else if (r < 97) {  // long, shared prefix
      k = prefixes_[rng_->uniform(0, prefixes_.size() - 1)] + rng_->bytes(rng_->uniform(200, max_len_));
    } else {  // the maximum or near it
      k = rng_->bytes(rng_->uniform(max_len_ - 3, max_len_));
    }
    if (k.empty()) k = "k";
    if (k.size() > max_len_) k.resize(max_len_);
    return k;
  }

 private:
  Rng* rng_;
  size_t max_len_;
  std::vector<std::string> prefixes_;
};

// A value length: mostly small, some medium, some large (up to a page's worth).
using vmsunit::kOnePageValue;
using vmsunit::residentBytes;
inline size_t randomValueLen(Rng& rng, size_t max_len = kOnePageValue) {
  uint64_t r = rng.uniform(0, 99);
  size_t n;
  if (r < 10) {
    n = rng.uniform(0, 4);
  } else if (r < 45) {
    n = rng.uniform(5, 100);
  } else if (r < 75) {
    n = rng.uniform(100, 800);
  } else if (r < 90) {
    n = rng.uniform(800, 2500);
  } else if (r < 97) {
    n = rng.uniform(2500, max_len);
  } else {
    n = max_len;
  }
  return std::min(n, max_len);
}

inline std::string randomValue(Rng& rng, size_t max_len = kOnePageValue) {
  return rng.bytes(randomValueLen(rng, max_len));
}

// ---- databases -----------------------------------------------------------------------

// Opens a database with a config string; null (and a test failure) on error.
inline std::unique_ptr<vmstore::Database> openDb(const std::string& dir, std::string_view config) {
  std::unique_ptr<vmstore::Database> db;
  Status s = vmstore::Database::open(dir, config, &db);
  EXPECT_TRUE(s.ok()) << "open " << dir << " [" << config << "]: " << s.toString();
  if (!s.ok()) db.reset();
  return db;
}

// A test with a fresh database (config()) whose default tree t_ is open: the fixture of
// the API tests of one tree.
class OneTreeTest : public ::testing::Test {
 protected:
  virtual std::string config() const { return "pool_size=64M"; }
  void SetUp() override {
    dir_ = freshDir();
    db_ = openDb(dir_, config());
    ASSERT_TRUE(db_);
    VMS_ASSERT_OK(db_->openTree("", true, &t_));
  }
  std::string dir_;
  std::unique_ptr<vmstore::Database> db_;
  vmstore::Tree* t_ = nullptr;
};

// The same through the C API: a fresh database and its default tree, closed at the end
// unless the test closed it (and set db to null).
struct CDb {
  explicit CDb(const char* config = "pool_size=64M") : dir(freshDir()) {
    EXPECT_EQ(vms_open(dir.c_str(), config, &db), VMS_OK) << vms_last_error();
    EXPECT_EQ(vms_tree_open(db, "", 1, &t), VMS_OK);
  }
  ~CDb() {
    if (db != nullptr) vms_close(db);
  }
  CDb(const CDb&) = delete;
  CDb& operator=(const CDb&) = delete;
  std::string dir;
  vms_db* db = nullptr;
  vms_tree* t = nullptr;
};

using KV = std::vector<std::pair<std::string, std::string>>;

// Every entry of the tree, forward. The final iterator status goes to *status.
inline KV scanForward(const vmstore::Tree* tree, Status* status = nullptr) {
  KV out;
  vmstore::Iterator it = tree->newIterator();
  for (it.seekToFirst(); it.valid(); it.next()) {
    out.emplace_back(std::string(it.key()), std::string(it.value()));
  }
  if (status != nullptr) *status = it.status();
  return out;
}

// Every entry of the tree, backward (last key first).
inline KV scanBackward(const vmstore::Tree* tree, Status* status = nullptr) {
  KV out;
  vmstore::Iterator it = tree->newIterator();
  for (it.seekToLast(); it.valid(); it.prev()) {
    out.emplace_back(std::string(it.key()), std::string(it.value()));
  }
  if (status != nullptr) *status = it.status();
  return out;
}

inline KV toKV(const std::map<std::string, std::string>& m) { return KV(m.begin(), m.end()); }

// Compares a scan with the expected entries; returns a description of the first
// difference ("" when equal).
inline std::string diffKV(const KV& got, const KV& want) {
  size_t n = std::min(got.size(), want.size());
  for (size_t i = 0; i < n; ++i) {
    if (got[i].first != want[i].first) {
      return "entry " + std::to_string(i) + ": key " + show(got[i].first) + ", expected " +
             show(want[i].first);
    }
    if (got[i].second != want[i].second) {
      return "entry " + std::to_string(i) + " key " + show(got[i].first) + ": value " +
             show(got[i].second) + ", expected " + show(want[i].second);
    }
  }
  if (got.size() != want.size()) {
    return "got " + std::to_string(got.size()) + " entries, expected " + std::to_string(want.size()) +
           (got.size() > want.size() ? "; first extra key " + show(got[n].first)
                                     : "; first missing key " + show(want[n].first));
  }
  return "";
}

inline KV reversed(KV v) {
  std::reverse(v.begin(), v.end());
  return v;
}

// check() finds nothing wrong (the first problem is printed otherwise).
inline void expectCheckOk(vmstore::Database* db) {
  std::vector<std::string> problems;
  Status s = db->check(&problems);
  EXPECT_TRUE(s.ok()) << s.toString() << (problems.empty() ? "" : ": " + problems[0]);
}

// Installs a fault-injecting Io (os/fault_io.hpp) for the life of the object.
class FaultScope {
 public:
  FaultScope() { prev_ = vmstore::internal::setIo(&io_); }
  ~FaultScope() { vmstore::internal::setIo(prev_); }
  FaultScope(const FaultScope&) = delete;
  FaultScope& operator=(const FaultScope&) = delete;
  vmstore::internal::FaultIo& io() { return io_; }

 private:
  vmstore::internal::FaultIo io_;
  vmstore::internal::Io* prev_;
};

// Runs fn in a forked child that then dies by SIGKILL, as a crashed process does;
// the child reports through a pipe: fn writes status bytes, the parent gets them all.
inline std::string runAndKill(const std::function<void(int fd)>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    fn(fds[1]);
    raise(SIGKILL);
    _exit(99);
  }
  close(fds[1]);
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child did not die by SIGKILL";
  return out;
}

// A writer process killed at a moment the test chooses: forks a child that runs
// writer(fd), fd the write end of a pipe (writer does not return; on an error it _exits
// with a code of its own), kills it by SIGKILL after delay, and returns what it wrote to
// the pipe and how it ended.
struct KilledChild {
  std::string out;
  bool killed = false;  // it died by SIGKILL, not on its own
  int exitCode = -1;    // its exit code when it did not
};
inline KilledChild killAfter(std::chrono::microseconds delay, const std::function<void(int fd)>& writer) {
  KilledChild r;
  int fds[2];
  if (pipe(fds) != 0) {
    r.out = "pipe failed";
    return r;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    writer(fds[1]);
    _exit(98);
  }
  close(fds[1]);
  std::this_thread::sleep_for(delay);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  r.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (WIFEXITED(status)) r.exitCode = WEXITSTATUS(status);
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  return r;
}

inline void report(int fd, char c) { (void)!write(fd, &c, 1); }

}  // namespace vmstest
