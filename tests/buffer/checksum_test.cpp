// Unit tests of buffer/checksum.hpp (CRC-32C) and the page seal of buffer/page.hpp.
#include "buffer/checksum.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "buffer/page.hpp"
#include "unit_util.hpp"

namespace {

using vmstore::internal::crc32c;
using vmstore::internal::kChecksumOffset;
using vmstore::internal::kPageSize;
using vmstore::internal::Page;
using vmstore::internal::PageKind;
using vmstore::internal::pageIsIntact;
using vmstore::internal::sealPage;

// Bit-at-a-time CRC-32C (reflected polynomial 0x82F63B78), the reference.
uint32_t referenceCrc32c(const uint8_t* p, size_t n) {
  uint32_t crc = ~0u;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int b = 0; b < 8; b++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return ~crc;
}

TEST(Checksum, KnownVectors) {
  const char* check = "123456789";
  EXPECT_EQ(crc32c(check, 9), 0xE3069283u);
  std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  // RFC 3720 (iSCSI) B.4.
  std::vector<uint8_t> ones(32, 0xff);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  std::vector<uint8_t> inc(32), dec(32);
  for (int i = 0; i < 32; i++) {
    inc[i] = static_cast<uint8_t>(i);
    dec[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(crc32c(inc.data(), inc.size()), 0x46DD794Eu);
  EXPECT_EQ(crc32c(dec.data(), dec.size()), 0x113FDB5Cu);
  EXPECT_EQ(crc32c("", 0), 0u);
  EXPECT_EQ(crc32c("a", 1), 0xC1D04330u);
}

TEST(Checksum, ExtendContinuesACrcOverMoreBytes) {
  using vmstore::internal::crc32cExtend;
  std::mt19937_64 rng(2);
  std::vector<uint8_t> buf(300);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t split : {0, 1, 7, 8, 100, 299, 300}) {
    EXPECT_EQ(crc32cExtend(crc32c(buf.data(), split), buf.data() + split, buf.size() - split),
              crc32c(buf.data(), buf.size()))
        << "split " << split;
  }
  EXPECT_EQ(crc32cExtend(0, "123456789", 9), 0xE3069283u);
}

TEST(Checksum, MatchesReferenceAtAnyLengthAndAlignment) {
  std::mt19937_64 rng(1);
  std::vector<uint8_t> buf(9000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t len = 0; len <= 80; len++) {
    for (size_t off = 0; off < 16; off++) {
      ASSERT_EQ(crc32c(buf.data() + off, len), referenceCrc32c(buf.data() + off, len))
          << "len " << len << " offset " << off;
    }
  }
  for (int i = 0; i < 300; i++) {
    size_t off = rng() % 64;
    size_t len = rng() % (buf.size() - off);
    ASSERT_EQ(crc32c(buf.data() + off, len), referenceCrc32c(buf.data() + off, len))
        << "len " << len << " offset " << off;
  }
}

// Lengths around a few hundred bytes, a page and the three-lane rounds of 4,080 bytes
// and 12 KiB (and their multiples), and a buffer of over a MiB (as a value page's
// checksum covers), whole and continued at odd splits.
TEST(Checksum, LongRangesAndTheirSplitsMatchTheReference) {
  using vmstore::internal::crc32cExtend;
  std::mt19937_64 rng(4);
  std::vector<uint8_t> buf((size_t{1} << 20) + 13);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t len : {size_t{254}, size_t{255}, size_t{256}, size_t{257}, size_t{511}, size_t{4079}, size_t{4080}, size_t{4088}, size_t{4096}, size_t{4103},
                     size_t{8160}, size_t{8167}, size_t{12240},
                     size_t{12287}, size_t{12288}, size_t{12289}, size_t{24576 + 5}, size_t{3 * 12288 + 4095}}) {
    for (size_t off : {size_t{0}, size_t{1}, size_t{3}, size_t{8}}) {
      ASSERT_EQ(crc32c(buf.data() + off, len), referenceCrc32c(buf.data() + off, len))
          << "len " << len << " offset " << off;
    }
  }
  const uint32_t whole = referenceCrc32c(buf.data(), buf.size());
  EXPECT_EQ(crc32c(buf.data(), buf.size()), whole);
  for (size_t split : {size_t{1}, size_t{255}, size_t{256}, size_t{4080}, size_t{4097}, size_t{12288}, size_t{12289 + 7},
                       buf.size() - 12290, buf.size() - 300, buf.size() - 1}) {
    EXPECT_EQ(crc32cExtend(crc32c(buf.data(), split), buf.data() + split, buf.size() - split), whole)
        << "split " << split;
  }
}

struct SealedPage {
  vmsunit::AlignedPages mem{1};
  Page* page = mem.as<Page>();
  explicit SealedPage(uint64_t pid, uint64_t seed = 5) {
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < kPageSize; i++) mem.data()[i] = static_cast<uint8_t>(rng());
    page->header.kind = PageKind::kBTreeLeaf;
    vmstore::internal::setSpan(&page->header, 1);  // one page (the random bytes said otherwise)
    page->header.dirty = 1;
    sealPage(page, pid);
  }
};

