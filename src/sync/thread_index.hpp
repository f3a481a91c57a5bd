// threadIndex(): a small dense number for the calling thread, for per-thread slots.
//
// Contract
// - Among the threads alive at one time, no two have the same index: a thread takes the
//   lowest free index on its first call and gives it back when it exits, so indexes stay
//   below the largest number of threads ever alive at once (not the number ever
//   started).
// - An index given back may go to a later thread: per-thread slots are reused, never
//   shared by two live threads.
// - The first call of a thread takes a mutex; later calls are a thread-local read.
// - A call from a thread-local destructor that runs after the index was given back
//   still returns it (it may be another thread's by then): counts may be lost, no more.
#pragma once

namespace vmstore::internal {

namespace thread_index_detail {

inline constexpr unsigned kNone = ~0u;
// The calling thread's first call: takes the lowest free index (given back when the
// thread exits).
unsigned registerThread();
// The thread's index once registered, else kNone (constant-initialized and trivially
// destroyed: reading it needs no guard of thread-local construction).
inline unsigned& cachedIndex() {
  thread_local unsigned index = kNone;
  return index;
}

}  // namespace thread_index_detail

// Inline: on the hot path of every page access (the buffer manager's counters).
inline unsigned threadIndex() {
  unsigned& index = thread_index_detail::cachedIndex();
  if (index == thread_index_detail::kNone) [[unlikely]] index = thread_index_detail::registerThread();
  return index;
}

}  // namespace vmstore::internal
