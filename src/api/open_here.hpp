// OpenHere: where each open transaction was last called from, so that calls which would
// wait for it forever refuse instead (Busy).
//
// Contract
// - A caller is a thread, or a task (task/scheduler.hpp) inside a thread: each thread has
//   one list (made by openHere() on its first transaction, shared, locked), holding one
//   entry (database, task or null) per transaction whose last call came from there. A
//   transaction that is called from another caller moves its entry (TxnImpl::check), and
//   its end removes the entry from whichever list holds it, so a list outlives its thread
//   while a transaction points at it.
// - heldHere(db): a transaction of db is open in the calling thread or task itself. Its
//   plain writes (put, delete, update, batch, creating a tree) would wait for that
//   transaction's key locks, or for a checkpoint that waits for it: they refuse. Another
//   task of the same thread may write: its waits suspend only itself.
// - anyHere(db): a transaction of db is open in any caller of this thread: sync, close,
//   dropTree, check and openTree (during a drop) refuse, since what they wait for may
//   block the whole thread.
// - heldHere is inline and costs a thread-local load and a relaxed load when the calling
//   thread has no open transaction; every plain write asks it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "sync/spin_mutex.hpp"
#include "task/scheduler.hpp"

namespace vmstore::internal {

class DatabaseImpl;

struct OpenHere {
  struct Entry {
    const DatabaseImpl* db;
    const void* task;  // Scheduler::runningTask() of the caller; null outside tasks
    bool operator==(const Entry&) const = default;
  };

  void add(Entry e) {
    std::lock_guard g(mutex);
    entries.push_back(e);
    size.store(static_cast<uint32_t>(entries.size()), std::memory_order_relaxed);
  }
  void remove(Entry e) {
    std::lock_guard g(mutex);
    if (auto it = std::find(entries.begin(), entries.end(), e); it != entries.end()) entries.erase(it);
    size.store(static_cast<uint32_t>(entries.size()), std::memory_order_relaxed);
  }
  // Entries of db, of any task.
  size_t count(const DatabaseImpl* db) {
    if (size.load(std::memory_order_relaxed) == 0) return 0;
    std::lock_guard g(mutex);
    return static_cast<size_t>(std::count_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.db == db; }));
  }
  bool holds(Entry e) {
    std::lock_guard g(mutex);
    return std::find(entries.begin(), entries.end(), e) != entries.end();
  }

  SpinMutex mutex;
  std::vector<Entry> entries;
  std::atomic<uint32_t> size{0};  // entries.size(), read without the mutex
};

namespace detail {
inline thread_local OpenHere* tOpenHere = nullptr;  // this thread's list, once openHere() made it
}  // namespace detail

// This thread's list, made on first use.
const std::shared_ptr<OpenHere>& openHere();

inline OpenHere::Entry callerEntry(const DatabaseImpl* db) { return {db, task::Scheduler::runningTask()}; }

inline bool heldHere(const DatabaseImpl* db) {
  OpenHere* h = detail::tOpenHere;
  return h != nullptr && h->size.load(std::memory_order_relaxed) != 0 && h->holds(callerEntry(db));
}

inline bool anyHere(const DatabaseImpl* db) {
  OpenHere* h = detail::tOpenHere;
  return h != nullptr && h->count(db) != 0;
}

}  // namespace vmstore::internal
