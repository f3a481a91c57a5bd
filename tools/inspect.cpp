// The inspection commands: stats and check.
#include <cstdio>
#include <string>

#include "cli.hpp"

namespace vmstore::cli {

namespace {

void line(const char* name, uint64_t value) {
  std::printf("%s: %llu\n", name, static_cast<unsigned long long>(value));
}

void line(const char* name, const std::string& value) {
  std::printf("%s: %s\n", name, value.c_str());
}

}  // namespace

int cmdStats(int argc, char** argv) {
  Args args(argc, argv, 2, {{"pool", true}, {"config", true}});
  args.requirePositionals(1, 1);
  if (args.has("pool")) {  // the pool comes from one place only
    for (const std::string& item : splitList(args.str("config", ""))) {
      std::string key = item.substr(0, item.find('='));
      key.erase(0, key.find_first_not_of(" \t"));
      key.erase(key.find_last_not_of(" \t") + 1);
      if (key == "pool_size" || key == "tiers") {
        throw UsageError("--pool and --config's " + key + " both set the pool: give one of them");
      }
    }
  }
  auto db = openDatabase(args.positional(0), args.size("pool", kDefaultCommandPool, 1ull << 20),
                         /*create=*/false, kExitFailure, Durability::kSync, args.str("config", ""));
  std::vector<std::string> names;
  check(db->listTrees(&names), "list trees");
  line("trees", names.size());
  for (const std::string& name : names) {
    Tree* tree = openTree(*db, name, /*create=*/false);
    std::string label = "tree " + treeLabel(name);
    TreeShape shape;  // one walk of the tree counts its keys too
    check(tree->shape(&shape), "shape of tree " + treeLabel(name));
    const uint64_t keys = shape.keys;
    line(label.c_str(), std::to_string(keys) + (keys == 1 ? " key" : " keys"));
    auto percent = [](double f) { return std::to_string(static_cast<int>(f * 100 + 0.5)) + "%"; };
    std::string text = "height " + std::to_string(shape.height) + ", " + std::to_string(shape.leaf_pages) +
                       " leaf pages (" + percent(shape.leaf_fill) + " full), " + std::to_string(shape.inner_pages) +
                       " inner pages";
    if (shape.inner_pages > 0) text += " (" + percent(shape.inner_fill) + " full)";
    if (shape.value_pages > 0) text += ", " + std::to_string(shape.value_pages) + " value pages";
    line((label + " shape").c_str(), text);
  }
  // Read after counting: the event counters then show what the count scan cost.
  Stats st = db->stats();
  line("page_count", st.page_count);
  line("free_pages", st.free_pages);
  line("resident_pages", st.resident_pages);
  line("pool_pages", st.pool_pages);
  line("pool_size", humanBytes(st.pool_pages * kPageSize));
  line("file_bytes", st.file_bytes);
  line("file_size", humanBytes(st.file_bytes));
  line("hits", st.hits);
  line("misses", st.misses);
  line("evictions", st.evictions);
  line("pages_written", st.pages_written);
  line("restarts", st.restarts);
  line("release_calls", st.release_calls);
  line("read_ahead_pages", st.read_ahead_pages);
  line("huge_page_bytes", st.huge_page_bytes);
  line("huge_pages_in_memory", st.huge_pages_in_memory);
  line("victim_ns", st.victim_ns);
  line("victims_kept", st.victims_kept);
  line("policy_bytes", st.policy_bytes);
  line("resident_set_bytes", st.resident_set_bytes);
  line("tlb_shootdowns", st.tlb_shootdowns);
  if (st.tier_count > 0) {  // memory tiers (config tiers)
    for (uint64_t t = 0; t < st.tier_count; t++) {
      line(("tier" + std::to_string(t)).c_str(), "node " + std::to_string(st.tier_node[t]) + ", " +
                                                   std::to_string(st.tier_pages[t]) + " of " +
                                                   std::to_string(st.tier_budget_pages[t]) + " pages");
    }
    line("demoted_pages", st.demoted_pages);
    line("promoted_pages", st.promoted_pages);
    line("migrate_failures", st.migrate_failures);
    line("migrate_calls", st.migrate_calls);
    line("migrate_ns", st.migrate_ns);
    line("migrate_tlb_shootdowns", st.migrate_tlb_shootdowns);
  }
  line("checkpoint_cuts", st.checkpoint_cuts);
  line("checkpoint_cut_wait_us", st.checkpoint_cut_wait_us);
  line("checkpoint_cut_wait_max_us", st.checkpoint_cut_wait_max_us);
  line("log_full_waits", st.log_full_waits);
  line("checkpoints", st.checkpoints);
  line("log_bytes", st.log_bytes);
  line("log_appended_bytes", st.log_appended_bytes);
  line("log_file_size", humanBytes(st.log_file_bytes));
  // What this open recovered: an interrupted checkpoint completed, log records replayed.
  line("recovered_checkpoint", st.recovered_checkpoint ? "yes" : "no");
  line("recovered_records", st.recovered_records);
  line("recovered_operations", st.recovered_operations);
  line("recovered_bytes", st.recovered_bytes);
  line("recovery_time", std::to_string(st.recovery_us / 1000) + "." + std::to_string(st.recovery_us / 100 % 10) + " ms");
  closeDatabase(db);
  return kExitOk;
}

int cmdCheck(int argc, char** argv) {
  Args args(argc, argv, 2, {{"pool", true}});
  args.requirePositionals(1, 1);
  auto db = openDatabase(args.positional(0), args.size("pool", kDefaultCommandPool, 1ull << 20),
                         /*create=*/false, /*corrupt_exit=*/kExitCorrupt);
  std::vector<std::string> problems;
  Status s = db->check(&problems);
  if (s.ok()) {
    closeDatabase(db);
    std::printf("ok\n");
    return kExitOk;
  }
  if (s.code() != Status::Code::kCorruption) check(s, "check");
  if (problems.empty()) problems.push_back(s.toString());
  for (const std::string& p : problems) std::printf("%s\n", p.c_str());
  std::fflush(stdout);
  (void)db->close();  // the verdict is already known; a close error changes nothing
  std::fprintf(stderr, "vmstore check: %zu problem%s found\n", problems.size(),
               problems.size() == 1 ? "" : "s");
  return kExitCorrupt;
}

}  // namespace vmstore::cli
