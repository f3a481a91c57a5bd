// `vmstore bench page-access`: the paper's Table 2 (000 §5.4), random 4 KiB page reads
// along the vmcache ladder:
//   1    read from a plain array
//   2.1  read from a 1 TiB virtual MAP_NORESERVE range (the vmstore VmArea), the data
//        in its first pages, as an in-memory vmstore database has them
//   2.2  + read the page's state word (the vmstore PageState array, itself a VmArea)
//   2.3  + the version check: the full optimistic access of the buffer manager
//        (load state, check it, read the page, load state again, PageState::stillValid)
//   3    through an open-addressing hash table pid -> frame (unsynchronized, as the
//        paper's; the frames are the plain array of line 1)
//   2.3s (not in the paper) 2.3 with the pages scattered over the whole 1 TiB range, as
//        the cached subset of a 1 TiB store is: one page-table page per data page
// at a cache-resident working set (32 KiB) and a DRAM-sized one (--data bytes, default
// 4 GiB, shrunk to fit the available memory), single-threaded.
//
// Method: one dependent chain of accesses (the next random page depends on the word just
// read, so the CPU cannot overlap accesses: this measures latency, like the paper's
// numbers), 8 bytes read at a random cache line of each page; ns per access is the
// median of 5 rounds (the machine may be shared). All memory is touched
// before timing. Every mapping here uses 4 KiB pages (MADV_NOHUGEPAGE, as the VmArea
// does), so that the steps differ by one thing each. Hardware counters come from
// perf_event_open when the machine has them ("n/a" otherwise).
//
// --seconds: time per measured configuration (default 1 s; 12 configurations).
#include <sys/mman.h>

#include <algorithm>
#include <iterator>
#include <new>
#include <ostream>
#include <stdexcept>
#include <system_error>

#include "micro_util.hpp"
#include "os/vm_area.hpp"
#include "sync/page_state.hpp"

namespace vmstore::bench::micro {
namespace {

using internal::PageState;
using internal::VmArea;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kSmallBytes = 32 * 1024;
constexpr uint64_t kDefaultDataBytes = 4ull << 30;
constexpr uint64_t kRangeBytes = 1ull << 40;  // 1 TiB
constexpr uint64_t kRangePages = kRangeBytes / kPage;

// 8 bytes at a random cache line of the page.
inline uint64_t readWord(const char* page, uint64_t x) {
  return *reinterpret_cast<const volatile uint64_t*>(page + ((x & 63) << 6));
}

// Runs `n` dependent accesses starting from x; returns the chain's end.
template <class Access>
__attribute__((noinline)) uint64_t chase(uint64_t n, uint64_t x, const Access& access) {
  for (uint64_t i = 0; i < n; i++) {
    x = xorshift64(x);
    x ^= access(x);
    x |= 1;  // never 0 (xorshift's fixed point), without a branch
  }
  return x;
}

struct Measurement {
  double ns = 0;
  uint64_t accesses = 0;
  std::optional<double> inst;
  std::optional<double> misses;
};

// Runs the chain for `seconds` in kRounds rounds and reports the median round (the
// machine may be shared: a round that lost the CPU for a while does not count).
constexpr int kRounds = 5;

template <class Access>
Measurement measure(double seconds, uint64_t chunk, const Access& access) {
  static uint64_t sink = 0;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  // Warm-up: caches and TLB into their steady state.
  double warmEnd = nowSeconds() + std::min(0.2, seconds / 5);
  do x = chase(chunk, x, access);
  while (nowSeconds() < warmEnd);

  struct Round {
    double ns;
    std::optional<double> inst, misses;
  };
  std::vector<Round> rounds;
  Measurement m;
  PerfCounters perf;
  for (int r = 0; r < kRounds; r++) {
    uint64_t n = 0;
    double t0 = nowSeconds();
    double t1 = t0;
    perf.start();
    do {
      x = chase(chunk, x, access);
      n += chunk;
      t1 = nowSeconds();
    } while (t1 - t0 < seconds / kRounds);
    perf.stop();
    Round round{(t1 - t0) * 1e9 / static_cast<double>(n), {}, {}};
    if (auto v = perf.instructions()) round.inst = static_cast<double>(*v) / n;
    if (auto v = perf.cacheMisses()) round.misses = static_cast<double>(*v) / n;
    rounds.push_back(round);
    m.accesses += n;
  }
  sink += x;
  std::sort(rounds.begin(), rounds.end(),
            [](const Round& a, const Round& b) { return a.ns < b.ns; });
  const Round& median = rounds[kRounds / 2];
  m.ns = median.ns;
  m.inst = median.inst;
  m.misses = median.misses;
  return m;
}

// An anonymous mapping of 4 KiB pages (the plain array of line 1).
class PlainArray {
 public:
  explicit PlainArray(uint64_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap array");
    madvise(p, bytes, MADV_NOHUGEPAGE);
    base_ = static_cast<char*>(p);
  }
  ~PlainArray() { munmap(base_, bytes_); }
  PlainArray(const PlainArray&) = delete;
  PlainArray& operator=(const PlainArray&) = delete;
  char* base() const { return base_; }

