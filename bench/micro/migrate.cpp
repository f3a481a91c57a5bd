// `vmstore bench migrate`: how fast pages move between NUMA nodes through the page table
// (issue 11; paper 003's move_pages / mbind comparison), the primitive memory tiers use.
//
// An area of --data bytes (default 64 MiB: 16,384 pages), every page written, moves from the
// first node with memory to the second and back, --seconds per configuration (default
// 2 s; at least one full pass), by
//   move_pages   one move_pages(2) call per batch of 1, 8, 64 and 512 pages, and
//   mbind        one mbind(MPOL_BIND, MPOL_MF_MOVE) call per page (the baseline), after
//                which one mbind over the area restores its policy (not timed)
// reporting pages moved per second, calls per page, and TLB shootdown interrupts per page
// (the delta of /proc/interrupts' "TLB:" row over all CPUs, machine-wide). A page that
// fails to move (status < 0) is counted and not retried here.
// With one node (this project's machines) both "nodes" are the same and nothing moves:
// the figures are then the system calls' own cost only, and the JSON says nodes: 1.
// `make numa-test` runs this in a guest with two nodes.
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ostream>
#include <system_error>

#include "micro_util.hpp"
#include "os/numa.hpp"
#include "os/vm_area.hpp"

namespace vmstore::bench::micro {
namespace {

using internal::VmArea;
namespace numa = internal::numa;

struct Result {
  uint64_t pages = 0;
  uint64_t calls = 0;
  uint64_t failed = 0;
  double seconds = 0;
  std::optional<uint64_t> shootdowns;
};

// Moves every page of addrs to `node` once; returns what it took.
Result moveOnce(std::vector<void*>& addrs, int node, size_t batch, bool mbind) {
  Result r;
  std::vector<int> status(addrs.size());
  auto tlb0 = tlbShootdowns();
  double t0 = nowSeconds();
  if (mbind) {
    for (size_t i = 0; i < addrs.size(); i++) status[i] = numa::mbindPage(addrs[i], node) == 0 ? node : -1;
    r.calls = addrs.size();
  } else {
    long calls = numa::movePages(addrs, node, batch, status);
    if (calls < 0) throw std::system_error(static_cast<int>(-calls), std::generic_category(), "move_pages");
    r.calls = static_cast<uint64_t>(calls);
  }
  r.seconds = nowSeconds() - t0;
  auto tlb1 = tlbShootdowns();
  if (tlb0 && tlb1) r.shootdowns = *tlb1 - *tlb0;
  r.pages = addrs.size();
  for (int s : status) r.failed += s != node;
  return r;
}

class Migrate : public MicroBenchmark {
 public:
  JsonFields run(const RunOptions& opts, std::ostream& out) override {
    const double seconds = secondsPerConfig(opts, 2.0);
    const uint64_t pages = std::max<uint64_t>(64, (opts.data > 0 ? opts.data : 64ull << 20) / VmArea::kPageSize);
    std::vector<int> nodes = numa::memoryNodes();
    const int from = nodes[0];
    const int to = nodes.size() > 1 ? nodes[1] : nodes[0];
    if (nodes.size() < 2) {
      std::fprintf(stderr,
                   "migrate: one NUMA node here: pages cannot move, so these figures are the system "
                   "calls' cost only (`make numa-test` runs this with two nodes)\n");
    }
    VmArea area(pages, 0);
    std::vector<void*> addrs;
    for (uint64_t p = 0; p < pages; p++) {
      addrs.push_back(area.pageAddress(p));
      std::memset(area.pageAddress(p), static_cast<int>(p), 64);
    }
    numa::preferNode(area.base(), pages * VmArea::kPageSize, from);
    std::vector<int> status(pages);
    numa::movePages(addrs, from, 512, status);  // all on the first node to start

    out << "method,batch,pages,seconds,pages_per_s,calls_per_page,tlb_shootdowns,shootdowns_per_page,failed\n";
    JsonFields f;
    f.emplace_back("threads", "1");
    double mbindRate = 0;
    double batch512Rate = 0;
    struct Config {
      const char* method;
      size_t batch;
    };
    for (Config c : {Config{"mbind", 1}, Config{"move_pages", 1}, Config{"move_pages", 8}, Config{"move_pages", 64},
                     Config{"move_pages", 512}}) {
      const bool mbind = std::strcmp(c.method, "mbind") == 0;
      Result sum;
      uint64_t shootdowns = 0;
      bool counted = true;  // the TLB row was readable every time
      int toward = to;
      double start = nowSeconds();
      do {  // back and forth until the time is up, a whole pass at least
        Result r = moveOnce(addrs, toward, c.batch, mbind);
        sum.pages += r.pages;
        sum.calls += r.calls;
        sum.failed += r.failed;
        sum.seconds += r.seconds;
        counted = counted && r.shootdowns.has_value();
        if (r.shootdowns) shootdowns += *r.shootdowns;
        toward = toward == to ? from : to;
      } while (nowSeconds() - start < seconds);
      if (mbind) numa::preferNode(area.base(), pages * VmArea::kPageSize, from);  // merge the area again
      if (toward == from) numa::movePages(addrs, from, 512, status);            // back to the start
      const double rate = sum.pages / sum.seconds;
      std::optional<double> perPage;
      if (counted) perPage = static_cast<double>(shootdowns) / static_cast<double>(sum.pages);
      out << c.method << ',' << c.batch << ',' << sum.pages << ',' << fmtNumber(sum.seconds, 3) << ','
          << fmtNumber(rate, 0) << ',' << fmtNumber(static_cast<double>(sum.calls) / sum.pages, 4) << ','
          << (counted ? std::to_string(shootdowns) : "n/a") << ',' << csvNumber(perPage, 4) << ','
          << sum.failed << '\n';
      out.flush();
      std::string key = mbind ? std::string("mbind") : "move_pages_" + std::to_string(c.batch);
      f.emplace_back(key + "_pages_per_s", jsonNumber(rate, 0));
      f.emplace_back(key + "_shootdowns_per_page", jsonNumber(perPage, 4));
      if (mbind) mbindRate = rate;
      if (!mbind && c.batch == 512) batch512Rate = rate;
    }
    f.emplace_back("nodes", std::to_string(nodes.size()));
    f.emplace_back("pages", std::to_string(pages));
    f.emplace_back("batch512_over_mbind", jsonNumber(mbindRate > 0 ? batch512Rate / mbindRate : 0, 2));
    return f;
  }
};

Registrar<MicroBenchmark> registrar("migrate", [] { return std::make_unique<Migrate>(); });

}  // namespace
}  // namespace vmstore::bench::micro
