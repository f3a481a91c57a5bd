// Writes that wait for each other: key locks, the writer gate and checkpoints. Each case
// below was a deadlock or a lost update found by probing the API; the deadlocks run in a
// child process that the test kills after a deadline, so a regression fails instead of
// hanging the suite.
// - A write too large for the log keeps its key locked until the checkpoint that makes
//   it durable has committed: a same-size update of that key right after it is logged
//   against the new value, and recovery finds both.
// - putReserve of such a value beside puts and deletes of the same key.
// - A thread holding a view (or running a scan's function) writes to another tree while
//   a writer waits for the viewed leaf: with a checkpoint waiting too, and with many keys
//   (a key of the other tree must never wait for a lock of the viewed tree's keys).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "../e2e/test_util.hpp"

namespace {

using namespace vmstest;
using vmstore::Change;

// Runs body in a child process; true if it exited 0 within `seconds` (else it is killed).
// body returns the child's exit code.
bool finishesInChild(const std::function<int()>& body, int seconds, std::string* why) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      *why = "still running after " + std::to_string(seconds) + " s (a deadlock)";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *why = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : "killed by a signal";
    return false;
  }
  return true;
}

TEST(LockOrder, AnUpdateRightAfterAnUnloggedPutSurvivesACrash) {
  // The put of 2 MiB (over log_size/16) is not logged: a checkpoint makes it durable.
  // An update that saw its value must not be logged as a patch before that checkpoint
  // has committed (a crash would replay the patch over the old value, or drop it).
  const size_t n = 2 << 20;
  const char* config = "pool_size=64M,log_size=16M";
  for (int round = 0; round < scaled(3, 1); round++) {
    std::string dir = freshDir();
    std::string why;
    bool ok = finishesInChild(
        [&] {
          auto db = openDb(dir, config);
          if (!db) return 3;
          vmstore::Tree* t;
          if (!db->openTree("", true, &t).ok()) return 4;
          if (!t->put("K", std::string(n, 'a')).ok() || !db->sync().ok()) return 5;
          // Many changed pages make the checkpoint of the next put take a while.
          for (int i = 0; i < 2500; i++) {
            if (!t->put("f" + std::to_string(i), std::string(1000, 'f')).ok()) return 6;
          }
          std::thread big([&] { (void)t->put("K", std::string(n, 'b')); });  // waits for its checkpoint
          char last = 0;
          size_t copied = 0, len = 0;
          do {  // until the new value is in place (before its checkpoint has committed)
            if (!t->getRange("K", n - 1, std::as_writable_bytes(std::span<char>(&last, 1)), &copied, &len).ok()) {
              return 7;
            }
          } while (last != 'b');
          if (!t->update("K", [](std::optional<std::string_view> cur) {
                 std::string v(*cur);
                 v[0] = 'Z';
                 return Change::put(std::move(v));
               }).ok()) {
            return 8;
          }
          big.detach();  // not a leak (ThreadSanitizer reports a thread neither joined nor detached at exit)
          _exit(0);      // a crash: the put's thread has not returned, the update has
        },
        120, &why);
    ASSERT_TRUE(ok) << why;
    auto db = openDb(dir, config);
    ASSERT_TRUE(db);
    vmstore::Tree* t;
    VMS_ASSERT_OK(db->openTree("", false, &t));
    std::string v;
    VMS_ASSERT_OK(t->get("K", &v));
    ASSERT_EQ(v.size(), n);
    EXPECT_EQ(v[0], 'Z') << "the acknowledged update was lost";
    EXPECT_EQ(v[1], 'b') << "the update was applied over a value it never saw";
    EXPECT_EQ(v.find_first_not_of('b', 1), std::string::npos);
    VMS_ASSERT_OK(db->close());
  }
}

TEST(LockOrder, PutReserveOfAnUnloggedValueBesideWritesOfItsKey) {
  std::string dir = freshDir();
  std::string why;
  bool ok = finishesInChild(
      [&] {
        auto db = openDb(dir, "pool_size=64M,log_size=8M");
        if (!db) return 3;
        vmstore::Tree* t;
        if (!db->openTree("", true, &t).ok()) return 4;
        std::atomic<int> failed{0};
        std::thread a([&] {
          for (int i = 0; i < scaled(60, 20); i++) {
            Status s = t->putReserve("k", 1 << 20, [](std::span<std::byte> b) {
              b[0] = std::byte{1};
              return Status::OK();
            });
            if (!s.ok()) failed++;
          }
        });
        std::thread b([&] {
          for (int i = 0; i < scaled(600, 200); i++) {
            Status s = i % 2 ? t->del("k") : t->put("k", "small");
            if (!s.ok() && !s.isNotFound()) failed++;
          }
        });
        a.join();
        b.join();
        if (failed != 0) return 5;
        return db->close().ok() ? 0 : 6;
      },
      120, &why);
  EXPECT_TRUE(ok) << why;
}

// A view of t1's leaf is held; a writer of that leaf waits for it; the holder then
// writes to t2 (allowed: value_view.hpp), with `extra` running beside.
int viewHolderWritesAnotherTree(const std::string& dir, int keys, bool checkpointWaits) {
  auto db = openDb(dir, "pool_size=64M,durability=none");
  if (!db) return 3;
  vmstore::Tree *t1, *t2;
  if (!db->openTree("t1", true, &t1).ok() || !db->openTree("t2", true, &t2).ok()) return 4;
  if (!t1->put("a", "1").ok()) return 5;
  vmstore::ValueView view;
  if (!t1->getView("a", &view).ok()) return 6;
  std::thread writer([&] { (void)t1->put("b", "2"); });  // same leaf: waits for the view
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::thread checkpoint;
  if (checkpointWaits) {
    checkpoint = std::thread([&] { (void)db->sync(); });  // waits for the writer
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (int i = 0; i < keys; i++) {
    if (!t2->put("x" + std::to_string(i), "y").ok()) return 7;
  }
  view.release();
  writer.join();
  if (checkpoint.joinable()) checkpoint.join();
  return db->close().ok() ? 0 : 8;
}

TEST(LockOrder, AViewHolderWritesAnotherTreeWhileACheckpointWaits) {
  std::string why;
  EXPECT_TRUE(finishesInChild([&] { return viewHolderWritesAnotherTree(freshDir(), 10, true); }, 60, &why)) << why;
}

TEST(LockOrder, AViewHolderWritesManyKeysOfAnotherTree) {
  // With one table of key locks for every tree, one of these keys soon shared a lock
  // with the waiting writer's key.
  std::string why;
  EXPECT_TRUE(finishesInChild([&] { return viewHolderWritesAnotherTree(freshDir(), 20000, false); }, 60, &why))
      << why;
}

}  // namespace
