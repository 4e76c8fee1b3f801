// The machine's copy bandwidth, measured by the perf tool itself: the ceiling each row's
// %bound is computed against.
#pragma once

#include "runtime/comm/communicator.h"

namespace seam::perf {

/// The machine's copy bandwidth and how it was measured.
struct CopyBandwidth {
  double bytes_per_second;  ///< read plus written by memcpy on all ranks at once, summed
  int threads;              ///< threads each rank copied with (its host's cores shared out)
};

/// memcpy of a buffer larger than the last-level cache on every rank at once, each rank with
/// its share of its host's cores as threads. Collective.
CopyBandwidth measure_copy_bandwidth(comm::Communicator& comm);

}  // namespace seam::perf
