#include "runtime/comm/steal_watch.h"

#include <atomic>
#include <mutex>

#include "layouts/log.h"

namespace seam::comm {

bool StealWatch::look(Clock::time_point now, std::optional<CpuTicks> ticks) {
  const bool fresh = read_ && now - at_ <= kStale;
  const std::optional<double> share = fresh ? steal_share(ticks_, ticks) : std::nullopt;
  const bool was = stealing_;
  if (!fresh)
    stealing_ = false;
  else if (share)
    stealing_ = stealing_ ? *share >= kStealEnds : *share >= kStealStarts;
  if (share && stealing_ != was)
    SEAM_LOG_DEBUG("the host stole {:.2f}% of the CPUs' time over the last {:.1f} s: {}",
                   100 * *share, std::chrono::duration<double>(now - at_).count(),
                   stealing_ ? "helper threads stand down, spins on own cores grow up to 10 ms"
                             : "helper threads return, spins grow up to 1 ms");
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
    if (watch.due(now)) stealing.store(watch.look(now, cpu_ticks()), std::memory_order_relaxed);
  }
  return stealing.load(std::memory_order_relaxed);
}

}  // namespace seam::comm
