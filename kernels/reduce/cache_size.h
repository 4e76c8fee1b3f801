// The host's cache sizes, for kernels' callers that choose between cached and streaming stores.
#pragma once

#include <cstddef>
#include <string_view>

namespace seam::kernels {

/// Bytes of the last-level cache this CPU may count on (sysfs; 32 MiB when it cannot be read):
/// at most kLastLevelCacheBytesPerCpu for each CPU that shares it. sysconf is not used, and the
/// per-CPU cap exists, because inside VMs both report the host's whole cache, not this guest's
/// share.
size_t last_level_cache_bytes();
/// Bytes of this CPU's level-2 cache (sysfs; 1 MiB when it cannot be read).
size_t l2_cache_bytes();

/// The most last-level cache counted per CPU sharing it. A 2-vCPU guest whose sysfs reports the
/// host's 480 MiB L3 kept calls of up to ~100 MiB of buffers (all ranks) faster with cached
/// stores, while from 256 MiB streaming stores won (2-rank 64 MiB all-reduce 14.9 -> 11.9 ms,
/// all-gather 9.3-9.8 -> 7.6-7.8 ms).
inline constexpr size_t kLastLevelCacheBytesPerCpu = size_t{16} << 20;

/// Number of CPUs in a sysfs CPU list ("0-3,8,10-11" -> 7); 0 for an empty or malformed list.
size_t cpus_in_list(std::string_view list);

}  // namespace seam::kernels