TEST(Checksum, SealSetsIdAndChecksumAndClearsDirty) {
  SealedPage s(42);
  EXPECT_EQ(s.page->header.pid, 42u);
  EXPECT_EQ(s.page->header.dirty, 0);
  EXPECT_EQ(s.page->header.checksum,
            referenceCrc32c(s.mem.data() + kChecksumOffset, kPageSize - kChecksumOffset))
      << "the checksum is the CRC-32C of bytes [8, 4096)";
  EXPECT_TRUE(pageIsIntact(s.page, 42));
}

TEST(Checksum, WrongPidIsDetected) {
  SealedPage s(42);
  EXPECT_FALSE(pageIsIntact(s.page, 41));
  EXPECT_FALSE(pageIsIntact(s.page, 43));
  EXPECT_FALSE(pageIsIntact(s.page, 42 + (1ull << 32)));
  EXPECT_FALSE(pageIsIntact(s.page, 0));
  // A page sealed for another id, i.e. written to the wrong place.
  sealPage(s.page, 7);
  EXPECT_FALSE(pageIsIntact(s.page, 42));
  EXPECT_TRUE(pageIsIntact(s.page, 7));
}

TEST(Checksum, AnyFlippedBitIsDetected) {
  SealedPage s(1234);
  uint8_t* bytes = s.mem.data();
  std::mt19937 rng(3);
  for (size_t i = kChecksumOffset; i < kPageSize; i++) {
    uint8_t bit = static_cast<uint8_t>(1u << (rng() % 8));
    bytes[i] ^= bit;
    ASSERT_FALSE(pageIsIntact(s.page, 1234)) << "flipped bit " << int(bit) << " of byte " << i;
    bytes[i] ^= bit;
  }
  // Every bit of a few bytes, including the pid and the kind.
  for (size_t i : {size_t{8}, size_t{16}, size_t{23}, size_t{2048}, kPageSize - 1}) {
    for (int b = 0; b < 8; b++) {
      bytes[i] ^= static_cast<uint8_t>(1u << b);
      ASSERT_FALSE(pageIsIntact(s.page, 1234)) << "bit " << b << " of byte " << i;
      bytes[i] ^= static_cast<uint8_t>(1u << b);
    }
  }
  // The checksum field itself.
  for (size_t i = 0; i < 4; i++) {
    bytes[i] ^= 0x10;
    ASSERT_FALSE(pageIsIntact(s.page, 1234)) << "checksum byte " << i;
    bytes[i] ^= 0x10;
  }
  EXPECT_TRUE(pageIsIntact(s.page, 1234)) << "restored page";
}

TEST(Checksum, DirtyByteIsIgnored) {
  SealedPage s(9);
  for (int v : {1, 2, 0x80, 0xff, 0}) {
    s.page->header.dirty = static_cast<uint8_t>(v);
    EXPECT_TRUE(pageIsIntact(s.page, 9)) << "dirty = " << v;
  }
}

TEST(Checksum, ZeroPageIsNotIntact) {
  // A page never written (zeros from a hole or past the end) must be rejected, also as
  // page 0 (the checksum of 4088 zero bytes is not zero).
  vmsunit::AlignedPages mem(1);
  const Page* page = mem.as<Page>();
  EXPECT_FALSE(pageIsIntact(page, 0));
  EXPECT_FALSE(pageIsIntact(page, 5));
}

}  // namespace
