// nameThread: gives a thread a name that top -H, ps -L, perf, gdb and
// /proc/PID/task/TID/comm show, so that a user (or a profile) can tell vmstore's
// background threads apart from the application's.
//
// Contract
// - nameThread(t, name) names the running thread t `name`, cut to the 15 bytes the
//   kernel keeps; the name shows from when it returns. Every name vmstore gives starts
//   with "vms-". A failure (t not joinable, a kernel without thread names) is ignored:
//   a name is a convenience, never a reason for an operation to fail.
// - threadName() is the calling thread's name as the kernel holds it ("" if it cannot
//   be read), for tests and diagnostics.
#pragma once

#include <string>
#include <thread>

namespace vmstore::internal {

void nameThread(std::thread& t, const char* name) noexcept;
std::string threadName();

}  // namespace vmstore::internal
