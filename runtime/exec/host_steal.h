// How much of its vCPUs' time a virtual machine's host took for other guests (/proc/stat's
// steal). Bursts of it slow collectives several times over: a collective waits for its slowest
// rank, and every busy vCPU can be the stolen one. The helper threads stand down while it lasts
// (collectives/shm/steal_watch.h), and the perf binaries print it under their table, so that a noisy
// row can be told from a slow library.
#pragma once

#include <cstdint>
#include <optional>

namespace seam::comm {

/// The steal and total time of all CPUs, in clock ticks, since boot.
struct CpuTicks {
  uint64_t steal = 0;
  uint64_t total = 0;
};

/// This machine's ticks now; none where /proc/stat cannot be read.
std::optional<CpuTicks> cpu_ticks();

/// The share (0-1) of the CPUs' time the host stole between two readings; none if either is
/// missing, no tick passed or the steal counter went back.
std::optional<double> steal_share(const std::optional<CpuTicks>& before,
                                  const std::optional<CpuTicks>& after);

}  // namespace seam::comm
