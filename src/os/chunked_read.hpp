// readChunked: one large read of a file region as several pieces in flight at once on the
// calling thread's own io_uring ring, telling the caller in order how much of the buffer
// has arrived, so that it can work on the first bytes (check them, copy them on) while
// the rest is still being read.
//
// Contract
// - Reads [off, off + len) of fd into buf (aligned as fd's O_DIRECT needs) in pieces of
//   kChunkBytes, up to kInFlight of them in flight. Each time the bytes [0, upTo) of buf
//   are all in place, with upTo larger than before, it calls arrived(upTo) (on this
//   thread, between waits; reads already submitted go on meanwhile).
// - Returns 0 after the whole region arrived (the last call had upTo == len). Returns
//   0 with *prefix < len when a piece read short (the end of the file, or a read the
//   kernel cut short): *prefix bytes from the start are in place and reported; the rest
//   of buf is unspecified and the caller finishes it. Returns an errno when a read
//   failed (or ENOSYS when this thread has no ring: no liburing, or io_uring refused);
//   *prefix is then what arrived before.
// - Never returns while a read it submitted is still in flight: buf is the caller's
//   again on return, whatever happened. (Unless waiting on the ring itself fails
//   10,000 times in a row: then it gives up and never uses that ring again, as
//   DataFile::writeBatch does with its own.)
// - Bypasses os/io.hpp's Io (like DataFile's batched writes and task reads): callers use
//   it only when io().usesKernelOnly(), so fault-injecting tests take their own path.
// - Each thread's ring is made on its first call (kInFlight entries) and kept until the
//   thread ends. In a process forked from the thread after that, the call returns
//   ENOSYS (the ring's memory is shared with the parent).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vmstore::internal {

struct ChunkedReadTarget {
  // Called with ascending upTo; see the contract.
  void (*arrived)(void* ctx, size_t upTo);
  void* ctx;
};

constexpr size_t kChunkBytes = size_t{2} << 20;
constexpr unsigned kInFlight = 8;

int readChunked(int fd, void* buf, size_t len, uint64_t off, ChunkedReadTarget target, size_t* prefix);

}  // namespace vmstore::internal
