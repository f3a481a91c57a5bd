// The page-reference trace: format round trips and damage (trace_format), the recorder
// under many threads and under a failing device (trace_recorder), the reader's errors.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "os/fault_io.hpp"
#include "os/io.hpp"
#include "trace/trace_format.hpp"
#include "trace/trace_reader.hpp"
#include "trace/trace_recorder.hpp"
#include "unit_util.hpp"

namespace {

using namespace vmstore::internal;
using vmstore::Status;

std::vector<TraceRef> roundTrip(const std::vector<TraceRef>& in) {
  std::vector<uint8_t> payload;
  uint64_t prev = 0;
  for (const TraceRef& r : in) encodeReference(payload, &prev, r.pid, r.miss);
  std::vector<TraceRef> out;
  std::string error;
  EXPECT_TRUE(decodeBlock(payload.data(), payload.size(), static_cast<uint32_t>(in.size()), &out, &error)) << error;
  return out;
}

TEST(TraceFormat, RoundTripsLargePidsAndDeltasBothWays) {
  std::vector<TraceRef> refs = {{1, true}, {2, false}, {1, false}, {(1ull << 62) - 1, true}, {0, false},
                                {(1ull << 40) + 7, true}, {5, false}, {5, false}};
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10000; i++) refs.push_back({rng() % (1ull << (rng() % 62 + 1)), (rng() & 1) != 0});
  std::vector<TraceRef> out = roundTrip(refs);
  ASSERT_EQ(out.size(), refs.size());
  for (size_t i = 0; i < refs.size(); i++) {
    ASSERT_EQ(out[i].pid, refs[i].pid) << i;
    ASSERT_EQ(out[i].miss, refs[i].miss) << i;
  }
}

TEST(TraceFormat, NearbyPagesTakeOneOrTwoBytes) {
  std::vector<uint8_t> payload;
  uint64_t prev = 0;
  encodeReference(payload, &prev, 1000, false);
  size_t first = payload.size();
  // Deltas within +-31 take one byte, within +-4095 two.
  for (uint64_t pid : {1001, 998, 1029, 1000}) encodeReference(payload, &prev, pid, false);
  EXPECT_EQ(payload.size() - first, 4u);
  encodeReference(payload, &prev, 5000, true);
  EXPECT_EQ(payload.size() - first, 6u);
}

TEST(TraceFormat, DamagedBlocksAreErrorsNotCrashes) {
  std::vector<uint8_t> payload;
  uint64_t prev = 0;
  for (uint64_t pid : {10, 20000000, 30}) encodeReference(payload, &prev, pid, true);
  std::vector<TraceRef> out;
  std::string error;
  EXPECT_FALSE(decodeBlock(payload.data(), payload.size() - 1, 3, &out, &error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  out.clear();
  EXPECT_FALSE(decodeBlock(payload.data(), payload.size(), 2, &out, &error));
  EXPECT_NE(error.find("after"), std::string::npos) << error;
  std::vector<uint8_t> overlong(12, 0xff);
  overlong.push_back(0x01);
  out.clear();
  EXPECT_FALSE(decodeBlock(overlong.data(), overlong.size(), 1, &out, &error));
  EXPECT_NE(error.find("malformed"), std::string::npos) << error;
}

TEST(TraceRecorder, ManyThreadsEveryReferenceOnceInThreadOrder) {
  vmsunit::ScratchDir dir;
  const std::string path = dir.file("t.trace");
  TraceRecorder rec;
  ASSERT_TRUE(rec.open(path).ok());
  const int threads = 4;
  const uint64_t per = 100000;  // several blocks per thread
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      // Thread t references t*10^9 + i, i = 0.., the misses on multiples of 7.
      for (uint64_t i = 0; i < per; i++) rec.onAccess(t * 1000000000ull + i, i % 7 == 0);
    });
  }
  for (auto& th : ts) th.join();
  ASSERT_TRUE(rec.close().ok());
  EXPECT_EQ(rec.references(), threads * per);
  Trace trace;
  ASSERT_TRUE(readTrace(path, &trace).ok());
  ASSERT_EQ(trace.refs.size(), threads * per);
  std::map<uint64_t, uint64_t> nextOf;  // thread -> next i expected
  for (const TraceRef& r : trace.refs) {
    uint64_t t = r.pid / 1000000000ull, i = r.pid % 1000000000ull;
    ASSERT_EQ(i, nextOf[t]) << "thread " << t << " out of order";
    ASSERT_EQ(r.miss, i % 7 == 0);
    nextOf[t]++;
  }
  EXPECT_EQ(trace.distinct, threads * per);
  EXPECT_EQ(trace.misses, threads * ((per + 6) / 7));
}

TEST(TraceRecorder, AFailedWriteIsReportedAtClose) {
  vmsunit::ScratchDir dir;
  FaultIo faults;
  Io* prev = setIo(&faults);
  TraceRecorder rec;
  Status opened = rec.open(dir.file("t.trace"));
  faults.fail({FaultIo::Op::kWrite, "t.trace", 0, -1, ENOSPC});
  for (uint64_t i = 0; i < 200000; i++) rec.onAccess(i, false);
  Status closed = rec.close();
  setIo(prev);
  ASSERT_TRUE(opened.ok()) << opened.toString();
  EXPECT_EQ(closed.code(), Status::Code::kNoSpace) << closed.toString();
}

TEST(TraceRecorder, AnUnwritablePathIsAnError) {
  TraceRecorder rec;
  Status s = rec.open("/nonexistent-dir/x.trace");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.toString().find("/nonexistent-dir/x.trace"), std::string::npos) << s.toString();
}

TEST(TraceReader, RejectsWhatIsNotATrace) {
  vmsunit::ScratchDir dir;
  const std::string path = dir.file("bad.trace");
  { std::ofstream(path) << "not a trace at all"; }
  Trace t;
  Status s = readTrace(path, &t);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.toString().find("bad magic"), std::string::npos);
  // A good file cut short inside its block.
  const std::string good = dir.file("good.trace");
  TraceRecorder rec;
  ASSERT_TRUE(rec.open(good).ok());
  for (uint64_t i = 0; i < 100; i++) rec.onAccess(i * 3, false);
  ASSERT_TRUE(rec.close().ok());
  ASSERT_EQ(::truncate(good.c_str(), static_cast<off_t>(rec.bytes() - 5)), 0);
  s = readTrace(good, &t);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.toString().find("truncated"), std::string::npos) << s.toString();
  EXPECT_EQ(readTrace(dir.file("missing.trace"), &t).code(), Status::Code::kIOError);
}

}  // namespace
