#include "transports/shm/kernel_copy_speed.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "transports/shm/process_memory.h"

namespace seam::shm {
namespace {

constexpr size_t kProbeBytes = 256 * 1024;
constexpr int kTries = 16;

double measure() {
  std::vector<char> source(kProbeBytes, 1), destination(kProbeBytes, 2);
  using clock = std::chrono::steady_clock;
  double user = 1e30, kernel = 1e30;
  for (int i = 0; i < kTries; ++i) {
    auto start = clock::now();
    std::memcpy(destination.data(), source.data(), kProbeBytes);
    // Keeps the copy from being optimised away.
    asm volatile("" : : "r"(destination.data()) : "memory");
    user = std::min(user, std::chrono::duration<double>(clock::now() - start).count());
    start = clock::now();
    if (read_process_memory(getpid(), source.data(), destination.data(), kProbeBytes) != 0) return 0.0;
    kernel = std::min(kernel, std::chrono::duration<double>(clock::now() - start).count());
  }
  return user / kernel;
}

}  // namespace

double kernel_copy_speed_ratio() {
  static const double ratio = measure();
  return ratio;
}

bool kernel_copy_is_fast() { return kernel_copy_speed_ratio() >= kFastKernelCopyRatio; }

}  // namespace seam::shm
