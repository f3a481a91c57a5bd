// AnonymousMemory: a block of private anonymous memory (mmap), zero until written.
//
// Contract
// - bytes are reserved, not committed: a 4 KiB page becomes memory when first written,
//   so a large table of which little is used costs what is used. Zero bytes read as
//   zeros.
// - Throws std::system_error if the address space cannot be reserved. Unmapped when
//   destroyed. Not copyable or movable (users point into it).
#pragma once

#include <cstddef>

namespace vmstore::internal {

class AnonymousMemory {
 public:
  explicit AnonymousMemory(size_t bytes);
  ~AnonymousMemory();
  AnonymousMemory(const AnonymousMemory&) = delete;
  AnonymousMemory& operator=(const AnonymousMemory&) = delete;

  char* base() const { return base_; }
  size_t size() const { return bytes_; }

 private:
  char* base_;
  size_t bytes_;
};

}  // namespace vmstore::internal
