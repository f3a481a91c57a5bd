// `vmstore bench read-io`: the paper's Figure 10 (000 §5.6): random 4 KiB O_DIRECT reads
// from a test file into
//   fixed           preallocated buffers of each thread (no virtual-memory work at all:
//                   the upper bound of the I/O interface), or
//   vmstore-area    the vmstore virtual memory area (VmArea): file page p is read to the
//                   area's page p, as the buffer manager does; once the pool budget is
//                   reached the oldest 64 pages are released with one VmArea::release
//                   (process_madvise when the kernel has it), like vmcache's eviction, so
//                   that reads keep faulting in fresh memory
// with pread (one read in flight per thread, threads 1..N) and with io_uring (one thread,
// queue depths 1, 2, 4, ..., 128; needs liburing, VMSTORE_HAVE_LIBURING).
//
// The test file (--data bytes, default 4 GiB) is `read-io.dat` in --dir (kept there and
// reused while its size matches) or in a fresh temporary directory (removed afterwards);
// it is written once with O_DIRECT. Pool budget of the area: --pool (default 64 MiB),
// at most half the file.
//
// --seconds: time per measured configuration (default 3 s).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <system_error>
#include <thread>

#ifdef VMSTORE_HAVE_LIBURING
#include <liburing.h>
#endif

#include "micro_util.hpp"
#include "os/vm_area.hpp"

namespace vmstore::bench::micro {
namespace {

namespace fs = std::filesystem;
using internal::VmArea;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kDefaultDataBytes = 4ull << 30;
constexpr uint64_t kDefaultPoolBytes = 64ull << 20;
constexpr uint64_t kEvictBatch = 64;

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), "read-io: " + what);
}

struct AlignedFree {
  void operator()(char* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<char, AlignedFree>;
AlignedBuffer alignedAlloc(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, kPage, bytes) != 0) throw std::bad_alloc();
  return AlignedBuffer(static_cast<char*>(p));
}

// The test file: page p starts with the 8-byte value p (checked on fixed-buffer reads).
class TestFile {
 public:
  TestFile(const std::string& dir, uint64_t bytes) : pages_(bytes / kPage) {
    if (dir.empty()) {
      std::string tmpl = (fs::temp_directory_path() / "vmstore-read-io-XXXXXX").string();
      if (!mkdtemp(tmpl.data())) fail("mkdtemp");
      ownDir_ = tmpl;
      path_ = fs::path(tmpl) / "read-io.dat";
    } else {
      fs::create_directories(dir);
      path_ = fs::path(dir) / "read-io.dat";
    }
    struct stat st;
    if (stat(path_.c_str(), &st) != 0 || uint64_t(st.st_size) != pages_ * kPage) fill();
    fd_ = open(path_.c_str(), O_RDONLY | O_DIRECT);
    if (fd_ < 0) fail("open " + path_.string() + " with O_DIRECT");
  }
  ~TestFile() {
    if (fd_ >= 0) close(fd_);
    if (!ownDir_.empty()) {
      std::error_code ec;
      fs::remove_all(ownDir_, ec);
    }
  }
  TestFile(const TestFile&) = delete;
  TestFile& operator=(const TestFile&) = delete;
  int fd() const { return fd_; }
  uint64_t pages() const { return pages_; }

 private:
  void fill() {
    std::fprintf(stderr, "read-io: writing the %llu MiB test file %s\n",
                 static_cast<unsigned long long>(pages_ * kPage >> 20), path_.c_str());
    int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (fd < 0) fail("create " + path_.string());
    constexpr uint64_t kChunkPages = 256;  // 1 MiB per write
    AlignedBuffer buf = alignedAlloc(kChunkPages * kPage);
    for (uint64_t i = 0; i < kChunkPages * kPage / 8; i++) {
      reinterpret_cast<uint64_t*>(buf.get())[i] = i * 0x9E3779B97F4A7C15ull;
    }
    for (uint64_t p = 0; p < pages_; p += kChunkPages) {
      uint64_t n = std::min(kChunkPages, pages_ - p);
      for (uint64_t j = 0; j < n; j++) {
        *reinterpret_cast<uint64_t*>(buf.get() + j * kPage) = p + j;
      }
      ssize_t w = pwrite(fd, buf.get(), n * kPage, p * kPage);
      if (w != static_cast<ssize_t>(n * kPage)) {
        close(fd);
        fail("write " + path_.string());
      }
    }
    if (fsync(fd) != 0) fail("fsync");
    close(fd);
  }

  fs::path path_;
  std::string ownDir_;
  uint64_t pages_;
  int fd_ = -1;
};

// Where the reads of one thread go.
class Target {
 public:
  virtual ~Target() = default;
  virtual char* bufferFor(uint64_t page, unsigned slot) = 0;
  virtual void completed(uint64_t page, char* buf) = 0;
};

