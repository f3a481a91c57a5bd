#include "vmstore/options.hpp"

#include "policy/registry.hpp"

#include <string>
#include <vector>

namespace vmstore {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parseBool(std::string_view v, bool* out) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") {
    *out = true;
    return true;
  }
  if (v == "false" || v == "0" || v == "no" || v == "off") {
    *out = false;
    return true;
  }
  return false;
}

// A plain decimal number (no size suffix) from min to max.
bool parseCount(std::string_view v, uint64_t min, uint64_t max, uint64_t* out) {
  uint64_t n;
  if (v.find_first_not_of("0123456789") != std::string_view::npos || !parseSize(v, &n)) return false;
  if (n < min || n > max) return false;
  *out = n;
  return true;
}

// The options that take a plain number in a range (config KEY=N, no size suffix).
struct CountKey {
  std::string_view key;
  uint32_t Options::*field;
  uint32_t min, max;
  const char* unit;  // for the error message: "a number of UNIT from MIN to MAX"
};
constexpr CountKey kCountKeys[] = {
    {"sync_interval", &Options::sync_interval_ms, 1, 60000, "milliseconds"},
    {"commit_delay", &Options::commit_delay_us, 0, 100000, "microseconds"},
    {"read_ahead", &Options::read_ahead, 0, kMaxReadAhead, "pages"},
    {"migrate_batch", &Options::migrate_batch, 1, 4096, "pages"},
};

const CountKey* countKey(std::string_view key) {
  for (const CountKey& c : kCountKeys) {
    if (c.key == key) return &c;
  }
  return nullptr;
}

}  // namespace

bool parseSize(std::string_view text, uint64_t* out) {
  text = trim(text);
  if (text.empty()) return false;
  uint64_t shift = 0;
  switch (text.back()) {
    case 'K': case 'k': shift = 10; break;
    case 'M': case 'm': shift = 20; break;
    case 'G': case 'g': shift = 30; break;
    case 'T': case 't': shift = 40; break;
    default: break;
  }
  if (shift) text.remove_suffix(1);
  if (text.empty()) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (~0ull - digit) / 10) return false;
    v = v * 10 + digit;
  }
  if (shift && v > (~0ull >> shift)) return false;
  *out = v << shift;
  return true;
}

namespace {

// "0:4G+1:16G": NODE:SIZE items joined by '+', fastest tier first.
Status parseTiers(std::string_view value, std::vector<MemoryTier>* out) {
  const std::string_view whole = value;  // `value` is consumed below
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("config tiers='" + std::string(whole) + "': " + why +
                                   " (expected NODE:SIZE+NODE:SIZE..., fastest first, e.g. tiers=0:4G+1:16G)");
  };
  std::vector<MemoryTier> tiers;
  while (!value.empty() || tiers.empty()) {
    size_t plus = value.find('+');
    std::string_view item = trim(value.substr(0, plus));
    value = plus == std::string_view::npos ? std::string_view() : value.substr(plus + 1);
    size_t colon = item.find(':');
    if (colon == std::string_view::npos) return bad("tier '" + std::string(item) + "' is not NODE:SIZE");
    uint64_t node;
    std::string_view nodeText = trim(item.substr(0, colon));
    if (nodeText.empty() || !parseCount(nodeText, 0, 1023, &node)) {
      return bad("'" + std::string(nodeText) + "' is not a NUMA node number (0 .. 1023)");
    }
    MemoryTier t;
    t.node = static_cast<int>(node);
    if (!parseSize(item.substr(colon + 1), &t.size)) return bad("'" + std::string(item.substr(colon + 1)) + "' is not a size");
    if (t.size < (1ull << 20)) return bad("each tier must be at least 1M");
    tiers.push_back(t);
    if (tiers.size() > kMaxTiers) return bad("at most " + std::to_string(kMaxTiers) + " tiers");
    if (plus != std::string_view::npos && value.empty()) return bad("a tier is missing after '+'");
  }
  uint64_t total = 0;
  for (const MemoryTier& t : tiers) total += t.size;
  if (total > (1ull << 46)) return bad("the tiers add up to more than 64T");
  *out = std::move(tiers);
  return Status::OK();
}

}  // namespace

