// The machine's copy bandwidth, measured by the perf tool itself: the ceiling each row's
// %bound is computed against.
#pragma once

#include "runtime/comm/communicator.h"

namespace seam::perf {

/// Bytes per second read plus written by memcpy on all ranks of `comm` at once (each copying a
/// buffer larger than the last-level cache), summed over the ranks. Collective.
double measure_copy_bandwidth(comm::Communicator& comm);

}  // namespace seam::perf
