#include "sync/thread_index.hpp"

#include <functional>
#include <mutex>
#include <queue>
#include <vector>

namespace vmstore::internal {

namespace {

// Indexes given back by exited threads (lowest first) and the next never used.
struct Registry {
  std::mutex mutex;
  std::priority_queue<unsigned, std::vector<unsigned>, std::greater<unsigned>> freed;
  unsigned next = 0;

  unsigned take() {
    std::lock_guard g(mutex);
    if (freed.empty()) return next++;
    unsigned i = freed.top();
    freed.pop();
    return i;
  }
  void giveBack(unsigned i) {
    std::lock_guard g(mutex);
    freed.push(i);
  }
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may exit after main
  return *r;
}

}  // namespace

namespace thread_index_detail {

unsigned registerThread() {
  struct Held {
    unsigned index = registry().take();
    ~Held() { registry().giveBack(index); }
  };
  thread_local Held held;
  return held.index;
}

}  // namespace thread_index_detail

}  // namespace vmstore::internal
