// Whether the host of this virtual machine is stealing its CPUs' time now. While it is, a rank's
// automatic helper threads stand down: with helpers every vCPU is busy, so whichever vCPU the
// host takes holds up a call's slowest part; without them spare vCPUs absorb the theft.
#pragma once

#include <chrono>
#include <optional>

#include "runtime/exec/host_steal.h"

namespace seam::collectives {

/// Steal share (of all CPUs' time, over a window) from which helpers stand down, and below
/// which they return: apart, so that a share near one threshold does not flip them every window.
constexpr double kStealStandDown = 0.01, kStealReturn = 0.003;

/// Judges the host's steal from readings of /proc/stat's ticks taken a window apart or more
/// (the caller reads and times them; not thread-safe).
class StealWatch {
 public:
  using Clock = std::chrono::steady_clock;
  /// /proc/stat counts 10 ms ticks: a second of 2-16 vCPUs is 200-1600 of them, enough to tell
  /// 1% of steal from none; steal comes in bursts far longer than a window.
  static constexpr Clock::duration kWindow = std::chrono::seconds(1);
  /// A reading this old judges nothing: its window would mix an old burst with the present.
  static constexpr Clock::duration kStale = 2 * kWindow;

  /// Whether a window has passed since the last reading (or there was none).
  bool due(Clock::time_point now) const { return !read_ || now - at_ >= kWindow; }
  /// Takes the reading `ticks` (none where /proc/stat could not be read) at `now` and judges
  /// the window since the last one; after none, or a stale one, it only starts over (not
  /// stealing). Returns the judgement.
  bool look(Clock::time_point now, std::optional<comm::CpuTicks> ticks);

 private:
  bool read_ = false;  // a reading was tried: at_ is its time
  Clock::time_point at_{};
  std::optional<comm::CpuTicks> ticks_;
  bool stealing_ = false;
};

/// This process's judgement (a StealWatch read by whichever call asks first once a window has
/// passed; a read costs a few microseconds): false where /proc/stat shows no steal.
bool host_stealing();

}  // namespace seam::collectives
