// The host's cache sizes, for kernels' callers that choose between cached and streaming stores.
#pragma once

#include <cstddef>

namespace seam::kernels {

/// Bytes of the last-level cache shared by this CPU (sysfs; 32 MiB when it cannot be read).
/// sysconf is not used: inside VMs it reports the host's whole cache, not this guest's share
/// (sysfs may too: store_for counts at most 32 MiB).
size_t last_level_cache_bytes();
/// Bytes of this CPU's level-2 cache (sysfs; 1 MiB when it cannot be read).
size_t l2_cache_bytes();

}  // namespace seam::kernels
