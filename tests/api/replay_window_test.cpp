// ReplayWindow (src/api/replay_window.hpp): copies of log operations, held until full.
#include "api/replay_window.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vmstore::internal {
namespace {

TEST(ReplayWindow, HoldsCopiesThatOutliveTheRecordsTheyCameFrom) {
  ReplayWindow window(1024);
  std::vector<std::string> expectKeys;
  for (int i = 0; i < 300; i++) {
    // The record's bytes live only for this call, as replay's read buffer does.
    std::string tree = "tree" + std::to_string(i % 3);
    std::string key = "key" + std::to_string(i);
    std::string value(static_cast<size_t>(i * 7), static_cast<char>('a' + i % 26));
    std::string gone = key + "-gone";
    LogOp ops[2] = {{LogOpKind::kPut, tree, key, value}, {LogOpKind::kDelete, tree, gone, {}}};
    window.add(ops);
    tree.assign(tree.size(), '#');
    key.assign(key.size(), '#');
    value.assign(value.size(), '#');
    gone.assign(gone.size(), '#');
    expectKeys.push_back("key" + std::to_string(i));
  }
  ASSERT_EQ(window.size(), 600u);
  std::span<const LogOp> ops = window.ops();
  ASSERT_EQ(ops.size(), 600u);
  for (int i = 0; i < 300; i++) {
    const LogOp& put = ops[2 * i];
    const LogOp& del = ops[2 * i + 1];
    EXPECT_EQ(put.kind, LogOpKind::kPut);
    EXPECT_EQ(put.tree, "tree" + std::to_string(i % 3));
    EXPECT_EQ(put.key, expectKeys[i]);
    EXPECT_EQ(put.value, std::string(static_cast<size_t>(i * 7), static_cast<char>('a' + i % 26)));
    EXPECT_EQ(del.kind, LogOpKind::kDelete);
    EXPECT_EQ(del.key, expectKeys[i] + "-gone");
    EXPECT_TRUE(del.value.empty());
  }
}

TEST(ReplayWindow, IsFullAtItsOperationsOrItsBytes) {
  ReplayWindow byOps(4);
  const std::string v(100, 'v');
  for (int i = 0; i < 3; i++) {
    LogOp op{LogOpKind::kPut, "", "k", v};
    byOps.add({&op, 1});
    EXPECT_FALSE(byOps.full()) << i;
  }
  LogOp op{LogOpKind::kPut, "", "k", v};
  byOps.add({&op, 1});
  EXPECT_TRUE(byOps.full());
  byOps.clear();
  EXPECT_TRUE(byOps.empty());
  EXPECT_FALSE(byOps.full());
  EXPECT_TRUE(byOps.ops().empty());

  ReplayWindow byBytes(ReplayWindow::kMaxOps);
  const std::string large(ReplayWindow::kMaxBytes / 2, 'x');
  LogOp big{LogOpKind::kPut, "t", "k", large};
  byBytes.add({&big, 1});
  EXPECT_FALSE(byBytes.full());
  byBytes.add({&big, 1});
  EXPECT_TRUE(byBytes.full()) << "two values of half the byte limit fill it";
  EXPECT_EQ(byBytes.ops()[1].value, large);

  ReplayWindow clamped(0);  // at least one operation
  clamped.add({&op, 1});
  EXPECT_TRUE(clamped.full());
}

TEST(ReplayWindow, AfterClearHoldsOnlyWhatIsAddedNext) {
  ReplayWindow window(16);
  LogOp first{LogOpKind::kPut, "a", "first", "1"};
  window.add({&first, 1});
  ASSERT_EQ(window.ops().size(), 1u);
  window.clear();
  LogOp second{LogOpKind::kPatch, "b", "second", "22"};
  window.add({&second, 1});
  std::span<const LogOp> ops = window.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].kind, LogOpKind::kPatch);
  EXPECT_EQ(ops[0].tree, "b");
  EXPECT_EQ(ops[0].key, "second");
  EXPECT_EQ(ops[0].value, "22");
}

}  // namespace
}  // namespace vmstore::internal
