// The `vmstore` command-line tool, run as a separate process:
//   vmstore put DIR KEY VALUE [--tree=NAME]     vmstore get DIR KEY [--tree=NAME]
//   vmstore del DIR KEY [--tree=NAME]           vmstore scan DIR [--tree=NAME] [--start=KEY] [--limit=N]
//   vmstore stats DIR                           vmstore check DIR
// all with an optional --pool=SIZE.
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "test_util.hpp"

// The build defines VMSTORE_CLI_PATH when it builds the CLI; without it these tests skip.
#ifndef VMSTORE_CLI_PATH
#define VMSTORE_CLI_PATH ""
#endif

namespace {

using namespace vmstest;
using vmstore::Database;
using vmstore::Tree;

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

struct Result {
  int code = -1;  // exit code, or -1 when killed by a signal
  std::string out;
  std::string err;
  std::string command;
};

// Runs the CLI (or the executable `exe`) with `args`, capturing stdout and stderr.
Result cli(const std::vector<std::string>& args, const std::string& exe = VMSTORE_CLI_PATH) {
  Result r;
  fs::path err_file = tmpRoot() / ("cli_stderr_" + std::to_string(getpid()) + ".txt");
  std::string cmd = shellQuote(exe);
  for (const std::string& a : args) cmd += " " + shellQuote(a);
  r.command = cmd;
  cmd += " 2>" + shellQuote(err_file.string()) + " </dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = readFile(err_file);
  std::error_code ec;
  fs::remove(err_file, ec);
  return r;
}

std::string describe(const Result& r) {
  return r.command + "\n  exit " + std::to_string(r.code) + "\n  stdout: " + show(r.out, 400) +
         "\n  stderr: " + show(r.err, 400);
}

std::string trimNewline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string_view(VMSTORE_CLI_PATH).empty()) GTEST_SKIP() << "the CLI is not part of this build";
    ASSERT_TRUE(fs::exists(VMSTORE_CLI_PATH)) << "the CLI was not built: " << VMSTORE_CLI_PATH;
    dir_ = freshDir();
  }
  std::string dir_;
};

