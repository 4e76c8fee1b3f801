// Whether the host of this virtual machine is stealing its CPUs' time now. While it is, a rank's
// helper threads stand down: with one helper a rank, the 8 ranks on the GPU host's 16 vCPUs keep
// every vCPU busy, so whichever vCPU the host takes holds up a call's slowest part, where
// without helpers half the vCPUs stay free to absorb it. (GPU host, 8 ranks, noisy reps:
// helpers off faster in 11 of 16 rows from 1 MiB, up to 4.6x; calm reps: helpers 1.5-2x
// faster. bench/RESULTS.md, fourteenth session.)
#pragma once

#include <optional>

namespace seam::collectives {

/// Steal share (of all CPUs' time, over a window) from which helpers stand down, and below
/// which they return: apart, so that a share near one threshold does not flip them every window.
constexpr double kStealStandDown = 0.01, kStealReturn = 0.003;

/// The next judgement from the last one and the share measured over the latest window (none
/// where it could not be measured: the last judgement stands).
bool judge_stealing(bool stealing, std::optional<double> share);

/// Whether the host has stolen a noticeable share of this machine's CPU time lately, from
/// /proc/stat over windows of a second or more, read by whichever call asks first once a window
/// has passed (a read costs a few microseconds); false where /proc/stat shows no steal.
bool host_stealing();

}  // namespace seam::collectives
