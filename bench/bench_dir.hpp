// BenchDir: the database directory of one benchmark run.
//
// Contract
// - BenchDir(given, removeOnSignal): the given directory (it must be missing or empty,
//   else std::invalid_argument; it is kept afterwards), or, when given is empty, a fresh
//   temporary one (std::runtime_error if it cannot be made) that is removed when the
//   BenchDir goes, and on SIGINT/SIGTERM too when removeOnSignal (the process then exits
//   130). path() is the directory.
// - Header-only (inline), for the runner and the micro-benchmarks alike.
#pragma once

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

namespace vmstore::bench {

class BenchDir {
 public:
  BenchDir(const std::string& given, bool removeOnSignal) {
    namespace fs = std::filesystem;
    if (!given.empty()) {
      std::error_code ec;
      if (fs::exists(given, ec) && !fs::is_empty(given, ec)) {
        throw std::invalid_argument("--dir=" + given +
                                    " is not empty (the benchmark needs a fresh directory)");
      }
      path_ = given;
      return;
    }
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string tmpl = (base / "vmstore-bench-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      throw std::runtime_error("cannot create a temporary directory in " + base.string() +
                               ": " + std::strerror(errno));
    }
    path_ = tmpl;
    temporary_ = true;
    if (removeOnSignal) watchSignals();
  }
  ~BenchDir() {
    if (watcher_.joinable()) {
      for (int i = 0; i < 2; ++i) sigaction(kSignals[i], &oldActions_[i], nullptr);
      done_.store(true);
      watcher_.join();
      close(signalPipe[0]);
      close(signalPipe[1]);
    }
    if (temporary_) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  BenchDir(const BenchDir&) = delete;
  BenchDir& operator=(const BenchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  static constexpr int kSignals[2] = {SIGINT, SIGTERM};
  // The handler runs on whatever thread the signal hits (engines and libraries may have
  // threads of their own), so it only writes one byte to a pipe; a watcher thread reads
  // it, removes the directory (it can hold gigabytes) and exits 130. A signal that was
  // ignored when we started (a background job's SIGINT) stays ignored.
  static inline int signalPipe[2] = {-1, -1};
  static void onSignal(int) {
    const char byte = 1;
    ssize_t ignored = write(signalPipe[1], &byte, 1);
    (void)ignored;
  }
  void watchSignals() {
    if (pipe(signalPipe) != 0) return;
    for (int i = 0; i < 2; ++i) {
      sigaction(kSignals[i], nullptr, &oldActions_[i]);
      if (oldActions_[i].sa_handler == SIG_IGN) continue;
      struct sigaction sa {};
      sa.sa_handler = onSignal;
      sigemptyset(&sa.sa_mask);
      sigaction(kSignals[i], &sa, nullptr);
    }
    watcher_ = std::thread([this] {
      while (!done_.load()) {
        pollfd fd{signalPipe[0], POLLIN, 0};
        if (poll(&fd, 1, 100) > 0) {
          std::error_code ec;
          std::filesystem::remove_all(path_, ec);
          std::fprintf(stderr, "\ninterrupted; removed %s\n", path_.c_str());
          _exit(130);
        }
      }
    });
  }

  std::string path_;
  bool temporary_ = false;
  std::thread watcher_;
  std::atomic<bool> done_{false};
  struct sigaction oldActions_[2] {};
};

}  // namespace vmstore::bench
