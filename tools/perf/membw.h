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

/// The fastest rate at which all ranks at once move `bytes` of their own memory each, over and
/// over from wherever they stay cached: bytes read plus written per second, summed over ranks,
/// the fastest of a read (the C library's widest loads) and a copy (memcpy, and with streaming
/// stores) of them, with one thread and with `threads`. %bound's W: a schedule whose ranks each touch `bytes` moves them
/// no faster. Collective.
double bound_rate(comm::Communicator& comm, size_t bytes, int threads);

}  // namespace seam::perf
