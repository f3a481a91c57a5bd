#include "vmstore/options.hpp"

#include "policy/registry.hpp"

#include <string>

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

Status Options::parse(std::string_view config, Options* out) {
  Options o = *out;
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
    } else if (bool* flag = key == "create"          ? &o.create
                            : key == "direct_io"     ? &o.direct_io
                            : key == "page_provider" ? &o.page_provider
                                                     : nullptr) {
      if (!parseBool(value, flag)) {
        return Status::InvalidArgument("config " + std::string(key) + "='" + std::string(value) +
                                       "' is not true or false");
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
    } else if (key == "sync_interval") {
      uint64_t ms;
      if (!parseCount(value, 1, 60000, &ms)) {
        return Status::InvalidArgument("config sync_interval='" + std::string(value) +
                                       "' is not a number of milliseconds from 1 to 60000");
      }
      o.sync_interval_ms = static_cast<uint32_t>(ms);
    } else if (key == "read_ahead") {
      uint64_t pages;
      if (!parseCount(value, 0, kMaxReadAhead, &pages)) {
        return Status::InvalidArgument("config read_ahead='" + std::string(value) + "' is not a number of pages from 0 to " +
                                       std::to_string(kMaxReadAhead));
      }
      o.read_ahead = static_cast<uint32_t>(pages);
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
                                     "' (known: pool_size, create, max_size, durability, sync_interval, "
                                     "log_size, direct_io, io, page_provider, read_ahead, policy, resident_set, trace)");
    }
  }
  *out = o;
  return Status::OK();
}

}  // namespace vmstore
