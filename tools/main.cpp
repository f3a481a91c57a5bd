// vmstore: the command-line tool of the vmstore storage engine. Dispatches to commands.
//
// Built twice (CMakeLists.txt): as `vmstore-bench` with every command (VMSTORE_WITH_BENCH),
// and as `vmstore` without the benchmark engines, whose `bench` and `sim` exec
// VMSTORE_BENCH_EXE from the directory `vmstore` itself is in, with the same arguments.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli.hpp"

namespace {

using vmstore::cli::Failure;
using vmstore::cli::UsageError;

#if defined(VMSTORE_BENCH_EXE) && !defined(VMSTORE_WITH_BENCH)
// `vmstore bench ...` and `vmstore sim ...`: replaces this process by
// `DIR/vmstore-bench bench|sim ...`, DIR being where this executable is. Returns only
// by throwing.
int execBenchTool(int argc, char** argv) {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw Failure(vmstore::cli::kExitFailure, "cannot find this executable (/proc/self/exe)");
  std::string path(self, static_cast<size_t>(n));
  path.resize(path.rfind('/') + 1);
  path += VMSTORE_BENCH_EXE;
  std::vector<char*> args(argv, argv + argc);
  args[0] = path.data();
  args.push_back(nullptr);
  std::fflush(stdout);
  ::execv(path.c_str(), args.data());
  throw Failure(vmstore::cli::kExitFailure,
                "cannot run " + path + ": " + std::strerror(errno) +
                    " (it is built and installed beside vmstore unless the build had "
                    "VMSTORE_BUILD_BENCH=OFF)");
}
#define VMSTORE_BENCH_RUN(f) execBenchTool
#else
#define VMSTORE_BENCH_RUN(f) f
#endif

struct Command {
  const char* name;
  const char* synopsis;
  const char* summary;
  int (*run)(int argc, char** argv);
};

const Command kCommands[] = {
    {"put", "put DIR KEY (VALUE | --value-file=PATH|-) [--tree=NAME] [--hex] [--pool=SIZE]",
     "store VALUE under KEY (creates the database if missing)", vmstore::cli::cmdPut},
    {"get", "get DIR KEY [--tree=NAME] [--hex] [--out=FILE] [--pool=SIZE]", "print the value of KEY (exit 1 if absent)",
     vmstore::cli::cmdGet},
    {"del", "del DIR KEY [--tree=NAME] [--hex] [--pool=SIZE]", "delete KEY (exit 1 if absent)",
     vmstore::cli::cmdDel},
    {"scan", "scan DIR [--tree=NAME] [--start=KEY] [--limit=N] [--reverse] [--hex] [--pool=SIZE]",
     "print key<TAB>value lines in key order", vmstore::cli::cmdScan},
    {"stats", "stats DIR [--pool=SIZE] [--config=KEY=VALUE,...]", "print trees, key counts, pages, file size, counters",
     vmstore::cli::cmdStats},
    {"check", "check DIR [--pool=SIZE]",
     "verify the whole database (exit 3 and list problems if damaged)", vmstore::cli::cmdCheck},
    {"demo", "demo [--dir=DIR] [--pool=SIZE] [--data=N] [--threads=N]",
     "load ~10x the pool, read it all back, verify (default ./vmstore-demo, 16M)",
     vmstore::cli::cmdDemo},
#if defined(VMSTORE_WITH_BENCH) || defined(VMSTORE_BENCH_EXE)
    {"bench",
     "bench WORKLOAD [--engine=E] [--threads=N] [--data=N] [--pool=SIZE] [--seconds=S] "
     "[--dir=DIR] [--csv=FILE] [--check] [--distribution=zipfian|uniform] "
     "[--durability=sync|async|none] [--warmup=S] [--trace=FILE] [--vmstore-config=KEY=VALUE,...] "
     "(more: 'bench --help')\n"
     "  vmstore bench suite [--seconds=S] [--out=DIR] [--threads=N] [--engines=E,...] "
     "[--durability=sync|async|none]\n"
     "  vmstore bench values [--value-sizes=S,...] [--cases=mem,oom] [--churn | --zero-copy]\n"
     "  vmstore bench policies [--workloads=W,...] [--policies=all|P,...] [--pools=5,10,25,50]",
     "benchmarks: lookup, scan, ycsb-a..f, tpcc, micro-benchmarks, large values on five "
     "engines ('bench --help')",
     VMSTORE_BENCH_RUN(vmstore::cli::cmdBench)},
    {"sim", "sim TRACE [--policy=all|P,...] [--pool=5%,10%,25%,50% | PAGES | SIZE] [--batch=N] [--skip=N|P%] [--json] [--list-policies]",
     "replay a page-reference trace (config trace=FILE) through replacement policies and OPT",
     VMSTORE_BENCH_RUN(vmstore::cli::cmdSim)},
#endif
};

void printUsage(FILE* out) {
  std::fprintf(out,
               "vmstore: command-line tool of the vmstore key-value storage engine\n"
               "\n"
               "usage: vmstore COMMAND [ARGS]\n"
               "\n"
               "commands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-6s %s\n", c.name, c.summary);
  std::fprintf(out, "  %-6s %s\n", "help", "show this help (also --help, -h)");
  std::fprintf(out, "\nsynopsis:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  vmstore %s\n", c.synopsis);
  std::fprintf(out,
               "\n"
               "Sizes and counts take K/M/G/T suffixes (powers of 1024). --hex reads and\n"
               "prints keys and values as hex. put/get/del/scan/stats/check open the database\n"
               "with a 64M pool unless --pool=SIZE is given; all but put need an existing\n"
               "database. '--' ends the options (for keys that start with '-').\n"
               "Exit status: 0 ok, 1 failure or not found, 2 bad arguments, 3 damaged\n"
               "database. See docs/CLI.md.\n");
}

bool isHelp(const char* arg) {
  return std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0 ||
         std::strcmp(arg, "help") == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "vmstore: no command given\n\n");
    printUsage(stderr);
    return vmstore::cli::kExitUsage;
  }
  if (isHelp(argv[1])) {
    printUsage(stdout);
    return vmstore::cli::kExitOk;
  }
  const Command* command = nullptr;
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name) == 0) command = &c;
  }
  if (command == nullptr) {
    std::fprintf(stderr, "vmstore: unknown command '%s' (run 'vmstore help' for the list)\n",
                 argv[1]);
    return vmstore::cli::kExitUsage;
  }
  // `vmstore bench --help` lists workloads, micro-benchmarks and engines itself.
  for (int i = 2; i < argc && std::strcmp(command->name, "bench") != 0; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("usage: vmstore %s\n  %s\n", command->synopsis, command->summary);
      return vmstore::cli::kExitOk;
    }
  }
  try {
    int rc = command->run(argc, argv);
    if (std::fflush(stdout) != 0) throw Failure(vmstore::cli::kExitFailure, "cannot write to standard output");
    return rc;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "vmstore %s: %s\nusage: vmstore %s\n", command->name, e.what(),
                 command->synopsis);
    return vmstore::cli::kExitUsage;
  } catch (const Failure& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "vmstore %s: %s\n", command->name, e.what());
    return e.code;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "vmstore %s: %s\n", command->name, e.what());
    return vmstore::cli::kExitFailure;
  }
}