class FixedTarget : public Target {
 public:
  explicit FixedTarget(unsigned slots) : buffers_(alignedAlloc(uint64_t(slots) * kPage)) {
    // Touch them: fixed buffers are resident before the run.
    std::memset(buffers_.get(), 0, uint64_t(slots) * kPage);
  }
  char* bufferFor(uint64_t, unsigned slot) override { return buffers_.get() + slot * kPage; }
  void completed(uint64_t page, char* buf) override {
    if (*reinterpret_cast<const uint64_t*>(buf) != page) {
      throw std::runtime_error("read-io: page " + std::to_string(page) + " read wrong data");
    }
  }

 private:
  AlignedBuffer buffers_;
};

// One thread's share of the vmstore area: reads to page p's address, evicts in batches.
class AreaTarget : public Target {
 public:
  AreaTarget(VmArea& area, uint64_t budgetPages, std::atomic<uint64_t>& releaseCalls)
      : area_(area), budget_(std::max<uint64_t>(budgetPages, kEvictBatch)),
        releaseCalls_(releaseCalls) {}
  char* bufferFor(uint64_t page, unsigned) override { return area_.pageAddress(page); }
  void completed(uint64_t page, char*) override {
    resident_.push_back(page);
    if (resident_.size() < budget_) return;
    uint64_t batch[kEvictBatch];
    for (uint64_t& pid : batch) {
      pid = resident_.front();
      resident_.pop_front();
    }
    releaseCalls_.fetch_add(area_.release(batch), std::memory_order_relaxed);
  }

 private:
  VmArea& area_;
  uint64_t budget_;
  std::deque<uint64_t> resident_;
  std::atomic<uint64_t>& releaseCalls_;
};

struct Result {
  uint64_t reads = 0;
  double seconds = 0;
  uint64_t releaseCalls = 0;
};

// pread: `threads` threads, one read in flight each.
Result runPread(const TestFile& file, bool area, unsigned threads, uint64_t poolPages,
                double seconds) {
  std::unique_ptr<VmArea> vm;
  if (area) vm = std::make_unique<VmArea>(file.pages(), 0);
  std::atomic<uint64_t> releaseCalls{0};
  std::atomic<bool> go{false}, stop{false};
  std::atomic<unsigned> ready{0};
  std::vector<uint64_t> reads(threads, 0);
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      try {
        std::unique_ptr<Target> target;
        if (area) {
          target = std::make_unique<AreaTarget>(*vm, poolPages / threads, releaseCalls);
        } else {
          target = std::make_unique<FixedTarget>(1);
        }
        uint64_t x = 0x2545F4914F6CDD1Dull * (t + 1), n = 0;
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        while (!stop.load(std::memory_order_relaxed)) {
          x = xorshift64(x);
          uint64_t page = fastRange(x, file.pages());
          char* buf = target->bufferFor(page, 0);
          ssize_t r = pread(file.fd(), buf, kPage, page * kPage);
          if (r != static_cast<ssize_t>(kPage)) fail("pread");
          target->completed(page, buf);
          n++;
        }
        reads[t] = n;
      } catch (...) {
        errors[t] = std::current_exception();
        ready.fetch_add(1);
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  double t0 = nowSeconds();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& w : workers) w.join();
  Result r;
  r.seconds = nowSeconds() - t0;
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  for (uint64_t n : reads) r.reads += n;
  r.releaseCalls = releaseCalls.load();
  return r;
}

#ifdef VMSTORE_HAVE_LIBURING
// io_uring: one thread keeping `depth` reads in flight.
Result runUring(const TestFile& file, bool area, unsigned depth, uint64_t poolPages,
                double seconds) {
  std::unique_ptr<VmArea> vm;
  if (area) vm = std::make_unique<VmArea>(file.pages(), 0);
  std::atomic<uint64_t> releaseCalls{0};
  std::unique_ptr<Target> target;
  if (area) {
    target = std::make_unique<AreaTarget>(*vm, poolPages, releaseCalls);
  } else {
    target = std::make_unique<FixedTarget>(depth);
  }
  io_uring ring;
  if (int e = io_uring_queue_init(depth, &ring, 0); e < 0) {
    errno = -e;
    fail("io_uring_queue_init");
  }
  struct RingCloser {
    io_uring* r;
    ~RingCloser() { io_uring_queue_exit(r); }
  } closer{&ring};

  std::vector<uint64_t> slotPage(depth);
  uint64_t x = 0x2545F4914F6CDD1Dull;
  auto queue = [&](unsigned slot) {
    x = xorshift64(x);
    uint64_t page = fastRange(x, file.pages());
    slotPage[slot] = page;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    if (!sqe) throw std::runtime_error("read-io: io_uring submission queue full");
    io_uring_prep_read(sqe, file.fd(), target->bufferFor(page, slot), kPage, page * kPage);
    io_uring_sqe_set_data64(sqe, slot);
  };
  for (unsigned s = 0; s < depth; s++) queue(s);

  Result r;
  unsigned inFlight = depth;
  double t0 = nowSeconds();
  double end = t0 + seconds;
  bool stopping = false;
  std::vector<unsigned> done;
  done.reserve(depth);
  while (inFlight > 0) {
    int e = io_uring_submit_and_wait(&ring, 1);
    if (e < 0 && e != -EINTR) {
      errno = -e;
      fail("io_uring_submit_and_wait");
    }
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    done.clear();
    io_uring_for_each_cqe(&ring, head, cqe) {
      seen++;
      auto slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
      if (cqe->res != static_cast<int>(kPage)) {
        errno = cqe->res < 0 ? -cqe->res : EIO;
        fail("io_uring read");
      }
      done.push_back(slot);
    }
    io_uring_cq_advance(&ring, seen);
    if (!stopping && nowSeconds() >= end) {
      stopping = true;
      r.seconds = nowSeconds() - t0;
    }
    for (unsigned slot : done) {
      inFlight--;
      if (!stopping) r.reads++;
      target->completed(slotPage[slot], target->bufferFor(slotPage[slot], slot));
      if (!stopping) {
        queue(slot);
        inFlight++;
      }
    }
  }
  r.releaseCalls = releaseCalls.load();
  return r;
}
#endif

