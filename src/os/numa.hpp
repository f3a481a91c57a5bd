// NUMA memory placement and page migration: the system calls tiered memory needs
// (issue 11; paper 003, "vmcache in tiered memory"). Pages keep their virtual address;
// only the physical frame behind it moves, through the page table.
//
// Contract
// - memoryNodes(): the NUMA nodes that have memory (/sys/devices/system/node/has_memory,
//   or the node directories), ascending; {0} where the system says nothing (no NUMA).
// - preferNode(addr, bytes, node): frames first allocated in [addr, addr + bytes) come
//   from `node` while it has free memory (mbind MPOL_PREFERRED over the whole range,
//   nothing moved). One call for a whole area: no split of the area.
// - movePages(addrs, node, batch, status): moves the frames behind addrs (page-aligned)
//   to `node`, `batch` pages per move_pages(2) call (each call: one round of page-table
//   changes and one TLB shootdown for its batch). status[i] is the node the page is on
//   afterwards, or -errno for a page that did not move (-ENOMEM: the node is full,
//   -EBUSY, -ENOENT: no frame behind the address (-EFAULT on kernels before 6.x)). A page
//   that fails does not stop the others (the optimistic error handling the paper asks of
//   move_pages2). The
//   result counts the calls made; the call itself fails (negative -errno, nothing else
//   changed) only when the kernel refuses the whole request (ENOSYS, EINVAL, ENODEV: no
//   such node, EPERM).
// - mbindPage(addr, node): moves one page with mbind(MPOL_BIND, MPOL_MF_MOVE): the
//   per-page baseline the paper compares against (one call and one shootdown per page;
//   it also sets the range's policy, splitting the area, so it is for measurements,
//   not for the buffer manager). Returns 0 or -errno.
// - nodesOf(addrs, status): where each page is now (move_pages with no target): status[i]
//   is a node, or -ENOENT (-EFAULT before Linux 6.x) for an address with no frame.
//   Returns 0 or -errno.
// On a machine without NUMA support in the kernel (ENOSYS) every call fails cleanly;
// moving to the node a page is already on succeeds and moves nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace vmstore::internal::numa {

std::vector<int> memoryNodes();

int preferNode(void* addr, size_t bytes, int node);

long movePages(std::span<void* const> addrs, int node, size_t batch, std::span<int> status);

int mbindPage(void* addr, int node);

int nodesOf(std::span<void* const> addrs, std::span<int> status);

}  // namespace vmstore::internal::numa
