// The machine's copy bandwidths, measured by the perf tool itself: memcpy's, the ceiling each
// row's %bound is computed against, and the kernel's cross-process copy's, the ceiling of what
// one process's plain buffers take from or give to another's.
#pragma once

#include "seam/communicator.h"

namespace seam::perf {

/// The machine's copy bandwidths and how they were measured.
struct CopyBandwidth {
  double bytes_per_second;  ///< read plus written by memcpy on all ranks at once, summed
  /// Read plus written by process_vm_readv on all ranks at once, summed; 0 where not permitted.
  double kernel_bytes_per_second;
  int threads;  ///< threads each rank copied with (its host's cores shared out)
};

/// memcpy, then process_vm_readv, of a buffer larger than the last-level cache on every rank at
/// once, each rank with its share of its host's cores as threads. Collective.
CopyBandwidth measure_copy_bandwidth(comm::Communicator& comm);

}  // namespace seam::perf
