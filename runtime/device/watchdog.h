// Watches the local peers of a device communicator from a thread of its own: when a peer's
// process exits (its pidfd turns readable), it sets the communicator's abort word, so kernels
// waiting for that peer give up — also during graph replays, where nobody waits on the host.
#pragma once

#include <sys/types.h>

#include <memory>
#include <thread>
#include <vector>

#include "runtime/device/device_state.h"

namespace seam::device {

class Watchdog {
 public:
  /// pids[r]: rank r's process (this rank's own entry is skipped).
  Watchdog(std::shared_ptr<DeviceState> state, int rank, const std::vector<pid_t>& pids);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void run();

  std::shared_ptr<DeviceState> state_;
  int rank_;
  std::vector<int> pidfds_;  // -1 where pidfd_open is unavailable (then kill(pid, 0) is polled)
  std::vector<pid_t> pids_;
  std::vector<int> ranks_;
  int stop_fd_ = -1;
  std::thread thread_;
};

}  // namespace seam::device