class ReadIo : public MicroBenchmark {
 public:
  JsonFields run(const RunOptions& opts, std::ostream& out) override {
    const double seconds = secondsPerConfig(opts, 3.0);
    const unsigned threadsMax = maxThreads(opts);
    uint64_t bytes = std::max<uint64_t>((opts.data ? opts.data : kDefaultDataBytes) / kPage, 16) * kPage;
    TestFile file(opts.dir, bytes);
    // The small default keeps the eviction path busy within seconds.
    uint64_t poolPages = poolBytes(opts, kDefaultPoolBytes) / kPage;
    poolPages = std::max<uint64_t>(std::min(poolPages, file.pages() / 2), kEvictBatch);
    bool batched = VmArea(1, 0).batchedRelease();

    out << "api,target,threads,queue_depth,reads,seconds,iops,mb_per_s,release_calls_per_read\n";
    double bestArea = 0, bestFixed = 0;
    std::string bestAreaConfig;
    auto row = [&](const char* api, bool area, unsigned threads, unsigned depth, const Result& r) {
      double iops = r.seconds > 0 ? r.reads / r.seconds : 0;
      out << api << ',' << (area ? "vmstore-area" : "fixed") << ',' << threads << ',' << depth
          << ',' << r.reads << ',' << fmtNumber(r.seconds, 3) << ',' << fmtNumber(iops, 0) << ','
          << fmtNumber(iops * kPage / 1e6, 1) << ','
          << fmtNumber(r.reads ? double(r.releaseCalls) / r.reads : 0, 4) << '\n';
      out.flush();
      if (area && iops > bestArea) {
        bestArea = iops;
        bestAreaConfig = std::string(api) + (std::string(api) == "pread" ? " threads=" : " qd=") +
                         std::to_string(std::string(api) == "pread" ? threads : depth);
      }
      if (!area) bestFixed = std::max(bestFixed, iops);
    };

    for (unsigned t : threadLadder(threadsMax)) {
      for (bool area : {false, true}) row("pread", area, t, 1, runPread(file, area, t, poolPages, seconds));
    }
    bool uring = false;
#ifdef VMSTORE_HAVE_LIBURING
    uring = true;
    for (unsigned qd = 1; qd <= 128; qd *= 2) {
      for (bool area : {false, true}) row("io_uring", area, 1, qd, runUring(file, area, qd, poolPages, seconds));
    }
#else
    std::fprintf(stderr, "read-io: built without liburing; only pread runs\n");
#endif

    JsonFields f;
    f.emplace_back("threads", std::to_string(threadsMax));
    f.emplace_back("iops", jsonNumber(bestArea, 0));
    f.emplace_back("fixed_iops_best", jsonNumber(bestFixed, 0));
    f.emplace_back("area_over_fixed", jsonNumber(bestFixed > 0 ? bestArea / bestFixed : 0, 3));
    f.emplace_back("best_area_config", jsonString(bestAreaConfig));
    f.emplace_back("data", std::to_string(file.pages() * kPage));
    f.emplace_back("pool", std::to_string(poolPages * kPage));
    f.emplace_back("release", jsonString(batched ? "process_madvise" : "madvise"));
    f.emplace_back("io_uring", jsonString(uring ? "available" : "unavailable"));
    return f;
  }
};

Registrar<MicroBenchmark> registrar("read-io", [] { return std::make_unique<ReadIo>(); });

}  // namespace
}  // namespace vmstore::bench::micro
