#include "runtime/collectives/shm/steal_watch.h"

#include <atomic>
#include <mutex>

#include "layouts/log.h"

namespace seam::collectives {

bool StealWatch::look(Clock::time_point now, std::optional<comm::CpuTicks> ticks) {
  const bool fresh = read_ && now - at_ <= kStale;
  const std::optional<double> share = fresh ? comm::steal_share(ticks_, ticks) : std::nullopt;
  const bool was = stealing_;
  if (!fresh)
    stealing_ = false;
  else if (share)
    stealing_ = stealing_ ? *share >= kStealReturn : *share >= kStealStandDown;
  if (share && stealing_ != was)
    SEAM_LOG_DEBUG(
        "the host stole {:.2f}% of the CPUs' time over the last {:.1f} s: helper "
        "threads {}",
        100 * *share, std::chrono::duration<double>(now - at_).count(),
        stealing_ ? "stand down" : "return");
  read_ = true;
  at_ = now;
  ticks_ = ticks;
  return stealing_;
}

bool host_stealing() {
  static std::mutex reading;  // one thread reads /proc/stat at a time; the others go on
  static StealWatch watch;
  static std::atomic<bool> stealing{false};
  std::unique_lock lock(reading, std::try_to_lock);
  if (lock.owns_lock()) {
    const auto now = StealWatch::Clock::now();
    if (watch.due(now))
      stealing.store(watch.look(now, comm::cpu_ticks()), std::memory_order_relaxed);
  }
  return stealing.load(std::memory_order_relaxed);
}

}  // namespace seam::collectives