TEST_F(CliTest, HelpExitsZero) {
  Result r = cli({"--help"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(r.out.empty() && r.err.empty()) << "--help printed nothing";
  EXPECT_NE((r.out + r.err).find("put"), std::string::npos) << describe(r);
}

TEST_F(CliTest, BadCommandLinesExitNonzero) {
  Result r = cli({});
  EXPECT_NE(r.code, 0) << describe(r);
  r = cli({"frobnicate", dir_});
  EXPECT_NE(r.code, 0) << describe(r);
  r = cli({"get", dir_});  // missing KEY
  EXPECT_NE(r.code, 0) << describe(r);
  r = cli({"put", dir_, "k", "v", "--pool=12Q"});
  EXPECT_NE(r.code, 0) << describe(r);
  r = cli({"put", dir_, "k", "v", "--no-such-option=1"});
  EXPECT_NE(r.code, 0) << describe(r);
}

TEST_F(CliTest, PutGetDelScan) {
  Result r = cli({"put", dir_, "k1", "v1"});
  ASSERT_EQ(r.code, 0) << describe(r);
  ASSERT_EQ(cli({"put", dir_, "k2", "value two"}).code, 0);
  ASSERT_EQ(cli({"put", dir_, "k3", "v3"}).code, 0);

  r = cli({"get", dir_, "k2"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(trimNewline(r.out), "value two") << describe(r);

  r = cli({"get", dir_, "missing"});
  EXPECT_NE(r.code, 0) << "get of a missing key must fail: " << describe(r);

  r = cli({"scan", dir_});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(lines(r.out), (std::vector<std::string>{"k1\tv1", "k2\tvalue two", "k3\tv3"})) << describe(r);

  r = cli({"scan", dir_, "--start=k2"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(lines(r.out), (std::vector<std::string>{"k2\tvalue two", "k3\tv3"})) << describe(r);

  r = cli({"scan", dir_, "--start=k15", "--limit=1"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(lines(r.out), (std::vector<std::string>{"k2\tvalue two"})) << describe(r);

  r = cli({"del", dir_, "k2"});
  EXPECT_EQ(r.code, 0) << describe(r);
  r = cli({"get", dir_, "k2"});
  EXPECT_NE(r.code, 0) << describe(r);
  r = cli({"scan", dir_});
  EXPECT_EQ(lines(r.out), (std::vector<std::string>{"k1\tv1", "k3\tv3"})) << describe(r);

  // Overwrite.
  ASSERT_EQ(cli({"put", dir_, "k1", "new"}).code, 0);
  r = cli({"get", dir_, "k1"});
  EXPECT_EQ(trimNewline(r.out), "new") << describe(r);
}

TEST_F(CliTest, Trees) {
  ASSERT_EQ(cli({"put", dir_, "key", "in-t1", "--tree=t1"}).code, 0);
  ASSERT_EQ(cli({"put", dir_, "key", "in-default"}).code, 0);
  Result r = cli({"get", dir_, "key", "--tree=t1"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(trimNewline(r.out), "in-t1") << describe(r);
  r = cli({"get", dir_, "key"});
  EXPECT_EQ(trimNewline(r.out), "in-default") << describe(r);
  r = cli({"get", dir_, "key", "--tree=t2"});
  EXPECT_NE(r.code, 0) << "a missing tree must fail: " << describe(r);
  r = cli({"scan", dir_, "--tree=t1"});
  EXPECT_EQ(lines(r.out), (std::vector<std::string>{"key\tin-t1"})) << describe(r);
  r = cli({"del", dir_, "key", "--tree=t1"});
  EXPECT_EQ(r.code, 0) << describe(r);
  r = cli({"get", dir_, "key", "--tree=t1"});
  EXPECT_NE(r.code, 0) << describe(r);
  r = cli({"get", dir_, "key"});
  EXPECT_EQ(trimNewline(r.out), "in-default") << describe(r);
}

TEST_F(CliTest, PoolOptionAndSharedData) {
  Result r = cli({"put", dir_, "a", "1", "--pool=4M"});
  ASSERT_EQ(r.code, 0) << describe(r);
  r = cli({"get", dir_, "a", "--pool=1M"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(trimNewline(r.out), "1");

  // What the API writes, the CLI reads, and back.
  {
    std::unique_ptr<Database> db = openDb(dir_, "pool_size=4M");
    ASSERT_NE(db, nullptr);
    Tree* t = nullptr;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    VMS_ASSERT_OK(t->put("from-api", "hello"));
    VMS_ASSERT_OK(db->close());
  }
  r = cli({"get", dir_, "from-api"});
  EXPECT_EQ(trimNewline(r.out), "hello") << describe(r);
  ASSERT_EQ(cli({"put", dir_, "from-cli", "world"}).code, 0);
  std::unique_ptr<Database> db = openDb(dir_, "pool_size=4M");
  ASSERT_NE(db, nullptr);
  Tree* t = nullptr;
  VMS_ASSERT_OK(db->openTree("", false, &t));
  std::string v;
  VMS_ASSERT_OK(t->get("from-cli", &v));
  EXPECT_EQ(v, "world");

  // While this process holds the database open, the CLI cannot open it.
  r = cli({"get", dir_, "from-cli"});
  EXPECT_NE(r.code, 0) << "the database is open here: " << describe(r);
  EXPECT_FALSE(r.err.empty()) << describe(r);
  VMS_ASSERT_OK(db->close());
}

TEST_F(CliTest, LargeValuesThroughFilesAndAPoolTooSmallForThem) {
  // A value over the kernel's 128 KiB argument limit goes in with --value-file and comes
  // out byte for byte with --out (no newline added).
  std::string bytes(3 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); i++) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  fs::path in = fs::path(freshDir("in")).concat(".bin");
  fs::path out = fs::path(freshDir("out")).concat(".bin");
  writeFile(in, bytes);
  Result r = cli({"put", dir_, "big", "--value-file=" + in.string(), "--pool=8M"});
  ASSERT_EQ(r.code, 0) << describe(r);
  r = cli({"get", dir_, "big", "--out=" + out.string(), "--pool=8M"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(r.out.empty()) << describe(r);
  EXPECT_TRUE(readFile(out) == bytes) << "the value read back differs";
  // With a pool under twice the value, every command says which pool it needs and
  // which option gives it; check does not call the database damaged.
  for (std::vector<std::string> cmd : {std::vector<std::string>{"get", dir_, "big", "--pool=4M"},
                                       std::vector<std::string>{"check", dir_, "--pool=4M"},
                                       std::vector<std::string>{"stats", dir_, "--pool=4M"}}) {
    r = cli(cmd);
    EXPECT_EQ(r.code, 1) << "not a damaged database, a pool too small: " << describe(r);
    EXPECT_NE(r.err.find("open with a pool_size of at least 7M (the command's --pool=SIZE)"), std::string::npos)
        << describe(r);
  }
  r = cli({"check", dir_, "--pool=8M"});
  EXPECT_EQ(r.code, 0) << describe(r);
  r = cli({"stats", dir_, "--pool=8M"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("tree (default): 1 key\n"), std::string::npos) << describe(r);
  // Bad input: a file that does not exist, VALUE and --value-file together, --pool
  // beside a pool from --config.
  r = cli({"put", dir_, "k", "--value-file=" + dir_ + "/no-such-file"});
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << describe(r);
  EXPECT_EQ(cli({"put", dir_, "k", "v", "--value-file=" + in.string()}).code, 2);
  r = cli({"stats", dir_, "--pool=8M", "--config=pool_size=16M"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("give one of them"), std::string::npos) << describe(r);
  std::error_code ec;
  fs::remove(in, ec);
  fs::remove(out, ec);
}

TEST_F(CliTest, ReadingAMissingDatabaseCreatesNothing) {
  Result r = cli({"get", dir_, "k"});
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_FALSE(r.err.empty()) << describe(r);
  EXPECT_FALSE(pathExists(dir_)) << "get created a database";
}

TEST_F(CliTest, Stats) {
  ASSERT_EQ(cli({"put", dir_, "k", "v"}).code, 0);
  Result r = cli({"stats", dir_});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("pages"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("checkpoints: "), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("recovered_records: 0\n"), std::string::npos) << "a clean close left records: " << describe(r);
  // Per tree: its shape (height, leaf and inner pages, how full they are).
  EXPECT_NE(r.out.find("shape: height 1, 1 leaf pages ("), std::string::npos) << describe(r);
}

TEST_F(CliTest, StatsShowsTheRecoveryOfACrashedWriter) {
  pid_t pid = fork();
  if (pid == 0) {
    std::unique_ptr<Database> db;
    if (!Database::open(dir_, "pool_size=1M,durability=sync", &db).ok()) _exit(3);
    Tree* t = nullptr;
    if (!db->openTree("", true, &t).ok()) _exit(4);
    for (int i = 0; i < 10; i++) {
      if (!t->put("k" + std::to_string(i), "v").ok()) _exit(5);
    }
    raise(SIGKILL);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  Result r = cli({"stats", dir_});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("recovered_records: 11\n"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("tree (default): 10 keys"), std::string::npos) << describe(r);
  r = cli({"check", dir_});
  EXPECT_EQ(r.code, 0) << describe(r);
}

TEST_F(CliTest, CheckHealthyAndCorrupted) {
  uint64_t page_count = 0;
  {
    std::unique_ptr<Database> db = openDb(dir_, "pool_size=1M");
    ASSERT_NE(db, nullptr);
    Tree* t = nullptr;
    VMS_ASSERT_OK(db->openTree("", true, &t));
    for (int i = 0; i < 3000; ++i) VMS_ASSERT_OK(t->put(numKey("k", i), fillFor("x", i, 500)));
    page_count = db->stats().page_count;
    VMS_ASSERT_OK(db->close());
  }
  Result r = cli({"check", dir_});
  EXPECT_EQ(r.code, 0) << describe(r);

  // Damage every page but the superblock.
  fs::path data = dataFile(dir_);
  ASSERT_FALSE(data.empty());
  for (uint64_t p = 1; p < page_count; ++p) {
    ASSERT_NO_FATAL_FAILURE(flipByte(data, p * vmstore::kPageSize + 2000, 0x5a));
  }
  r = cli({"check", dir_});
  EXPECT_NE(r.code, 0) << "check of a corrupted database must fail: " << describe(r);
  EXPECT_NE(r.code, -1) << "the CLI crashed: " << describe(r);
}

// `vmstore bench` and `vmstore sim` run vmstore-bench from the CLI's own directory
// (tools/main.cpp); a CLI copied away from it says so.
TEST_F(CliTest, BenchRunsTheBenchToolBesideTheCli) {
#ifndef VMSTORE_WITH_BENCH
  GTEST_SKIP() << "this build has no benchmarks (VMSTORE_BUILD_BENCH=OFF), so no bench or sim command";
#else
  Result r = cli({"bench", "--help"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("usage: vmstore bench"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("tpcc"), std::string::npos) << describe(r);
  fs::path alone = fs::path(dir_) / "alone";
  fs::create_directories(alone);
  fs::copy_file(VMSTORE_CLI_PATH, alone / "vmstore");
  const std::string copied = (alone / "vmstore").string();
  for (const char* command : {"bench", "sim"}) {
    r = cli({command, "lookup"}, copied);
    EXPECT_EQ(r.code, 1) << describe(r);
    EXPECT_NE(r.err.find("vmstore-bench"), std::string::npos) << describe(r);
  }
  // The commands that need no benchmark engine still work there.
  r = cli({"put", (fs::path(dir_) / "db").string(), "k", "v"}, copied);
  EXPECT_EQ(r.code, 0) << describe(r);
  r = cli({"get", (fs::path(dir_) / "db").string(), "k"}, copied);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(trimNewline(r.out), "v") << describe(r);
#endif
}

}  // namespace
