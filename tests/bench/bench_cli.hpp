// Running `vmstore bench ...` from a test the way a user runs it: the CLI built with the
// tests (VMSTORE_CLI_PATH) in a child process, its exit status, stdout and stderr.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "child_run.hpp"
#include "unit_util.hpp"

#ifndef VMSTORE_CLI_PATH
#define VMSTORE_CLI_PATH ""
#endif

#define SKIP_WITHOUT_CLI() \
  if (std::string(VMSTORE_CLI_PATH).empty()) GTEST_SKIP() << "the CLI is not built"

namespace vmsbench {

struct CliRun {
  vmstore::bench::ChildResult result;  // exit status and stdout
  std::string err;
};

inline std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `vmstore bench ARGS...`, its stderr kept (in dir).
inline CliRun bench(const vmsunit::ScratchDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {VMSTORE_CLI_PATH, "bench"});
  CliRun run;
  std::string why;
  const std::string errPath = dir.file("stderr.txt");
  run.result = vmstore::bench::runChild(args, errPath, nullptr, &why);
  EXPECT_TRUE(run.result.started) << why;
  run.err = readAll(errPath);
  return run;
}

struct UsageCase {
  std::vector<std::string> args;
  std::string says;  // a part of the message
};

// `vmstore bench PREFIX... ARGS...` of each case ends with exit status 2, a message that
// says `says`, and the usage line.
inline void expectUsageErrors(const vmsunit::ScratchDir& dir, const std::vector<std::string>& prefix,
                              const std::vector<UsageCase>& cases) {
  for (const UsageCase& c : cases) {
    std::vector<std::string> args = prefix;
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string shown;
    for (const std::string& a : c.args) shown += a + " ";
    CliRun run = bench(dir, args);
    EXPECT_EQ(run.result.exitCode, 2) << shown << ": " << run.err;
    EXPECT_NE(run.err.find(c.says), std::string::npos) << shown << ": " << run.err;
    EXPECT_NE(run.err.find("usage: vmstore bench"), std::string::npos) << shown << ": " << run.err;
  }
}

}  // namespace vmsbench
