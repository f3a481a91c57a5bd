// `vmstore bench vm-alloc`: the paper's Figures 4 and 9 (000 §4.1, §5.5) on a stock
// kernel: how fast can the operating system hand out and take back 4 KiB pages of the
// vmstore virtual memory area (VmArea, MAP_NORESERVE)?
//
// Each thread owns its own part of one large area and repeatedly faults in a batch of 64
// pages (one byte written per page) and releases them again, either
//   madvise            one madvise(MADV_DONTNEED) per page (a TLB shootdown per page), or
//   process_madvise    one process_madvise(pidfd of self, 64 iovecs, MADV_DONTNEED) per
//                      batch, through VmArea::release (the buffer manager's eviction call)
// at 1..N threads (N: --threads, default the hardware threads). The batch's pages are
// every other page, so that each is its own iovec (evicted pages are not adjacent).
// One operation is one page faulted in and released. TLB shootdowns come from the delta
// of the "TLB:" row of /proc/interrupts summed over CPUs (machine-wide, so other
// processes' shootdowns count too).
//
// --seconds: time per measured configuration (default 1 s).
#include <sys/mman.h>

#include <atomic>
#include <exception>
#include <ostream>
#include <system_error>
#include <thread>

#include "micro_util.hpp"
#include "os/vm_area.hpp"

namespace vmstore::bench::micro {
namespace {

using internal::VmArea;

constexpr uint64_t kPage = VmArea::kPageSize;
constexpr uint64_t kBatch = 64;
constexpr uint64_t kBatchSpan = kBatch * 2;        // pages a batch covers (every other page)
constexpr uint64_t kPartPages = kBatchSpan * 32;   // pages each thread cycles through

enum class Variant { kMadvise, kProcessMadvise };

struct Result {
  uint64_t ops = 0;
  uint64_t syscalls = 0;
  double seconds = 0;
  std::optional<uint64_t> shootdowns;
};

// One thread: fault in and release batches of its own pages until `stop`.
void allocLoop(VmArea& area, Variant variant, unsigned t, const std::atomic<bool>& go,
               const std::atomic<bool>& stop, uint64_t& ops, uint64_t& calls) {
  const uint64_t first = 1 + t * kPartPages;  // page 0 was VmArea's probe page
  std::vector<uint64_t> pids(kBatch);
  while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
  for (uint64_t b = 0; !stop.load(std::memory_order_relaxed); b++) {
    uint64_t start = first + (b % (kPartPages / kBatchSpan)) * kBatchSpan;
    for (uint64_t j = 0; j < kBatch; j++) {
      pids[j] = start + 2 * j;
      *reinterpret_cast<volatile char*>(area.pageAddress(pids[j])) = 1;  // fault in
    }
    if (variant == Variant::kMadvise) {
      for (uint64_t pid : pids) {
        if (madvise(area.pageAddress(pid), kPage, MADV_DONTNEED) != 0) {
          throw std::system_error(errno, std::generic_category(), "madvise");
        }
      }
      calls += kBatch;
    } else {
      calls += area.release(pids);
    }
    ops += kBatch;
  }
}

Result runConfig(VmArea& area, Variant variant, unsigned threads, double seconds) {
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::vector<uint64_t> ops(threads, 0);
  std::vector<uint64_t> calls(threads, 0);
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> workers;
  std::atomic<unsigned> ready{0};
  for (unsigned t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      ready.fetch_add(1);
      try {
        allocLoop(area, variant, t, go, stop, ops[t], calls[t]);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  auto tlb0 = tlbShootdowns();
  double t0 = nowSeconds();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& w : workers) w.join();
  double t1 = nowSeconds();
  auto tlb1 = tlbShootdowns();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }

  Result r;
  r.seconds = t1 - t0;
  for (unsigned t = 0; t < threads; t++) {
    r.ops += ops[t];
    r.syscalls += calls[t];
  }
  if (tlb0 && tlb1) r.shootdowns = *tlb1 - *tlb0;
  return r;
}

class VmAlloc : public MicroBenchmark {
 public:
  JsonFields run(const RunOptions& opts, std::ostream& out) override {
    const double seconds = secondsPerConfig(opts, 1.0);
    const unsigned threadsMax = maxThreads(opts);
    VmArea area(1 + uint64_t(threadsMax) * kPartPages, 0);
    const bool batched = area.batchedRelease();
    if (!batched) {
      std::fprintf(stderr,
                   "vm-alloc: process_madvise(MADV_DONTNEED) on the own process is unavailable "
                   "on this kernel; only the madvise variant runs\n");
    }

    out << "variant,threads,ops,seconds,ops_per_s,syscalls_per_op,tlb_shootdowns,"
           "shootdowns_per_op\n";
    double last[2] = {0, 0};
    std::optional<double> lastShoot[2];
    for (Variant v : {Variant::kMadvise, Variant::kProcessMadvise}) {
      const char* name = v == Variant::kMadvise ? "madvise" : "process_madvise";
      if (v == Variant::kProcessMadvise && !batched) {
        out << name << ",0,0,0,unavailable,n/a,n/a,n/a\n";
        continue;
      }
      for (unsigned t : threadLadder(threadsMax)) {
        Result r = runConfig(area, v, t, seconds);
        double opsPerS = r.ops / r.seconds;
        std::optional<double> perOp;
        if (r.shootdowns && r.ops) perOp = static_cast<double>(*r.shootdowns) / r.ops;
        out << name << ',' << t << ',' << r.ops << ',' << fmtNumber(r.seconds, 3) << ','
            << fmtNumber(opsPerS, 0) << ',' << fmtNumber(double(r.syscalls) / r.ops, 4) << ','
            << (r.shootdowns ? std::to_string(*r.shootdowns) : "n/a") << ','
            << csvNumber(perOp, 4) << '\n';
        out.flush();
        last[v == Variant::kMadvise ? 0 : 1] = opsPerS;
        lastShoot[v == Variant::kMadvise ? 0 : 1] = perOp;
      }
    }

    JsonFields f;
    f.emplace_back("threads", std::to_string(threadsMax));
    f.emplace_back("batch_speedup", batched ? jsonNumber(last[1] / last[0], 3) : "null");
    f.emplace_back("madvise_ops_per_s", jsonNumber(last[0], 0));
    f.emplace_back("process_madvise_ops_per_s", batched ? jsonNumber(last[1], 0) : "null");
    f.emplace_back("madvise_shootdowns_per_op", jsonNumber(lastShoot[0], 4));
    f.emplace_back("process_madvise_shootdowns_per_op", jsonNumber(lastShoot[1], 4));
    f.emplace_back("process_madvise", jsonString(batched ? "available" : "unavailable"));
    return f;
  }
};

Registrar<MicroBenchmark> registrar("vm-alloc", [] { return std::make_unique<VmAlloc>(); });

}  // namespace
}  // namespace vmstore::bench::micro
