// Ports for the listeners tests start (TCP stores).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace seam::test {

/// A new port for a test's listener, below the kernel's ephemeral range (ip_local_port_range),
/// where no outgoing connection takes one, spread by process id so that tests running side by
/// side pick apart. (Ports inside the range collided with the tests' own client connections:
/// "Address already in use" in 2 runs of tcp_store_unit in 10.)
inline int listen_port() {
  static int next = [] {
    constexpr int kBase = 10000;
    int low = 32768;
    std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
    const int span = std::max(1000, low - kBase - 100);  // room for 100 ports a process
    return kBase + static_cast<int>(getpid()) % span;
  }();
  return next++;
}

}  // namespace seam::test