Status Options::parse(std::string_view config, Options* out) {
  Options o = *out;
  bool poolGiven = false;
  bool tiersGiven = false;
  std::vector<std::string_view> given;  // keys so far
  while (!config.empty()) {
    size_t comma = config.find(',');
    std::string_view item = trim(config.substr(0, comma));
    config = comma == std::string_view::npos ? std::string_view() : config.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("config item '" + std::string(item) + "' is not key=value");
    }
    std::string_view key = trim(item.substr(0, eq));
    std::string_view value = trim(item.substr(eq + 1));
    // A key given twice is ambiguous (which one did the caller mean?): refused.
    for (std::string_view seen : given) {
      if (seen == key) return Status::InvalidArgument("config key '" + std::string(key) + "' is given twice");
    }
    given.push_back(key);
    if (key == "pool_size" || key == "max_size") {
      uint64_t size;
      if (!parseSize(value, &size)) {
        return Status::InvalidArgument("config " + std::string(key) + "='" + std::string(value) +
                                       "' is not a size (bytes with optional K/M/G/T suffix)");
      }
      if (size < (1ull << 20)) {
        return Status::InvalidArgument("config " + std::string(key) + " must be at least 1M");
      }
      if (size > (1ull << 46)) {
        return Status::InvalidArgument("config " + std::string(key) + " must be at most 64T");
      }
      (key == "pool_size" ? o.pool_size : o.max_size) = size;
      if (key == "pool_size") poolGiven = true;
    } else if (bool* flag = key == "create"          ? &o.create
                            : key == "direct_io"     ? &o.direct_io
                            : key == "page_provider" ? &o.page_provider
                            : key == "huge_pages"    ? &o.huge_pages
                            : key == "log_zero_fill" ? &o.log_zero_fill
                                                     : nullptr) {
      if (!parseBool(value, flag)) {
        return Status::InvalidArgument("config " + std::string(key) + "='" + std::string(value) +
                                       "' is not a boolean (true, false, yes, no, on, off, 1 or 0)");
      }
    } else if (key == "io") {
      if (value == "uring") {
        o.io = IoMode::kUring;
      } else if (value == "sync") {
        o.io = IoMode::kSync;
      } else {
        return Status::InvalidArgument("config io='" + std::string(value) + "' is not uring or sync");
      }
    } else if (key == "durability") {
      if (value == "sync") {
        o.durability = Durability::kSync;
      } else if (value == "async") {
        o.durability = Durability::kAsync;
      } else if (value == "none") {
        o.durability = Durability::kNone;
      } else {
        return Status::InvalidArgument("config durability='" + std::string(value) + "' is not sync, async or none");
      }
    } else if (const CountKey* count = countKey(key)) {
      uint64_t n;
      if (!parseCount(value, count->min, count->max, &n)) {
        return Status::InvalidArgument("config " + std::string(key) + "='" + std::string(value) + "' is not a number of " +
                                       count->unit + " from " + std::to_string(count->min) + " to " +
                                       std::to_string(count->max));
      }
      o.*(count->field) = static_cast<uint32_t>(n);
    } else if (key == "policy") {
      if (internal::policySummary(std::string(value)).empty()) {
        std::string known;
        for (const std::string& n : internal::policyNames()) known += (known.empty() ? "" : ", ") + n;
        return Status::InvalidArgument("config policy='" + std::string(value) + "' is not a replacement policy (known: " +
                                       known + ")");
      }
      o.policy = std::string(value);
    } else if (key == "trace") {
      if (value.empty()) return Status::InvalidArgument("config trace= needs a file name");
      o.trace = std::string(value);
    } else if (key == "resident_set") {
      if (value == "hash") {
        o.resident_set = ResidentSetType::kHash;
      } else if (value == "bitmap") {
        o.resident_set = ResidentSetType::kBitmap;
      } else {
        return Status::InvalidArgument("config resident_set='" + std::string(value) + "' is not hash or bitmap");
      }
    } else if (key == "tiers") {
      Status st = parseTiers(value, &o.tiers);
      if (!st.ok()) return st;
      tiersGiven = true;
    } else if (key == "migrate") {
      if (value == "move_pages") {
        o.migrate = MigrateMode::kMovePages;
      } else if (value == "mbind") {
        o.migrate = MigrateMode::kMbind;
      } else {
        return Status::InvalidArgument("config migrate='" + std::string(value) + "' is not move_pages or mbind");
      }
    } else if (key == "log_size") {
      uint64_t size;
      if (!parseSize(value, &size)) {
        return Status::InvalidArgument("config log_size='" + std::string(value) +
                                       "' is not a size (bytes with optional K/M/G/T suffix)");
      }
      if (size < (1ull << 20) || size > (64ull << 30)) {
        return Status::InvalidArgument("config log_size must be from 1M to 64G");
      }
      o.log_size = size;
    } else {
      return Status::InvalidArgument("unknown config key '" + std::string(key) +
                                     "' (known: pool_size, create, max_size, durability, sync_interval, commit_delay, "
                                     "log_size, log_zero_fill, direct_io, io, page_provider, huge_pages, read_ahead, policy, resident_set, trace, "
                                     "tiers, migrate_batch, migrate)");
    }
  }
  if (poolGiven && tiersGiven) {
    return Status::InvalidArgument("config pool_size and tiers both given: with tiers the pool is the sum of the "
                                   "tiers' sizes; give one of them");
  }
  *out = o;
  return Status::OK();
}

}  // namespace vmstore
