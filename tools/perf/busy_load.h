// -L 1: a busy thread beside each rank for the timed rows, on the CPUs the rank may run on, as
// on a machine whose cores also run other work (an engine's own threads, other processes). It
// never yields, so a rank that gives its core away waits for the scheduler's next turn.
#pragma once

#include <atomic>
#include <thread>

namespace seam::perf {

/// Spins one thread until destroyed.
class BusyLoad {
 public:
  BusyLoad();
  ~BusyLoad();
  BusyLoad(const BusyLoad&) = delete;
  BusyLoad& operator=(const BusyLoad&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace seam::perf
