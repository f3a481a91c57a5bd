// readChunked: see chunked_read.hpp for the contract.
#include "os/chunked_read.hpp"

#include <unistd.h>

#include <cerrno>
#include <thread>
#include <vector>

#ifdef VMSTORE_HAVE_LIBURING
#include <liburing.h>
#endif

namespace vmstore::internal {

#ifdef VMSTORE_HAVE_LIBURING
namespace {

struct ThreadRing {
  io_uring ring;
  bool usable = false;
  pid_t owner = getpid();  // a child forked from this thread must not share the ring
  ThreadRing() { usable = io_uring_queue_init(kInFlight, &ring, 0) == 0; }
  ~ThreadRing() {
    if (usable) io_uring_queue_exit(&ring);
  }
  ThreadRing(const ThreadRing&) = delete;
  ThreadRing& operator=(const ThreadRing&) = delete;
};

}  // namespace

int readChunked(int fd, void* buf, size_t len, uint64_t off, ChunkedReadTarget target, size_t* prefix) {
  *prefix = 0;
  thread_local ThreadRing tr;
  if (!tr.usable || tr.owner != getpid()) return ENOSYS;
  io_uring* ring = &tr.ring;
  char* out = static_cast<char*>(buf);
  const size_t pieces = (len + kChunkBytes - 1) / kChunkBytes;
  auto pieceLen = [&](size_t i) { return i + 1 < pieces ? kChunkBytes : len - i * kChunkBytes; };
  // Per piece: -1 in flight or not yet submitted, else the bytes it read.
  std::vector<long> got(pieces, -1);
  size_t submitted = 0;  // pieces [0, submitted) were handed to the kernel
  size_t inFlight = 0;
  size_t reported = 0;  // pieces [0, reported) are whole and reported
  bool stop = false;    // a piece failed or read short: submit no more
  int err = 0;
  unsigned waitFailures = 0;
  while (reported < pieces && !(stop && inFlight == 0)) {
    // Keep the device busy first, then deal with what arrived.
    unsigned queued = 0;
    while (!stop && submitted + queued < pieces && inFlight + queued < kInFlight) {
      io_uring_sqe* sqe = io_uring_get_sqe(ring);
      if (sqe == nullptr) break;
      const size_t i = submitted + queued;
      io_uring_prep_read(sqe, fd, out + i * kChunkBytes, static_cast<unsigned>(pieceLen(i)), off + i * kChunkBytes);
      io_uring_sqe_set_data64(sqe, i);
      queued++;
    }
    if (queued > 0) {
      int r;
      do {
        r = io_uring_submit(ring);
      } while (r == -EINTR);
      if (r < 0) {
        // Nothing of this round reached the kernel for sure; never use the ring again
        // (entries may stay queued), and finish with what is in flight.
        tr.usable = false;
        err = -r;
        stop = true;
      } else {
        // io_uring_submit hands over every queued entry or fails.
        submitted += queued;
        inFlight += queued;
      }
      continue;
    }
    if (inFlight == 0) break;  // nothing more can arrive (only after stop)
    io_uring_cqe* cqe;
    int r = io_uring_wait_cqe(ring, &cqe);
    if (r < 0) {
      if (r == -EINTR) continue;
      // Reads may still be in flight into buf: keep waiting (a while), as writeBatch does.
      tr.usable = false;
      if (err == 0) err = -r;
      stop = true;
      if (++waitFailures > 10000) return err;
      std::this_thread::yield();
      continue;
    }
    const size_t i = io_uring_cqe_get_data64(cqe);
    const int res = cqe->res;
    io_uring_cqe_seen(ring, cqe);
    inFlight--;
    if (res < 0 && res != -EINTR && res != -EAGAIN) {
      if (err == 0) err = -res;
      stop = true;
      got[i] = 0;
      continue;
    }
    got[i] = res < 0 ? 0 : res;
    if (static_cast<size_t>(got[i]) < pieceLen(i)) stop = true;  // the caller finishes from here
    // Report the whole pieces from the front.
    size_t before = reported;
    while (reported < pieces && got[reported] >= 0 && static_cast<size_t>(got[reported]) == pieceLen(reported)) {
      reported++;
    }
    if (reported > before && err == 0) {
      *prefix = reported < pieces ? reported * kChunkBytes : len;
      target.arrived(target.ctx, *prefix);
    }
  }
  if (err != 0) return err;
  if (reported < pieces && got[reported] > 0) {
    // The piece after the whole ones read short: its first bytes are in place too.
    *prefix = reported * kChunkBytes + static_cast<size_t>(got[reported]);
    target.arrived(target.ctx, *prefix);
  }
  return 0;
}

#else

int readChunked(int, void*, size_t, uint64_t, ChunkedReadTarget, size_t* prefix) {
  *prefix = 0;
  return ENOSYS;
}

#endif

}  // namespace vmstore::internal
