#include "os/anonymous_memory.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <system_error>

namespace vmstore::internal {

AnonymousMemory::AnonymousMemory(size_t bytes) : bytes_(bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of anonymous memory");
  base_ = static_cast<char*>(p);
}

AnonymousMemory::~AnonymousMemory() { munmap(base_, bytes_); }

}  // namespace vmstore::internal
