// Progress lines, the monotonic clock and the random permutation used by demo and bench.
#include <unistd.h>

#include <chrono>

#include "cli.hpp"

namespace vmstore::cli {

double nowSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// ---- Permutation ---------------------------------------------------------------------

Permutation::Permutation(uint64_t n, uint64_t seed) : n_(n) {
  bits_ = 2;
  while (bits_ < 64 && (1ull << bits_) < n) ++bits_;
  mask_ = bits_ == 64 ? ~0ull : (1ull << bits_) - 1;
  k1_ = splitmix64(seed) | 1;  // odd multipliers are invertible modulo 2^bits
  k2_ = splitmix64(seed);
  k3_ = splitmix64(seed) | 1;
}

// A bijection of [0, 2^bits): odd multiplications, additions and right xor-shifts are
// each invertible modulo 2^bits.
uint64_t Permutation::scramble(uint64_t x) const {
  x = (x * k1_) & mask_;
  x ^= x >> (bits_ / 2 + 1);
  x = (x + k2_) & mask_;
  x = (x * k3_) & mask_;
  x ^= x >> (bits_ / 2);
  x = (x * k1_) & mask_;
  x ^= x >> (bits_ / 3 + 1);
  return x;
}

// Cycle walking: applying the bijection until the result falls inside [0, n) keeps it a
// bijection of [0, n); as n > 2^(bits-1) this takes fewer than two steps on average.
uint64_t Permutation::operator()(uint64_t i) const {
  uint64_t x = scramble(i);
  while (x >= n_) x = scramble(x);
  return x;
}

// ---- Progress ------------------------------------------------------------------------

Progress::Progress(FILE* out, std::string label, uint64_t total)
    : out_(out), label_(std::move(label)), total_(total), tty_(isatty(fileno(out)) != 0),
      start_(nowSeconds()) {}

double Progress::elapsedSeconds() const { return nowSeconds() - start_; }

void Progress::update(uint64_t done) {
  if (total_ == 0) return;
  if (tty_) {
    double now = nowSeconds();
    if (now - last_draw_ < 0.1) return;
    last_draw_ = now;
    print(done, false, -1);
  } else {
    bool printed = false;
    while (next_decile_ < 10 && done * 10 >= total_ * static_cast<uint64_t>(next_decile_)) {
      ++next_decile_;
      printed = true;
    }
    if (printed) print(done, false, -1);
  }
}

void Progress::finish(double elapsed) { print(total_, true, elapsed); }

void Progress::print(uint64_t done, bool final, double elapsed) {
  double secs = elapsed >= 0 ? elapsed : elapsedSeconds();
  double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  int pct = total_ == 0 ? 100 : static_cast<int>(done * 100 / total_);
  std::string line = label_ + ": " + std::to_string(pct) + "% (" + withCommas(done) + " / " +
                     withCommas(total_) + ", " + withCommas(static_cast<uint64_t>(rate)) +
                     "/s";
  char buf[32];
  std::snprintf(buf, sizeof buf, ", %.1f s)", secs);
  line += buf;
  if (tty_) {
    std::fprintf(out_, "\r%s\033[K%s", line.c_str(), final ? "\n" : "");
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

}  // namespace vmstore::cli
