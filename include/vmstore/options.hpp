// vmstore::Options: how a database is opened. Every field has a documented default.
//
// Options::parse() reads the C API's config string ("pool_size=64M,create=false");
// unknown keys and malformed values are an InvalidArgument error naming the key, and
// leave *out untouched.
#pragma once

#include <cstdint>
#include <string_view>

#include "vmstore/status.hpp"

namespace vmstore {

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer reserves most of the address space for itself: 1 TiB cannot be mapped.
inline constexpr uint64_t kDefaultMaxSize = 64ull << 30;
#else
inline constexpr uint64_t kDefaultMaxSize = 1ull << 40;
#endif

struct Options {
  // Memory budget of the buffer pool in bytes: resident pages never exceed it.
  // Default 1 GiB; minimum 1 MiB (256 pages); rounded down to whole 4 KiB pages.
  uint64_t pool_size = 1ull << 30;
  // Create the directory and an empty database if missing. Default true. With false,
  // opening a missing database is an InvalidArgument error ("does not exist").
  bool create = true;
  // Largest size the data file may reach; writes beyond it fail with NoSpace.
  // Reserves virtual address space (not memory). Default 1 TiB (64 GiB in
  // ThreadSanitizer builds), minimum 1 MiB, maximum 64 TiB.
  uint64_t max_size = kDefaultMaxSize;

  static Status parse(std::string_view config, Options* out);
};

// Parses "123", "64K", "16M", "2G", "1T" (powers of 1024). False on malformed input
// or overflow.
bool parseSize(std::string_view text, uint64_t* out);

}  // namespace vmstore
