// Command-line parsing shared by every vmstore command.
#include <string>
#include <string_view>

#include "cli.hpp"

namespace vmstore::cli {

Args::Args(int argc, char** argv, int first, std::vector<OptionSpec> specs) {
  bool options_done = false;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (options_done || arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      if (arg == "--") {
        if (!options_done) {
          options_done = true;
          continue;
        }
      }
      positionals_.push_back(std::move(arg));
      continue;
    }
    size_t eq = arg.find('=');
    std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : specs) {
      if (s.name == name) spec = &s;
    }
    if (spec == nullptr) throw UsageError("unknown option --" + name);
    std::string value;
    if (spec->takes_value) {
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
      } else if (i + 1 < argc && std::string_view(argv[i + 1]).substr(0, 2) != "--") {
        value = argv[++i];
      } else {  // nothing follows, or another option: not taken as this one's value
        throw UsageError("option --" + name + " needs a value (--" + name + "=VALUE)");
      }
    } else if (eq != std::string::npos) {
      throw UsageError("option --" + name + " takes no value");
    }
    options_.emplace_back(std::move(name), std::move(value));
  }
}

void Args::requirePositionals(size_t min, size_t max) const {
  if (positionals_.size() < min) throw UsageError("missing arguments");
  if (positionals_.size() > max) {
    throw UsageError("unexpected argument '" + positionals_[max] + "'");
  }
}

const std::string* Args::find(std::string_view name) const {
  const std::string* found = nullptr;  // the last occurrence wins
  for (const auto& [n, v] : options_) {
    if (n == name) found = &v;
  }
  return found;
}

bool Args::has(std::string_view name) const { return find(name) != nullptr; }

std::string Args::str(std::string_view name, std::string_view fallback) const {
  const std::string* v = find(name);
  return v != nullptr ? *v : std::string(fallback);
}

uint64_t Args::size(std::string_view name, uint64_t fallback, uint64_t min) const {
  const std::string* v = find(name);
  if (v == nullptr) return fallback;
  uint64_t out = 0;
  if (!parseSize(*v, &out)) {
    throw UsageError("--" + std::string(name) + "=" + *v +
                     ": not a size (examples: 4096, 64K, 16M, 4G, 1T)");
  }
  if (out < min) {
    throw UsageError("--" + std::string(name) + "=" + *v + ": must be at least " +
                     humanBytes(min));
  }
  return out;
}

uint64_t Args::count(std::string_view name, uint64_t fallback, uint64_t min) const {
  const std::string* v = find(name);
  if (v == nullptr) return fallback;
  uint64_t out = 0;
  if (!parseSize(*v, &out)) {
    throw UsageError("--" + std::string(name) + "=" + *v +
                     ": not a count (examples: 1000000, 64K, 10M)");
  }
  if (out < min) {
    throw UsageError("--" + std::string(name) + "=" + *v + ": must be at least " +
                     std::to_string(min));
  }
  return out;
}

}  // namespace vmstore::cli
