#include "runtime/collectives/steal_watch.h"

#include <atomic>
#include <chrono>
#include <mutex>

#include "layouts/log.h"
#include "runtime/comm/host_steal.h"

namespace seam::collectives {
namespace {

/// /proc/stat counts in 10 ms ticks: a second of 2-16 vCPUs is 200-1600 of them, enough to tell
/// 1% of steal from none; steal bursts on the GPU host lasted minutes.
constexpr std::chrono::seconds kWindow{1};

struct Watch {
  std::mutex reading;  // held by the one thread that reads /proc/stat at a time
  std::chrono::steady_clock::time_point at;
  std::optional<comm::CpuTicks> ticks;
  std::atomic<bool> stealing{false};
};

}  // namespace

bool judge_stealing(bool stealing, std::optional<double> share) {
  if (!share) return stealing;
  return stealing ? *share >= kStealReturn : *share >= kStealStandDown;
}

bool host_stealing() {
  static Watch watch;
  std::unique_lock lock(watch.reading, std::try_to_lock);
  const auto now = std::chrono::steady_clock::now();
  if (lock.owns_lock() && (!watch.ticks || now - watch.at >= kWindow)) {
    const std::optional<comm::CpuTicks> ticks = comm::cpu_ticks();
    const std::optional<double> share = comm::steal_share(watch.ticks, ticks);
    const bool was = watch.stealing.load(std::memory_order_relaxed);
    const bool is = judge_stealing(was, share);
    if (is != was)
      SEAM_LOG_DEBUG(
          "the host stole {:.2f}% of the CPUs' time over the last {:.1f} s: helper "
          "threads {}",
          100 * *share, std::chrono::duration<double>(now - watch.at).count(),
          is ? "stand down" : "return");
    watch.stealing.store(is, std::memory_order_relaxed);
    watch.ticks = ticks;
    watch.at = now;
  }
  return watch.stealing.load(std::memory_order_relaxed);
}

}  // namespace seam::collectives