 private:
  char* base_ = nullptr;
  uint64_t bytes_ = 0;
};

// The unsynchronized open-addressing hash table pid -> frame of line 3.
class HashTable {
 public:
  explicit HashTable(uint64_t entries) {
    bits_ = 1;
    while ((1ull << bits_) < entries * 2) bits_++;
    slots_.assign(1ull << bits_, Slot{kEmpty, nullptr});
    mask_ = (1ull << bits_) - 1;
  }
  void insert(uint64_t pid, char* frame) {
    uint64_t h = hash(pid);
    while (slots_[h].pid != kEmpty) h = (h + 1) & mask_;
    slots_[h] = Slot{pid, frame};
  }
  char* lookup(uint64_t pid) const {
    uint64_t h = hash(pid);
    while (slots_[h].pid != pid) h = (h + 1) & mask_;
    return slots_[h].frame;
  }

 private:
  struct Slot {
    uint64_t pid;
    char* frame;
  };
  static constexpr uint64_t kEmpty = ~0ull;
  uint64_t hash(uint64_t pid) const { return (pid * 0x9E3779B97F4A7C15ull) >> (64 - bits_); }
  std::vector<Slot> slots_;
  unsigned bits_ = 1;
  uint64_t mask_ = 1;
};

constexpr const char* kSteps[] = {"1", "2.1", "2.2", "2.3", "3", "2.3s"};
constexpr const char* kStepKeys[] = {"array", "range", "state", "version", "hash", "scattered"};

struct Row {
  const char* step;
  const char* variant;
  Measurement m;
};

// The page area and its state array, with `pages` resident pages at pid i * stride.
struct AreaSet {
  VmArea area{kRangePages, 0};
  VmArea stateArea{(kRangePages * sizeof(PageState) + kPage - 1) / kPage, 0};
  PageState* states = reinterpret_cast<PageState*>(stateArea.base());

