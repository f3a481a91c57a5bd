// The data commands: put, get, del and scan.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "cli.hpp"

namespace vmstore::cli {

namespace {

// Options every data command accepts.
std::vector<OptionSpec> dataOptions(std::vector<OptionSpec> extra) {
  std::vector<OptionSpec> specs = {{"tree", true}, {"hex", false}, {"pool", true}};
  specs.insert(specs.end(), extra.begin(), extra.end());
  return specs;
}

std::string treeName(const Args& args) {
  std::string name = args.str("tree", "");
  if (name.size() > kMaxTreeNameSize) {
    throw UsageError("tree name is " + std::to_string(name.size()) + " bytes; the maximum is " +
                     std::to_string(kMaxTreeNameSize));
  }
  return name;
}

uint64_t poolSize(const Args& args) { return args.size("pool", kDefaultCommandPool, 1ull << 20); }

// A key from the command line: raw bytes, or hex with --hex. Checked against the limits.
std::string keyArg(const Args& args, const std::string& text, std::string_view what = "KEY") {
  std::string key = args.has("hex") ? fromHex(text, what) : text;
  if (key.empty()) throw UsageError(std::string(what) + " must not be empty");
  if (key.size() > kMaxKeySize) {
    throw UsageError(std::string(what) + " is " + std::to_string(key.size()) +
                     " bytes; the maximum is " + std::to_string(kMaxKeySize));
  }
  return key;
}

// The bytes of a file ("-": standard input), refused past kMaxValueSize.
std::string readValueFile(const std::string& path) {
  FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw Failure(kExitFailure, "--value-file=" + path + ": " + std::strerror(errno));
  std::string value;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    value.append(buf, n);
    if (value.size() > kMaxValueSize) {
      if (f != stdin) std::fclose(f);
      throw UsageError("--value-file=" + path + " holds more than the maximum value of " +
                       std::to_string(kMaxValueSize) + " bytes");
    }
  }
  bool failed = std::ferror(f) != 0;
  int err = errno;
  if (f != stdin) std::fclose(f);
  if (failed) throw Failure(kExitFailure, "--value-file=" + path + ": " + std::strerror(err));
  return value;
}

// What a key or value looks like in output and messages.
std::string shown(const Args& args, std::string_view bytes) {
  return args.has("hex") ? toHex(bytes) : std::string(bytes);
}

}  // namespace

int cmdPut(int argc, char** argv) {
  Args args(argc, argv, 2, dataOptions({{"value-file", true}}));
  const bool fromFile = args.has("value-file");
  // VALUE on the command line, or --value-file=PATH instead (a value of any size; an
  // argument is limited to 128 KiB by the kernel).
  args.requirePositionals(fromFile ? 2 : 3, fromFile ? 2 : 3);
  const std::string& dir = args.positional(0);
  std::string key = keyArg(args, args.positional(1));
  std::string value = fromFile ? readValueFile(args.str("value-file", ""))
                      : args.has("hex") ? fromHex(args.positional(2), "VALUE")
                                        : args.positional(2);
  if (value.size() > kMaxValueSize) {
    throw UsageError("VALUE is " + std::to_string(value.size()) + " bytes; the maximum is " +
                     std::to_string(kMaxValueSize));
  }
  std::string tree_name = treeName(args);

  auto db = openDatabase(dir, poolSize(args), /*create=*/true);
  Tree* tree = openTree(*db, tree_name, /*create=*/true);
  check(tree->put(key, value), "put");
  closeDatabase(db);
  return kExitOk;
}

int cmdGet(int argc, char** argv) {
  Args args(argc, argv, 2, dataOptions({{"out", true}}));
  args.requirePositionals(2, 2);
  const std::string out = args.str("out", "");
  if (args.has("out") && out.empty()) throw UsageError("--out needs a file name");
  std::string key = keyArg(args, args.positional(1));
  std::string tree_name = treeName(args);

  auto db = openDatabase(args.positional(0), poolSize(args), /*create=*/false);
  Tree* tree = openTree(*db, tree_name, /*create=*/false);
  std::string value;
  Status s = tree->get(key, &value);
  if (s.isNotFound()) throw Failure(kExitFailure, "not found: " + shown(args, key));
  check(s, "get");
  if (!out.empty()) {  // the value's bytes exactly: no newline, never hex
    FILE* f = std::fopen(out.c_str(), "wb");
    if (f == nullptr) throw Failure(kExitFailure, "--out=" + out + ": " + std::strerror(errno));
    bool ok = std::fwrite(value.data(), 1, value.size(), f) == value.size();
    ok = std::fclose(f) == 0 && ok;
    if (!ok) throw Failure(kExitFailure, "--out=" + out + ": cannot write the value");
  } else {
    writeOut(shown(args, value));
    writeOut("\n");
  }
  closeDatabase(db);
  return kExitOk;
}

int cmdDel(int argc, char** argv) {
  Args args(argc, argv, 2, dataOptions({}));
  args.requirePositionals(2, 2);
  std::string key = keyArg(args, args.positional(1));
  std::string tree_name = treeName(args);

  auto db = openDatabase(args.positional(0), poolSize(args), /*create=*/false);
  Tree* tree = openTree(*db, tree_name, /*create=*/false);
  Status s = tree->del(key);
  if (s.isNotFound()) {
    closeDatabase(db);
    throw Failure(kExitFailure, "not found: " + shown(args, key));
  }
  check(s, "del");
  closeDatabase(db);
  return kExitOk;
}

int cmdScan(int argc, char** argv) {
  Args args(argc, argv, 2,
            dataOptions({{"start", true}, {"limit", true}, {"reverse", false}}));
  args.requirePositionals(1, 1);
  std::string tree_name = treeName(args);
  bool has_start = args.has("start");
  std::string start = has_start ? keyArg(args, args.str("start", ""), "--start") : std::string();
  uint64_t limit = args.count("limit", std::numeric_limits<uint64_t>::max());
  bool reverse = args.has("reverse");

  auto db = openDatabase(args.positional(0), poolSize(args), /*create=*/false);
  Tree* tree = openTree(*db, tree_name, /*create=*/false);
  {  // the iterator must not outlive the database
    Iterator it = tree->newIterator();
    if (reverse) {
      has_start ? it.seekForPrev(start) : it.seekToLast();
    } else {
      has_start ? it.seek(start) : it.seekToFirst();
    }
    std::string line;
    for (uint64_t n = 0; n < limit && it.valid(); ++n) {
      line = shown(args, it.key());
      line += '\t';
      line += shown(args, it.value());
      line += '\n';
      writeOut(line);
      reverse ? it.prev() : it.next();
    }
    check(it.status(), "scan");
  }
  closeDatabase(db);
  return kExitOk;
}

}  // namespace vmstore::cli
