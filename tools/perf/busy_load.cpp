#include "tools/perf/busy_load.h"

namespace seam::perf {

BusyLoad::BusyLoad()
    : thread_([this] {
        while (!stop_.load(std::memory_order_relaxed)) {
        }
      }) {}

BusyLoad::~BusyLoad() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
}

}  // namespace seam::perf