  AreaSet(uint64_t pages, uint64_t stride) {
    for (uint64_t i = 0; i < pages; i++) {
      uint64_t pid = i * stride;
      *reinterpret_cast<uint64_t*>(area.pageAddress(pid)) = i;
      // Resident and unlocked, as after a read-in: evicted -> locked -> unlocked.
      PageState* ps = new (&states[pid]) PageState;
      ps->initEvicted();
      if (!ps->tryLockX(ps->load())) throw std::logic_error("page-access: lock failed");
      ps->unlockX();
    }
  }
};

// The buffer manager's optimistic read (GuardO): begin (the state word decides whether
// the page may be read), read, validate (same version, neither locked nor evicted).
inline uint64_t optimisticRead(const PageState* states, const char* base, uint64_t pid,
                               uint64_t x) {
  for (;;) {
    uint64_t w = states[pid].load();
    if (PageState::stateOf(w) > PageState::kMaxShared) [[unlikely]] continue;
    uint64_t v = readWord(base + pid * kPage, x);
    if (PageState::stillValid(w, states[pid].load())) [[likely]] return v;
  }
}

// The ladder for one working set of `pages` pages, in the paper's order, plus one extra
// line: the full optimistic access with the pages scattered over the whole 1 TiB range
// (pid i * (2^28 / pages)), as the cached subset of a 1 TiB store would be; the ladder
// itself places them at the start of the range, as an in-memory database has them.
std::vector<Row> runLadder(uint64_t pages, double seconds, bool log) {
  const uint64_t chunk = pages * kPage <= (1u << 20) ? (1u << 16) : (1u << 12);
  std::vector<Row> rows;
  auto say = [&](const char* what) {
    if (log) std::fprintf(stderr, "page-access: %s\n", what);
  };

  {
    // Line 1 and line 3: the plain array (and the same array as the hash table's frames).
    say("touching the plain array");
    PlainArray array(pages * kPage);
    for (uint64_t i = 0; i < pages; i++) {
      *reinterpret_cast<uint64_t*>(array.base() + i * kPage) = i;
    }
    const char* base = array.base();
    rows.push_back({"1", "array", measure(seconds, chunk, [&](uint64_t x) {
                      return readWord(base + fastRange(x, pages) * kPage, x);
                    })});

    say("building the hash table");
    HashTable table(pages);
    for (uint64_t i = 0; i < pages; i++) table.insert(i, array.base() + i * kPage);
    rows.push_back({"3", "hash-table", measure(seconds, chunk, [&](uint64_t x) {
                      return readWord(table.lookup(fastRange(x, pages)), x);
                    })});
  }
  {
    // Lines 2.x: the vmstore page area over 1 TiB and its page state array.
    say("placing the pages in the 1 TiB area");
    AreaSet set(pages, 1);
    const char* base = set.area.base();
    const PageState* states = set.states;
    rows.push_back({"2.1", "range-1TiB", measure(seconds, chunk, [&](uint64_t x) {
                      return readWord(base + fastRange(x, pages) * kPage, x);
                    })});
    rows.push_back({"2.2", "+page-state", measure(seconds, chunk, [&](uint64_t x) {
                      uint64_t pid = fastRange(x, pages);
                      uint64_t w = states[pid].load();
                      if (PageState::stateOf(w) > PageState::kMaxShared) [[unlikely]] return w;
                      return readWord(base + pid * kPage, x);
                    })});
    rows.push_back({"2.3", "+version-check", measure(seconds, chunk, [&](uint64_t x) {
                      return optimisticRead(states, base, fastRange(x, pages), x);
                    })});
  }
  {
    say("scattering the pages over the 1 TiB area");
    const uint64_t stride = kRangePages / pages;
    AreaSet set(pages, stride);
    const char* base = set.area.base();
    const PageState* states = set.states;
    rows.push_back({"2.3s", "scattered-1TiB", measure(seconds, chunk, [&](uint64_t x) {
                      return optimisticRead(states, base, fastRange(x, pages) * stride, x);
                    })});
  }
  std::vector<Row> ordered;
  for (const char* step : kSteps) {
    for (auto& r : rows) {
      if (std::string(r.step) == step) ordered.push_back(r);
    }
  }
  return ordered;
}

class PageAccess : public MicroBenchmark {
 public:
  JsonFields run(const RunOptions& opts, std::ostream& out) override {
    const double seconds = secondsPerConfig(opts, 1.0);
    uint64_t dataBytes = opts.data ? opts.data : kDefaultDataBytes;
    dataBytes = std::max<uint64_t>(dataBytes / kPage, 1) * kPage;
    std::string note;
    // Peak memory of the DRAM-sized set (line 2.3s): the data, plus up to one page-table
    // page and one page of state words per data page. Shrink to fit.
    auto needed = [](uint64_t bytes) {
      uint64_t pages = bytes / kPage;
      uint64_t stride = kRangePages / pages;
      uint64_t ptPages = std::min(pages, (pages * stride + 511) / 512);
      uint64_t statePages = std::min(pages, (pages * stride * sizeof(PageState) + kPage - 1) / kPage);
      return bytes + (ptPages + statePages) * kPage;
    };
    if (uint64_t avail = memAvailableBytes(); avail > 0) {
      uint64_t budget = avail / 10 * 7;
      uint64_t requested = dataBytes;
      while (dataBytes > (64ull << 20) && needed(dataBytes) > budget) dataBytes /= 2;
      dataBytes = dataBytes / kPage * kPage;
      if (dataBytes != requested) {
        note = "data shrunk from " + std::to_string(requested) + " to " +
               std::to_string(dataBytes) + " bytes to fit the available memory";
        std::fprintf(stderr, "page-access: %s\n", note.c_str());
      }
    }

    PerfCounters probe;
    const bool perf = probe.available();

    out << "variant,step,working_set,bytes,accesses,ns_per_access,instructions_per_access,"
           "cache_misses_per_access\n";
    struct Set {
      const char* name;
      uint64_t bytes;
      std::vector<Row> rows;
    };
    std::vector<Set> sets = {{"cache", kSmallBytes, {}}, {"dram", dataBytes, {}}};
    for (auto& s : sets) {
      s.rows = runLadder(s.bytes / kPage, seconds, s.bytes > kSmallBytes);
      for (auto& r : s.rows) {
        out << r.variant << ',' << r.step << ',' << s.name << ',' << s.bytes << ','
            << r.m.accesses << ',' << fmtNumber(r.m.ns, 2) << ',' << csvNumber(r.m.inst, 2)
            << ',' << csvNumber(r.m.misses, 3) << '\n';
      }
      out.flush();
    }

    auto ns = [&](size_t set, const char* step) {
      for (auto& r : sets[set].rows) {
        if (std::string(r.step) == step) return r.m.ns;
      }
      return 0.0;
    };
    JsonFields f;
    f.emplace_back("threads", "1");
    f.emplace_back("overhead", jsonNumber(ns(1, "2.3") / ns(1, "1"), 3));
    f.emplace_back("hash_overhead", jsonNumber(ns(1, "3") / ns(1, "1"), 3));
    f.emplace_back("scattered_overhead", jsonNumber(ns(1, "2.3s") / ns(1, "1"), 3));
    f.emplace_back("data", std::to_string(dataBytes));
    for (size_t set = 0; set < 2; set++) {
      for (size_t i = 0; i < std::size(kSteps); i++) {
        f.emplace_back(std::string(sets[set].name) + "_" + kStepKeys[i] + "_ns",
                       jsonNumber(ns(set, kSteps[i]), 2));
      }
    }
    f.emplace_back("perf_counters", jsonString(perf ? "available" : "n/a"));
    if (!note.empty()) f.emplace_back("note", jsonString(note));
    return f;
  }
};

Registrar<MicroBenchmark> registrar("page-access", [] { return std::make_unique<PageAccess>(); });

}  // namespace
}  // namespace vmstore::bench::micro
