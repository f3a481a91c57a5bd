// Formatting, byte helpers and database/directory handling shared by the commands.
#include <stdlib.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <set>
#include <sstream>
#include <system_error>

#include "cli.hpp"

namespace fs = std::filesystem;

namespace vmstore::cli {

// ---- formatting ----------------------------------------------------------------------

std::string toHex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

static int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string fromHex(std::string_view hex, std::string_view what) {
  if (hex.size() % 2 != 0) {
    throw UsageError(std::string(what) + " '" + std::string(hex) +
                     "' is not hex: odd number of digits");
  }
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = hexDigit(hex[i]);
    int lo = hexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      throw UsageError(std::string(what) + " '" + std::string(hex) +
                       "' is not hex: bad digit at position " + std::to_string(hi < 0 ? i : i + 1));
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

std::string humanBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 6) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string withCommas(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string treeLabel(std::string_view name) {
  if (name.empty()) return "(default)";
  std::string out;
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

void writeOut(std::string_view bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) {
    throw Failure(kExitFailure, "cannot write to standard output");
  }
}

// ---- databases -----------------------------------------------------------------------

void check(const Status& s, std::string_view what) {
  if (s.ok()) return;
  std::string text = std::string(what) + ": " + s.toString();
  // A value larger than half the pool: the engine names the pool_size it needs, which
  // the commands take as --pool.
  if (s.code() == Status::Code::kNoMemory && s.message().find("pool_size of at least") != std::string::npos) {
    text += " (the command's --pool=SIZE)";
  }
  throw Failure(kExitFailure, text);
}

std::unique_ptr<Database> openDatabase(const std::string& dir, uint64_t pool_size,
                                       bool create, int corrupt_exit, Durability durability,
                                       const std::string& config) {
  std::error_code ec;
  if (!create && !fs::exists(dir, ec)) {
    throw Failure(kExitFailure, "no vmstore database in " + dir + ": directory does not exist");
  }
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw Failure(kExitFailure, dir + " is not a directory");
  }
  Options options;
  options.pool_size = pool_size;
  options.create = create;
  options.durability = durability;
  if (!config.empty()) {
    Status parsed = Options::parse(config, &options);
    if (!parsed.ok()) throw UsageError("--config: " + parsed.message());
  }
  std::unique_ptr<Database> db;
  Status s = Database::open(dir, options, &db);
  if (s.ok()) return db;
  switch (s.code()) {
    case Status::Code::kCorruption:
      throw Failure(corrupt_exit, "cannot open " + dir + ": " + s.toString());
    default:
      if (!create && s.code() == Status::Code::kInvalidArgument &&
          s.message().rfind("no vmstore database in ", 0) == 0) {
        // The engine adds "(and create=false)", an option the commands do not have.
        throw Failure(kExitFailure, "no vmstore database in " + dir);
      }
      // Anything else (a bad --config for this database, a pool too large, a busy
      // directory) is not "no database": say what it is.
      throw Failure(kExitFailure, "cannot open " + dir + ": " + s.toString());
  }
}

Tree* openTree(Database& db, std::string_view name, bool create) {
  Tree* tree = nullptr;
  Status s = db.openTree(name, create, &tree);
  if (s.isNotFound()) throw Failure(kExitFailure, "no tree " + treeLabel(name));
  check(s, "cannot open tree " + treeLabel(name));
  return tree;
}

void closeDatabase(std::unique_ptr<Database>& db) {
  if (!db) return;
  Status s = db->close();
  db.reset();
  check(s, "close");
}

// ---- directories ---------------------------------------------------------------------

// The names of the entries a vmstore database directory consists of, learned by
// creating an empty database in a temporary directory (open and after close).
static const std::set<std::string>& databaseEntryNames() {
  static const std::set<std::string> names = [] {
    std::set<std::string> out;
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string tmpl = (base / "vmstore-probe-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return out;
    {
      Options options;
      options.pool_size = 1ull << 20;
      options.max_size = 1ull << 20;
      std::unique_ptr<Database> db;
      if (Database::open(tmpl, options, &db).ok()) {
        Tree* tree = nullptr;
        (void)db->openTree("", true, &tree);
        for (const auto& e : fs::directory_iterator(tmpl, ec)) {
          out.insert(e.path().filename().string());
        }
        (void)db->close();
      }
    }
    for (const auto& e : fs::directory_iterator(tmpl, ec)) {
      out.insert(e.path().filename().string());
    }
    fs::remove_all(tmpl, ec);
    return out;
  }();
  return names;
}

std::vector<std::string> databaseFileNames() {
  const std::set<std::string>& names = databaseEntryNames();
  return {names.begin(), names.end()};
}

void prepareFreshDirectory(const std::string& dir) {
  std::error_code ec;
  fs::file_status st = fs::symlink_status(dir, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_directory(st)) {
    throw Failure(kExitFailure, dir + " exists and is not a directory; choose another --dir");
  }
  const std::set<std::string>& known = databaseEntryNames();
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (known.count(name) == 0) {
      throw Failure(kExitFailure, dir + " holds '" + name +
                                      "', which is not part of a vmstore database; "
                                      "not removing it (choose another --dir)");
    }
  }
  if (ec) throw Failure(kExitFailure, "cannot list " + dir + ": " + ec.message());
  fs::remove_all(dir, ec);
  if (ec) throw Failure(kExitFailure, "cannot remove " + dir + ": " + ec.message());
}

}  // namespace vmstore::cli
