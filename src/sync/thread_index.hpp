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
#pragma once

namespace vmstore::internal {

namespace thread_index_detail {
unsigned take();              // the lowest free index
void giveBack(unsigned index);
struct Held {
  unsigned index = take();
  ~Held() { giveBack(index); }
};
}  // namespace thread_index_detail

// Inline: on the hot path of every page access (the buffer manager's counters).
inline unsigned threadIndex() {
  thread_local thread_index_detail::Held held;
  return held.index;
}

}  // namespace vmstore::internal
