// The parallel ascending load and the scan check shared by lookup and YCSB.
#include "records.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace vmstore::bench::records {

namespace {
constexpr uint64_t kPutsPerTransaction = 256;
}

void loadRecords(Engine& engine, int table, uint64_t n, unsigned threads,
                 const std::function<void(uint64_t, uint64_t)>& progress) {
  threads = static_cast<unsigned>(std::clamp<uint64_t>(n, 1, std::max(1u, threads)));
  std::atomic<uint64_t> done{0};
  std::mutex errorMu;
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  std::vector<std::thread> loaders;
  for (unsigned t = 0; t < threads; ++t) {
    loaders.emplace_back([&, t] {
      try {
        std::unique_ptr<Session> session = engine.session();
        const uint64_t begin = n * t / threads;
        const uint64_t end = n * (t + 1) / threads;
        char key[kKeySize];
        char value[kValueSize];
        for (uint64_t i = begin; i < end && !failed.load(std::memory_order_relaxed);) {
          const uint64_t batchEnd = std::min(end, i + kPutsPerTransaction);
          const uint64_t batch = batchEnd - i;
          session->beginLoad();
          for (; i < batchEnd; ++i) {
            encodeKey(i, key);
            makeValue(i, 0, value);
            session->put(table, std::string_view(key, kKeySize),
                         std::string_view(value, kValueSize));
          }
          session->commit();
          progress(done.fetch_add(batch, std::memory_order_relaxed) + batch, n);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(errorMu);
        if (!error) error = std::current_exception();
        failed.store(true);
      }
    });
  }
  for (std::thread& l : loaders) l.join();
  if (error) std::rethrow_exception(error);
  progress(n, n);
}

std::vector<std::string> checkRecords(Engine& engine, int table, uint64_t n, bool exactValues) {
  std::vector<std::string> problems;
  auto problem = [&problems](std::string p) {
    if (problems.size() < 20) problems.push_back(std::move(p));
  };
  std::unique_ptr<Session> session = engine.session();
  uint64_t expected = 0;  // the next key of 0..n-1 the scan must meet
  uint64_t entries = 0;
  char first[kKeySize];
  encodeKey(0, first);
  char want[kValueSize];
  session->scan(table, std::string_view(first, kKeySize),
                [&](std::string_view key, std::string_view value) {
                  ++entries;
                  if (key.size() != kKeySize) {
                    problem("a key of " + std::to_string(key.size()) + " bytes");
                    return true;
                  }
                  const uint64_t i = decodeKey(key);
                  if (i < n) {
                    if (i != expected) {
                      problem("keys " + std::to_string(expected) + ".." +
                              std::to_string(i - 1) + " are missing");
                    }
                    expected = i + 1;
                  }
                  if (!valueMatchesKey(i, value)) {
                    problem("key " + std::to_string(i) + " has a wrong value");
                  } else if (exactValues && i < n) {
                    makeValue(i, 0, want);
                    if (value != std::string_view(want, kValueSize)) {
                      problem("key " + std::to_string(i) + " has wrong value bytes");
                    }
                  }
                  return true;
                });
  if (expected != n) {
    problem("keys " + std::to_string(expected) + ".." + std::to_string(n - 1) +
            " are missing");
  }
  if (exactValues && entries != n) {
    problem(std::to_string(entries) + " entries, expected " + std::to_string(n));
  }
  return problems;
}

void wrongAnswer(const std::string& workload, uint64_t key, const std::string& what) {
  throw std::runtime_error(workload + ": key " + std::to_string(key) + ": " + what);
}

}  // namespace vmstore::bench::records
