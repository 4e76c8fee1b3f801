// `seam_info --explain COLLECTIVE BYTES RANKS`: which algorithm a call takes on each memory kind
// and placement, from the selection tables (runtime/collectives/selection.h, runtime/device/select.h)
// under the current SEAM_* settings.
#pragma once

namespace seam::info {

/// Prints the answer; a bad argument is a ValueError naming it.
void explain(const char* collective, const char* bytes, const char* ranks);

}  // namespace seam::info
