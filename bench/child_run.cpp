// runChild: see child_run.hpp for the contract.
#include "child_run.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "memory_cgroup.hpp"

namespace vmstore::bench {

namespace {

// Restores the parent's SIGINT/SIGTERM actions on every path out.
class IgnoreInterrupts {
 public:
  IgnoreInterrupts() {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &oldInt_);
    sigaction(SIGTERM, &ign, &oldTerm_);
  }
  ~IgnoreInterrupts() {
    sigaction(SIGINT, &oldInt_, nullptr);
    sigaction(SIGTERM, &oldTerm_, nullptr);
  }

 private:
  struct sigaction oldInt_ {}, oldTerm_ {};
};

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

ChildResult runChild(const std::vector<std::string>& argv, const std::string& stderrPath,
                     MemoryCgroup* cgroup, std::string* why) {
  ChildResult result;
  if (argv.empty()) {
    *why = "no program to run";
    return result;
  }
  // Everything the child needs is prepared before fork: after it, the child only makes
  // async-signal-safe calls (the parent may have threads).
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int errFd = -1;
  if (!stderrPath.empty()) {
    errFd = ::open(stderrPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (errFd < 0) {
      *why = "cannot write " + stderrPath + ": " + std::strerror(errno);
      return result;
    }
  }
  int outPipe[2], goPipe[2];
  if (::pipe2(outPipe, O_CLOEXEC) != 0) {
    *why = std::string("pipe: ") + std::strerror(errno);
    closeFd(errFd);
    return result;
  }
  if (::pipe2(goPipe, O_CLOEXEC) != 0) {
    *why = std::string("pipe: ") + std::strerror(errno);
    closeFd(outPipe[0]);
    closeFd(outPipe[1]);
    closeFd(errFd);
    return result;
  }
  IgnoreInterrupts ignore;
  pid_t pid = ::fork();
  if (pid < 0) {
    *why = std::string("fork: ") + std::strerror(errno);
    for (int* fd : {&outPipe[0], &outPipe[1], &goPipe[0], &goPipe[1], &errFd}) closeFd(*fd);
    return result;
  }
  if (pid == 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGINT, &dfl, nullptr);
    sigaction(SIGTERM, &dfl, nullptr);
    char go = 0;
    ssize_t got;
    do {
      got = ::read(goPipe[0], &go, 1);
    } while (got < 0 && errno == EINTR);
    if (got != 1 || go != 'g') _exit(126);  // the parent could not place it: run nothing
    int devNull = ::open("/dev/null", O_RDONLY);
    if (devNull >= 0) ::dup2(devNull, 0);
    ::dup2(outPipe[1], 1);
    if (errFd >= 0) ::dup2(errFd, 2);
    ::execv(args[0], args.data());
    const char msg[] = "runChild: exec failed\n";
    ssize_t ignored = ::write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
  }
  closeFd(outPipe[1]);
  closeFd(goPipe[0]);
  closeFd(errFd);
  bool placed = cgroup == nullptr || cgroup->addProcess(pid, why);
  const char go = placed ? 'g' : 'n';
  ssize_t wrote = ::write(goPipe[1], &go, 1);
  (void)wrote;  // a child that died already is reaped below
  closeFd(goPipe[1]);
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(outPipe[0], buf, sizeof buf);
    if (n > 0) {
      result.out.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  closeFd(outPipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!placed) return result;  // started stays false; *why says why
  result.started = true;
  if (WIFEXITED(status)) result.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.termSignal = WTERMSIG(status);
  if (cgroup != nullptr) {
    result.peakBytes = cgroup->peakBytes();
    result.oomKills = cgroup->oomKills();
  }
  return result;
}

}  // namespace vmstore::bench
