// Unit tests of wal/page_journal.hpp with variable-size pages: a page of n ids is one
// frame of n slots, read back whole before and after recovery, and backfill copies the
// frames in the order they were written, so that a span overlapping pages that have
// frames of their own ends up under the newer of them (a freed span whose ids were
// reused, and the other way round).
#include "wal/page_journal.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "unit_util.hpp"

namespace {

using vmstore::internal::DataFile;
using vmstore::internal::Page;
using vmstore::internal::PageJournal;
using vmstore::internal::PageKind;
using vmstore::internal::PageWrite;
using vmstore::internal::sealPage;
using vmstore::internal::setSpan;
using vmsunit::ScratchDir;

// n pages at buf: the head's header says n; every byte of the payload is `fillByte`.
void make(Page* buf, uint64_t pid, uint64_t pages, uint8_t fillByte, uint32_t epoch) {
  std::memset(buf, fillByte, pages * sizeof(Page));
  std::memset(&buf->header, 0, sizeof buf->header);
  buf->header.kind = PageKind::kValue;
  setSpan(&buf->header, pages);
  sealPage(buf, pid, epoch);
}

// The byte at offset 100 of page pid in the data file.
uint8_t byteInDataFile(DataFile& data, uint64_t pid) {
  auto p = std::make_unique<Page>();
  EXPECT_TRUE(data.readPage(pid, p.get()).ok());
  return reinterpret_cast<const uint8_t*>(p.get())[100];
}

TEST(PageJournal, SpanFramesAreReadWholeAndBackfilledInWriteOrder) {
  ScratchDir dir;
  DataFile data;
  ASSERT_TRUE(data.open(dir.file("data.vms"), true).ok());
  {
    PageJournal j;
    ASSERT_TRUE(j.open(dir.str(), &data, true).ok());
    j.begin(1, ~0ull);  // every page of interval 1 goes to the journal
    auto single = std::make_unique<Page[]>(1);
    auto span = std::make_unique<Page[]>(6);
    // Page 5 alone, then a span over 4..9 (5 was freed and reused), then page 7 alone
    // (the span was freed and 7 reused).
    make(single.get(), 5, 1, 0x55, 1);
    PageWrite w5{5, single.get(), 1};
    ASSERT_TRUE(j.writePages({&w5, 1}).ok());
    make(span.get(), 4, 6, 0x44, 1);
    PageWrite ws{4, span.get(), 6};
    ASSERT_TRUE(j.writePages({&ws, 1}).ok());
    EXPECT_EQ(j.bytes(), 7 * sizeof(Page)) << "one slot per page";
    make(single.get(), 7, 1, 0x77, 1);
    PageWrite w7{7, single.get(), 1};
    ASSERT_TRUE(j.writePages({&w7, 1}).ok());
    // Read back whole before any checkpoint.
    auto back = std::make_unique<Page[]>(6);
    ASSERT_TRUE(j.readPage(4, back.get(), 6).ok());
    EXPECT_TRUE(vmstore::internal::pageIsIntact(back.get(), 4, 6));
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(back.get())[5 * 4096 + 100], 0x44);
    auto sb = std::make_unique<Page>();
    std::memset(sb.get(), 0, sizeof(Page));
    sb->header.kind = PageKind::kSuperblock;
    sealPage(sb.get(), 0, 1);
    ASSERT_TRUE(j.commit(1, sb.get()).ok());
    j.close();  // a crash before the backfill: recovery completes it
  }
  PageJournal j;
  ASSERT_TRUE(j.open(dir.str(), &data, true).ok());
  bool applied = false;
  auto sb = std::make_unique<Page>();
  ASSERT_TRUE(j.recover(1, &applied, sb.get()).ok());
  EXPECT_TRUE(applied);
  EXPECT_EQ(byteInDataFile(data, 4), 0x44);
  EXPECT_EQ(byteInDataFile(data, 5), 0x44) << "the span is newer than page 5's own frame";
  EXPECT_EQ(byteInDataFile(data, 6), 0x44);
  EXPECT_EQ(byteInDataFile(data, 7), 0x77) << "page 7's own frame is newer than the span";
  EXPECT_EQ(byteInDataFile(data, 9), 0x44);
}

TEST(PageJournal, ATornSpanFrameEndsTheInterval) {
  ScratchDir dir;
  DataFile data;
  ASSERT_TRUE(data.open(dir.file("data.vms"), true).ok());
  {
    PageJournal j;
    ASSERT_TRUE(j.open(dir.str(), &data, true).ok());
    j.begin(1, ~0ull);
    auto span = std::make_unique<Page[]>(4);
    make(span.get(), 10, 4, 0x10, 1);
    span[3].payload[50] ^= 1;  // damaged after sealing: its last page is torn
    PageWrite ws{10, span.get(), 4};
    ASSERT_TRUE(j.writePages({&ws, 1}).ok());
    auto sb = std::make_unique<Page>();
    std::memset(sb.get(), 0, sizeof(Page));
    sb->header.kind = PageKind::kSuperblock;
    sealPage(sb.get(), 0, 1);
    ASSERT_TRUE(j.commit(1, sb.get()).ok());
    j.close();
  }
  PageJournal j;
  ASSERT_TRUE(j.open(dir.str(), &data, true).ok());
  bool applied = true;
  auto sb = std::make_unique<Page>();
  ASSERT_TRUE(j.recover(1, &applied, sb.get()).ok());
  EXPECT_FALSE(applied) << "the commit frame after a torn frame is not reached";
  EXPECT_EQ(data.sizeBytes(), 0u) << "nothing was copied into the data file";
}

}  // namespace
