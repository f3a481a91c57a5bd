// Scratch paths the tests leave on disk, and their removal.
//
// Contract
// - removeAfterTest(p): p (a file or directory) is removed when the running test ends,
//   unless the test failed (kept for a look; `make test` starts from an empty test-tmp).
// - removeAtExit(p): p is removed when the test program ends, unless a test failed
//   (for what a whole suite shares, such as a golden database built once per process).
// - ScratchCleanup is the gtest listener that does both; tests/test_main.cpp installs it.
//   Without it a full `make test` would leave tens of GiB of databases behind.
// - Thread-safe registration; removal errors are ignored (the path may be gone already).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <vector>

namespace vmstscratch {

struct Registry {
  std::mutex mu;
  std::vector<std::filesystem::path> afterTest;
  std::vector<std::filesystem::path> atExit;
};

inline Registry& registry() {
  static Registry r;
  return r;
}

inline void removeAfterTest(const std::filesystem::path& p) {
  std::lock_guard g(registry().mu);
  registry().afterTest.push_back(p);
}

inline void removeAtExit(const std::filesystem::path& p) {
  std::lock_guard g(registry().mu);
  registry().atExit.push_back(p);
}

class ScratchCleanup : public ::testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const ::testing::TestInfo& info) override {
    removeAll(&registry().afterTest, !info.result()->Failed());
  }
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    removeAll(&registry().atExit, !unit.Failed());
  }

 private:
  static void removeAll(std::vector<std::filesystem::path>* paths, bool remove) {
    std::vector<std::filesystem::path> taken;
    {
      std::lock_guard g(registry().mu);
      taken.swap(*paths);
    }
    if (!remove) return;
    for (const auto& p : taken) {
      std::error_code ec;
      std::filesystem::remove_all(p, ec);
    }
  }
};

}  // namespace vmstscratch
