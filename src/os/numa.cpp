#include "os/numa.hpp"

#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace vmstore::internal::numa {

namespace {

constexpr size_t kMaskBits = 1024;  // nodes a mask can name
constexpr size_t kMaskWords = kMaskBits / (8 * sizeof(unsigned long));

// "0-1,3" (the kernel's node-list format) into node numbers.
std::vector<int> parseNodeList(const std::string& text) {
  std::vector<int> nodes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty() || item == "\n") continue;
    size_t dash = item.find('-');
    try {
      int lo = std::stoi(item.substr(0, dash));
      int hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
      for (int n = lo; n <= hi && n >= 0 && n < static_cast<int>(kMaskBits); n++) nodes.push_back(n);
    } catch (const std::exception&) {
      return {};
    }
  }
  return nodes;
}

struct NodeMask {
  unsigned long words[kMaskWords] = {};
  explicit NodeMask(int node) { words[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long))); }
};

bool validNode(int node) { return node >= 0 && node < static_cast<int>(kMaskBits); }

}  // namespace

std::vector<int> memoryNodes() {
  std::ifstream f("/sys/devices/system/node/has_memory");
  std::string text;
  if (f && std::getline(f, text)) {
    std::vector<int> nodes = parseNodeList(text);
    if (!nodes.empty()) return nodes;
  }
  std::vector<int> nodes;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && std::all_of(name.begin() + 4, name.end(), ::isdigit)) {
      nodes.push_back(std::stoi(name.substr(4)));
    }
  }
  std::sort(nodes.begin(), nodes.end());
  if (nodes.empty()) nodes.push_back(0);
  return nodes;
}

int preferNode(void* addr, size_t bytes, int node) {
  if (!validNode(node)) return -EINVAL;
  NodeMask mask(node);
  if (syscall(SYS_mbind, addr, bytes, MPOL_PREFERRED, mask.words, kMaskBits + 1, 0) != 0) return -errno;
  return 0;
}

long movePages(std::span<void* const> addrs, int node, size_t batch, std::span<int> status) {
  if (!validNode(node) || status.size() < addrs.size()) return -EINVAL;
  if (batch == 0) batch = 1;
  std::vector<int> nodes(std::min(batch, addrs.size()), node);
  long calls = 0;
  for (size_t at = 0; at < addrs.size(); at += batch) {
    size_t n = std::min(batch, addrs.size() - at);
    // const_cast: the kernel only reads the addresses.
    long r = syscall(SYS_move_pages, 0, n, const_cast<void**>(addrs.data() + at), nodes.data(), status.data() + at,
                     MPOL_MF_MOVE);
    calls++;
    if (r < 0) {
      int err = errno;
      // A whole-request refusal before anything moved: report it unless some batch moved.
      if (at == 0) return -err;
      std::fill(status.begin() + static_cast<std::ptrdiff_t>(at), status.begin() + static_cast<std::ptrdiff_t>(at + n),
                -err);
    }
  }
  return calls;
}

int mbindPage(void* addr, int node) {
  if (!validNode(node)) return -EINVAL;
  NodeMask mask(node);
  if (syscall(SYS_mbind, addr, static_cast<unsigned long>(sysconf(_SC_PAGESIZE)), MPOL_BIND, mask.words,
              kMaskBits + 1, MPOL_MF_MOVE | MPOL_MF_STRICT) != 0) {
    return -errno;
  }
  return 0;
}

int nodesOf(std::span<void* const> addrs, std::span<int> status) {
  if (status.size() < addrs.size()) return -EINVAL;
  if (addrs.empty()) return 0;
  if (syscall(SYS_move_pages, 0, addrs.size(), const_cast<void**>(addrs.data()), nullptr, status.data(), 0) < 0) {
    return -errno;
  }
  return 0;
}

}  // namespace vmstore::internal::numa
