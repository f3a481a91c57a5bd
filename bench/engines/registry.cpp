// makeEngine() and engineNames() over the EngineRegistry: each adapter registers itself
// (a static Registrar in its own .cpp); this file knows only the comparison order and
// which Debian package each competitor needs, for a clear message when it is missing.
// Also the names of the durability modes (durabilityName, parseDurability).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine.hpp"
#include "workload.hpp"

namespace vmstore::bench {

namespace {

struct KnownEngine {
  const char* name;
  const char* package;  // what a build without it needs; nullptr: part of vmstore
};

// The order in which engines are compared (others follow, alphabetically).
constexpr KnownEngine kKnownEngines[] = {
    {"vmstore", nullptr},
    {"hashbm", nullptr},
    {"lmdb", "liblmdb-dev"},
    {"wiredtiger", "libwiredtiger-dev"},
    {"rocksdb", "librocksdb-dev"},
};

}  // namespace

const char* durabilityName(Durability d) {
  switch (d) {
    case Durability::kSync:
      return "sync";
    case Durability::kAsync:
      return "async";
    case Durability::kNone:
      return "none";
  }
  return "?";
}

bool parseDurability(std::string_view text, Durability* out) {
  for (Durability d : {Durability::kSync, Durability::kAsync, Durability::kNone}) {
    if (text == durabilityName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

std::vector<std::string> engineNames() {
  std::vector<std::string> registered = EngineRegistry::instance().names();
  std::vector<std::string> out;
  for (const KnownEngine& k : kKnownEngines) {
    if (std::find(registered.begin(), registered.end(), k.name) != registered.end()) {
      out.push_back(k.name);
    }
  }
  for (const std::string& n : registered) {  // already sorted (a std::map)
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::unique_ptr<Engine> makeEngine(std::string_view name) {
  if (std::unique_ptr<Engine> engine = EngineRegistry::instance().make(name)) return engine;
  std::string built;
  for (const std::string& n : engineNames()) built += (built.empty() ? "" : ", ") + n;
  if (built.empty()) built = "none";
  for (const KnownEngine& k : kKnownEngines) {
    if (name != k.name) continue;
    if (k.package != nullptr) {
      throw std::invalid_argument(
          "engine '" + std::string(name) + "' is not part of this build: it needs the " +
          k.package + " package (scripts/install-deps.sh installs it; then rebuild with " +
          "'make build'); engines built: " + built);
    }
    throw std::invalid_argument("engine '" + std::string(name) +
                                "' is not part of this build; engines built: " + built);
  }
  throw std::invalid_argument("unknown engine '" + std::string(name) +
                              "' (engines built: " + built + ")");
}

}  // namespace vmstore::bench
