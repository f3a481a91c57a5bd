#include "os/thread_name.hpp"

#include <pthread.h>

#include <cstring>

namespace vmstore::internal {

void nameThread(std::thread& t, const char* name) noexcept {
  if (!t.joinable()) return;
  char cut[16];
  std::strncpy(cut, name, sizeof cut - 1);
  cut[sizeof cut - 1] = '\0';
  (void)pthread_setname_np(t.native_handle(), cut);
}

std::string threadName() {
  char name[16] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) != 0) return {};
  return name;
}

}  // namespace vmstore::internal
