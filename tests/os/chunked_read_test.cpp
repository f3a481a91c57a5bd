// Unit tests of os/chunked_read.hpp: a region read in pieces arrives whole and is
// reported in order, a file that ends inside the region stops short with what arrived,
// and a failing read returns its errno.
#include "os/chunked_read.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "unit_util.hpp"

namespace {

using vmstore::internal::ChunkedReadTarget;
using vmstore::internal::kChunkBytes;
using vmstore::internal::readChunked;

uint8_t patternAt(size_t i) { return static_cast<uint8_t>((i * 7 + (i >> 12) * 13) & 0xff); }

// A file of `bytes` bytes of the pattern.
int writeFile(const std::string& path, size_t bytes) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EXPECT_GE(fd, 0);
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; i++) data[i] = patternAt(i);
  EXPECT_EQ(::pwrite(fd, data.data(), bytes, 0), static_cast<ssize_t>(bytes));
  return fd;
}

// Checks, at every report, that the newly reported bytes are in place and that reports
// ascend; keeps them.
struct Reports {
  explicit Reports(const uint8_t* b) : buf(b) {}
  const uint8_t* buf;
  std::vector<size_t> upTo;
  bool bytesRight = true;
  ChunkedReadTarget target() {
    return {[](void* c, size_t to) {
              auto* r = static_cast<Reports*>(c);
              size_t from = r->upTo.empty() ? 0 : r->upTo.back();
              if (to <= from) r->bytesRight = false;
              for (size_t i = from; i < to; i++) r->bytesRight &= r->buf[i] == patternAt(i);
              r->upTo.push_back(to);
            },
            this};
  }
};

TEST(ChunkedRead, ARegionArrivesWholeReportedInOrder) {
  vmsunit::ScratchDir dir;
  const size_t len = 4 * kChunkBytes + 3 * 4096;  // several pieces, the last one short
  const size_t off = 8192;
  int fd = writeFile(dir.file("f"), off + len);
  vmsunit::AlignedPages mem(len / 4096);
  Reports reports{mem.data()};
  size_t prefix = 0;
  // The file is read at an offset: the buffer's byte i is the file's byte off + i.
  int err = readChunked(fd, mem.data(), len, off, reports.target(), &prefix);
  if (err == ENOSYS) GTEST_SKIP() << "no io_uring ring for this thread";
  ASSERT_EQ(err, 0);
  EXPECT_EQ(prefix, len);
  ASSERT_FALSE(reports.upTo.empty());
  EXPECT_EQ(reports.upTo.back(), len);
  for (size_t i = 1; i < reports.upTo.size(); i++) EXPECT_LT(reports.upTo[i - 1], reports.upTo[i]);
  bool same = true;
  for (size_t i = 0; i < len; i++) same &= mem.data()[i] == patternAt(off + i);
  EXPECT_TRUE(same);
  ::close(fd);
}

TEST(ChunkedRead, AFileEndingInsideTheRegionStopsShortWithWhatArrived) {
  vmsunit::ScratchDir dir;
  const size_t fileBytes = 2 * kChunkBytes + 100;
  int fd = writeFile(dir.file("f"), fileBytes);
  const size_t len = 4 * kChunkBytes;
  vmsunit::AlignedPages mem(len / 4096);
  Reports reports{mem.data()};
  size_t prefix = 0;
  int err = readChunked(fd, mem.data(), len, 0, reports.target(), &prefix);
  if (err == ENOSYS) GTEST_SKIP() << "no io_uring ring for this thread";
  ASSERT_EQ(err, 0);
  EXPECT_EQ(prefix, fileBytes) << "the whole pieces and the first bytes of the short one";
  ASSERT_FALSE(reports.upTo.empty());
  EXPECT_EQ(reports.upTo.back(), fileBytes);
  EXPECT_TRUE(reports.bytesRight);
  ::close(fd);
}

TEST(ChunkedRead, AFailedReadReturnsItsErrnoAndTheRingStaysUsable) {
  vmsunit::ScratchDir dir;
  const size_t len = 3 * kChunkBytes;
  vmsunit::AlignedPages mem(len / 4096);
  Reports bad{mem.data()};
  size_t prefix = 7;
  int fd = ::open(dir.file("w").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);  // not readable
  ASSERT_GE(fd, 0);
  int err = readChunked(fd, mem.data(), len, 0, bad.target(), &prefix);
  if (err == ENOSYS) GTEST_SKIP() << "no io_uring ring for this thread";
  EXPECT_EQ(err, EBADF);
  EXPECT_EQ(prefix, 0u);
  EXPECT_TRUE(bad.upTo.empty());
  ::close(fd);
  // Every read of the failed call was reaped: the next one reads normally.
  int good = writeFile(dir.file("f"), len);
  Reports reports{mem.data()};
  ASSERT_EQ(readChunked(good, mem.data(), len, 0, reports.target(), &prefix), 0);
  EXPECT_EQ(prefix, len);
  EXPECT_TRUE(reports.bytesRight);
  ::close(good);
}

}  // namespace
